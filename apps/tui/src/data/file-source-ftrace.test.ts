/**
 * trace.dat files are indexed progressively, as CTF traces are: the source answers at once with the first rows and
 * grows between frames. Once the indexing is done it holds exactly `evtrace cat`'s rows (cat itself is the judge):
 * as many, each with cat's time, CPU, event and text; and the viewer answers keys while the indexing runs.
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { render } from 'ink-testing-library';
import { createElement } from 'react';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_CLI } from '../testing/agent.ts';
import { largeTrace, tempDir } from '../testing/traces.ts';
import { App } from '../ui/app.tsx';
import { bodyFormatter, countText, eventText, timeText } from '../ui/format.ts';
import { VIEWS } from '../views/index.ts';
import { openFileSource } from './file-source.ts';

const N = 300_000;
/** Events of the trace the keys are pressed on: enough that its indexing outlasts a few keys on any machine. */
const BIG = 1_000_000;
const dir = tempDir('evtrace-view-ftrace-');
const bigDir = tempDir('evtrace-view-ftrace-big-');
let trace: string;
let big: string;
/** cat's lines: CPU, time, event and the text after it. */
let cat: { cpu: number; time: string; event: string; body: string }[];
beforeAll(async () => {
  trace = await largeTrace(dir, N);
  big = await largeTrace(bigDir, BIG);
  const run = spawnSync(process.execPath, [AGENT_CLI, 'cat', trace], { encoding: 'utf8', maxBuffer: 1 << 30 });
  expect(run.status, run.stderr).toBe(0);
  cat = run.stdout
    .trimEnd()
    .split('\n')
    .map((l) => {
      const m = /\[(\d+)\] +(\d+\.\d{6}): (\S+):(.*)$/.exec(l)!;
      // trace-cmd pads `event:` to 21 columns, then one space.
      return { cpu: Number(m[1]), time: m[2]!, event: m[3]!, body: m[4]!.slice(Math.max(0, 20 - m[3]!.length) + 1) };
    });
}, 120_000);
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(bigDir, { recursive: true, force: true });
});

describe('a trace.dat as a file source', { timeout: 240_000 }, () => {
  it('shows the first rows at once, then grows to exactly the rows evtrace cat prints', async () => {
    expect(cat).toHaveLength(N);
    const source = openFileSource(trace);
    try {
      const first = source.store();
      expect(first.length).toBeGreaterThanOrEqual(2000);
      expect(first.length).toBeLessThan(N);
      expect(source.label).toMatch(/large-300000\.dat \(tracedat\) indexing \d+%/);
      // The indexing runs in slices: timers keep firing meanwhile, and views hear of the growth.
      let ticks = 0;
      const timer = setInterval(() => ticks++, 5);
      const lengths: number[] = [];
      const off = source.subscribe(() => lengths.push(source.store().length));
      await source.indexed();
      off();
      clearInterval(timer);
      expect(ticks).toBeGreaterThan(0);
      for (let k = 1; k < lengths.length; k++) expect(lengths[k]!).toBeGreaterThanOrEqual(lengths[k - 1]!);
      const store = source.store();
      expect(store.length).toBe(cat.length);
      const body = bodyFormatter({
        taskName: (pid) => source.taskName(pid),
        kallsyms: () => (source.symbols?.()?.origin === 'trace' ? source.symbols()!.kallsyms : undefined),
      });
      for (let i = 0; i < store.length; i++) {
        const want = cat[i]!;
        if (timeText(store.tsNs(i)) !== want.time || store.cpu(i) !== want.cpu) {
          expect({ i, time: timeText(store.tsNs(i)), cpu: store.cpu(i) }).toEqual({
            i,
            time: want.time,
            cpu: want.cpu,
          });
        }
        const e = store.event(i);
        if (eventText(e) !== want.event || body(e) !== want.body) {
          expect({ i, event: eventText(e), body: body(e) }).toEqual({ i, event: want.event, body: want.body });
        }
      }
      expect(source.stats().total).toBe(N);
      expect(source.stats().cpus.map((c) => c.events)).toEqual([N / 4, N / 4, N / 4, N / 4]);
    } finally {
      await source.close();
    }
  });

  it('answers keys while the indexing runs', async () => {
    const source = openFileSource(big);
    const app = render(
      createElement(App, { source, views: VIEWS, size: { columns: 160, rows: 30 }, theme: { colour: false } }),
    );
    try {
      const frames: string[] = [];
      /** Waits a turn of the event loop at a time (an indexing slice may run in each) for a frame. */
      const until = async (ok: (frame: string) => boolean) => {
        for (const start = performance.now(); performance.now() - start < 60_000; ) {
          const frame = app.lastFrame() ?? '';
          if (ok(frame)) {
            frames.push(frame);
            return frame;
          }
          await new Promise((r) => setImmediate(r));
        }
        throw new Error(`frame never matched:\n${app.lastFrame()}`);
      };
      const selected = (f: string) => f.split('\n').find((l) => l.startsWith('>')) ?? '';
      const row = (i: number) => `>${cat[i]!.time} ${String(cat[i]!.cpu).padStart(3)} `;
      const opened = source.label;
      await until((f) => selected(f).startsWith(row(0)));
      // The app takes keys, and starts the indexing by listening to the source, once its first frame is committed.
      await until(() => source.label !== opened);
      app.stdin.write('j');
      const moved = await until((f) => selected(f).startsWith(row(1)));
      app.stdin.write('jj');
      const again = await until((f) => selected(f).startsWith(row(3)));
      // Both answers came while the status bar still said the trace was being indexed.
      expect(moved).toMatch(/indexing \d+%/);
      expect(again).toMatch(/indexing \d+%/);
      expect(source.store().length).toBeLessThan(BIG);
      await source.indexed();
      // Once indexed, G goes to the last row (the trace's events evenly spaced, on CPUs in turn); all are counted.
      // G takes the rows the app has drawn: it is pressed once a frame counts them all.
      await until((f) => f.includes(`${countText(BIG)} events`) && !f.includes('indexing'));
      app.stdin.write('G');
      const last = `>${timeText(1_000_000_000n + BigInt(BIG - 1) * 250n)} ${String((BIG - 1) % 4).padStart(3)} `;
      const end = await until((f) => selected(f).startsWith(last));
      expect(end).toContain(`${countText(BIG)} events`);
      expect(end).not.toContain('indexing');
    } finally {
      app.unmount();
      await source.close();
    }
  });
});
