/**
 * Analysis speed beside `perf kmem --caller --alloc stat` on the same recording: one `perf kmem record -m 16384` of
 * `perf bench sched messaging -g 2 -l 50`, read by perf kmem itself (its whole run: perf.data decoding and the
 * tables) and by evtrace from `perf script`'s text of that file (the analysis alone on decoded events, and text
 * parsing plus analysis). perf kmem's time is the wall time of its process, best of 5. The end-to-end row reads the
 * text from its file as `evtrace kmem` does (`openKmemInput`), and compares CPU time, which a shared machine distorts
 * less than wall time.
 *
 * Run as root: `node src/analyze.bench.ts` (the package's `bench` script). Not a test.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { consume, fromTotal, measure, printComparisons } from '@evtrace/bench';
import { analyze } from './analyze.ts';
import { openKmemInput } from './inputs.ts';
import { parsePerfScript } from './perf-script.ts';
import { buildReport } from './report.ts';

const dir = mkdtempSync(join(tmpdir(), 'kmem-bench-'));
try {
  const data = join(dir, 'perf.data');
  execFileSync(
    'perf',
    ['kmem', 'record', '-m', '16384', '-o', data, '--', 'perf', 'bench', 'sched', 'messaging', '-g', '2', '-l', '50'],
    {
      stdio: 'ignore',
    },
  );
  const text = execFileSync('perf', ['script', '-i', data], { maxBuffer: 1 << 30 }).toString();
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
  const parsed = measure(
    'evtrace perf-script parse + analyze + tables',
    () => {
      const s = parsePerfScript(text);
      consume(buildReport(analyze(s.events), s, { caller: true, alloc: true }));
    },
    { opsPerCall: n, samples: 3, sampleMs: 500 },
  );
  // End to end: the text file read, parsed, analysed and tabulated, CPU time (best of 5) beside perf kmem's.
  const textFile = join(dir, 'perf-script.txt');
  writeFileSync(textFile, text);
  let endToEnd = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 5; i++) {
    const t = process.cpuUsage();
    const s = openKmemInput(textFile);
    consume(buildReport(analyze(s.events), s, { caller: true, alloc: true }));
    const u = process.cpuUsage(t);
    endToEnd = Math.min(endToEnd, (u.user + u.system) * 1000);
  }
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
    {
      case: 'perf script text file read, parsed, analysed, tabulated (CPU time)',
      ours: fromTotal('evtrace openKmemInput + analyze + tables, CPU', endToEnd, n),
      peer: fromTotal('perf kmem --caller --alloc stat, CPU (user+sys)', bestCpu, n),
      target: '>= 1x',
    },
  ]);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
