import { describe, expect, it } from 'vitest';
import type { EventStore } from '../data/store.ts';
import { histogramRows, taskDensity } from './timeline.tsx';

/** `n` events one per microsecond: task 7 throughout, task 9 on every fourth event of the second half only. */
function store(n: number): EventStore {
  const pid = (i: number) => (i >= n / 2 && i % 4 === 0 ? 9 : 7);
  return { length: n, tsNs: (i: number) => BigInt(i) * 1000n, cpu: () => 0, pid } as unknown as EventStore;
}

describe('the task strips and the rate histogram', () => {
  it('counts each task per slice, and all events per slice', () => {
    const d = taskDensity(store(1000), 4);
    expect([...d.counts.get(7)!]).toEqual([250, 250, 187, 188]);
    expect([...d.counts.get(9)!]).toEqual([0, 0, 63, 62]);
    expect([...d.totals]).toEqual([250, 250, 250, 250]);
  });

  it('draws the rate histogram in rows scaled to the busiest slice, a sliver for any non-zero slice', () => {
    const totals = Float64Array.from([0, 1, 50, 100]);
    expect(histogramRows(totals, 2, true)).toEqual(['   #', ' .##']);
    expect(histogramRows(totals, 2, false)).toEqual(['   █', ' ▁██']);
    expect(histogramRows(Float64Array.from([0, 0]), 2, true)).toEqual(['  ', '  ']);
  });
});
