import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openTrace } from '@evtrace/trace-format';
import { recordDemo } from '@evtrace/tracefs';
import { beforeAll, describe, expect, it } from 'vitest';
import { BranchMultiplexer } from './multiplex.ts';
import { branchesFromEvents, readTraceBranches } from './trace.ts';

/**
 * One branch stream from a recorded trace (tracefs' demo source: bts:branch on 2 CPUs, 4 tasks switched by
 * sched_switch), shared by contexts per task, per CPU and global, each with its own ring buffer and budget.
 */
describe('multiplexing a recorded branch stream', () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'hw-bts-mux-')), 'raw');
  beforeAll(async () => {
    await recordDemo({ events: ['bts:branch', 'sched:sched_switch'], dir, durationMs: 300, rate: 8000 });
  }, 30_000);

  it('gives each context exactly its slice, newest kept within budget, the rest counted as overwritten', () => {
    const reference = readTraceBranches(dir);
    const list = reference.branches;
    expect(list.length).toBeGreaterThan(1000);
    const tids = [...new Set(list.tid.subarray(0, list.length))].sort();
    expect(tids.length).toBeGreaterThanOrEqual(2);
    expect(tids).not.toContain(-1);

    // Fed the event stream as it comes (branches and switches interleaved), as a live multiplexer would be.
    const mux = new BranchMultiplexer([
      ...tids.map((tid) => ({ name: `task ${tid}`, tid, budgetBytes: 16 * 1024 })),
      { name: 'cpu 1', cpu: 1, budgetBytes: 1 << 20 },
      { name: 'global', budgetBytes: 8 * 1024 },
    ]);
    branchesFromEvents(openTrace(dir).events(), mux);

    const key = (l: typeof list, i: number) => `${l.fromKey(i)}>${l.toKey(i)}@${l.cpu[i]}`;
    const expectSlice = (name: string, keep: (i: number) => boolean) => {
      const want: string[] = [];
      for (let i = 0; i < list.length; i++) if (keep(i)) want.push(key(list, i));
      const { branches, lost } = mux.context(name).contents();
      const got = Array.from({ length: branches.length }, (_, i) => key(branches, i));
      expect(lost + got.length).toBe(want.length);
      expect(got).toEqual(want.slice(want.length - got.length));
      return { got: got.length, lost };
    };
    for (const tid of tids) {
      const r = expectSlice(`task ${tid}`, (i) => list.tid[i] === tid);
      expect(r.got).toBeGreaterThan(0);
      expect(r.got * 28).toBeLessThanOrEqual(16 * 1024);
    }
    expect(expectSlice('cpu 1', (i) => list.cpu[i] === 1).lost).toBe(0);
    expect(expectSlice('global', () => true).lost).toBeGreaterThan(0);
  });
});
