/**
 * Recording under load, evtrace beside trace-cmd in the same run: `perf bench sched messaging -g 4 -l 500` (about
 * 1.7 M kmem:kmalloc + kmem:kfree events) while each tool records at the default per-CPU buffer and its own default
 * priority settings. Prints, per tool: events seen, lost, CPU seconds split into user and system (of the recorder and
 * every child it waits for, from GNU time: trace-cmd's per-CPU recorder processes are counted), the total to the
 * millisecond from `perf stat -e task-clock` around it (GNU time counts in 10 ms steps, as large as the difference
 * being measured), bytes per event, and evtrace's total CPU as a ratio of trace-cmd's. trace-cmd records the top-level buffer and leaves its `tracing_on`
 * at 0: it is restored here. `EVTRACE_BENCH_ROUNDS=3` repeats the whole comparison (default 1); the load average is
 * printed before each round, since the figures move with other work on the machine.
 *
 * Run as root: `node src/record/record.bench.ts` (the package's `bench` script). Not a test.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromTotal, printComparisons } from '@evtrace/bench';
import { listInstances } from '../instance/instance.ts';
import { findTracefs } from '../instance/mount.ts';

const LOAD = ['bench', 'sched', 'messaging', '-g', '4', '-l', process.env.EVTRACE_BENCH_LOOPS ?? '500'];
const EVENTS = ['kmem:kmalloc', 'kmem:kfree'];
// The built `evtrace` when there is one (what users run), else the sources.
const BUILT = new URL('../../../../apps/agent/dist/cli.js', import.meta.url).pathname;
const CLI = existsSync(BUILT) ? BUILT : new URL('../../../../apps/agent/src/cli.ts', import.meta.url).pathname;

interface Run {
  tool: string;
  seen: number;
  lost: number;
  userS: number;
  sysS: number;
  /** Total CPU seconds from task-clock (the tool and its children, and GNU time's own few hundred microseconds). */
  totalS: number;
  bytes: number;
}

const cpuS = (r: Run) => r.totalS;

/** The task-clock milliseconds in `perf stat -x,` output (NaN when absent). */
const taskClockMs = (perfOutput: string) =>
  Number(
    perfOutput
      .split('\n')
      .find((l) => l.includes(',task-clock,'))
      ?.split(',')[0],
  );

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 30_000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/**
 * Runs `argv` under GNU time under `perf stat`; `ready` says when to start the load; SIGINT stops the tool after the
 * load.
 */
async function recordUnderLoad(
  argv: string[],
  ready: (pid: number, out: string) => boolean,
): Promise<{ userS: number; sysS: number; totalS: number; stdout: string; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-bench-time-'));
  const timeFile = join(dir, 'time');
  const perfFile = join(dir, 'perf');
  const timer = spawn(
    'perf',
    ['stat', '-x,', '-o', perfFile, '-e', 'task-clock', '/usr/bin/time', '-o', timeFile, '-f', '%U %S', ...argv],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  timer.stdout.on('data', (d) => (stdout += d));
  timer.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<void>((r) => timer.on('exit', () => r()));
  // The tool is the only child of GNU time, perf's only child.
  const childOf = (pid: number | undefined) => {
    if (pid === undefined) return undefined;
    try {
      const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
      return children === '' ? undefined : Number(children.split(' ')[0]);
    } catch {
      return undefined;
    }
  };
  const toolPid = () => childOf(childOf(timer.pid));
  await until(() => toolPid() !== undefined, 'the tool to start');
  const pid = toolPid()!;
  await until(() => ready(pid, stdout), 'the tool to be ready');
  await sleep(200);
  const load = spawnSync('perf', LOAD, { stdio: 'ignore' });
  if (load.status !== 0) throw new Error(`perf bench failed: ${load.stderr}`);
  await sleep(300);
  process.kill(pid, 'SIGINT');
  await exited;
  const [user, sys] = readFileSync(timeFile, 'utf8').trim().split('\n').pop()!.split(' ').map(Number);
  const totalMs = taskClockMs(readFileSync(perfFile, 'utf8'));
  if (!Number.isFinite(totalMs)) throw new Error(`perf stat gave no task-clock: ${readFileSync(perfFile, 'utf8')}`);
  rmSync(dir, { recursive: true, force: true });
  return { userS: user!, sysS: sys!, totalS: totalMs / 1000, stdout, stderr };
}

async function evtrace(
  format: 'tracedat' | 'ctf',
  threads: 'per-cpu' | 'single',
  tracefs: string,
  work: string,
): Promise<Run> {
  const out = join(work, format === 'ctf' ? `evtrace-ctf-${threads}` : `evtrace-${threads}.dat`);
  const args = [
    process.execPath,
    CLI,
    'record',
    ...EVENTS.flatMap((e) => ['-e', e]),
    '--format',
    format,
    '--reader-threads',
    threads,
    '-o',
    out,
  ];
  // Ready once the recorder has turned tracing on in its instance (its reader threads are polling).
  const r = await recordUnderLoad(args, (pid) =>
    listInstances(tracefs).some((i) => {
      if (!i.startsWith(`evtrace-${pid}-`)) return false;
      try {
        return readFileSync(join(tracefs, 'instances', i, 'tracing_on'), 'utf8').trim() === '1';
      } catch {
        return false;
      }
    }),
  );
  const seen = Number(/recorded (\d+) events/.exec(r.stderr)?.[1] ?? Number.NaN);
  const lost = [...r.stderr.matchAll(/cpu\d+ (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
  const bytes = format === 'ctf' ? dirSize(out) : statSync(out).size;
  if (Number.isNaN(seen)) throw new Error(`evtrace failed: ${r.stderr}`);
  return {
    tool: `evtrace (${format}, ${threads} reader)`,
    seen,
    lost,
    userS: r.userS,
    sysS: r.sysS,
    totalS: r.totalS,
    bytes,
  };
}

function dirSize(dir: string): number {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .reduce((n, e) => n + statSync(join(e.parentPath, e.name)).size, 0);
}

async function traceCmd(tracefs: string, work: string): Promise<Run> {
  const out = join(work, 'trace-cmd.dat');
  // trace-cmd changes the top-level state and does not restore all of it: keep what we must put back.
  const saved = ['tracing_on', ...EVENTS.map((e) => `events/${e.replace(':', '/')}/enable`)].map((f) => ({
    file: join(tracefs, f),
    value: readFileSync(join(tracefs, f), 'utf8').trim(),
  }));
  const enabled = () => readFileSync(saved[1]!.file, 'utf8').trim() === '1';
  const startedAt = Date.now();
  try {
    const args = ['trace-cmd', 'record', '--no-filter', '-d', ...EVENTS.flatMap((e) => ['-e', e]), '-o', out];
    // Its stdout is a pipe (block-buffered): readiness is the event being enabled at the top level.
    const r = await recordUnderLoad(args, () => (saved[1]!.value === '1' ? Date.now() - startedAt > 1000 : enabled()));
    const seen = countTraceCmdEvents(out);
    const stat = execFileSync('trace-cmd', ['report', '--stat', out], {
      stdio: ['ignore', 'pipe', 'ignore'],
    }).toString();
    const lost = [...stat.matchAll(/^(?:overrun|commit overrun|dropped events): (\d+)/gm)].reduce(
      (n, m) => n + Number(m[1]),
      0,
    );
    return {
      tool: 'trace-cmd 3.1',
      seen,
      lost,
      userS: r.userS,
      sysS: r.sysS,
      totalS: r.totalS,
      bytes: statSync(out).size,
    };
  } finally {
    for (const { file, value } of saved) writeFileSync(file, value);
  }
}

function countTraceCmdEvents(file: string): number {
  const r = spawnSync('sh', ['-c', `trace-cmd report -q '${file}' 2>/dev/null | grep -c -E ': (kmalloc|kfree):'`], {
    maxBuffer: 1 << 20,
  });
  return Number(r.stdout.toString().trim());
}

const median = (xs: readonly number[]) => {
  const s = xs.toSorted((a, b) => a - b);
  return s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/**
 * How fast the machine is right now, in the unit where evtrace's fixed cost lies: the CPU milliseconds of Node's own
 * start-up (`node -e 0`), median of five. On a VM the same build moves with the host; this tells the rounds apart.
 */
function nodeStartMs(): number {
  const runs = Array.from({ length: 5 }, () => {
    const r = spawnSync('perf', ['stat', '-x,', '-e', 'task-clock', process.execPath, '-e', '0'], { encoding: 'utf8' });
    return taskClockMs(r.stderr);
  }).filter(Number.isFinite);
  return runs.length === 0 ? Number.NaN : median(runs);
}

/**
 * One comparison: trace-cmd and evtrace's three ways, one after the other under the same load. Odd rounds start with
 * trace-cmd, even ones end with it, so that neither tool always meets the machine in the state the other left.
 */
async function round(n: number, tracefs: string, work: string): Promise<[trace: Run, dat: Run]> {
  const before = loadAverage();
  const speed = nodeStartMs();
  const ours = async () => [
    await evtrace('tracedat', 'single', tracefs, work),
    await evtrace('tracedat', 'per-cpu', tracefs, work),
    await evtrace('ctf', 'single', tracefs, work),
  ];
  let runs: Run[];
  if (n % 2 === 1) {
    const tc = await traceCmd(tracefs, work);
    runs = [tc, ...(await ours())];
  } else {
    const rest = await ours();
    runs = [await traceCmd(tracefs, work), ...rest];
  }
  const [tc] = runs as [Run];
  const lines = [
    `\n### Round ${n}: recording perf bench sched messaging ${LOAD.slice(3).join(' ')} (kmem:kmalloc + kmem:kfree, default buffer)`,
    `load average (1, 5, 15 min) before: ${before}; after: ${loadAverage()}; Node's start-up before (\`node -e 0\`, median of 5): ${speed.toFixed(1)} ms CPU\n`,
    '| tool | events seen | lost | lost % | CPU s user (time) | CPU s sys (time) | CPU s total (task-clock) | CPU vs trace-cmd | ns CPU/event | bytes/event |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...runs.map(
      (r) =>
        `| ${r.tool} | ${r.seen} | ${r.lost} | ${((100 * r.lost) / Math.max(1, r.seen + r.lost)).toFixed(1)}% | ${r.userS.toFixed(2)} | ${r.sysS.toFixed(2)} | ${cpuS(r).toFixed(3)} | ${(cpuS(r) / Math.max(0.001, cpuS(tc))).toFixed(2)}x | ${((cpuS(r) * 1e9) / Math.max(1, r.seen)).toFixed(0)} | ${(r.bytes / Math.max(1, r.seen)).toFixed(1)} |`,
    ),
    '',
    'Target: evtrace (tracedat, single reader) loses nothing and its CPU vs trace-cmd is <= 1.00x.',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  const [, dat, perCpu, ctf] = runs as [Run, Run, Run, Run];
  const perEvent = (r: Run) => fromTotal(r.tool, cpuS(r) * 1e9, Math.max(1, r.seen));
  printComparisons(`Round ${n}: CPU per recorded event (recorder and its children)`, [
    { case: 'trace.dat output', ours: perEvent(dat), peer: perEvent(tc), target: 'no loss, total CPU <= trace-cmd' },
    { case: 'trace.dat output, a reader thread per CPU', ours: perEvent(perCpu), peer: perEvent(tc) },
    { case: 'CTF output (decode + re-encode)', ours: perEvent(ctf), peer: perEvent(tc) },
  ]);
  return [tc, dat];
}

/** Every round's trace-cmd and evtrace (trace.dat, single reader) side by side: CPU, loss, and how often it won. */
function summary(pairs: readonly [Run, Run][]): string {
  const lostPct = (r: Run) => (100 * r.lost) / Math.max(1, r.seen + r.lost);
  const range = (xs: number[], digits: number) =>
    `${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)}`;
  const tc = pairs.map(([t]) => cpuS(t));
  const dat = pairs.map(([, d]) => cpuS(d));
  const atOrBelow = pairs.filter(([t, d]) => cpuS(d) <= cpuS(t)).length;
  return [
    `\n### Summary of ${pairs.length} round${pairs.length === 1 ? '' : 's'}: evtrace (tracedat, single reader) against trace-cmd 3.1\n`,
    '| tool | CPU s total (task-clock), median | range | lost % |',
    '| --- | --- | --- | --- |',
    `| trace-cmd 3.1 | ${median(tc).toFixed(3)} | ${range(tc, 3)} | ${range(
      pairs.map(([t]) => lostPct(t)),
      1,
    )} |`,
    `| evtrace trace.dat | ${median(dat).toFixed(3)} | ${range(dat, 3)} | ${range(
      pairs.map(([, d]) => lostPct(d)),
      1,
    )} |`,
    '',
    `Median CPU vs trace-cmd: ${(median(dat) / median(tc)).toFixed(2)}x; at or below trace-cmd's CPU in ${atOrBelow} of ${pairs.length} rounds; per round: ${pairs.map(([t, d]) => `${(cpuS(d) / cpuS(t)).toFixed(2)}x`).join(', ')}.`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) return void console.log('record.bench: skipped (needs root)');
  for (const tool of ['perf', 'trace-cmd', '/usr/bin/time']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0)
      return void console.log(`record.bench: skipped (${tool} missing)`);
  }
  const tracefs = findTracefs();
  const work = mkdtempSync(join(tmpdir(), 'evtrace-bench-'));
  const rounds = Math.max(1, Number(process.env.EVTRACE_BENCH_ROUNDS ?? 1) || 1);
  try {
    const pairs: [Run, Run][] = [];
    for (let n = 1; n <= rounds; n++) pairs.push(await round(n, tracefs, work));
    process.stdout.write(summary(pairs));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
