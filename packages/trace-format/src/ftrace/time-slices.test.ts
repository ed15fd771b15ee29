import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EventClass, TraceEvent } from '../model/types.ts';
import { sliceOf, sliceTest, timeSlices } from './time-slices.ts';
import { readTraceDat } from './tracedat/read.ts';
import { encodeTraceDat } from './tracedat/write-events.ts';

const tick: EventClass = {
  id: 7,
  name: 'app:tick',
  streamId: 0,
  payload: {
    kind: 'struct',
    minAlign: 8,
    members: [
      {
        name: 'n',
        type: { kind: 'int', size: 64, signed: false, align: 8, byteOrder: 'le', base: 10, encoding: 'none' },
      },
    ],
  },
};

/** Events on 3 CPUs at the given gaps (bursts and lulls), in time order. */
function events(gaps: readonly number[]): TraceEvent[] {
  let ts = 1_000_000_000n;
  return gaps.map((gap, i) => {
    ts += BigInt(gap);
    return { tsNs: ts, cpu: i % 3, eventClass: tick, fields: { n: BigInt(i) } };
  });
}

const key = (e: TraceEvent) => `${e.tsNs}/${e.cpu}/${e.fields.n}`;

describe('time slices', () => {
  it('cover the recording: the threads of a split decode each event once, in slice order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 5_000_000 })), {
          minLength: 1,
          maxLength: 3000,
        }),
        fc.integer({ min: 2, max: 4 }),
        fc.integer({ min: 1, max: 200 }),
        fc.constantFrom(6, 7),
        (gaps, count, perSlice, version) => {
          const reader = readTraceDat(encodeTraceDat([tick], events(gaps), { version }).bytes);
          const all = [...reader.events()];
          const slices = timeSlices(reader, perSlice);
          expect(slices).toBeDefined();
          const parts = Array.from({ length: count }, (_, index) => [
            ...reader.events({ select: () => sliceTest(slices!, index, count) }),
          ]);
          parts.forEach((part, index) => {
            for (const e of part) expect(sliceOf(slices!, e.tsNs) % count).toBe(index);
          });
          // Each thread's events in slice order, slices taken in turn: the whole recording, in its order.
          const bySlice = new Map<number, TraceEvent[]>();
          for (const part of parts)
            for (const e of part) {
              const k = sliceOf(slices!, e.tsNs);
              bySlice.set(k, [...(bySlice.get(k) ?? []), e]);
            }
          const joined = [...bySlice.keys()].sort((a, b) => a - b).flatMap((k) => bySlice.get(k)!);
          expect(joined.map(key)).toEqual(all.map(key));
        },
      ),
      { numRuns: 40 },
    );
  });

  it('are about the records asked for, from the pages alone', () => {
    const reader = readTraceDat(encodeTraceDat([tick], events(Array(20_000).fill(1000)), { version: 7 }).bytes);
    const slices = timeSlices(reader, 1000)!;
    const all = [...reader.events()];
    const count = sliceOf(slices, all.at(-1)!.tsNs) + 1;
    // Records of this class are smaller than the estimate counts one: fewer slices than 20, never just one.
    expect(count).toBeGreaterThan(4);
    expect(count).toBeLessThan(12);
    expect(slices.records).toBeGreaterThan(20_000 / 4);
    expect(slices.records).toBeLessThan(20_000);
    expect(sliceOf(slices, 0n)).toBe(0);
  });

  it('are none for a recording without pages', () => {
    const reader = readTraceDat(encodeTraceDat([tick], [], { version: 6 }).bytes);
    expect(timeSlices(reader)).toBeUndefined();
  });
});
