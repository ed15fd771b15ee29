import { describe, expect, it } from 'vitest';
import { BranchList } from './branch.ts';
import { BtsError } from './errors.ts';
import { BranchMultiplexer, selectSpace } from './multiplex.ts';

const USER = 0x401000n;
const KERNEL = 0xffffffff81000000n;

describe('multiplexing one branch stream', () => {
  it('attributes branches to tasks through sched_switch and keeps per-task, per-CPU and global slices', () => {
    const list = new BranchList();
    // CPU 0 runs tid 10, then 20; CPU 1 runs tid 30 throughout.
    list.add(USER, USER + 0x10n, { cpu: 0, time: 100 });
    list.add(USER + 0x20n, USER + 0x30n, { cpu: 1, time: 150 });
    list.add(USER + 0x40n, USER + 0x50n, { cpu: 0, time: 250 });
    list.add(USER + 0x60n, USER + 0x70n, { cpu: 0, time: 300 });
    const mux = new BranchMultiplexer([
      { name: 'tid10', tid: 10 },
      { name: 'tid20', tid: 20 },
      { name: 'proc7', pid: 7 },
      { name: 'cpu1', cpu: 1 },
      { name: 'all' },
    ]);
    mux.pushAll(list, [
      { time: 0, cpu: 0, tid: 10, pid: 7 },
      { time: 0, cpu: 1, tid: 30, pid: 9 },
      { time: 200, cpu: 0, tid: 20, pid: 7 },
    ]);
    const froms = (name: string) =>
      mux
        .context(name)
        .contents()
        .branches.toArray()
        .map((b) => [b.from, b.tid]);
    expect(froms('tid10')).toEqual([[USER, 10]]);
    expect(froms('tid20')).toEqual([
      [USER + 0x40n, 20],
      [USER + 0x60n, 20],
    ]);
    expect(froms('proc7').map(([f]) => f)).toEqual([USER, USER + 0x40n, USER + 0x60n]);
    expect(froms('cpu1')).toEqual([[USER + 0x20n, 30]]);
    expect(mux.context('all').contents().branches.length).toBe(4);
  });

  it('user-only drops kernel branches and the kernel-to-user leak; kernel-only keeps branches from the kernel', () => {
    const list = new BranchList();
    list.add(USER, USER + 4n); // user
    list.add(USER + 8n, KERNEL); // syscall entry: from user
    list.add(KERNEL + 0x10n, KERNEL + 0x20n); // kernel
    list.add(KERNEL + 0x30n, USER + 0xcn); // sysret: the leak into a user trace
    expect(
      selectSpace(list, 'user')
        .toArray()
        .map((b) => b.from),
    ).toEqual([USER, USER + 8n]);
    expect(
      selectSpace(list, 'kernel')
        .toArray()
        .map((b) => b.from),
    ).toEqual([KERNEL + 0x10n, KERNEL + 0x30n]);
    const mux = new BranchMultiplexer([
      { name: 'u', space: 'user' },
      { name: 'k', space: 'kernel' },
    ]);
    mux.pushAll(list);
    expect(mux.context('u').contents().branches.length).toBe(2);
    expect(mux.context('k').contents().branches.length).toBe(2);
  });

  it('keeps each context within its memory budget: the newest branches stay, the overwritten are counted', () => {
    const list = new BranchList();
    for (let i = 0; i < 5000; i++) list.add(USER + BigInt(i), USER + BigInt(i) + 1n, { tid: 1 });
    const mux = new BranchMultiplexer([
      { name: 'small', budgetBytes: 8192 },
      { name: 'big', budgetBytes: 1 << 20 },
    ]);
    mux.pushAll(list);
    const small = mux.context('small');
    const got = small.contents();
    expect(small.budgetBytes).toBe(8192);
    expect(got.branches.length).toBeGreaterThan(0);
    expect(got.branches.length).toBeLessThan(8192 / 28);
    expect(got.lost + got.branches.length).toBe(5000);
    // What survives is the newest, in order.
    const froms = got.branches.toArray().map((b) => b.from);
    expect(froms.at(-1)).toBe(USER + 4999n);
    expect(froms.every((f, k) => k === 0 || f === froms[k - 1]! + 1n)).toBe(true);
    expect(mux.context('big').contents()).toMatchObject({ lost: 0 });
  });

  it('rejects a budget below two pages and duplicate names', () => {
    expect(() => new BranchMultiplexer([{ name: 'x', budgetBytes: 100 }])).toThrow(BtsError);
    expect(() => new BranchMultiplexer([{ name: 'x' }, { name: 'x' }])).toThrow(/two contexts are named x/);
  });
});
