/**
 * The benchmark's paths users take, measured from outside: a live session of the real agent at a rate of events
 * through its socket into the built viewer in a pseudo-terminal (frames per second drawn, the viewer's memory over
 * time, events produced against events the viewer lost), and a large trace.dat (first frame, key to frame, memory).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import type { SessionStatus } from '@evtrace/agent-protocol';
import pty from '@lydell/node-pty';
import { startTestAgent } from './testing/agent.ts';
import { CLI } from './testing/pty.ts';
import { Screen } from './testing/screen.ts';

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
  readonly seconds: number;
  /** Events the session recorded while the viewer followed it, and per second. */
  readonly produced: number;
  readonly producedPerSec: number;
  /** Events the agent dropped from this viewer's queue because it read too slowly. */
  readonly viewerLost: number;
  /** Events the session itself lost (its buffers). */
  readonly sessionLost: number;
  /**
   * Pages the session's ring buffers reused before the agent's own reader had them (the agent's loop fell behind its
   * source): their events reached no viewer and count in neither loss above.
   */
  readonly lappedPages: number;
  /** Frames drawn per second: the median over the seconds of the run, and the lowest. */
  readonly fps: number;
  readonly fpsMin: number;
  /** The viewer's RSS after the first second and its highest. */
  readonly rssStart: number;
  readonly rssMax: number;
  /** What the viewer's status bar said of the rate at the end. */
  readonly shownRate: string;
}

/** The quiet between two bursts of output that makes them two frames, ms. */
const FRAME_GAP_MS = 4;

/**
 * A demo session of the real agent producing `perSec` events per second (over the agent's demo CPUs), followed by
 * the built evtrace-view (`--session`) in a pseudo-terminal for `seconds`. A frame is a burst of output after a
 * pause (Ink writes a frame in one go; FRAME_GAP_MS is the pause that separates two).
 */
export async function measureAgentLive(
  dir: string,
  perSec: number,
  seconds: number,
  size: { cols: number; rows: number },
): Promise<AgentLiveFigures> {
  const demoCpus = Math.min(cpus().length, 4);
  const agent = await startTestAgent(dir, ['--demo-rate', String(Math.ceil(perSec / demoCpus))]);
  try {
    await agent.evtrace([
      'session',
      'create',
      'bench',
      '--events',
      'kmem:kmalloc,kmem:kfree',
      '--source',
      'demo',
      '--mode',
      'overwrite',
    ]);
    await agent.evtrace(['session', 'start', 'bench']);
    const status = async () =>
      JSON.parse(await agent.evtrace(['session', 'status', 'bench', '--json'])) as SessionStatus;
    const screen = new Screen(size.cols, size.rows);
    const p = pty.spawn(process.execPath, [CLI, '--agent', agent.socket, '--session', 'bench'], {
      cols: size.cols,
      rows: size.rows,
      env: { ...(process.env as Record<string, string>), TERM: 'xterm-256color' },
    });
    const exited = new Promise<void>((r) => p.onExit(() => r()));
    let last = 0;
    let frames = 0;
    p.onData((d) => {
      screen.write(d);
      const now = performance.now();
      if (now - last >= FRAME_GAP_MS) frames++;
      last = now;
    });
    // Until the first events are on screen.
    for (let waited = 0; !/\d+\.\d{6}/.test(screen.text()); waited += 50) {
      if (waited > 60_000) throw new Error(`no events on screen:\n${screen.text()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const before = await status();
    const perSecond: number[] = [];
    const rss: number[] = [];
    const t0 = performance.now();
    for (let s = 0; s < seconds; s++) {
      const f0 = frames;
      await new Promise((r) => setTimeout(r, 1000));
      perSecond.push(frames - f0);
      rss.push(rssMb(p.pid));
    }
    const elapsed = (performance.now() - t0) / 1000;
    const after = await status();
    const shownRate = /([\d.]+[kM]?) ev\/s/.exec(screen.text())?.[1] ?? '?';
    p.kill('SIGTERM');
    await exited;
    const sorted = perSecond.slice().sort((a, b) => a - b);
    const produced = after.events - before.events;
    return {
      askedPerSec: perSec,
      seconds: elapsed,
      produced,
      producedPerSec: produced / elapsed,
      viewerLost: after.viewerLost - before.viewerLost,
      sessionLost: after.lost - before.lost,
      lappedPages: after.overwrittenPages - before.overwrittenPages,
      fps: sorted[sorted.length >> 1] ?? 0,
      fpsMin: sorted[0] ?? 0,
      rssStart: rss[0] ?? 0,
      rssMax: Math.max(0, ...rss),
      shownRate,
    };
  } finally {
    await agent.stop();
  }
}
