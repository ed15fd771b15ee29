import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { BranchFlag, type BranchList } from './branch.ts';
import { decodePerfData } from './perf-data.ts';
import { parsePerfScript } from './perf-script.ts';
import { parseQemuLog } from './qemu.ts';
import { Symbolizer } from './symbols.ts';
import { writeBranchPerfData } from './testing/perf-data-writer.ts';
import { buildProgram, hasTool, qemuLog, qemuMissing } from './testing/programs.ts';

const why = qemuMissing() || (hasTool('perf') ? '' : 'perf is not installed (apt-get install linux-perf)');

/**
 * perf itself as the judge: the branches of a real program (QEMU) go into a perf.data as LBR branch stacks, and
 * `perf script` prints them in its own brstack / brstacksym format (perf 6.1 here: FROM/TO/M|P|-/X|-/A|-/CYCLES/TYPE).
 */
describe.skipIf(why !== '')(`perf script on branch stacks of a real program${why ? ` (skipped: ${why})` : ''}`, () => {
  // Built, traced and written before the tests, not while they are collected: a skipped suite is collected too.
  let exe = '';
  let list: BranchList;
  let data = '';
  beforeAll(() => {
    exe = buildProgram();
    list = parseQemuLog(readFileSync(qemuLog(exe), 'utf8')).branches;
    for (let i = 0; i < list.length; i++) {
      list.flags[i] = i % 3 === 0 ? BranchFlag.mispredicted : BranchFlag.predicted;
      list.cycles[i] = i % 50;
    }
    data = `${exe}.perf.data`;
    writeBranchPerfData(data, {
      exe,
      mapStart: 0x400000n,
      mapLength: 0x200000n,
      pgoff: 0n,
      pid: 4242,
      comm: 'prog',
      branches: list,
      perStack: 16,
    });
  }, 60_000);
  const script = (fields: string) =>
    execFileSync('perf', ['script', '-i', data, '-F', fields], {
      maxBuffer: 1 << 28,
      stdio: ['ignore', 'pipe', 'ignore'],
    }).toString();

  it('parses perf script -F pid,tid,cpu,time,brstack back into exactly the branches perf was given', () => {
    const d = parsePerfScript(script('pid,tid,cpu,time,brstack'));
    expect(d.problems).toEqual([]);
    expect(d.branches.length).toBe(list.length);
    const kindAsPerfSaysIt = (i: number) => (list.kindOf(i) === 'other' ? 'unknown' : list.kindOf(i));
    for (let i = 0; i < list.length; i++) {
      const b = d.branches.at(i);
      const a = list.at(i);
      expect([b.from, b.to, b.flags, b.kind, b.cycles ?? 0, b.tid, b.cpu]).toEqual([
        a.from,
        a.to,
        a.flags,
        kindAsPerfSaysIt(i),
        a.cycles ?? 0,
        4242,
        0,
      ]);
    }
  });

  it('decodes the branch stacks of that perf.data itself, as perf script reads them', () => {
    const ours = decodePerfData(readFileSync(data), { source: data });
    expect(ours.problems).toEqual([]);
    const perf = parsePerfScript(script('pid,tid,cpu,time,brstack')).branches;
    expect(ours.branches.length).toBe(perf.length);
    for (let i = 0; i < perf.length; i++) {
      const a = ours.branches.at(i);
      const b = perf.at(i);
      expect([a.from, a.to, a.flags, a.kind, a.cycles, a.tid, a.cpu]).toEqual([
        b.from,
        b.to,
        b.flags,
        b.kind,
        b.cycles,
        b.tid,
        b.cpu,
      ]);
    }
  });

  it('names every address as perf script -F brstacksym does (perf reads the same ELF)', () => {
    const d = parsePerfScript(script('brstacksym'), { field: 'brstacksym' });
    expect(d.problems).toEqual([]);
    expect(d.branches.length).toBe(list.length);
    const symbols = new Symbolizer().addElf(exe);
    let compared = 0;
    for (let i = 0; i < list.length; i++) {
      const ours = [symbols.format(list.fromHi[i]!, list.fromLo[i]!), symbols.format(list.toHi[i]!, list.toLo[i]!)];
      const perfs = [d.branches.fromName[i], d.branches.toName[i]].map((n) => (n === '[unknown]' ? undefined : n));
      // perf always writes +0x0 at a function's first byte.
      expect(perfs.map((n) => n?.replace(/\+0x0$/, ''))).toEqual(ours);
      compared += 2;
    }
    expect(compared).toBe(2 * list.length);
  });
});
