/** Text of the Events view's cells: pure functions, each cut to a width. */
import { fieldsText, type TraceEvent } from '@evtrace/trace-format';

const NS = 1_000_000_000n;

/** `seconds.microseconds`, as trace-cmd report prints time stamps. */
export function timeText(tsNs: bigint): string {
  const us = (tsNs % NS) / 1000n;
  return `${tsNs / NS}.${String(us).padStart(6, '0')}`;
}

/** `comm-pid`, or the pid alone when the name is unknown, `-` without one. */
export function taskText(pid: number, name: string | undefined): string {
  if (pid < 0) return '-';
  if (pid === 0) return '<idle>-0';
  return name === undefined ? String(pid) : `${name}-${pid}`;
}

/** `text` cut or padded to exactly `width` columns (a cut ends in `…`). */
export function fit(text: string, width: number): string {
  if (width <= 0) return '';
  if (text.length > width) return width === 1 ? '…' : `${text.slice(0, width - 1)}…`;
  return text.padEnd(width);
}

/** The payload fields as `name=value` pairs. */
export function fieldsLine(e: TraceEvent): string {
  return fieldsText(e);
}

/** Every field of an event for the detail pane: payload, then the other scopes, one `name: value` per line. */
export function detailLines(e: TraceEvent): string[] {
  const lines = [`event: ${e.eventClass.name}`, `time:  ${timeText(e.tsNs)} (${e.tsNs} ns)`, `cpu:   ${e.cpu ?? '-'}`];
  for (const [k, v] of Object.entries(e.fields)) lines.push(`  ${k} = ${valueText(v)}`);
  for (const [scope, fields] of Object.entries(e.scopes ?? {})) {
    lines.push(`${scope}:`);
    for (const [k, v] of Object.entries(fields)) lines.push(`  ${k} = ${valueText(v)}`);
  }
  return lines;
}

function valueText(v: unknown): string {
  if (typeof v === 'bigint') return v > 0xffffn ? `${v} (0x${v.toString(16)})` : String(v);
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(valueText).join(', ')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.entries(v)
      .map(([k, x]) => `${k}: ${valueText(x)}`)
      .join(', ')}}`;
  return String(v);
}

/** `1234567` → `1.23M`, `12345` → `12.3k`. */
export function countText(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)}G`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
  return String(Math.round(n));
}

const BARS = '▁▂▃▄▅▆▇█';

/** A sparkline of the last `width` values, scaled to their maximum (ASCII digits 0-7 when `ascii`). */
export function sparkline(values: readonly number[], width: number, ascii = false): string {
  const shown = values.slice(-width);
  const max = Math.max(0, ...shown);
  const marks = ascii ? '01234567' : BARS;
  const line = shown.map((v) => (max === 0 ? marks[0] : marks[Math.min(7, Math.floor((v / max) * 7.999))])).join('');
  return line.padStart(width, ' ');
}

/** A gauge `[#####-----]` of `fraction` in `width` columns, brackets included. */
export function gauge(fraction: number, width: number): string {
  const inner = Math.max(0, width - 2);
  const full = Math.round(Math.min(1, Math.max(0, fraction)) * inner);
  return `[${'#'.repeat(full)}${'-'.repeat(inner - full)}]`;
}
