import { describe, expect, it } from 'vitest';
import { BranchList } from './branch.ts';
import { BtsError } from './errors.ts';
import { readBranchInput } from './input.ts';
import { attributeTasks, readTraceBranches } from './trace.ts';

describe('branches in traces', () => {
  it('attributeTasks gives each branch the task last switched in on its CPU; before any switch it stays unknown', () => {
    const list = new BranchList();
    list.add(1n, 2n, { cpu: 0, time: 5 });
    list.add(3n, 4n, { cpu: 0, time: 10 });
    list.add(5n, 6n, { cpu: 1, time: 11 });
    list.add(7n, 8n, { cpu: 0, time: 20, tid: 99 }); // its own tid wins
    list.add(9n, 10n, { cpu: 0, time: 30 });
    attributeTasks(list, [
      { time: 10, cpu: 0, tid: 100 },
      { time: 10, cpu: 1, tid: 200 },
      { time: 25, cpu: 0, tid: 300 },
    ]);
    expect(Array.from(list.tid.subarray(0, list.length))).toEqual([-1, 100, 200, 99, 300]);
  });

  it('a path that is no trace is ERR_BTS_FORMAT naming it', () => {
    expect(() => readTraceBranches('/nonexistent/t.dat')).toThrow(BtsError);
    expect(() => readBranchInput('/nonexistent/t.dat', { format: 'trace' })).toThrow(
      /\/nonexistent\/t\.dat: .*cannot open/,
    );
  });
});
