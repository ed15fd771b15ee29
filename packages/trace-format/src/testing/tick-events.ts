/** A small event class and its events for trace.dat tests: a u64 and a string (a `__data_loc` field in ftrace). */
import type { EventClass, TraceEvent } from '../model/types.ts';

const u64 = { kind: 'int', size: 64, signed: false, align: 8, byteOrder: 'le', base: 10, encoding: 'none' } as const;

export const tick: EventClass = {
  id: 1,
  name: 'demo:tick',
  streamId: 0,
  payload: {
    kind: 'struct',
    minAlign: 8,
    // A string becomes a __data_loc field: records whose dynamic data must lie inside them.
    members: [
      { name: 'n', type: u64 },
      { name: 'task', type: { kind: 'string', encoding: 'utf8' } },
    ],
  },
};

/** `count` ticks 1 µs apart from 1 ms, spread over `cpus` CPUs in turn; `n` is `i * step`. */
export function tickEvents(count: number, cpus: number, step = 1n): TraceEvent[] {
  return Array.from({ length: count }, (_, i) => ({
    tsNs: 1_000_000n + BigInt(i) * 1000n,
    cpu: i % cpus,
    eventClass: tick,
    fields: { n: BigInt(i) * step, task: `task-${i % 13}` },
  }));
}
