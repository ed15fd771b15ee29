import { describe, expect, it } from 'vitest';
import type { EventStore } from '../data/store.ts';
import { cpuDensity } from './timeline.tsx';

/** A store of `n` events one per microsecond, on cpu0 in the first half of the span and cpu1 in the second. */
function store(n: number): EventStore {
  return {
    length: n,
    tsNs: (i) => BigInt(i) * 1000n,
    cpu: (i) => (i < n / 2 ? 0 : 1),
  } as EventStore;
}

describe('the timeline density', () => {
  it('counts each CPU per slice of the span, exactly on a short store', () => {
    const d = cpuDensity(store(1000), 10);
    expect([...d.counts.get(0)!]).toEqual([100, 100, 100, 100, 100, 0, 0, 0, 0, 0]);
    expect([...d.counts.get(1)!]).toEqual([0, 0, 0, 0, 0, 100, 100, 100, 100, 100]);
    expect(d.max).toBe(100);
  });

  it('samples a long store evenly, keeping the totals and where the events are', () => {
    const n = 2_000_000;
    const d = cpuDensity(store(n), 10);
    const total = [...d.counts.values()].reduce((a, row) => a + row.reduce((x, y) => x + y, 0), 0);
    expect(Math.abs(total - n) / n).toBeLessThan(0.01);
    expect([...d.counts.get(0)!].slice(5).every((v) => v === 0)).toBe(true);
    expect(d.counts.get(0)![0]! / (n / 10)).toBeCloseTo(1, 1);
  });
});
