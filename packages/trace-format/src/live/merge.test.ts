import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LiveMerge } from './merge.ts';

interface Item {
  readonly tsNs: bigint;
  readonly cpu: number;
  readonly seq: number;
}

/** Per-CPU streams in time order, ties within and across CPUs included. */
const streams = fc
  .array(fc.array(fc.bigInt({ min: 0n, max: 50n }), { maxLength: 60 }), { minLength: 1, maxLength: 5 })
  .map((perCpu) =>
    perCpu.map((times, cpu) =>
      times.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map((tsNs, seq) => ({ tsNs, cpu, seq })),
    ),
  );

/** The order the file readers merge in: by time, ties by CPU number, each CPU's own order kept. */
const fileOrder = (perCpu: Item[][]): Item[] =>
  perCpu.flat().sort((a, b) => (a.tsNs < b.tsNs ? -1 : a.tsNs > b.tsNs ? 1 : a.cpu - b.cpu || a.seq - b.seq));

describe('LiveMerge', () => {
  it("releases the file readers' order whatever the order the CPUs deliver in, never an item a CPU may precede", () => {
    fc.assert(
      fc.property(
        streams,
        fc.array(fc.record({ cpu: fc.nat(4), n: fc.integer({ min: 1, max: 20 }), take: fc.boolean() }), {
          maxLength: 40,
        }),
        (perCpu, steps) => {
          // A clock that never moves: no CPU falls idle, only the merge decides.
          const m = new LiveMerge<Item>({ cpus: perCpu.map((_, cpu) => cpu), now: () => 0 });
          const next = perCpu.map(() => 0);
          const out: Item[] = [];
          const take = (all = false) => {
            const got = m.take(all);
            // Nothing released is later than what any CPU has reached: an earlier item may still come from it.
            if (!all) {
              const reached = perCpu.map((list, cpu) => (next[cpu]! > 0 ? list[next[cpu]! - 1]!.tsNs : -1n));
              for (const e of got) for (const r of reached) expect(e.tsNs <= r).toBe(true);
            }
            out.push(...got);
          };
          for (const step of steps) {
            const cpu = step.cpu % perCpu.length;
            const list = perCpu[cpu]!;
            const end = Math.min(list.length, next[cpu]! + step.n);
            m.add(cpu, list.slice(next[cpu], end));
            next[cpu] = end;
            if (step.take) take();
          }
          for (const [cpu, list] of perCpu.entries()) m.add(cpu, list.slice(next[cpu]));
          take(true);
          expect(m.pending).toBe(0);
          expect(out).toEqual(fileOrder(perCpu));
        },
      ),
      {
        numRuns: 300,
        // Once found: CPU 0 at time 19 may deliver another item at 19, which goes before CPU 1's.
        examples: [
          [
            [
              [
                { tsNs: 19n, cpu: 0, seq: 0 },
                { tsNs: 19n, cpu: 0, seq: 1 },
              ],
              [{ tsNs: 19n, cpu: 1, seq: 0 }],
            ],
            [
              { cpu: 0, n: 1, take: false },
              { cpu: 1, n: 1, take: true },
            ],
          ],
        ],
      },
    );
  });

  it('holds back items another CPU may still precede, until that CPU passes them or falls idle', () => {
    let now = 0;
    const m = new LiveMerge<Item>({ cpus: [0, 1], idleMs: 1000, now: () => now });
    m.add(1, [{ tsNs: 2000n, cpu: 1, seq: 0 }]);
    // CPU 0 has delivered nothing: it may still deliver something earlier.
    expect(m.take()).toEqual([]);
    m.add(0, [{ tsNs: 1000n, cpu: 0, seq: 0 }]);
    expect(m.take().map((e) => e.tsNs)).toEqual([1000n]);
    expect(m.pending).toBe(1);
    now = 1500; // CPU 0 silent for 1.5 s: no longer waited for.
    expect(m.take().map((e) => e.tsNs)).toEqual([2000n]);
    // A CPU first heard of later is waited for from its first item on.
    m.add(0, [{ tsNs: 3000n, cpu: 0, seq: 1 }]);
    m.add(2, [{ tsNs: 2500n, cpu: 2, seq: 0 }]);
    expect(m.take().map((e) => e.tsNs)).toEqual([2500n]);
    expect(m.take(true).map((e) => e.tsNs)).toEqual([3000n]);
  });
});
