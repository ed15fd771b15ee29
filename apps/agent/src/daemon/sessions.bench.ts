/**
 * Sessions under load, beside trace-cmd in the same run: the kmem load of packages/tracefs/src/record/record.bench.ts
 * (`perf bench sched messaging -g 4 -l 500`, about 1.7 M kmem:kmalloc + kmem:kfree events) recorded by one agent
 * session, by three sessions at once sharing one tracefs instance (the same configuration; each its own ring
 * buffers and trace.dat output), by three sessions that do not share (buffer sizes differ by a page, so each has
 * its own instance), and by `trace-cmd record`. Prints events, lost, the recorder's CPU seconds (the agent's own,
 * from /proc/PID/stat; trace-cmd's and its children's, from GNU time) and the load average before each run (the
 * machine may be shared). Run as root: `node src/daemon/sessions.bench.ts`. Not a test.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionStatus } from '@evtrace/agent-protocol';
import { fromTotal, printComparisons } from '@evtrace/bench';
import { findTracefs } from '@evtrace/tracefs';
import { cli, startAgent } from '../testing/agent-daemon.ts';

const LOAD = ['bench', 'sched', 'messaging', '-g', '4', '-l', process.env.EVTRACE_BENCH_LOOPS ?? '500'];
const EVENTS = ['kmem:kmalloc', 'kmem:kfree'];
const TICK = 100; // clock ticks per second (USER_HZ)

interface Run {
  readonly tool: string;
  readonly seen: number;
  readonly lost: number;
  readonly cpuS: number;
  /** The 1-minute load average when the run began. */
  readonly load?: string;
}

const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ')[0]!;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** User plus system CPU seconds of a process so far. */
function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICK;
}

function load(): void {
  const r = spawnSync('perf', LOAD, { stdio: 'ignore' });
  if (r.status !== 0) throw new Error('perf bench failed');
}

async function agentRun(sessions: number, work: string, share = true): Promise<Run> {
  const dir = mkdtempSync(join(work, `agent-${sessions}-`));
  const agent = await startAgent(dir);
  try {
    const names = Array.from({ length: sessions }, (_, i) => `s${i}`);
    for (const [i, name] of names.entries()) {
      const r = await cli(agent, [
        'session',
        'create',
        name,
        '--events',
        EVENTS.join(','),
        '--mode',
        'discard',
        '--source',
        'kernel',
        '--output',
        join(dir, 'out'),
        // The kernel's default buffer (1408 KiB here) either way; sizes a page apart keep sessions from sharing.
        ...(share ? [] : ['--buffer-size', String((1408 + 4 * i) * 1024)]),
      ]);
      if (r.code !== 0) throw new Error(r.stderr);
    }
    for (const name of names) await cli(agent, ['session', 'start', name]);
    await sleep(200);
    const cpu0 = cpuOf(agent.proc.pid!);
    load();
    await sleep(300);
    for (const name of names) await cli(agent, ['session', 'stop', name]);
    const cpuS = cpuOf(agent.proc.pid!) - cpu0;
    let seen = 0;
    let lost = 0;
    for (const name of names) {
      const s = JSON.parse((await cli(agent, ['session', 'status', name, '--json'])).stdout) as SessionStatus;
      seen += s.events;
      lost += s.lost;
    }
    const how = sessions === 1 ? '' : share ? ', one shared instance' : ', an instance each';
    return { tool: `evtrace agent, ${sessions} session${sessions > 1 ? 's' : ''}${how}`, seen, lost, cpuS };
  } finally {
    await agent.stop();
  }
}

async function traceCmd(tracefs: string, work: string): Promise<Run> {
  const out = join(work, 'trace-cmd.dat');
  const saved = ['tracing_on', ...EVENTS.map((e) => `events/${e.replace(':', '/')}/enable`)].map((f) => ({
    file: join(tracefs, f),
    value: readFileSync(join(tracefs, f), 'utf8').trim(),
  }));
  const timeFile = join(work, 'time');
  try {
    const timer = spawn(
      '/usr/bin/time',
      [
        '-o',
        timeFile,
        '-f',
        '%U %S',
        'trace-cmd',
        'record',
        '--no-filter',
        '-d',
        ...EVENTS.flatMap((e) => ['-e', e]),
        '-o',
        out,
      ],
      { stdio: 'ignore' },
    );
    const exited = new Promise<void>((r) => timer.on('exit', () => r()));
    const t0 = Date.now();
    while (readFileSync(saved[1]!.file, 'utf8').trim() !== '1' && Date.now() - t0 < 30_000) await sleep(20);
    await sleep(200);
    load();
    await sleep(300);
    const child = Number(readFileSync(`/proc/${timer.pid}/task/${timer.pid}/children`, 'utf8').trim().split(' ')[0]);
    process.kill(child, 'SIGINT');
    await exited;
    const [user, sys] = readFileSync(timeFile, 'utf8').trim().split('\n').pop()!.split(' ').map(Number);
    const seen = Number(
      spawnSync('sh', ['-c', `trace-cmd report -q '${out}' 2>/dev/null | grep -c -E ': (kmalloc|kfree):'`])
        .stdout.toString()
        .trim(),
    );
    const stat = execFileSync('trace-cmd', ['report', '--stat', out], {
      stdio: ['ignore', 'pipe', 'ignore'],
    }).toString();
    const lost = [...stat.matchAll(/^(?:overrun|commit overrun|dropped events): (\d+)/gm)].reduce(
      (n, m) => n + Number(m[1]),
      0,
    );
    return { tool: 'trace-cmd', seen, lost, cpuS: user! + sys! };
  } finally {
    for (const { file, value } of saved) writeFileSync(file, value);
  }
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) return void console.log('sessions.bench: skipped (needs root)');
  for (const tool of ['perf', 'trace-cmd', '/usr/bin/time'])
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0)
      return void console.log(`sessions.bench: skipped (${tool} missing)`);
  const tracefs = findTracefs();
  const work = mkdtempSync(join(tmpdir(), 'evtrace-sessions-bench-'));
  try {
    const runs: Run[] = [];
    for (const run of [
      () => traceCmd(tracefs, work),
      () => agentRun(1, work),
      () => agentRun(3, work),
      () => agentRun(3, work, false),
    ]) {
      const load = loadAverage();
      runs.push({ ...(await run()), load });
    }
    const lines = [
      `\n### Agent sessions recording perf bench sched messaging ${LOAD.slice(3).join(' ')} (kmem:kmalloc + kmem:kfree)\n`,
      '| recorder | events seen (all sessions) | lost | lost % | CPU s | load average |',
      '| --- | --- | --- | --- | --- | --- |',
      ...runs.map(
        (r) =>
          `| ${r.tool} | ${r.seen} | ${r.lost} | ${((100 * r.lost) / Math.max(1, r.seen + r.lost)).toFixed(1)}% | ${r.cpuS.toFixed(2)} | ${r.load} |`,
      ),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    const [tc, one, three, apart] = runs as [Run, Run, Run, Run];
    const perEvent = (r: Run) => fromTotal(r.tool, r.cpuS * 1e9, Math.max(1, r.seen));
    printComparisons('CPU per recorded event', [
      { case: 'one session vs trace-cmd', ours: perEvent(one), peer: perEvent(tc), target: 'no loss' },
      {
        case: 'three sharing sessions (per event of all three) vs trace-cmd',
        ours: perEvent(three),
        peer: perEvent(tc),
      },
      { case: 'three sessions, an instance each (per event) vs trace-cmd', ours: perEvent(apart), peer: perEvent(tc) },
    ]);
    const ratio = (r: Run) => (r.cpuS / Math.max(0.01, one.cpuS)).toFixed(2);
    console.log(
      `three sessions sharing an instance used ${ratio(three)}x the CPU of one, three with an instance each ${ratio(apart)}x (linear would be 3x)`,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
