import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Merge } from './merge.ts';
import { RingBuffer } from './ringbuffer.ts';

describe('Merge', () => {
  it('merges several buffers by timestamp, ties to the lower index', () => {
    const stamps = [[1, 4, 4, 9, 200_000_000], [2, 3, 4, 10], [], [0, 5, 6, 7, 8, 11]];
    const bufs = stamps.map(() => RingBuffer.create({ mode: 'discard', clock: { name: 't' } }));
    const readers = bufs.map((b) => b.reader());
    bufs.forEach((b, i) => {
      const w = b.writer();
      for (const ts of stamps[i]!) w.writeBytes(i, new Uint8Array([i]), ts);
      w.close();
    });
    const merge = new Merge(readers);
    const out: [number, number][] = [];
    while (merge.next()) out.push([merge.current.timestamp, merge.index]);
    expect(merge.ended).toBe(true);
    const expected = stamps
      .flatMap((list, i) => list.map((ts) => [ts, i] as [number, number]))
      .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    expect(out).toEqual(expected);
  });

  it('does not overtake a live source that has nothing yet', () => {
    const a = RingBuffer.create({ mode: 'discard', clock: { name: 't' } });
    const b = RingBuffer.create({ mode: 'discard', clock: { name: 't' } });
    const merge = new Merge([a.reader(), b.reader()]);
    const wa = a.writer();
    const wb = b.writer();
    wa.writeBytes(0, new Uint8Array(1), 10);
    wa.writeBytes(0, new Uint8Array(1), 30);
    expect(merge.next()).toBe(false);
    wb.writeBytes(1, new Uint8Array(1), 20);
    expect(merge.next()).toBe(true);
    expect(merge.current.timestamp).toBe(10);
    expect(merge.next()).toBe(true);
    expect(merge.current.timestamp).toBe(20);
    expect(merge.next()).toBe(false);
    expect(merge.ended).toBe(false);
    wb.close();
    expect(merge.next()).toBe(true);
    expect(merge.current.timestamp).toBe(30);
    wa.close();
    expect(merge.next()).toBe(false);
    expect(merge.ended).toBe(true);
  });
});

describe('Merge (property)', () => {
  it('orders any number of sources exactly like a stable sort by (timestamp, source)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 30 }), { minLength: 1, maxLength: 20 }),
        (lists) => {
          const streams = lists.map((l) => [...l].sort((a, b) => a - b));
          const bufs = streams.map(() => RingBuffer.create({ pageCount: 2, mode: 'discard', clock: { name: 't' } }));
          const readers = bufs.map((b) => b.reader());
          bufs.forEach((b, i) => {
            const w = b.writer();
            for (const ts of streams[i]!) w.writeBytes(i % 30, new Uint8Array(0), ts);
            w.close();
          });
          const merge = new Merge(readers);
          const out: [number, number][] = [];
          while (merge.next()) out.push([merge.current.timestamp, merge.index]);
          const expected = streams
            .flatMap((l, i) => l.map((ts) => [ts, i] as [number, number]))
            .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
          expect(out).toEqual(expected);
          expect(merge.ended).toBe(true);
        },
      ),
      { numRuns: 100 },
    );
  });
});
