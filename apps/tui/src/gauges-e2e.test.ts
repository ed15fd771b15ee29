/**
 * The CPUs view's buffer gauges end to end: the real agent, the built evtrace-view in a pseudo-terminal at 80x24 and
 * 200x60 (without colour, so the sparklines are digits). A demo session's gauges come from its ring buffers; a
 * kernel session with a small buffer and a burst of system calls shows the kernel's own fill and loss per CPU, the
 * loss equal to what the kernel's per-CPU stats files say.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { SessionStatus } from '@evtrace/agent-protocol';
import { findTracefs, parseCpuStats } from '@evtrace/tracefs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestAgent, type TestAgent } from './testing/agent.ts';
import { type RunningViewer, startViewer } from './testing/pty.ts';
import { tempDir } from './testing/traces.ts';
import { countText } from './ui/format.ts';

const root = process.getuid?.() === 0;
let tracefs: string | undefined;
let why = '';
try {
  if (!root) why = 'not root: kernel sessions need root';
  else tracefs = findTracefs();
} catch (error) {
  why = (error as Error).message;
}

const dir = tempDir('evtrace-view-gauges-');
let agent: TestAgent;
beforeAll(async () => {
  agent = await startTestAgent(dir, ['--demo-rate', '3000']);
}, 60_000);
afterAll(async () => {
  await agent?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const SIZES = [
  [80, 24],
  [200, 60],
] as const;

/** One CPU's row of the buffers section as drawn. */
interface GaugeRow {
  cpu: number;
  percent: number;
  fills: string;
  lost: string;
  losses: string;
  unread: string;
}

/** The rows under the BUFFERS header (the rate rows above it also start with cpuN, but carry no gauge). */
function gaugeRows(text: string): GaugeRow[] {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.startsWith('BUFFERS  '));
  if (at < 0) return [];
  const rows: GaugeRow[] = [];
  for (const l of lines.slice(at + 2)) {
    const m = /^cpu(\d+) +\[[#-]+\] (\d+)% +([0-7 ]+) (\S+) +([0-7 ]+) (\S+ (?:ev|pg))/.exec(l);
    if (m === null) break;
    rows.push({
      cpu: Number(m[1]),
      percent: Number(m[2]),
      fills: m[3]!.trim(),
      lost: m[4]!,
      losses: m[5]!.trim(),
      unread: m[6]!,
    });
  }
  return rows;
}

function open(session: string, cols: number, rows: number): RunningViewer {
  return startViewer(['--agent', agent.socket, '--session', session], { cols, rows, env: { NO_COLOR: '1' } });
}

const status = async (name: string): Promise<SessionStatus> =>
  JSON.parse(await agent.evtrace(['session', 'status', name, '--json'])) as SessionStatus;

describe('buffer gauges in the CPUs view, in a pseudo-terminal', { timeout: 180_000 }, () => {
  it('shows a demo session fill and loss per CPU over time from its ring buffers, at 80x24 and 200x60', async () => {
    await agent.evtrace([
      'session',
      'create',
      'gdemo',
      '--events',
      'kmem:kmalloc,kmem:kfree',
      '--source',
      'demo',
      '--mode',
      'overwrite',
      '--buffer-size',
      '64K',
    ]);
    await agent.evtrace(['session', 'start', 'gdemo']);
    const s = await status('gdemo');
    for (const [cols, rows] of SIZES) {
      const v = open('gdemo', cols, rows);
      try {
        await v.waitFor('[1 Events]');
        v.type('2');
        // Two samples at least: a history to draw.
        const text = await v.waitFor(
          (t) => gaugeRows(t).length === s.cpus.length && gaugeRows(t)[0]!.fills.length >= 2,
        );
        expect(text).toContain('BUFFERS  the session ring buffers (headers), every 1 s');
        for (const l of text.split('\n')) expect(l.length).toBeLessThanOrEqual(cols);
        const drawn = gaugeRows(text);
        expect(drawn.map((r) => r.cpu)).toEqual(s.cpus.map((c) => c.cpu));
        for (const r of drawn) {
          expect(r.percent).toBeGreaterThanOrEqual(0);
          expect(r.percent).toBeLessThanOrEqual(100);
          // The agent's reader keeps up with the demo: nothing lost.
          expect(r.lost).toBe('0');
        }
        v.type('q');
        expect((await v.exited).exitCode).toBe(0);
      } finally {
        v.kill();
      }
    }
    await agent.evtrace(['session', 'destroy', 'gdemo']);
  });

  describe.skipIf(why !== '')(`a kernel session${why ? ` (skipped: ${why})` : ''}`, () => {
    let burst: ChildProcess | undefined;
    afterAll(() => {
      burst?.kill();
    });

    it('shows the kernel buffer fill and loss per CPU for a burst into a small buffer, as the kernel counts them', async () => {
      await agent.evtrace([
        'session',
        'create',
        'gkern',
        '--events',
        'syscalls:sys_enter_getppid',
        '--source',
        'kernel',
        '--mode',
        'discard',
        '--buffer-size',
        '16K',
      ]);
      await agent.evtrace(['session', 'start', 'gkern']);
      const s = await status('gkern');
      const instance = s.instance!;
      /** What the kernel's files of the instance say of a CPU now. */
      const kernel = (cpu: number) => {
        const perCpu = join(tracefs!, 'instances', instance, 'per_cpu', `cpu${cpu}`);
        const k = parseCpuStats(readFileSync(join(perCpu, 'stats'), 'utf8'));
        const size = Number.parseInt(readFileSync(join(perCpu, 'buffer_size_kb'), 'utf8'), 10) * 1024;
        return {
          lost: countText((k.overrun ?? 0) + (k['dropped events'] ?? 0) + (k['commit overrun'] ?? 0)),
          percent: Math.round(((k.bytes ?? 0) / size) * 100),
          unread: `${countText(k.entries ?? 0)} ev`,
        };
      };
      for (const [cols, rows] of SIZES) {
        const v = open('gkern', cols, rows);
        try {
          await v.waitFor('[1 Events]');
          v.type('2');
          await v.waitFor((t) => gaugeRows(t).length === s.cpus.length && gaugeRows(t)[0]!.fills.length >= 2);
          // Millions of system calls for a few seconds: more than the agent drains from 16 KiB per CPU.
          burst = spawn(
            'python3',
            ['-c', 'import os, time\nt = time.time() + 2\nwhile time.time() < t: os.getppid()'],
            {
              stdio: 'ignore',
            },
          );
          const during = await v.waitFor((t) => gaugeRows(t).some((r) => r.lost !== '0' && /[1-7]/.test(r.losses)));
          expect(during).toMatch(/BUFFERS {2}kernel per-CPU stats of instance evtrace-[0-9a-f]+-\d+-\d+, every 1 s/);
          // The burst filled the buffer between two reads: a peak above half in some CPU's fill history.
          await v.waitFor((t) => gaugeRows(t).some((r) => /[4-7]/.test(r.fills)));
          if (burst.exitCode === null) await new Promise<void>((resolve) => burst!.once('exit', () => resolve()));
          // After the burst the kernel's counts stay: the screen comes to show them for every CPU, with the fill
          // and the unread events the kernel's files give (the agent has drained the buffer by then).
          const after = await v.waitFor((t) => {
            const drawn = gaugeRows(t);
            return (
              drawn.length > 0 &&
              drawn.every((r) => {
                const k = kernel(r.cpu);
                return r.lost === k.lost && r.percent === k.percent && r.unread === k.unread;
              })
            );
          });
          for (const l of after.split('\n')) expect(l.length).toBeLessThanOrEqual(cols);
          expect(gaugeRows(after).some((r) => r.lost !== '0')).toBe(true);
          v.type('q');
          expect((await v.exited).exitCode).toBe(0);
        } finally {
          v.kill();
        }
      }
      await agent.evtrace(['session', 'destroy', 'gkern']);
    });
  });
});
