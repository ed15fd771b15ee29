/**
 * The benchmark's paths users take, measured from outside: a live kernel session of the real agent at a rate of
 * events through its socket into the built viewer in a pseudo-terminal (frames per second drawn, the viewer's memory
 * over time, events recorded against events the viewer received and lost), and a large trace.dat (first frame, key to
 * frame, memory).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { SessionStatus } from '@evtrace/agent-protocol';
import { findTracefs } from '@evtrace/tracefs';
import pty from '@lydell/node-pty';
import { startGetppidSession, startTestAgent } from './testing/agent.ts';
import { CLI } from './testing/pty.ts';
import { missedShown, receivedShown, Screen } from './testing/screen.ts';

/** Resident memory of a process and its children, in MB. */
export function rssMb(pid: number): number {
  const pids = [pid];
  try {
    pids.push(
      ...execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .filter(Boolean)
        .map(Number),
    );
  } catch {}
  let kb = 0;
  for (const p of pids) {
    try {
      kb += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0);
    } catch {}
  }
  return kb / 1024;
}

/** What {@link measureAgentLive} found. */
export interface AgentLiveFigures {
  readonly askedPerSec: number;
  /** Seconds the generator ran at the asked rate. */
  readonly seconds: number;
  /** System calls the generator made, and per second. */
  readonly generated: number;
  readonly generatedPerSec: number;
  /** Events the session recorded (its whole life: the viewer followed it from its first event). */
  readonly produced: number;
  /** Events the session itself lost (the kernel's buffers). */
  readonly sessionLost: number;
  /** Events the viewer received (its exit line). */
  readonly received: number;
  /** Events the agent dropped from this viewer's queue because it read too slowly. */
  readonly queueLost: number;
  /** Events the session recorded that the viewer neither received nor the agent counted lost. */
  readonly viewerLost: number;
  /** Events per second the viewer had received while the generator ran (its status bar, once a second). */
  readonly receivedPerSec: number;
  /** ms from the generator's end until the viewer's status bar accounted for every event the session recorded. */
  readonly drainMs: number;
  /** Frames drawn per second: the median over the seconds of the run, and the lowest. */
  readonly fps: number;
  readonly fpsMin: number;
  /** The viewer's RSS after the first second and its highest. */
  readonly rssStart: number;
  readonly rssMax: number;
}

/** The quiet between two bursts of output that makes them two frames, ms. */
const FRAME_GAP_MS = 4;

/**
 * A generator of `getppid` calls at `perSec` for `seconds`, once a line comes on its stdin: the only events of the
 * kernel session below (filtered by its pid), so the session records nothing before the viewer follows it.
 */
const GENERATOR = `import os, sys, time
rate, seconds = float(sys.argv[1]), float(sys.argv[2])
sys.stdin.readline()
t0 = time.monotonic()
n = 0
while True:
    elapsed = time.monotonic() - t0
    if elapsed >= seconds: break
    due = int(rate * elapsed)
    while n < due:
        os.getppid()
        n += 1
    time.sleep(0.0005)
print(n, flush=True)
`;

/**
 * Why {@link measureAgentLive} cannot run here (it records a kernel session: root and tracefs), or undefined.
 */
export function agentLiveUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root: kernel sessions need root';
  try {
    findTracefs();
  } catch (error) {
    return (error as Error).message;
  }
  if (spawnSync('python3', ['--version']).error !== undefined) return 'python3 (the generator) is not installed';
  return undefined;
}

/**
 * A kernel session of the real agent recording a generator's system calls at `perSec` for `seconds`, followed by
 * the built evtrace-view (`--session`) in a pseudo-terminal from its first event to its last: what the viewer
 * received (its exit line) against what the session recorded and what the agent's queue for the viewer dropped. A
 * frame is a burst of output after a pause (Ink writes a frame in one go; FRAME_GAP_MS is the pause that separates
 * two).
 */
export async function measureAgentLive(
  dir: string,
  perSec: number,
  seconds: number,
  size: { cols: number; rows: number },
): Promise<AgentLiveFigures> {
  const agent = await startTestAgent(dir);
  const generator = spawn('python3', ['-c', GENERATOR, String(perSec), String(seconds)]);
  let said = '';
  generator.stdout.on('data', (d: Buffer) => {
    said += d.toString();
  });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  try {
    await startGetppidSession(agent, 'bench', generator.pid!);
    const status = async () =>
      JSON.parse(await agent.evtrace(['session', 'status', 'bench', '--json'])) as SessionStatus;
    const screen = new Screen(size.cols, size.rows);
    const p = pty.spawn(process.execPath, [CLI, '--agent', agent.socket, '--session', 'bench'], {
      cols: size.cols,
      rows: size.rows,
      env: { ...(process.env as Record<string, string>), TERM: 'xterm-256color' },
    });
    const exited = new Promise<void>((r) => p.onExit(() => r()));
    let output = '';
    let last = 0;
    let frames = 0;
    p.onData((d) => {
      screen.write(d);
      output += d;
      if (output.length > 1 << 16) output = output.slice(-(1 << 15));
      const now = performance.now();
      if (now - last >= FRAME_GAP_MS) frames++;
      last = now;
    });
    const until = async (ok: (text: string) => boolean, what: string) => {
      for (let waited = 0; !ok(screen.text()); waited += 20) {
        if (waited > 120_000) throw new Error(`${what} never showed:\n${screen.text()}`);
        await sleep(20);
      }
    };
    await until((t) => receivedShown(t) === 0, 'the session followed');
    generator.stdin.write('go\n');
    const perSecond: number[] = [];
    const rss: number[] = [];
    const t0 = performance.now();
    for (let s = 0; s < seconds; s++) {
      const f0 = frames;
      await sleep(1000);
      perSecond.push(frames - f0);
      rss.push(rssMb(p.pid));
    }
    const receivedPerSec = receivedShown(screen.text()) / ((performance.now() - t0) / 1000);
    while (!said.includes('\n')) await sleep(10);
    const ended = performance.now();
    const generated = Number(said.trim());
    // Once the agent has read the generator's last event, the viewer is drained when it shows them all.
    await sleep(100);
    const recorded = (await status()).events;
    await until((t) => receivedShown(t) + missedShown(t) >= recorded * 0.999, 'every event received or lost');
    const drainMs = performance.now() - ended;
    await agent.evtrace(['session', 'stop', 'bench']);
    const after = await status();
    await until((t) => t.includes('1 warning'), 'the end of the stream');
    p.write('q');
    await exited;
    const summary = /session bench: received (\d+) events, the agent's queue for this viewer lost (\d+)/.exec(output);
    if (summary === null) throw new Error(`no exit line from the viewer:\n${output.slice(-2000)}`);
    const received = Number(summary[1]);
    const queueLost = Number(summary[2]);
    const sorted = perSecond.slice().sort((a, b) => a - b);
    return {
      askedPerSec: perSec,
      seconds,
      generated,
      generatedPerSec: generated / seconds,
      produced: after.events,
      sessionLost: after.lost,
      received,
      queueLost,
      viewerLost: after.events - received - queueLost,
      receivedPerSec,
      drainMs,
      fps: sorted[sorted.length >> 1] ?? 0,
      fpsMin: sorted[0] ?? 0,
      rssStart: rss[0] ?? 0,
      rssMax: Math.max(0, ...rss),
    };
  } finally {
    generator.kill();
    await agent.stop();
  }
}
