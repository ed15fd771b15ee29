import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { callHistory, edgeCoverage, hotEdges, lastBranches } from './analyses.ts';
import type { BranchList, Decoded } from './branch.ts';
import { readElfSymbols } from './elf.ts';
import { BtsError } from './errors.ts';
import { FunctionNames } from './names.ts';
import { captureQemu, parseQemuLog } from './qemu.ts';
import { inferLoadBias, Symbolizer } from './symbols.ts';
import { buildProgram, PROGRAM, qemuLog, qemuMissing } from './testing/programs.ts';

const why = qemuMissing();

describe.skipIf(why !== '')(`QEMU software source on a real program${why ? ` (skipped: ${why})` : ''}`, () => {
  // Built and traced before the tests, not while they are collected: a skipped suite is collected too.
  let exe = '';
  let decoded: Decoded;
  let symbols: Symbolizer;
  let list: BranchList;
  let names: FunctionNames;
  beforeAll(() => {
    exe = buildProgram();
    decoded = parseQemuLog(readFileSync(qemuLog(exe), 'utf8'), { source: 'log' });
    symbols = new Symbolizer().addElf(exe);
    list = decoded.branches;
    names = new FunctionNames(list, symbols);
  }, 60_000);

  it('derives branches with no problems and labels the source as software', () => {
    expect(decoded.problems).toEqual([]);
    expect(decoded.notes[0]).toMatch(/software source: QEMU/);
    expect(list.length).toBeGreaterThan(1000);
  });

  it('sees fib called 25 times (fib(6)) and nested 6 deep below main, as the program is written', () => {
    const segs = callHistory(list, symbols);
    const main = segs.findIndex((s) => s.name === 'main');
    expect(main).toBeGreaterThanOrEqual(0);
    const base = segs[main]!.level;
    const below: typeof segs = [];
    for (let s = main + 1; s < segs.length && segs[s]!.level > base; s++) below.push(segs[s]!);
    const fibs = below.filter((s) => s.name === 'fib');
    const calls = [...Array(list.length).keys()].filter(
      (i) => list.kindOf(i) === 'call' && names.name(names.id(i, 1)) === 'fib',
    );
    expect(calls.length).toBe(25);
    expect(Math.max(...fibs.map((s) => s.level - base))).toBe(6);
    // Every fib call returns: as many return branches out of fib.
    const rets = [...Array(list.length).keys()].filter(
      (i) => list.kindOf(i) === 'return' && names.name(names.id(i, 0)) === 'fib',
    );
    expect(rets.length).toBe(25);
  });

  it("counts spin's loop back edge 99 times (100 iterations, the first entered from above)", () => {
    const inSpin = hotEdges(list).filter(
      (e) => names.name(names.id(e.example, 0)) === 'spin' && names.name(names.id(e.example, 1)) === 'spin',
    );
    expect(inSpin.map((e) => e.count)).toContain(99);
    const cov = edgeCoverage(list, symbols);
    expect(cov.functions.find((f) => f.name === 'fib')?.entered).toBe(25);
    expect(cov.functions.find((f) => f.name === 'spin')?.entered).toBe(1);
  });

  it('symbolizes like nm: every fib/spin/main address lies inside the symbol nm reports', () => {
    const nm = execFileSync('nm', ['--defined-only', exe], { encoding: 'utf8' });
    const addr = (name: string) => BigInt(`0x${new RegExp(`^([0-9a-f]+) T ${name}$`, 'm').exec(nm)![1]}`);
    for (const name of ['main', 'fib', 'spin']) {
      const a = addr(name);
      const [hi, lo] = [Number(a >> 32n), Number(a & 0xffffffffn)];
      expect(symbols.format(hi, lo)).toBe(name);
      expect(symbols.format(hi, lo + 3)).toBe(`${name}+0x3`);
    }
    // The last branches end in the exit path, and an address outside every symbol is undefined, not a guess.
    expect(lastBranches(list, 10)).toHaveLength(10);
    expect(symbols.lookup(0, 0x10)).toBeUndefined();
  });

  it('captureQemu runs the program and writes the log', async () => {
    const log = `${exe}.capture.log`;
    const r = await captureQemu(exe, [], { log, stdio: 'ignore' });
    expect(r.status).toBe(0);
    expect(parseQemuLog(readFileSync(log, 'utf8')).branches.length).toBe(list.length);
  });
});

describe('QEMU log problems', () => {
  it('reports a malformed Trace line with its line and column, keeping the branches around it', () => {
    const log = [
      'IN: a',
      '0x00401000:  e8 fb 0f 00 00           callq    0x402000',
      '',
      'Trace 0: 0x7f00 [0000000000000000/0000000000401000/1040c0b3/00000200] a',
      'IN: b',
      '0x00402000:  c3                       retq     ',
      '',
      'Trace 0: 0x7f01 [0000000000000000/0000000000402000/1040c0b3/00000200] b',
      'Trace 0: 0x7f02 [0000000000000000/zz/1040c0b3/00000200] b',
      'Trace 0: 0x7f03 [0000000000000000/0000000000401005/1040c0b3/00000200] a',
    ].join('\n');
    const d = parseQemuLog(log, { source: 'x.log' });
    expect(d.problems.map((p) => [p.code, p.line, p.column])).toEqual([['ERR_BTS_SYNTAX', 9, 18]]);
    expect(d.problems[0]!.message).toMatch(/^x\.log:9:18: malformed QEMU exec line/);
    expect(d.branches.toArray().map((b) => [b.from, b.to, b.kind])).toEqual([
      [0x401000n, 0x402000n, 'call'],
      [0x402000n, 0x401005n, 'return'],
    ]);
  });
});

describe('QEMU log fuzz', () => {
  const log = [
    'IN: a',
    '0x00401000:  e8 fb 0f 00 00           callq    0x402000',
    '',
    'Trace 0: 0x7f00 [0000000000000000/0000000000401000/1040c0b3/00000200] a',
    'IN: b',
    '0x00402000:  f3 a4                    rep movsb (%rsi), (%rdi)',
    '0x00402002:  c3                       retq     ',
    '',
    'Trace 0: 0x7f01 [0000000000000000/0000000000402000/1040c0b3/00000200] b',
    'Trace 0: 0x7f03 [0000000000000000/0000000000401005/1040c0b3/00000200] a',
  ].join('\n');

  it('mutated logs give only typed problems, and never more branches than Trace lines', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(log.length), fc.string({ maxLength: 4 })), { maxLength: 10 }), (edits) => {
        let text = log;
        for (const [at, s] of edits) text = text.slice(0, at) + s + text.slice(at + 1);
        const d = parseQemuLog(text);
        for (const p of d.problems) expect(p).toBeInstanceOf(BtsError);
        expect(d.branches.length).toBeLessThanOrEqual((text.match(/Trace /g) ?? []).length);
      }),
    );
  });
});

describe.skipIf(why !== '')(`a position-independent program under QEMU${why ? ` (skipped: ${why})` : ''}`, () => {
  it("finds the load bias from the trace's named calls: the one QEMU's own memory map gives", () => {
    const dir = mkdtempSync(join(tmpdir(), 'hw-bts-pie-'));
    const exe = join(dir, 'pie');
    writeFileSync(`${exe}.c`, PROGRAM);
    execFileSync('cc', ['-O1', '-fPIE', '-pie', '-fno-inline', '-fno-optimize-sibling-calls', '-o', exe, `${exe}.c`]);
    const log = `${exe}.log`;
    execFileSync('qemu-x86_64', ['-d', 'in_asm,exec,nochain,page', '-D', log, exe]);
    const text = readFileSync(log, 'utf8');
    // QEMU's map: start_code is where the executable segment went; readelf says where it was linked.
    const startCode = BigInt(/^start_code\s+(0x[0-9a-f]+)$/m.exec(text)![1]!);
    const load = execFileSync('readelf', ['-lW', exe], { encoding: 'utf8' })
      .split('\n')
      .find((l) => /^\s*LOAD\b.*\sR E\s/.test(l))!;
    const vaddr = BigInt(load.trim().split(/\s+/)[2]!);
    const elf = readElfSymbols(readFileSync(exe), exe);
    expect(elf.type).toBe(3);
    const bias = inferLoadBias(parseQemuLog(text).branches, elf);
    expect(bias).toBe(startCode - vaddr);
  });
});
