/**
 * Analysis speed beside `perf kmem --caller --alloc stat` on the same recording: one `perf kmem record -m 32768` of
 * `perf bench sched messaging -g 2 -l LOOPS` (EVTRACE_KMEM_BENCH_LOOPS, default 300: about a million events), read by perf kmem itself (its whole run: perf.data decoding and the tables) and by evtrace from
 * `perf script`'s text of that file (the analysis alone on decoded events, and text parsing plus analysis). perf
 * kmem's time is the wall time of its process, best of 5.
 *
 * The end-to-end table is what a user runs: `evtrace kmem report --caller --alloc perf.data` (the built CLI, by its
 * shebang, reading perf.data itself) and `... FILE.txt` (FILE.txt made once by `perf script`) beside
 * `perf kmem -i perf.data --caller --alloc stat`, process start to last byte, output to /dev/null, each under GNU
 * time (wall, user + system CPU, peak RSS), in alternating order for EVTRACE_BENCH_ROUNDS rounds (default 5),
 * medians, measured before this process reads the recording (it then holds nothing whose collection could take CPU
 * from them); the load average printed beside them.
 *
 * A second end-to-end table times the same two commands on a recording made with perf's default buffers (`perf kmem
 * record` without -m: the kernel drops most events at this rate, and a recording holds fewer, in many rounds), where
 * the fixed costs of a run (starting Node, loading the modules, V8's warm-up, the tables) weigh more.
 *
 * Run as root after a build: `node src/analyze.bench.ts` (the package's `bench` script); EVTRACE_KMEM_BENCH_DATA=FILE
 * reads that perf.data instead of recording one, EVTRACE_KMEM_BENCH_DEFAULT_DATA=FILE the second. Not a test.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { consume, fromTotal, measure, printComparisons } from '@evtrace/bench';
import { analyze } from './analyze.ts';
import type { KmemEventStream } from './event.ts';
import { perfScriptSource } from './inputs.ts';
import { perfDataSource } from './perf-data.ts';
import { parsePerfScript } from './perf-script.ts';
import { buildReport } from './report.ts';

const LOOPS = process.env.EVTRACE_KMEM_BENCH_LOOPS ?? '300';
const ROUNDS = Number(process.env.EVTRACE_BENCH_ROUNDS ?? 5);
const CLI = new URL('../../../apps/agent/dist/cli.js', import.meta.url).pathname;

interface Sample {
  readonly wall: number;
  /** User + system seconds. */
  readonly cpu: number;
  /** Peak resident set, MB. */
  readonly rss: number;
}

/** One command under GNU time, its standard output to /dev/null. */
function timed(argv: readonly string[], work: string): Sample {
  const report = join(work, 'time');
  const r = spawnSync('/usr/bin/time', ['-f', '%e %U %S %M', '-o', report, ...argv], {
    stdio: ['ignore', openSync('/dev/null', 'w'), 'pipe'],
  });
  if (r.status !== 0) throw new Error(`${argv.join(' ')} exited with ${r.status}: ${r.stderr.toString().slice(-2000)}`);
  const [wall, user, sys, kb] = readFileSync(report, 'utf8').trim().split('\n').at(-1)!.split(' ').map(Number);
  return { wall: wall!, cpu: user! + sys!, rss: kb! / 1024 };
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/** `perf kmem record` of the workload into `file`, with `-m PAGES` when given (perf's default buffers without). */
function recordKmem(file: string, pages?: string): void {
  const buffers = pages === undefined ? [] : ['-m', pages];
  execFileSync(
    'perf',
    ['kmem', 'record', ...buffers, '-o', file, '--', 'perf', 'bench', 'sched', 'messaging', '-g', '2', '-l', LOOPS],
    { stdio: 'ignore' },
  );
}

/** `evtrace kmem report --caller --alloc FILE` beside `perf kmem -i FILE --caller --alloc stat`, alternating. */
function endToEnd(file: string, work: string): { evtrace: Sample[]; perf: Sample[] } {
  const evtrace: Sample[] = [];
  const perf: Sample[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const peer = () => perf.push(timed(['perf', 'kmem', '-i', file, '--caller', '--alloc', 'stat'], work));
    const ours = () => evtrace.push(timed([CLI, 'kmem', 'report', '--caller', '--alloc', file], work));
    for (const run of round % 2 === 0 ? [peer, ours] : [ours, peer]) run();
  }
  return { evtrace, perf };
}

const dir = mkdtempSync(join(tmpdir(), 'kmem-bench-'));
try {
  // EVTRACE_KMEM_BENCH_DATA: a recording to read instead of making one (the same recording across runs).
  const data = process.env.EVTRACE_KMEM_BENCH_DATA ?? join(dir, 'perf.data');
  if (process.env.EVTRACE_KMEM_BENCH_DATA === undefined) recordKmem(data, '32768');
  // End to end, as users run both: evtrace kmem on the perf script text file beside perf kmem on perf.data.
  // Measured first, the text written by perf script straight to its file: this process then holds nothing large,
  // whose collector could take CPU from the commands timed.
  const textFile = join(dir, 'perf-script.txt');
  const out = openSync(textFile, 'w');
  const script = spawnSync('perf', ['script', '-i', data], { stdio: ['ignore', out, 'ignore'] });
  closeSync(out);
  if (script.status !== 0) throw new Error(`perf script exited with ${script.status}`);
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first (pnpm exec turbo run build)`);
  const loadBefore = loadAverage();
  const peerRuns: Sample[] = [];
  const ourRuns: Sample[] = [];
  const dataRuns: Sample[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const peer = () => peerRuns.push(timed(['perf', 'kmem', '-i', data, '--caller', '--alloc', 'stat'], dir));
    const evtrace = () => ourRuns.push(timed([CLI, 'kmem', 'report', '--caller', '--alloc', textFile], dir));
    const readData = () => dataRuns.push(timed([CLI, 'kmem', 'report', '--caller', '--alloc', data], dir));
    // Each beside perf in turn, alternating who goes first.
    for (const run of round % 2 === 0 ? [peer, readData, evtrace] : [readData, peer, evtrace]) run();
  }
  const loadAfter = loadAverage();
  // The second recording, perf's default buffers, timed the same way.
  const small = process.env.EVTRACE_KMEM_BENCH_DEFAULT_DATA ?? join(dir, 'default.data');
  if (process.env.EVTRACE_KMEM_BENCH_DEFAULT_DATA === undefined) recordKmem(small);
  const smallLoadBefore = loadAverage();
  const smallRuns = endToEnd(small, dir);
  const smallLoadAfter = loadAverage();
  const text = readFileSync(textFile, 'utf8');
  const source = parsePerfScript(text);
  const events = source.events;
  const n = events.length;
  // perf kmem's wall time and CPU time (user + system, GNU time), best of 5.
  let best = Number.POSITIVE_INFINITY;
  let bestCpu = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 5; i++) {
    const t0 = process.hrtime.bigint();
    const r = spawnSync('/usr/bin/time', ['-f', '%U %S', 'perf', 'kmem', '-i', data, '--caller', '--alloc', 'stat'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const ns = Number(process.hrtime.bigint() - t0);
    if (r.status !== 0) throw new Error(`perf kmem stat exited with ${r.status}: ${r.stderr}`);
    const [user, sys] = r.stderr.toString().trim().split('\n').at(-1)!.split(' ').map(Number);
    best = Math.min(best, ns);
    bestCpu = Math.min(bestCpu, (user! + sys!) * 1e9);
  }
  const perf = fromTotal('perf kmem --caller --alloc stat', best, n);
  const tables = () => consume(buildReport(analyze(events), source, { caller: true, alloc: true }));
  const ours = measure('evtrace analyze + tables', tables, { opsPerCall: n, samples: 5 });
  const onlyAnalysis = measure('evtrace analyze', () => consume(analyze(events)), { opsPerCall: n, samples: 5 });
  // CPU time of the analysis (best of 10), comparable with perf's under the shared machine's load.
  let cpu = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 10; i++) {
    const t = process.cpuUsage();
    consume(analyze(events));
    const u = process.cpuUsage(t);
    cpu = Math.min(cpu, (u.user + u.system) * 1000);
  }
  // The text's bytes streamed through the parser into the analysis, as openKmemInput does from a file.
  const bytes = Buffer.from(text);
  const parsed = measure(
    'evtrace perf-script parse + analyze + tables',
    () => {
      const s = perfScriptSource(bytes, 'perf-script.txt');
      consume(buildReport(analyze(s.events), s, { caller: true, alloc: true }));
    },
    { opsPerCall: n, samples: 3, sampleMs: 500 },
  );
  // perf.data read directly, as openKmemInput reads it.
  const fromData = measure(
    'evtrace perf.data read + analyze + tables',
    () => {
      const s = perfDataSource(data);
      consume(buildReport(analyze(s.events), s, { caller: true, alloc: true }));
    },
    { opsPerCall: n, samples: 3, sampleMs: 500 },
  );
  process.stdout.write(
    `\n${n} kmem events (${source.ignored} others), ${(text.length / 1e6).toFixed(1)} MB of perf script text; load average ${(await import('node:os')).loadavg()[0]!.toFixed(2)}\n`,
  );
  printComparisons('kmem analysis vs perf kmem (same recording, per event)', [
    { case: 'analysis of decoded events (wall)', ours: onlyAnalysis, peer: perf, target: '>= 5 M events/s' },
    {
      case: 'analysis of decoded events (CPU time)',
      ours: fromTotal('evtrace analyze, CPU', cpu, n),
      peer: fromTotal('perf kmem --caller --alloc stat, CPU (user+sys)', bestCpu, n),
      target: '>= 5 M events/s',
    },
    { case: 'analysis + caller and alloc tables', ours, peer: perf },
    { case: 'perf script text parse + analysis + tables', ours: parsed, peer: perf },
    { case: 'perf.data read + analysis + tables', ours: fromData, peer: perf, target: '>= 1x' },
  ]);
  const row = (name: string, runs: readonly Sample[]) => {
    const wall = median(runs.map((r) => r.wall));
    const cpu = median(runs.map((r) => r.cpu));
    const rss = median(runs.map((r) => r.rss));
    return { name, wall, cpu, rss };
  };
  const cli = row('evtrace kmem report --caller --alloc FILE.txt', ourRuns);
  const dataRow = row('evtrace kmem report --caller --alloc perf.data (read directly)', dataRuns);
  const peer = row('perf kmem -i perf.data --caller --alloc stat', peerRuns);
  process.stdout.write(
    `\nEnd to end, process start to last byte (${n} events, ${ROUNDS} rounds, medians; load average ${loadBefore} before, ${loadAfter} after)\n` +
      '| command | wall | CPU (user+sys) | peak RSS |\n| --- | --- | --- | --- |\n' +
      [dataRow, cli, peer]
        .map((r) => `| ${r.name} | ${r.wall.toFixed(2)} s | ${r.cpu.toFixed(2)} s | ${r.rss.toFixed(0)} MB |`)
        .join('\n') +
      `\n| perf.data: evtrace vs perf kmem (perf's / evtrace's; RSS: evtrace's - perf's) | ${(peer.wall / dataRow.wall).toFixed(2)}x | ${(peer.cpu / dataRow.cpu).toFixed(2)}x | ${(dataRow.rss - peer.rss).toFixed(0)} MB |` +
      `\n| text: evtrace vs perf kmem (perf's time / evtrace's) | ${(peer.wall / cli.wall).toFixed(2)}x | ${(peer.cpu / cli.cpu).toFixed(2)}x | |\n`,
  );
  let smallEvents = 0;
  const smallSource = perfDataSource(small).events as KmemEventStream;
  for (const batch of smallSource.batches()) smallEvents += batch.length;
  const smallOurs = row('evtrace kmem report --caller --alloc perf.data', smallRuns.evtrace);
  const smallPeer = row('perf kmem -i perf.data --caller --alloc stat', smallRuns.perf);
  process.stdout.write(
    `\nEnd to end on a recording with perf's default buffers (${smallEvents} events kept; ${ROUNDS} rounds, medians; load average ${smallLoadBefore} before, ${smallLoadAfter} after)\n` +
      '| command | wall | CPU (user+sys) | peak RSS |\n| --- | --- | --- | --- |\n' +
      [smallOurs, smallPeer]
        .map((r) => `| ${r.name} | ${r.wall.toFixed(2)} s | ${r.cpu.toFixed(2)} s | ${r.rss.toFixed(0)} MB |`)
        .join('\n') +
      `\n| evtrace vs perf kmem (perf's / evtrace's; RSS: evtrace's - perf's) | ${(smallPeer.wall / smallOurs.wall).toFixed(2)}x | ${(smallPeer.cpu / smallOurs.cpu).toFixed(2)}x | ${(smallOurs.rss - smallPeer.rss).toFixed(0)} MB |\n`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
