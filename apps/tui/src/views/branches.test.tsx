import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { recordDemo, writeTraceDatFromRawDir } from '@evtrace/tracefs';
import { render } from 'ink-testing-library';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openFileSource } from '../data/file-source.ts';
import { tempDir } from '../testing/traces.ts';
import { App } from '../ui/app.tsx';
import { VIEWS } from './index.ts';

function hasTraceCmd(): boolean {
  try {
    execFileSync('sh', ['-c', 'command -v trace-cmd'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const dir = tempDir('evtrace-view-bts-');
let dat: string;
beforeAll(async () => {
  const raw = join(dir, 'raw');
  await recordDemo({ events: ['bts:branch', 'sched:sched_switch'], dir: raw, durationMs: 200, rate: 5000, cpus: 2 });
  dat = join(dir, 'bts.dat');
  writeTraceDatFromRawDir(raw, dat);
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function until(app: { lastFrame(): string | undefined }, ok: (frame: string) => boolean): Promise<string> {
  for (let waited = 0; waited < 10_000; waited += 50) {
    const frame = app.lastFrame() ?? '';
    if (ok(frame)) return frame;
    await new Promise((r) => setTimeout(r, 50));
  }
  return app.lastFrame() ?? '';
}

describe.skipIf(!hasTraceCmd())(`Branches view${hasTraceCmd() ? '' : ' (skipped: trace-cmd is not installed)'}`, () => {
  it("shows the selected task's last branches as trace-cmd reports them, and [ ] move between tasks", async () => {
    const source = openFileSource(dat);
    const app = render(
      <App source={source} views={VIEWS} size={{ columns: 140, rows: 30 }} theme={{ colour: false }} />,
    );
    const index = VIEWS.findIndex((v) => v.title === 'Branches') + 1;
    app.stdin.write(String(index));
    const frame = await until(app, (f) => f.includes('LAST '));
    // The selected task is the one in brackets on the task line.
    const tid = /\[(?:[\w-]+-)?(\d+) /.exec(frame.split('\n').find((l) => l.startsWith('task '))!)![1]!;
    // trace-cmd's view of that task's branches: the pid the demo source stamped into each event (common_pid).
    const report = execFileSync('trace-cmd', ['report', dat], { maxBuffer: 1 << 28, encoding: 'utf8' });
    const theirs = [...report.matchAll(/-(\d+)\s+\[\d+\]\s+[\d.]+: branch:\s+from=(0x[0-9a-f]+) to=(0x[0-9a-f]+)/g)]
      .filter((m) => m[1] === tid)
      .map((m) => `${m[2]} -> ${m[3]}`);
    const shown = frame
      .split('\n')
      .map((l) => /^\d+\s+(0x[0-9a-f]+)\s+-> (0x[0-9a-f]+)/.exec(l))
      .filter((m) => m !== null)
      .map((m) => `${m![1]} -> ${m![2]}`);
    expect(shown.length).toBeGreaterThan(3);
    expect(shown).toEqual(theirs.slice(theirs.length - shown.length));
    expect(frame).toMatch(new RegExp(`LAST ${shown.length} OF [\\d,.k]+ BRANCHES`));
    expect(frame).toContain('CALL HISTORY');
    app.stdin.write(']');
    const next = await until(app, (f) => !f.includes(`[${tid} `) && !new RegExp(`\\[[\\w-]+-${tid} `).test(f));
    expect(next).toMatch(/task .*\[/);
    app.unmount();
    await source.close();
  }, 60_000);
});
