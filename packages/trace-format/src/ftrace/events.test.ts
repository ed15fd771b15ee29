import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EventClass, TraceEvent } from '../model/types.ts';
import { mergeBatches, mergeByTime } from './events.ts';

const cls = { id: 1, name: 'x', streamId: 0, payload: { kind: 'struct', members: [], minAlign: 8 } } as EventClass;
const ev = (tsNs: bigint, cpu: number, seq: number): TraceEvent => ({ tsNs, cpu, eventClass: cls, fields: { seq } });

describe('merging per-CPU streams', () => {
  it('orders by time, ties by stream order, keeping each stream in order (batched or not)', () => {
    const stream = fc.array(fc.array(fc.bigInt({ min: 0n, max: 20n }), { maxLength: 6 }), { maxLength: 5 });
    fc.assert(
      fc.property(fc.array(stream, { minLength: 1, maxLength: 4 }), (cpus) => {
        // Each CPU's batches hold non-decreasing timestamps across the whole stream.
        let seq = 0;
        const batches = cpus.map((pages, cpu) => {
          let t = 0n;
          return pages.map((page) => page.map((d) => ev((t += d), cpu, seq++)));
        });
        const expected = batches
          .flatMap((pages) => pages.flat())
          .sort((a, b) =>
            a.tsNs < b.tsNs
              ? -1
              : a.tsNs > b.tsNs
                ? 1
                : a.cpu! - b.cpu! || (a.fields.seq as number) - (b.fields.seq as number),
          );
        expect([...mergeBatches(batches)]).toEqual(expected);
        expect([...mergeByTime(batches.map((pages) => pages.flat()))]).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });
});
