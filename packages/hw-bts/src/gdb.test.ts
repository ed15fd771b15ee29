import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BtsError } from './errors.ts';
import { parseGdbCallHistory, parseGdbInstructionHistory } from './gdb.ts';

// Hand-written samples, shaped like gdb's own output (gdb manual, "Process Record and Replay"): number, tab,
// indentation (/c), function, tab-separated `inst A,B` (/i) and `at FILE:L,L` (/l); instructions as
// `N<TAB>   0xADDR <func+off>:<TAB>insn`. gdb prints these histories only from `record btrace`, which needs BTS or
// Intel PT: gdb-record.test.ts reads gdb's own where it runs, and judges instruction-history by gdb's `record full`
// replay everywhere; these samples keep the formats' corners (gaps, /c levels) covered where btrace cannot run.
const CALLS = [
  '1\tmain\tinst 1,4\tat fib.c:3,3',
  '2\t  fib\tinst 5,9',
  '3\t    fib\tinst 10,14',
  '4\t  fib\tinst 15,16',
  '5\tmain\tinst 17,20',
].join('\n');

const INSNS = [
  '1\t   0x0000000000401136 <main+0>:\tsub    $0x8,%rsp',
  '2\t   0x000000000040113a <main+4>:\tmov    $0x6,%edi',
  '3\t   0x000000000040113f <main+9>:\tcall   0x401106 <fib>',
  '4\t   0x0000000000401106 <fib+0>:\tcmp    $0x1,%edi',
  '5\t   0x0000000000401109 <fib+3>:\tjg     0x401110 <fib+10>',
  '6\t   0x000000000040110b <fib+5>:\tmov    %edi,%eax',
  '7\t   0x000000000040110d <fib+7>:\tjmp    0x401120 <fib+26>',
  '8\t   0x0000000000401120 <fib+26>:\tret    ',
  '[decode error (1): instruction overflow]',
  '9\t   0x0000000000401144 <main+14>:\tje     0x401150 <main+26>',
  '10\t=> 0x0000000000401150 <main+26>:\tret    ',
].join('\n');

describe("gdb's histories (hand-written samples)", () => {
  it('reads function-call-history /ilc: levels from indentation, instruction ranges, names', () => {
    const h = parseGdbCallHistory(CALLS);
    expect(h.problems).toEqual([]);
    expect(h.segments.map((s) => [s.number, s.level, s.name, s.firstBranch, s.lastBranch])).toEqual([
      [1, 0, 'main', 0, 3],
      [2, 1, 'fib', 4, 8],
      [3, 2, 'fib', 9, 13],
      [4, 1, 'fib', 14, 15],
      [5, 0, 'main', 16, 19],
    ]);
  });

  it('derives taken branches from instruction-history: calls, jumps, taken conditionals; a gap breaks the chain', () => {
    const d = parseGdbInstructionHistory(INSNS);
    expect(d.problems).toEqual([]);
    expect(d.branches.toArray().map((b) => [b.from, b.to, b.kind, b.toName])).toEqual([
      [0x40113fn, 0x401106n, 'call', 'fib+0'],
      [0x40110dn, 0x401120n, 'jump', 'fib+26'],
      [0x401144n, 0x401150n, 'cond', 'main+26'],
    ]);
    expect(d.notes).toEqual(['line 9: [decode error (1): instruction overflow]']);
  });

  it('reports malformed numbered lines with line and column', () => {
    const d = parseGdbInstructionHistory('1\t   0x401000 <a+0>:\tnop\n2\tgarbage here\n3\t   0x401001 <a+1>:\tret');
    expect(d.problems.map((p) => [p.code, p.line, p.column])).toEqual([['ERR_BTS_SYNTAX', 2, 3]]);
    const c = parseGdbCallHistory('1\tmain\nx\tfib\n', { source: 'h.txt' });
    expect(c.segments).toHaveLength(1);
    expect(c.problems[0]!.message).toBe(
      'h.txt:2:1: malformed function-call-history line: expected "N<TAB>[indent]FUNCTION"',
    );
  });

  it('fuzz: mutated histories give only typed problems', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(CALLS, INSNS),
        fc.array(fc.tuple(fc.nat(600), fc.string({ maxLength: 3 })), { maxLength: 8 }),
        (base, edits) => {
          let text = base;
          for (const [at, s] of edits) text = text.slice(0, at) + s + text.slice(at + 1);
          for (const p of [...parseGdbCallHistory(text).problems, ...parseGdbInstructionHistory(text).problems])
            expect(p).toBeInstanceOf(BtsError);
        },
      ),
    );
  });
});
