/**
 * The Events view's time strips over the store's span, as KernelShark draws its plots: one strip per CPU or per task
 * of the event density (`T`), a histogram of the event rate per time bucket (`i`, lnav's key), and a ruler placing
 * the selection (`^`) and the marks (`A`, `B`). Counts come from the summary columns only (no decoding).
 */
import { Box, Text } from 'ink';
import { useMemo } from 'react';
import type { EventStore } from '../data/store.ts';
import { countText, fit, taskText } from '../ui/format.ts';
import { useColour } from '../ui/theme.ts';

/** What the density strips are drawn for. */
export type StripKind = 'cpu' | 'task';

/** Events read per slice at most: beyond, every k-th event stands for k (the strips stay instant). */
const DENSITY_SAMPLES = 256;

/** Event counts per key (a CPU, a task) in equal slices of a store's span, and their sum per slice. */
export interface Density {
  readonly counts: Map<number, Float64Array>;
  /** All events per slice. */
  readonly totals: Float64Array;
  /** The largest count of one key in one slice. */
  readonly max: number;
  readonly first: bigint;
  readonly span: bigint;
}

/**
 * Event counts per key in `slices` equal slices of the store's time span; a long store is sampled evenly, each
 * sample counting for the events it stands for.
 */
export function density(store: EventStore, slices: number, keyOf: (i: number) => number): Density {
  const counts = new Map<number, Float64Array>();
  const totals = new Float64Array(slices);
  if (store.length === 0) return { counts, totals, max: 0, first: 0n, span: 0n };
  const first = store.tsNs(0);
  const span = store.tsNs(store.length - 1) - first;
  const perSlice = Number(span) / slices;
  const step = Math.max(1, Math.floor(store.length / (slices * DENSITY_SAMPLES)));
  let max = 0;
  for (let i = 0; i < store.length; i += step) {
    const key = keyOf(i);
    let row = counts.get(key);
    if (row === undefined) counts.set(key, (row = new Float64Array(slices)));
    const x = perSlice === 0 ? 0 : Math.min(slices - 1, Math.floor(Number(store.tsNs(i) - first) / perSlice));
    row[x]! += step;
    totals[x]! += step;
    if (row[x]! > max) max = row[x]!;
  }
  return { counts, totals, max, first, span };
}

/** Per CPU (events without one under -1). */
export const cpuDensity = (store: EventStore, slices: number): Density =>
  density(store, slices, (i) => store.cpu(i) ?? -1);

/** Per task (pid). */
export const taskDensity = (store: EventStore, slices: number): Density => density(store, slices, (i) => store.pid(i));

const DENSITY = ' ▁▂▃▄▅▆▇█';
const DENSITY_ASCII = ' .:-=+*#%';

/**
 * A histogram of `totals` in `rows` rows of bars, top row first, scaled to the largest: block eighths, or in ASCII
 * `#` for a full cell and `.` for a part of one.
 */
export function histogramRows(totals: Float64Array, rows: number, ascii: boolean): string[] {
  let max = 0;
  for (const v of totals) if (v > max) max = v;
  const out: string[] = [];
  for (let r = rows - 1; r >= 0; r--) {
    let line = '';
    for (const v of totals) {
      // Eighths of a cell this row holds; a non-zero slice shows at least a sliver on the bottom row.
      const eighths = max === 0 ? 0 : Math.max(v > 0 ? 1 : 0, Math.round((v / max) * rows * 8)) - r * 8;
      if (eighths <= 0) line += ' ';
      else if (eighths >= 8) line += ascii ? '#' : '█';
      else line += ascii ? '.' : DENSITY[eighths]!;
    }
    out.push(line);
  }
  return out;
}

/** Rows the histogram takes: three where the view is tall, else two. */
export const histogramHeight = (height: number) => (height >= 30 ? 3 : 2);

/** `1.5ms`, `250us`, `2.0s`: a slice's width for the ruler's label. */
function spanText(ns: number): string {
  if (ns >= 1e9) return `${(ns / 1e9).toFixed(1)}s`;
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(1)}ms`;
  if (ns >= 1e3) return `${(ns / 1e3).toFixed(0)}us`;
  return `${Math.round(ns)}ns`;
}

/** The histogram's peak as a rate, `66.7k/s`, or without the unit where the label column is too narrow for it. */
export function rateLabel(perSecond: number, width: number): string {
  const n = countText(perSecond);
  return n.length + 2 <= width ? `${n}/s` : n;
}

export interface TimelineProps {
  readonly store: EventStore;
  readonly width: number;
  /** Density strips per CPU or per task, or none. */
  readonly strips: StripKind | undefined;
  /** Rows for the strips (the last one sums the keys that do not fit). */
  readonly stripRows: number;
  /** Rows of the rate histogram; 0 hides it. */
  readonly histogram: number;
  readonly cursor: bigint | undefined;
  readonly marks: { a?: bigint; b?: bigint };
  readonly ascii: boolean;
  readonly taskName: (pid: number) => string | undefined;
}

/**
 * The strips, the histogram (its label the peak rate) and the ruler (its label one slice's width). Strips are
 * darker where denser, on one scale for all; tasks are listed busiest first.
 */
export function Timeline(props: TimelineProps) {
  const { store, width, strips, stripRows, histogram, cursor, marks, ascii, taskName } = props;
  const colour = useColour();
  const label = strips === 'task' ? 17 : 7;
  const slices = Math.max(1, width - label);
  const d = useMemo(
    () => (strips === 'task' ? taskDensity(store, slices) : cpuDensity(store, slices)),
    [store, slices, strips],
  );
  const glyphs = ascii ? DENSITY_ASCII : DENSITY;
  const total = (row: Float64Array) => row.reduce((a, b) => a + b, 0);
  const keys =
    strips === undefined
      ? []
      : strips === 'task'
        ? [...d.counts.keys()].sort((a, b) => total(d.counts.get(b)!) - total(d.counts.get(a)!))
        : [...d.counts.keys()].sort((a, b) => a - b);
  const room = strips === undefined ? 0 : Math.max(1, stripRows);
  const shown = keys.length > room ? keys.slice(0, room - 1) : keys;
  const rest = keys.slice(shown.length);
  const lines: { key: string; label: string; row: Float64Array }[] = shown.map((k) => ({
    key: String(k),
    label: strips === 'task' ? taskText(k, taskName(k)) : k < 0 ? 'cpu?' : `cpu${k}`,
    row: d.counts.get(k)!,
  }));
  if (strips !== undefined && rest.length > 0) {
    const sum = new Float64Array(slices);
    for (const k of rest) {
      const row = d.counts.get(k)!;
      for (let x = 0; x < slices; x++) sum[x]! += row[x]!;
    }
    lines.push({ key: 'rest', label: `+${rest.length} ${strips === 'task' ? 'tasks' : 'cpus'}`, row: sum });
  }
  let max = d.max;
  for (const l of lines) for (const v of l.row) if (v > max) max = v;
  const sliceNs = Number(d.span) / slices;
  let peak = 0;
  for (const v of d.totals) if (v > peak) peak = v;
  const bars = histogram > 0 ? histogramRows(d.totals, histogram, ascii) : [];
  const at = (ts: bigint | undefined) =>
    ts === undefined || d.span === 0n
      ? -1
      : Math.min(slices - 1, Math.max(0, Number(((ts - d.first) * BigInt(slices)) / d.span)));
  const ruler = Array<string>(slices).fill(ascii ? '-' : '─');
  for (const [mark, ch] of [
    [cursor, '^'],
    [marks.a, 'A'],
    [marks.b, 'B'],
  ] as const) {
    const x = at(mark);
    if (x >= 0) ruler[x] = ch;
  }
  const rate = sliceNs > 0 ? rateLabel((peak * 1e9) / sliceNs, label) : '';
  return (
    <Box flexDirection="column">
      {bars.map((b, r) => (
        <Text key={`h${r}`} wrap="truncate">
          <Text color={colour('cyan')}>{fit(r === 0 ? rate : r === bars.length - 1 ? 'events' : '', label)}</Text>
          <Text color={colour('yellow')}>{b}</Text>
        </Text>
      ))}
      {lines.map((l) => (
        <Text key={l.key} wrap="truncate">
          <Text color={colour('cyan')}>{fit(l.label, label)}</Text>
          {Array.from(l.row, (n) => (n === 0 ? ' ' : glyphs[1 + Math.min(7, Math.floor((n / max) * 7.999))])).join('')}
        </Text>
      ))}
      <Text wrap="truncate" color={colour('gray')}>
        {fit(sliceNs > 0 ? spanText(sliceNs) : '', label)}
        {ruler.join('')}
      </Text>
    </Box>
  );
}
