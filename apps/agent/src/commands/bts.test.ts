import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { run } from '../testing/sample-traces.ts';

function has(tool: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const why = !has('cc') ? 'no C compiler (cc)' : !has('qemu-x86_64') ? 'qemu-x86_64 is not installed (qemu-user)' : '';

/** fib(4): 9 calls of fib, nested 4 deep. */
const PROGRAM = `
int __attribute__((noinline)) fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(void) { volatile int r = fib(4); return r == 3 ? 0 : 1; }
`;

describe.skipIf(why !== '')(`evtrace bts on a real program under QEMU${why ? ` (skipped: ${why})` : ''}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-bts-'));
  const exe = join(dir, 'fib');
  writeFileSync(`${exe}.c`, PROGRAM);
  execFileSync('cc', [
    '-O1',
    '-static',
    '-no-pie',
    '-fno-inline',
    '-fno-optimize-sibling-calls',
    '-o',
    exe,
    `${exe}.c`,
  ]);
  const log = join(dir, 'fib.log');
  const nm = execFileSync('nm', [exe], { encoding: 'utf8' });
  const fibAddr = `0x${/^0*([0-9a-f]+) T fib$/m.exec(nm)![1]}`;

  it('record captures through QEMU and says it is a software source and why', async () => {
    const r = await run('bts', 'record', '-o', log, '--', exe);
    expect(r.code).toBe(ExitCode.Ok);
    expect(existsSync(log)).toBe(true);
    expect(r.stderr).toMatch(/software source \(QEMU user mode\): no intel_bts PMU/);
    expect(r.stderr).toMatch(/\d+ branches of .*fib in /);
  });

  it('report --calls nests fib 4 deep under main, with gdb /c indentation', async () => {
    const r = await run('bts', 'report', log, '--calls', '--symbols', exe);
    expect(r.code).toBe(ExitCode.Ok);
    const lines = r.stdout.split('\n').filter((l) => /^\d+\t/.test(l));
    const main = lines.findIndex((l) => /^\d+\t *main$/.test(l));
    const indent = (l: string) => /^\d+\t( *)/.exec(l)![1]!.length / 2;
    const base = indent(lines[main]!);
    const fibs = lines.slice(main + 1).filter((l) => /\tfib$/.test(l.replace(/^\d+\t */, '\t')));
    expect(Math.max(...fibs.map(indent)) - base).toBe(4);
  });

  it('report --json: rows with hex from/to, flags, kind and symbols; calls into fib match nm', async () => {
    const r = await run('bts', 'report', log, '--json', '--last', '5000', '--hot', '--coverage', '--symbols', exe);
    expect(r.code).toBe(ExitCode.Ok);
    const doc = JSON.parse(r.stdout);
    expect(doc.format).toBe('qemu-log');
    const intoFib = doc.last.filter((b: { to: string; kind: string }) => b.to === fibAddr && b.kind === 'call');
    expect(intoFib).toHaveLength(9);
    expect(intoFib[0]).toMatchObject({ to_symbol: 'fib', flags: [] });
    expect(intoFib[0].from).toMatch(/^0x[0-9a-f]+$/);
    expect(doc.coverage.functions.find((f: { name: string }) => f.name === 'fib').entered).toBe(9);
    expect(doc.hot[0].count).toBeGreaterThanOrEqual(doc.hot[1].count);
  });

  it('report --task on a source without task ids is a clear failure; --user keeps everything of a user program', async () => {
    const t = await run('bts', 'report', log, '--task', '1');
    expect(t.code).toBe(ExitCode.Failure);
    expect(t.stderr).toMatch(/does not say which task ran each branch/);
    const all = JSON.parse((await run('bts', 'report', log, '--json')).stdout).branches;
    const user = JSON.parse((await run('bts', 'report', log, '--json', '--user')).stdout).branches;
    expect(user).toBe(all);
    const kernel = JSON.parse((await run('bts', 'report', log, '--json', '--kernel')).stdout).branches;
    expect(kernel).toBe(0);
  });
});

describe('evtrace bts report on other inputs', () => {
  it('perf script text: --task selects one thread; malformed lines are warnings with line and column', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'evtrace-bts-'));
    const file = join(dir, 'perf.txt');
    writeFileSync(
      file,
      [
        ' p 10/11 [000] 1.000000: 0x401010/0x401100/P/-/-/0/CALL/-  0x401000/0x401010/M/-/-/0/COND/- ',
        ' p 10/12 [001] 1.000001: 0x402000/0x402100/P/-/-/0/CALL/- ',
        ' p 10/11 [000] 1.000002: 0x40zz/0x401100/P/-/-/0 ',
      ].join('\n'),
    );
    const r = await run('bts', 'report', file, '--task', '11', '--hot', '--json');
    expect(r.code).toBe(ExitCode.Ok);
    const doc = JSON.parse(r.stdout);
    expect(doc.branches).toBe(2);
    expect(doc.hot.map((e: { from: string; mispredicted: number }) => [e.from, e.mispredicted])).toEqual([
      ['0x401000', 1],
      ['0x401010', 0],
    ]);
    expect(r.stderr).toMatch(/warning: ERR_BTS_SYNTAX: .*perf\.txt, line 3:26: /);
  });

  it('raw records: a truncated file keeps its whole records and warns with the byte offset', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'evtrace-bts-'));
    const file = join(dir, 'x.bts');
    const b = Buffer.alloc(24 * 2 + 7);
    b.writeBigUInt64LE(0xffffffff81000010n, 0);
    b.writeBigUInt64LE(0x401000n, 8);
    b.writeBigUInt64LE(0x10n, 16);
    b.writeBigUInt64LE(0x401000n, 24);
    b.writeBigUInt64LE(0x401100n, 32);
    writeFileSync(file, b);
    const r = await run('bts', 'report', file, '--json', '--format', 'bts64');
    expect(r.code).toBe(ExitCode.Ok);
    const doc = JSON.parse(r.stdout);
    expect(doc.last.map((x: { from: string; flags: string[] }) => [x.from, x.flags])).toEqual([
      ['0xffffffff81000010', ['predicted']],
      ['0x401000', []],
    ]);
    expect(r.stderr).toMatch(/ERR_BTS_TRUNCATED: .*x\.bts, byte 48: truncated 24-byte BTS record/);
    const user = JSON.parse((await run('bts', 'report', file, '--json', '--user')).stdout);
    expect(user.last.map((x: { from: string }) => x.from)).toEqual(['0x401000']);
  });

  it('usage errors exit 2', async () => {
    expect((await run('bts', 'report', 'x', '--user', '--kernel')).code).toBe(ExitCode.Usage);
    expect((await run('bts', 'report', 'x', '--last', '-3')).code).toBe(ExitCode.Usage);
    expect((await run('bts', 'record', '--source', 'magic', 'true')).code).toBe(ExitCode.Usage);
    const missing = await run('bts', 'report', '/nonexistent/x');
    expect(missing.code).toBe(ExitCode.Failure);
    expect(missing.stderr).toMatch(/ERR_BTS_FORMAT: \/nonexistent\/x: cannot read: ENOENT/);
  });

  it('has a manual', async () => {
    const r = await run('bts', 'report', '--help');
    expect(r.stdout).toMatch(/^NAME\n {2}evtrace bts report - /m);
    expect(r.stdout).toMatch(/--last <n>/);
  });
});
