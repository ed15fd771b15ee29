import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { recordDemo, writeTraceDatFromRawDir } from '@evtrace/tracefs';
import { render } from 'ink-testing-library';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { procKallsyms } from '../data/symbols.ts';
import { openIndexed, tempDir } from '../testing/traces.ts';
import { App } from '../ui/app.tsx';
import { fit } from '../ui/format.ts';
import { VIEWS } from './index.ts';

function hasTraceCmd(): boolean {
  try {
    execFileSync('sh', ['-c', 'command -v trace-cmd'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * A kallsyms for the demo's kernel text addresses, embedded in the trace as `trace-cmd record` embeds the recording
 * machine's (one symbol past the last address, so each lies inside a function's extent).
 */
const KALLSYMS: [bigint, string][] = [
  [0xffffffff81a01200n, 'entry_syscall'],
  [0xffffffff81a01240n, 'entry_tail'],
  [0xffffffff81b2f0c0n, 'do_work'],
  [0xffffffff81c44e00n, 'helper_fn'],
  [0xffffffff81c44f00n, 'helper_end'],
  [0xffffffff81d0a7f0n, 'leave_fn'],
  [0xffffffff81d0a900n, 'after_leave'],
];
/** The demo's branch sources (tracefs' demo source). */
const DEMO_FROM = [0xffffffff81a0125an, 0xffffffff81b2f11fn, 0xffffffff81c44e60n, 0xffffffff81d0a812n];
const dir = tempDir('evtrace-view-bts-');
let dat: string;
let bare: string;
beforeAll(async () => {
  const raw = join(dir, 'raw');
  await recordDemo({ events: ['bts:branch', 'sched:sched_switch'], dir: raw, durationMs: 200, rate: 5000, cpus: 2 });
  bare = join(dir, 'bare.dat');
  writeTraceDatFromRawDir(raw, bare);
  writeFileSync(join(raw, 'kallsyms'), KALLSYMS.map(([a, n]) => `${a.toString(16)} T ${n}\n`).join(''));
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

const noTraceCmd = hasTraceCmd() ? '' : ' (skipped: trace-cmd is not installed (apt-get install trace-cmd))';

describe.skipIf(!hasTraceCmd())(`Branches view${noTraceCmd}`, () => {
  it("shows the selected task's last branches as trace-cmd reports them, and [ ] move between tasks", async () => {
    const source = await openIndexed(dat);
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
    // trace-cmd names the addresses with the trace's kallsyms (%pS), writing `+0x0` where the kernel writes none.
    const pS = (text: string) => text.replace(/\+0x0$/, '');
    const theirs = [...report.matchAll(/-(\d+)\s+\[\d+\]\s+[\d.]+: branch:\s+from=(\S+) to=(\S+)/g)]
      .filter((m) => m[1] === tid)
      .map((m) => `${pS(m[2]!)} -> ${pS(m[3]!)}`);
    expect(
      theirs.every((t) => !t.includes('0xffff')),
      'trace-cmd names every address',
    ).toBe(true);
    const shown = frame
      .split('\n')
      .map((l) => /^\d+\s+(\S+)\s+-> (\S+)\s/.exec(l))
      .filter((m) => m !== null)
      .map((m) => `${m![1]} -> ${m![2]}`);
    expect(shown.length).toBeGreaterThan(3);
    expect(shown).toEqual(theirs.slice(theirs.length - shown.length));
    expect(frame).toMatch(new RegExp(`LAST ${shown.length} OF [\\d,.k]+ BRANCHES .*symbols: the trace's kallsyms`));
    // Names make a call history: its segments are the functions.
    const history = frame.slice(frame.indexOf('CALL HISTORY'));
    expect(history).toMatch(/^\d+ +(entry_syscall|entry_tail|do_work|helper_fn|leave_fn)$/m);
    app.stdin.write(']');
    const next = await until(app, (f) => !f.includes(`[${tid} `) && !new RegExp(`\\[[\\w-]+-${tid} `).test(f));
    expect(next).toMatch(/task .*\[/);
    app.unmount();
    await source.close();
  }, 60_000);

  it('names kernel addresses from /proc/kallsyms when the trace embeds none and it is readable, and says which', async () => {
    const source = await openIndexed(bare);
    const app = render(
      <App source={source} views={VIEWS} size={{ columns: 140, rows: 30 }} theme={{ colour: false }} />,
    );
    app.stdin.write(String(VIEWS.findIndex((v) => v.title === 'Branches') + 1));
    const frame = await until(app, (f) => f.includes('LAST '));
    const proc = procKallsyms();
    if (proc === undefined) {
      expect(frame).toContain('symbols: none');
      expect(frame).toMatch(/^\d+\s+0x[0-9a-f]+\s+-> 0x[0-9a-f]+/m);
    } else {
      expect(frame).toContain('symbols: /proc/kallsyms');
      // Whatever this machine's kernel has at the demo's addresses, each is shown as kallsyms names it (inside a
      // function's extent), else in hex.
      const label = (addr: bigint) => {
        const hit = proc.kallsyms.lookup(addr);
        const inside = hit !== undefined && (hit.size === undefined || hit.offset < hit.size);
        const text = inside ? (hit.offset === 0n ? hit.name : `${hit.name}+0x${hit.offset.toString(16)}`) : undefined;
        return fit(text ?? `0x${addr.toString(16)}`, 28).trimEnd();
      };
      const froms = new Set(DEMO_FROM.map(label));
      const shown = [...frame.matchAll(/^\d+\s+(\S+)\s+-> /gm)].map((m) => m[1]!);
      expect(shown.length).toBeGreaterThan(3);
      for (const f of shown) expect(froms).toContain(f);
    }
    app.unmount();
    await source.close();
  }, 60_000);
});
