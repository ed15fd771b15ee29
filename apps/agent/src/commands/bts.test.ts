import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { run } from '../testing/sample-traces.ts';
import { expectValid } from '../testing/schemas.ts';

function has(tool: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const why = !has('cc')
  ? 'no C compiler: cc is not installed (apt-get install gcc)'
  : !has('qemu-x86_64')
    ? 'qemu-x86_64 is not installed (apt-get install qemu-user)'
    : '';

/** Builds `exe` from `exe.c`: static, no inlining or sibling calls, so every call in the source is a real branch. */
function compileStatic(exe: string): void {
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
}

/** fib(4): 9 calls of fib, nested 4 deep. */
const PROGRAM = `
int __attribute__((noinline)) fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(void) { volatile int r = fib(4); return r == 3 ? 0 : 1; }
`;

describe.skipIf(why !== '')(`evtrace bts on a real program under QEMU${why ? ` (skipped: ${why})` : ''}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-bts-'));
  const exe = join(dir, 'fib');
  const log = join(dir, 'fib.log');
  // Compiled before the tests, not while they are collected: a skipped suite is collected too.
  let fibAddr = '';
  beforeAll(() => {
    writeFileSync(`${exe}.c`, PROGRAM);
    compileStatic(exe);
    const nm = execFileSync('nm', [exe], { encoding: 'utf8' });
    fibAddr = `0x${/^0*([0-9a-f]+) T fib$/m.exec(nm)![1]}`;
  }, 60_000);

  it('record captures through QEMU and says it is a software source and why', async () => {
    const r = await run('bts', 'record', '-o', log, '--', exe);
    expect(r.code).toBe(ExitCode.Ok);
    expect(existsSync(log)).toBe(true);
    expect(r.stderr).toMatch(/software source \(QEMU user mode\): no intel_bts PMU/);
    expect(r.stderr).toMatch(
      /perf_event_open\(cycles sampling branch stacks, user space\): (ok|the kernel says E[A-Z]+)/,
    );
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
    const r = await run(
      'bts',
      'report',
      log,
      '--json',
      '--last',
      '5000',
      '--hot',
      '--coverage',
      '--calls',
      '--symbols',
      exe,
    );
    expect(r.code).toBe(ExitCode.Ok);
    const doc = JSON.parse(r.stdout);
    expectValid('@evtrace/hw-bts/schemas/report.json', doc);
    expect(doc.format).toBe('qemu-log');
    const intoFib = doc.last.filter((b: { to: string; kind: string }) => b.to === fibAddr && b.kind === 'call');
    expect(intoFib).toHaveLength(9);
    expect(intoFib[0]).toMatchObject({ to_symbol: 'fib', flags: [] });
    expect(intoFib[0].from).toMatch(/^0x[0-9a-f]+$/);
    expect(doc.coverage.functions.find((f: { name: string }) => f.name === 'fib').entered).toBe(9);
    expect(doc.hot[0].count).toBeGreaterThanOrEqual(doc.hot[1].count);
  });

  it('report --symbols on a PIE finds its load address from the trace and names addresses with offsets', async () => {
    const pie = join(dir, 'fibpie');
    execFileSync('cc', ['-O1', '-fPIE', '-pie', '-fno-inline', '-fno-optimize-sibling-calls', '-o', pie, `${exe}.c`]);
    const pieLog = join(dir, 'pie.log');
    expect((await run('bts', 'record', '-o', pieLog, '--', pie)).code).toBe(ExitCode.Ok);
    const r = await run('bts', 'report', pieLog, '--json', '--last', '100000', '--symbols', pie);
    expect(r.code).toBe(ExitCode.Ok);
    expect(r.stderr).toMatch(/--symbols .*fibpie: loaded at 0x[0-9a-f]+000 \(from the calls the trace names\)/);
    const rows = JSON.parse(r.stdout).last as { from_symbol?: string; to_symbol?: string; kind: string }[];
    // QEMU names blocks without offsets: an offset proves the ELF's own table at the inferred address did it.
    expect(rows.some((b) => /^fib\+0x[0-9a-f]+$/.test(b.from_symbol ?? ''))).toBe(true);
    expect(rows.filter((b) => b.kind === 'call' && b.to_symbol === 'fib')).toHaveLength(9);
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

const CRASH = `
void __attribute__((noinline)) c(volatile int *p) { *p = 1; }
void __attribute__((noinline)) b(volatile int *p) { c(p); }
void __attribute__((noinline)) a(volatile int *p) { b(p); }
int main(void) { a(0); return 0; }
`;

describe.skipIf(why !== '')(`evtrace bts: where a program died${why ? ` (skipped: ${why})` : ''}`, () => {
  it('record reports the crash; report --last 3 shows the calls that led to it: main -> a -> b -> c', () => {
    const dir = mkdtempSync(join(tmpdir(), 'evtrace-bts-crash-'));
    const exe = join(dir, 'crash');
    writeFileSync(`${exe}.c`, CRASH);
    compileStatic(exe);
    const cli = new URL('../../dist/cli.js', import.meta.url).pathname;
    // The built CLI in a shell without core dumps, in the temporary directory (QEMU would write its core there).
    const sh = (args: string) =>
      spawnSync('sh', ['-c', `ulimit -c 0; cd '${dir}' && '${process.execPath}' '${cli}' ${args}`], {
        encoding: 'utf8',
      });
    const rec = sh(`bts record -o crash.log -- ./crash`);
    expect(rec.status).toBe(ExitCode.Failure);
    expect(rec.stderr).toMatch(/crash was killed by SIGSEGV/);
    const rep = sh(`bts report crash.log --last 3 --json --symbols ./crash`);
    expect(rep.status).toBe(ExitCode.Ok);
    const last = JSON.parse(rep.stdout).last;
    expect(
      last.map((b: { from_symbol: string; to_symbol: string; kind: string }) => [
        b.from_symbol.replace(/\+.*/, ''),
        b.to_symbol,
        b.kind,
      ]),
    ).toEqual([
      ['main', 'a', 'call'],
      ['a', 'b', 'call'],
      ['b', 'c', 'call'],
    ]);
  });
});

describe.skipIf(!has('trace-cmd'))(
  `evtrace bts on a trace with bts:branch and sched_switch${has('trace-cmd') ? '' : ' (skipped: trace-cmd is not installed: apt-get install trace-cmd)'}`,
  () => {
    it('attributes every branch to the task sched_switch says ran it: the pid trace-cmd reports for each event', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'evtrace-bts-trace-'));
      const dat = join(dir, 'demo.dat');
      const rec = await run(
        'record',
        '--demo',
        '-e',
        'bts:branch',
        '-e',
        'sched:sched_switch',
        '--duration',
        '300ms',
        '-o',
        dat,
      );
      expect(rec.code).toBe(ExitCode.Ok);
      // trace-cmd's view: each branch event with the pid the demo source stamped into it (common_pid), per CPU.
      const report = execFileSync('trace-cmd', ['report', dat], { maxBuffer: 1 << 28, encoding: 'utf8' });
      const theirs = new Map<number, string[]>();
      for (const m of report.matchAll(
        /-(\d+)\s+\[(\d+)\]\s+[\d.]+: branch:\s+from=(0x[0-9a-f]+) to=(0x[0-9a-f]+) flags=0x(\d+)/g,
      )) {
        const cpu = Number(m[2]);
        const flags = m[5] === '10' ? 'predicted' : 'mispredicted';
        let list = theirs.get(cpu);
        if (list === undefined) theirs.set(cpu, (list = []));
        list.push(`${m[1]} ${m[3]} ${m[4]} ${flags}`);
      }
      const total = [...theirs.values()].reduce((n, l) => n + l.length, 0);
      expect(total).toBeGreaterThan(100);
      const r = await run('bts', 'report', dat, '--json', '--last', String(total));
      expect(r.code).toBe(ExitCode.Ok);
      const doc = JSON.parse(r.stdout);
      expectValid('@evtrace/hw-bts/schemas/report.json', doc);
      expect(doc.format).toBe('trace');
      const ours = new Map<number, string[]>();
      for (const b of doc.last as { tid: number; cpu: number; from: string; to: string; flags: string[] }[]) {
        let list = ours.get(b.cpu);
        if (list === undefined) ours.set(b.cpu, (list = []));
        list.push(`${b.tid} ${b.from} ${b.to} ${b.flags[0]}`);
      }
      expect([...ours.keys()].sort()).toEqual([...theirs.keys()].sort());
      for (const [cpu, lines] of theirs) expect(ours.get(cpu)).toEqual(lines);
      // --task keeps exactly that task's branches.
      const [tid] = theirs.get(0)![0]!.split(' ');
      const one = JSON.parse(
        (await run('bts', 'report', dat, '--json', '--task', tid!, '--last', String(total))).stdout,
      );
      const expected = [...theirs.values()].flat().filter((l) => l.startsWith(`${tid} `)).length;
      expect(one.branches).toBe(expected);
    }, 60_000);
  },
);

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
    expectValid('@evtrace/hw-bts/schemas/report.json', doc);
    expect(doc.branches).toBe(2);
    // perf script gives each branch its sample's time: a 64-bit nanosecond count, written as a decimal string.
    expect(doc.hot.map((e: { time_ns: string }) => e.time_ns)).toEqual(['1000000000', '1000000000']);
    expect(doc.hot.map((e: { from: string; mispredicted: number }) => [e.from, e.mispredicted])).toEqual([
      ['0x401000', 1],
      ['0x401010', 0],
    ]);
    expect(r.stderr).toMatch(/warning: ERR_BTS_SYNTAX: .*perf\.txt:3:26: /);
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
      ['0x401000', ['mispredicted']],
    ]);
    expect(r.stderr).toMatch(/ERR_BTS_TRUNCATED: .*x\.bts: byte 48: truncated 24-byte BTS record/);
    const user = JSON.parse((await run('bts', 'report', file, '--json', '--user')).stdout);
    expect(user.last.map((x: { from: string }) => x.from)).toEqual(['0x401000']);
  });

  it('usage errors exit 2', async () => {
    expect((await run('bts', 'report', 'x', '--user', '--kernel')).code).toBe(ExitCode.Usage);
    expect((await run('bts', 'report', 'x', '--last', '-3')).code).toBe(ExitCode.Usage);
    expect((await run('bts', 'record', '--source', 'magic', 'true')).code).toBe(ExitCode.Usage);
    const missing = await run('bts', 'report', '/nonexistent/x');
    expect(missing.code).toBe(ExitCode.Failure);
    expect(missing.stderr).toMatch(/ERR_BTS_FORMAT: \/nonexistent\/x: cannot open: ENOENT/);
  });

  let pmus: string[] = [];
  try {
    pmus = readdirSync('/sys/bus/event_source/devices');
  } catch {}
  it.skipIf(pmus.includes('intel_bts'))(
    `record --source hardware says why it cannot run where sysfs has no intel_bts PMU${pmus.includes('intel_bts') ? ' (skipped: this machine has BTS)' : ''}`,
    async () => {
      const r = await run('bts', 'record', '--source', 'hardware', '-o', join(tmpdir(), 'never.data'), '--', 'true');
      expect(r.code).toBe(ExitCode.Failure);
      expect(r.stderr).toMatch(
        /ERR_BTS_UNSUPPORTED: no intel_bts PMU in \/sys\/bus\/event_source\/devices \(present: /,
      );
      for (const pmu of pmus) expect(r.stderr).toContain(pmu);
    },
  );

  it('has a manual', async () => {
    const r = await run('bts', 'report', '--help');
    expect(r.stdout).toMatch(/^NAME\n {2}evtrace bts report - /m);
    expect(r.stdout).toMatch(/--last <n>/);
  });
});
