/**
 * `evtrace cat` and `evtrace convert` end to end, beside the tools users already have, on the same file in the same
 * run: process start included, output to /dev/null, or to a file for conversions (and then the peer's too: a
 * conversion to text or JSON lines is beside the peer's text written to a file). Inputs of at least 1 M events:
 * a generated CTF trace (one u64 field, as the trace-format bench writes it) read against `babeltrace2 DIR`, and a
 * trace.dat read against `trace-cmd report`: EVTRACE_BENCH_TRACEDAT names one, else (as root, with tracefs) one is
 * recorded here with `evtrace record -e 'kmem:*'` under `perf bench sched messaging`.
 *
 * Each figure is the median of the rounds (EVTRACE_BENCH_ROUNDS, default 2), the peer and evtrace run one after the
 * other within a round, in alternating order, so that a change in the machine's load falls on both; the ratio is
 * the peer's wall time over evtrace's. Time, CPU and peak RSS come from GNU time (`/usr/bin/time`), the load average
 * from /proc/loadavg before each case. evtrace runs as users run it, by its shebang (with its V8 flags). Run with
 * `node src/commands/end-to-end.bench.ts` after a build. Not a test.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeU64Ctf } from '../testing/u64-ctf.ts';

const CLI = new URL('../../dist/cli.js', import.meta.url).pathname;
const ROUNDS = Number(process.env.EVTRACE_BENCH_ROUNDS ?? 2);
const CTF_EVENTS = 1_000_000;

interface Sample {
  readonly wall: number;
  readonly cpu: number;
  /** Peak resident set, MB. */
  readonly rss: number;
}

/** One command run under GNU time, its standard output to /dev/null (or to the file `stdout`). */
function run(argv: readonly string[], stdout = '/dev/null'): Sample {
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-e2e-time-'));
  try {
    const report = join(dir, 'time');
    const r = spawnSync('/usr/bin/time', ['-f', '%e %U %S %M', '-o', report, ...argv], {
      stdio: ['ignore', openSync(stdout, 'w'), 'pipe'],
      maxBuffer: 1 << 26,
    });
    if (r.status !== 0) throw new Error(`${argv.join(' ')} failed (${r.status}): ${r.stderr.toString().slice(-2000)}`);
    const [wall, user, sys, kb] = readFileSync(report, 'utf8').trim().split('\n').at(-1)!.split(' ').map(Number);
    return { wall: wall!, cpu: user! + sys!, rss: kb! / 1024 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

interface Case {
  readonly input: string;
  readonly what: string;
  /** `toFile`: the peer's standard output goes to the output file, as a conversion's does. */
  readonly peer: { readonly name: string; readonly argv: (out: string) => string[]; readonly toFile?: boolean };
  readonly ours: (out: string) => string[];
}

interface Row {
  readonly c: Case;
  readonly peer: Sample;
  readonly ours: Sample;
  readonly ratio: number;
  readonly load: string;
}

const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

function measure(c: Case, work: string): Row {
  const load = loadAverage();
  const peers: Sample[] = [];
  const ours: Sample[] = [];
  const ratios: number[] = [];
  const runPeer = (out: string) => run(c.peer.argv(out), c.peer.toFile ? out : undefined);
  for (let round = 0; round < ROUNDS; round++) {
    const out = join(work, `out-${round}`);
    const pair = () => {
      rmSync(out, { recursive: true, force: true });
      const p = runPeer(out);
      rmSync(out, { recursive: true, force: true });
      const o = run([CLI, ...c.ours(out)]);
      return [p, o] as const;
    };
    // Alternating order: the one that runs second in a round runs first in the next.
    let p: Sample;
    let o: Sample;
    if (round % 2 === 0) [p, o] = pair();
    else {
      rmSync(out, { recursive: true, force: true });
      o = run([CLI, ...c.ours(out)]);
      rmSync(out, { recursive: true, force: true });
      p = runPeer(out);
    }
    rmSync(out, { recursive: true, force: true });
    peers.push(p);
    ours.push(o);
    ratios.push(p.wall / o.wall);
  }
  const pick = (xs: Sample[]): Sample => ({
    wall: median(xs.map((x) => x.wall)),
    cpu: median(xs.map((x) => x.cpu)),
    rss: Math.max(...xs.map((x) => x.rss)),
  });
  return { c, peer: pick(peers), ours: pick(ours), ratio: median(ratios), load };
}

function print(rows: readonly Row[]): void {
  const lines = [
    '',
    `### evtrace cat and convert end to end (median of ${ROUNDS} rounds; wall s, user+sys s, peak RSS MB)`,
    '',
    '| input | evtrace | time / CPU / RSS | peer | time / CPU / RSS | speedup (peer/evtrace, wall) | RSS over peer | load average |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  const fig = (s: Sample) => `${s.wall.toFixed(2)} s / ${s.cpu.toFixed(2)} s / ${s.rss.toFixed(0)} MB`;
  for (const r of rows) {
    lines.push(
      `| ${r.c.input} | ${r.c.what} | ${fig(r.ours)} | ${r.c.peer.name} | ${fig(r.peer)} | ${r.ratio.toFixed(2)}x | ${(r.ours.rss - r.peer.rss).toFixed(0)} MB | ${r.load} |`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** One million events of one u64 field, LTTng-style compact headers (the trace-format CTF bench's input). */
function writeCtf(dir: string): void {
  writeU64Ctf(dir, CTF_EVENTS);
}

/** A trace.dat of at least 1 M kmem events: the one named, else recorded here (root and tracefs needed). */
function traceDat(work: string): string | undefined {
  const named = process.env.EVTRACE_BENCH_TRACEDAT;
  if (named !== undefined) return named;
  if (process.getuid?.() !== 0) return undefined;
  const file = join(work, 'kmem.dat');
  const r = spawnSync(
    'node',
    [CLI, 'record', '-e', 'kmem:*', '-b', '8192', '-o', file, '--', 'perf', 'bench', 'sched', 'messaging', '-l', '90'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  if (r.status !== 0 || !existsSync(file)) {
    process.stderr.write(`no trace.dat recorded: ${r.stderr.toString().slice(-500)}\n`);
    return undefined;
  }
  // trace-cmd's own v7 zstd layout, as `trace-cmd record` writes it.
  const v7 = join(work, 'kmem7.dat');
  const c = spawnSync('trace-cmd', ['convert', '-i', file, '-o', v7, '--file-version', '7', '--compression', 'zstd']);
  rmSync(file);
  return c.status === 0 ? v7 : undefined;
}

/** Events in a trace: the lines of `evtrace cat --json`, counted as they stream by. */
function countEvents(input: string): number {
  const r = spawnSync('sh', ['-c', 'node "$0" cat --json "$1" | wc -l', CLI, input], { encoding: 'utf8' });
  return Number(r.stdout.trim());
}

export function runEndToEndBenchmarks(): void {
  const work = mkdtempSync(join(tmpdir(), 'evtrace-e2e-'));
  try {
    const rows: Row[] = [];
    const ctf = join(work, 'ctf');
    writeCtf(ctf);
    const bt2 = spawnSync('babeltrace2', ['--version']).status === 0;
    if (bt2) {
      const input = `CTF, ${CTF_EVENTS / 1e6} M events, one u64 field`;
      const text = { name: '`babeltrace2 DIR`', argv: () => ['babeltrace2', ctf] };
      const textFile = { ...text, name: '`babeltrace2 DIR > FILE`', toFile: true };
      const toCtf = {
        name: '`babeltrace2 -c sink.ctf.fs`',
        argv: (out: string) => ['babeltrace2', ctf, '-c', 'sink.ctf.fs', '-p', `path="${out}"`],
      };
      for (const [what, peer, ours] of [
        ['`cat`', text, () => ['cat', ctf]],
        ['`cat --json`', text, () => ['cat', '--json', ctf]],
        ['`cat --filter "value > 500000"`', text, () => ['cat', '--filter', 'value > 500000', ctf]],
        ['`convert --to ctf`', toCtf, (out: string) => ['convert', ctf, '--to', 'ctf', '-o', out]],
        ['`convert --to tracedat`', toCtf, (out: string) => ['convert', ctf, '--to', 'tracedat', '-o', out]],
        ['`convert --to jsonl`', textFile, (out: string) => ['convert', ctf, '--to', 'jsonl', '-o', out]],
      ] as const) {
        rows.push(measure({ input, what, peer, ours }, work));
      }
    } else process.stdout.write('babeltrace2 not installed: CTF cases left out\n');
    const dat = spawnSync('trace-cmd', ['--version']).status !== 127 ? traceDat(work) : undefined;
    if (dat !== undefined) {
      const n = countEvents(dat);
      const input = `trace.dat, ${(n / 1e6).toFixed(2)} M kmem events, ${(statSync(dat).size / 1e6).toFixed(0)} MB`;
      const report = { name: '`trace-cmd report`', argv: () => ['trace-cmd', 'report', dat] };
      const reportFile = { ...report, name: '`trace-cmd report > FILE`', toFile: true };
      const filtered = {
        name: "`trace-cmd report -F 'kmalloc: bytes_req > 256'`",
        argv: () => ['trace-cmd', 'report', '-F', 'kmalloc: bytes_req > 256', dat],
      };
      const convert = {
        name: '`trace-cmd convert`',
        argv: (out: string) => ['trace-cmd', 'convert', '-i', dat, '-o', out],
      };
      for (const [what, peer, ours] of [
        ['`cat`', report, () => ['cat', dat]],
        ['`cat --threads 2`', report, () => ['cat', '--threads', '2', dat]],
        ['`cat --json`', report, () => ['cat', '--json', dat]],
        ['`cat --json --threads 2`', report, () => ['cat', '--json', '--threads', '2', dat]],
        ['`cat --filter "bytes_req > 256"`', filtered, () => ['cat', '--filter', 'bytes_req > 256', dat]],
        [
          '`cat --filter "bytes_req > 256" --threads 2`',
          filtered,
          () => ['cat', '--filter', 'bytes_req > 256', '--threads', '2', dat],
        ],
        ['`convert --to tracedat`', convert, (out: string) => ['convert', dat, '--to', 'tracedat', '-o', out]],
        ['`convert --to ctf`', reportFile, (out: string) => ['convert', dat, '--to', 'ctf', '-o', out]],
        ['`convert --to jsonl`', reportFile, (out: string) => ['convert', dat, '--to', 'jsonl', '-o', out]],
      ] as const) {
        rows.push(measure({ input, what, peer, ours }, work));
      }
    } else process.stdout.write('no trace.dat (set EVTRACE_BENCH_TRACEDAT, or run as root with tracefs)\n');
    print(rows);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) runEndToEndBenchmarks();
