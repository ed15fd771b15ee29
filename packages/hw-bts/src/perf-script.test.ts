import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BtsError } from './errors.ts';
import { parsePerfScript } from './perf-script.ts';

// Lines as perf script prints them (tools/perf/Documentation/perf-script.txt): a sample's header fields, then its
// branch stack newest first, each entry FROM/TO/M|P|-/X|-/A|-/CYCLES (before 5.18) or with /TYPE/SPEC (5.18 on).
const OLD = [
  '            prog  4321/4322  [002]  1234.000500:  0x401136/0x401100/P/-/-/12  0x401120/0x401136/M/-/-/3  0x401000/0x401120/P/X/A/0 ',
  '            prog  4321/4322  [002]  1234.000900:  0x401150/0x401000/P/-/-/7 ',
].join('\n');
const NEW = [
  '# ========',
  '# captured on    : Sun Nov 22 06:00:00 2026',
  '            prog  4321/4322  [001]  99.5:  0xffffffff81000010/0x7f0000001000/P/-/-/5/SYSRET/-  0x7f0000000ff0/0xffffffff81000000/-/-/-/0/SYSCALL/-  0x401000/0x7f0000000fe0/P/-/-/0/CALL/- ',
  " instruction trace error type 1 time 99.6 cpu 1 pid 4321 tid 4322 ip 0x401000 code 6: Trace doesn't match instruction",
  '            prog  4321/4322  [001]  99.7:  0x7f0000001010/0x401005/P/-/-/9/RET/NON_SPEC_CORRECT_PATH  0x401000/0x401000/-/-/-/0/N/A/- ',
].join('\n');

describe('perf script branch stacks', () => {
  it('reads the pre-5.18 layout: newest-first stacks appended oldest first, flags, cycles, task, CPU and time', () => {
    const d = parsePerfScript(OLD);
    expect(d.problems).toEqual([]);
    const rows = d.branches.toArray();
    expect(rows.map((b) => [b.from, b.to, b.flags, b.cycles])).toEqual([
      [0x401000n, 0x401120n, ['predicted', 'inTx', 'abort'], undefined],
      [0x401120n, 0x401136n, ['mispredicted'], 3],
      [0x401136n, 0x401100n, ['predicted'], 12],
      [0x401150n, 0x401000n, ['predicted'], 7],
    ]);
    expect(rows.every((b) => b.tid === 4322 && b.cpu === 2)).toBe(true);
    expect(rows[0]!.time).toBe(1234_000_500_000);
  });

  it('reads the 5.18+ layout with TYPE and SPEC, and keeps error lines as notes', () => {
    const d = parsePerfScript(NEW);
    expect(d.problems).toEqual([]);
    expect(d.branches.toArray().map((b) => [b.from, b.to, b.kind])).toEqual([
      [0x401000n, 0x7f0000000fe0n, 'call'],
      [0x7f0000000ff0n, 0xffffffff81000000n, 'syscall'],
      [0xffffffff81000010n, 0x7f0000001000n, 'sysret'],
      [0x401000n, 0x401000n, 'unknown'],
      [0x7f0000001010n, 0x401005n, 'return'],
    ]);
    expect(d.notes[0]).toMatch(/^line 4: instruction trace error type 1/);
    expect(d.notes.at(-1)).toMatch(/1 trace error lines/);
  });

  it('reads brstacksym names and brstackoff DSO offsets', () => {
    const sym = parsePerfScript('  a 1/1 [000] 1.0: main+0x12/fib+0x0/P/-/-/0  fib+0x2a(/tmp/prog)/[unknown]/-/-/-/0 ');
    expect(sym.problems).toEqual([]);
    expect(sym.branches.toArray().map((b) => [b.fromName, b.toName])).toEqual([
      ['fib+0x2a', '[unknown]'],
      ['main+0x12', 'fib+0x0'],
    ]);
    const off = parsePerfScript('  a 1/1 [000] 1.0: 0x1136(/tmp/prog)/0x1100(/tmp/prog)/P/-/-/0 ', {
      field: 'brstackoff',
    });
    expect(off.branches.toArray().map((b) => [b.from, b.fromName, b.to])).toEqual([
      [0x1136n, '/tmp/prog+0x1136', 0x1100n],
    ]);
  });

  it('reports malformed entries with line and column and keeps the valid entries of the same line', () => {
    const text = [
      '  a 1/1 [000] 1.0: 0x401136/0x401100/P/-/-/1  0x4011zz/0x401136/P/-/-/2  0x401000/0x401120/P/-/-/3 ',
      '  a 1/1 [000] 2.0: 0x401136/0x401100/Q/-/-/1 ',
      '  a 1/1 [000] 3.0: 0x401000/0x401120/P/-/-/3/BOGUS/- ',
    ].join('\n');
    const d = parsePerfScript(text, { source: 'p.txt' });
    expect(d.branches.length).toBe(2);
    const lines = text.split('\n');
    // Columns are 1-based and point at the bad entry or field.
    expect(d.problems.map((p) => [p.code, p.line, p.column])).toEqual([
      ['ERR_BTS_SYNTAX', 1, lines[0]!.indexOf('0x4011zz') + 1],
      ['ERR_BTS_SYNTAX', 2, lines[1]!.indexOf('0x401136') + 1],
      ['ERR_BTS_SYNTAX', 3, lines[2]!.indexOf('BOGUS') + 1],
    ]);
    expect(d.problems[0]!.message).toMatch(/malformed address in branch entry '0x4011zz\/0x401136'/);
    expect(d.problems[2]!.message).toBe(`p.txt:3:${lines[2]!.indexOf('BOGUS') + 1}: unknown branch type 'BOGUS'`);
  });

  it('fuzz: mutated perf lines give only typed problems and never more branches than entries', () => {
    const base = `${OLD}\n${NEW}`;
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(base.length), fc.string({ maxLength: 3 })), { maxLength: 8 }), (edits) => {
        let text = base;
        for (const [at, s] of edits) text = text.slice(0, at) + s + text.slice(at + 1);
        const d = parsePerfScript(text);
        for (const p of d.problems) expect(p).toBeInstanceOf(BtsError);
        expect(d.branches.length).toBeLessThanOrEqual((text.match(/\//g) ?? []).length);
      }),
    );
  });
});
