/**
 * A trace file as a viewer source. ftrace recordings (trace.dat, raw pages) are indexed on open (a pass over page and
 * record headers) and decoded a row at a time; CTF traces have no such index yet and are decoded on open.
 */
import { basename } from 'node:path';
import { type IndexedTrace, indexFtrace, openTrace, TraceFormatError, type TraceReader } from '@evtrace/trace-format';
import { ViewerError } from '../errors.ts';
import type { CpuStats, SourceStats, ViewerSource } from './source.ts';
import { arrayStore, type EventStore } from './store.ts';
import { lazySymbols } from './symbols.ts';

/** Slices of the trace's span in the per-CPU rate sparklines. */
const RATE_SLICES = 60;

/**
 * Opens a CTF directory, trace.dat file or raw-pages directory.
 * @throws ViewerError `ERR_VIEW_INPUT` with the format error's code, file and offset.
 */
export function openFileSource(path: string): ViewerSource {
  let reader: TraceReader & { metadata?: import('@evtrace/trace-format').FtraceMetadata };
  let store: EventStore;
  try {
    reader = openTrace(path, { lenient: true });
    if ('cpuPages' in reader && reader.metadata !== undefined) {
      store = indexFtrace(reader as Parameters<typeof indexFtrace>[0], { lenient: true }) satisfies IndexedTrace;
    } else {
      store = arrayStore([...reader.events()]);
    }
  } catch (error) {
    if (error instanceof TraceFormatError) throw new ViewerError('ERR_VIEW_INPUT', `${error.code}: ${error.message}`);
    throw error;
  }
  const lostByCpu = 'lost' in store ? (store as IndexedTrace).lost : new Map<number, number>();
  const cmdlines = reader.metadata?.cmdlines;
  let stats: SourceStats | undefined;
  return {
    label: `${basename(path)} (${reader.kind})`,
    live: false,
    store: () => store,
    eventClasses: () => reader.eventClasses,
    stats: () => (stats ??= fileStats(store, lostByCpu)),
    lost: () => [...lostByCpu.values()].reduce((a, b) => a + b, 0),
    taskName: (pid) => cmdlines?.get(pid),
    symbols: lazySymbols(() => reader.metadata?.kallsyms(), true),
    subscribe: () => () => {},
    warnings: () => reader.warnings,
    close: async () => {},
  };
}

/** Per-CPU counts and rates over the trace's span, per-type counts: one pass over the summary columns. */
export function fileStats(store: EventStore, lostByCpu: ReadonlyMap<number, number>): SourceStats {
  const n = store.length;
  const first = n > 0 ? store.tsNs(0) : 0n;
  const last = n > 0 ? store.tsNs(n - 1) : 0n;
  const spanNs = Number(last - first) || 1;
  const sliceNs = spanNs / RATE_SLICES;
  const perCpu = new Map<number, { events: number; slices: Float64Array }>();
  const perType = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const cpu = store.cpu(i) ?? 0;
    let c = perCpu.get(cpu);
    if (c === undefined) perCpu.set(cpu, (c = { events: 0, slices: new Float64Array(RATE_SLICES) }));
    c.events++;
    const slice = Math.min(RATE_SLICES - 1, Math.floor(Number(store.tsNs(i) - first) / sliceNs));
    c.slices[slice]!++;
    const name = store.eventClass(i).name;
    perType.set(name, (perType.get(name) ?? 0) + 1);
  }
  for (const cpu of lostByCpu.keys()) if (!perCpu.has(cpu)) perCpu.set(cpu, { events: 0, slices: new Float64Array(0) });
  const seconds = spanNs / 1e9;
  const cpus: CpuStats[] = [...perCpu.entries()]
    .sort(([a], [b]) => a - b)
    .map(([cpu, c]) => ({
      cpu,
      events: c.events,
      lost: lostByCpu.get(cpu) ?? 0,
      rates: [...c.slices].map((k) => k / (sliceNs / 1e9)),
      fill: n > 0 ? c.events / n : 0,
      fillLabel: 'share of events',
    }));
  let lost = 0;
  for (const v of lostByCpu.values()) lost += v;
  return {
    cpus,
    types: [...perType.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([name, events]) => ({ name, events, rate: events / seconds })),
    eventsPerSec: n / seconds,
    lost,
    total: n,
  };
}
