/**
 * The Events view's time strips in a real pseudo-terminal at 80x24 and 200x60: `T` goes from the per-CPU strips to
 * one strip per task (busiest first) and off, `i` shows the histogram of the event rate with its peak. `evtrace cat
 * --json` is the judge of which tasks are busiest and of the peak rate per time bucket.
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { recordDemo, writeTraceDatFromRawDir } from '@evtrace/tracefs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_CLI } from './testing/agent.ts';
import { startViewer } from './testing/pty.ts';
import { tempDir } from './testing/traces.ts';
import { rateLabel } from './views/timeline.tsx';

const dir = tempDir('evtrace-view-timeline-');
let trace: string;
/** Every event's time and task, as `evtrace cat --json` gives them. */
let events: { ts: bigint; pid: number | null; comm: string | null }[];

beforeAll(async () => {
  const raw = join(dir, 'raw');
  await recordDemo({ events: ['kmem:*', 'sched:*'], dir: raw, durationMs: 300, rate: 20_000, cpus: 2 });
  trace = join(dir, 'demo.dat');
  writeTraceDatFromRawDir(raw, trace);
  const run = spawnSync(process.execPath, [AGENT_CLI, 'cat', trace, '--json'], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  expect(run.status, run.stderr).toBe(0);
  events = run.stdout
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as { ts_ns: string; pid: number | null; comm: string | null })
    .map((e) => ({ ts: BigInt(e.ts_ns), pid: e.pid, comm: e.comm }));
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The label column of the strips' lines (17 wide for tasks), up to the first strip character. */
const labels = (text: string) => text.split('\n').map((l) => l.slice(0, 17).trimEnd());

/**
 * The peak of events per bucket over `slices` equal buckets of the span, as a rate in a label column of `label`:
 * what the histogram's label says.
 */
function peakRate(slices: number, label: number): string {
  const first = events[0]!.ts;
  const span = Number(events.at(-1)!.ts - first);
  const per = span / slices;
  const counts = new Float64Array(slices);
  for (const e of events) counts[Math.min(slices - 1, Math.floor(Number(e.ts - first) / per))]!++;
  return rateLabel((Math.max(...counts) * 1e9) / per, label);
}

describe.each([
  [80, 24],
  [200, 60],
])('the time strips at %ix%i, in a pseudo-terminal', (cols, rows) => {
  it('shows one strip per task, busiest first, and the event-rate histogram with its peak', async () => {
    const v = startViewer([trace], { cols, rows, env: { NO_COLOR: '1', XDG_CONFIG_HOME: join(dir, `c${cols}`) } });
    try {
      await v.waitFor('[1 Events]');
      // Per CPU first (shown from the start where the view has 30 rows), then per task.
      if (rows < 30) v.type('T');
      await v.waitFor((t) => /\ncpu0 +\S/.test(t));
      v.type('T');
      const byTask = new Map<string, number>();
      for (const e of events) {
        if (e.pid === null) continue;
        const name = `${e.comm}-${e.pid}`;
        byTask.set(name, (byTask.get(name) ?? 0) + 1);
      }
      const busiest = [...byTask.entries()].sort((a, b) => b[1] - a[1]).map(([name]) => name);
      const text = await v.waitFor((t) => labels(t).includes(busiest[0]!));
      const shown = labels(text).filter((l) => byTask.has(l));
      // The busiest tasks in order (a quarter of the view, the last strip summing the rest when they do not fit).
      expect(shown.length).toBeGreaterThan(0);
      expect(shown).toEqual(busiest.slice(0, shown.length));
      if (busiest.length > shown.length + 1) expect(labels(text)).toContain(`+${busiest.length - shown.length} tasks`);
      expect(text).not.toMatch(/\ncpu0 +\S/);

      // The rate histogram: its label is the peak rate over buckets as wide as a strip's characters.
      v.type('i');
      const peak = `${peakRate(cols - 17, 17)} `;
      const withHistogram = await v.waitFor((t) => t.split('\n').some((l) => l.startsWith(peak)));
      const lines = withHistogram.split('\n');
      const top = lines.findIndex((l) => l.startsWith(peak));
      const bars = lines.slice(top, top + (rows >= 30 ? 3 : 2));
      expect(bars.at(-1)).toMatch(/^events +/);
      // The bottom row has a mark wherever an event is: the busiest bucket is full to the top.
      expect(bars.at(-1)!.slice(17)).toMatch(/^[#.]/);
      expect(bars[0]!.slice(17)).toContain('#');
      for (const l of withHistogram.split('\n')) expect(l.length).toBeLessThanOrEqual(cols);

      // Off, and the histogram alone stays.
      v.type('T');
      await v.waitFor((t) => !labels(t).includes(busiest[0]!));
      const alone = peakRate(cols - 7, 7);
      await v.waitFor((t) => t.split('\n').some((l) => l.startsWith(alone)), 5000);
      v.type('i');
      await v.waitFor((t) => !t.split('\n').some((l) => l.startsWith(alone) || l.startsWith('events ')));
      v.type('q');
      expect((await v.exited).exitCode).toBe(0);
    } finally {
      v.kill();
    }
  }, 60_000);
});
