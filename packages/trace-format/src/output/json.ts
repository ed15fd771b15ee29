/** JSON lines: one object per event, `{"ts_ns", "cpu", "event", "fields"}`, exact for 64-bit integers. */
import type { FieldValue, TraceEvent } from '../model/types.ts';

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A field value as JSON can carry it: integers beyond 2^53 become decimal strings. */
export function jsonValue(value: FieldValue): unknown {
  if (typeof value === 'bigint') return value > MAX_SAFE || value < -MAX_SAFE ? value.toString() : Number(value);
  if (Array.isArray(value)) return value.map(jsonValue);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = jsonValue(v as FieldValue);
    return out;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return value;
}

/**
 * One event as a JSON line (with the trailing newline): `ts_ns` is a decimal string, `cpu` a number or null, and
 * `buffer` the name of the trace.dat instance buffer an event comes from (`scopes.buffer`), absent otherwise.
 */
export function eventToJsonLine(event: TraceEvent): string {
  const buffer = event.scopes?.buffer?.name;
  return `${JSON.stringify({
    ts_ns: event.tsNs.toString(),
    cpu: event.cpu,
    ...(typeof buffer === 'string' ? { buffer } : {}),
    event: event.eventClass.name,
    fields: jsonValue(event.fields as FieldValue),
  })}\n`;
}
