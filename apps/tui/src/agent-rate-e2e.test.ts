/**
 * A fast live session end to end: the real agent records a kernel session whose only events are a generator's
 * system calls, fired in bursts of tens of thousands at once; the built evtrace-view follows it in a
 * pseudo-terminal. Every burst is drawn (the status bar's count moves on) before the next one fires, and when the
 * session stops the viewer has received every event the session recorded, none lost in the agent's queue for it.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import type { SessionStatus } from '@evtrace/agent-protocol';
import { findTracefs } from '@evtrace/tracefs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGetppidSession, startTestAgent, type TestAgent } from './testing/agent.ts';
import { startViewer } from './testing/pty.ts';
import { receivedShown } from './testing/screen.ts';
import { tempDir } from './testing/traces.ts';

let why = '';
try {
  if (process.getuid?.() !== 0) why = 'not root: kernel sessions need root';
  else findTracefs();
} catch (error) {
  why = (error as Error).message;
}

/** System calls per burst, and bursts: together more than the agent's queue for a viewer holds. */
const BURST = 30_000;
const BURSTS = 5;

describe.skipIf(why !== '')(
  `a kernel session at a high rate into evtrace-view${why ? ` (skipped: ${why})` : ''}`,
  () => {
    const dir = tempDir('evtrace-view-rate-');
    let agent: TestAgent;
    let generator: ChildProcessWithoutNullStreams | undefined;
    beforeAll(async () => {
      agent = await startTestAgent(dir);
    }, 60_000);
    afterAll(async () => {
      generator?.kill();
      await agent?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('draws every burst as it comes and receives every event the session recorded', {
      timeout: 180_000,
    }, async () => {
      // The generator waits for a line, then makes that many getppid calls as fast as it can and says so.
      generator = spawn('python3', [
        '-u',
        '-c',
        'import os, sys\nfor line in sys.stdin:\n    for _ in range(int(line)): os.getppid()\n    print("done", flush=True)',
      ]);
      const gen = generator;
      let said = '';
      gen.stdout.on('data', (d: Buffer) => {
        said += d.toString();
      });
      const burst = async (n: number) => {
        const before = said.length;
        gen.stdin.write(`${n}\n`);
        while (said.length === before) await new Promise((r) => setTimeout(r, 10));
      };
      await startGetppidSession(agent, 'rate', gen.pid!);
      const status = async () =>
        JSON.parse(await agent.evtrace(['session', 'status', 'rate', '--json'])) as SessionStatus;

      const v = startViewer(['--agent', agent.socket, '--session', 'rate'], { cols: 160, rows: 40 });
      try {
        await v.waitFor((t) => t.includes('agent session rate') && receivedShown(t) === 0);
        const drawn: number[] = [];
        for (let b = 1; b <= BURSTS; b++) {
          await burst(BURST);
          // Frames come while the burst streams in: the next fires once one shows it all (to the count's rounding),
          // so the agent's queue never holds more than one burst however slowly this machine draws.
          await v.waitFor((t) => receivedShown(t) >= b * BURST * 0.999, 90_000);
          drawn.push(receivedShown(v.screen.text()));
        }
        expect(drawn).toHaveLength(BURSTS);
        for (let i = 1; i < drawn.length; i++) expect(drawn[i]).toBeGreaterThan(drawn[i - 1]!);

        await agent.evtrace(['session', 'stop', 'rate']);
        const s = await status();
        // The stream ends once the agent has sent everything queued: the viewer says so as a warning.
        await v.waitFor('1 warning', 90_000);
        v.type('q');
        expect((await v.exited).exitCode).toBe(0);
        const summary = /session rate: received (\d+) events, the agent's queue for this viewer lost (\d+)/.exec(
          v.output(),
        );
        expect(summary, v.output().slice(-500)).not.toBeNull();
        expect(s.events).toBeGreaterThanOrEqual(BURST * BURSTS);
        expect(Number(summary![2])).toBe(0);
        expect(s.viewerLost).toBe(0);
        expect(Number(summary![1])).toBe(s.events);
      } finally {
        v.kill();
      }
    });
  },
);
