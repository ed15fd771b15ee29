/**
 * End to end: the built evtrace-view in a real pseudo-terminal, on a recorded trace and on the live demo; keys typed,
 * the screen read back through a VT interpreter.
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { CommTracker, compileFilter, FilterError } from '@evtrace/filters';
import { createJsonFormatter, type FtraceMetadata, openTrace } from '@evtrace/trace-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, startViewer } from './testing/pty.ts';
import { recordDemoTrace, tempDir } from './testing/traces.ts';
import { timeText } from './ui/format.ts';

const dir = tempDir();
let trace: string;
beforeAll(async () => {
  trace = await recordDemoTrace(dir, 300);
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const selectedRow = (text: string) => text.split('\n').find((l) => l.startsWith('>')) ?? '';

describe('evtrace-view on a recorded trace, in a pseudo-terminal', { timeout: 60_000 }, () => {
  it('draws on the alternate screen, moves with typed keys, filters with a caret, and restores the screen on q', async () => {
    const events = [...openTrace(trace).events()];
    const v = startViewer([trace]);
    await v.waitFor('[1 Events]');
    expect(v.screen.alternate).toBe(true);
    expect(selectedRow(await v.waitFor((t) => selectedRow(t) !== ''))).toContain(timeText(events[0]!.tsNs));
    // Fast typing: one write, three keys.
    v.type('jjj');
    const row = (i: number) => `>${timeText(events[i]!.tsNs)} ${String(events[i]!.cpu).padStart(3)} `;
    await v.waitFor((t) => selectedRow(t).startsWith(row(3)));
    // The filter bar: the caret under the column the kernel's parser points at.
    const expr = 'bytes_req > 256 &&& node == 0';
    const kmalloc = events.find((e) => e.eventClass.name === 'kmem:kmalloc')!.eventClass;
    let column = -1;
    try {
      compileFilter(expr, kmalloc, { comm: () => undefined });
    } catch (e) {
      column = (e as FilterError).column;
      expect(e).toBeInstanceOf(FilterError);
    }
    v.type(`:${expr}`);
    const text = await v.waitFor((t) => t.includes(`: ${expr}`) && t.includes('^'));
    const lines = text.split('\n');
    const bar = lines.findIndex((l) => l.startsWith(`: ${expr}`));
    expect(lines[bar + 1]!.indexOf('^')).toBe(2 + column);
    v.type('\x1b');
    await v.waitFor((t) => !t.includes(`: ${expr}`));
    v.type('\t');
    await v.waitFor('[2 CPUs]');
    expect(v.screen.text()).toMatch(/cpu1 /);
    v.type('q');
    expect((await v.exited).exitCode).toBe(0);
    expect(v.screen.alternate).toBe(false);
    expect(v.screen.cursorVisible).toBe(true);
  });

  it('redraws for the new size on resize: the status bar on the last row, no row wider than the terminal', async () => {
    const v = startViewer([trace], { cols: 120, rows: 30 });
    await v.waitFor('[1 Events]');
    v.resize(90, 16);
    const text = await v.waitFor((t) => {
      const lines = t.split('\n');
      return lines.length === 16 && lines[15]!.includes('lost 0') && lines[0]!.includes('[1 Events]');
    });
    const rows = text.split('\n').filter((l) => /^[ >]\d+\.\d{6}/.test(l));
    expect(rows.length).toBeGreaterThan(5);
    expect(rows.length).toBeLessThanOrEqual(16);
    for (const l of text.split('\n')) expect(l.length).toBeLessThanOrEqual(90);
    v.type('q');
    expect((await v.exited).exitCode).toBe(0);
  });

  it('uses no colour with NO_COLOR set or TERM=dumb, and colour otherwise', async () => {
    for (const [env, coloured] of [
      [{}, true],
      [{ NO_COLOR: '1' }, false],
      [{ TERM: 'dumb' }, false],
    ] as const) {
      const v = startViewer([trace], { env });
      await v.waitFor('[1 Events]');
      v.type('\t');
      await v.waitFor('[2 CPUs]');
      expect(v.screen.colourSequences > 0, JSON.stringify(env)).toBe(coloured);
      v.type('q');
      await v.exited;
    }
  });

  it('restores the terminal when killed with SIGTERM', async () => {
    const v = startViewer([trace]);
    await v.waitFor('[1 Events]');
    v.kill('SIGTERM');
    await v.exited;
    expect(v.screen.alternate).toBe(false);
    expect(v.screen.cursorVisible).toBe(true);
  });
});

describe('evtrace-view on the live demo, in a pseudo-terminal', { timeout: 120_000 }, () => {
  it('says it runs the demo, shows moving events, pauses on space and quits on Ctrl-C', async () => {
    const v = startViewer([], { env: { EVTRACE_AGENT_SOCKET: `${dir}/no-agent.sock` } });
    await v.waitFor('DEMO');
    const first = selectedRow(await v.waitFor((t) => selectedRow(t) !== ''));
    await v.waitFor((t) => selectedRow(t) !== first && /\d ev\/s|k ev\/s/.test(t));
    v.type(' ');
    await v.waitFor('PAUSED');
    const paused = selectedRow(v.screen.text());
    await new Promise((r) => setTimeout(r, 700));
    expect(selectedRow(v.screen.text())).toBe(paused);
    v.type(' ');
    await v.waitFor((t) => !t.includes('PAUSED') && selectedRow(t) !== paused);
    v.type('3');
    await v.waitFor('No agent');
    v.type('\x03');
    expect((await v.exited).exitCode).toBe(0);
    expect(v.screen.alternate).toBe(false);
  });
});

describe('evtrace-view without a terminal', { timeout: 60_000 }, () => {
  it('writes the trace as JSON lines, the same as trace-format writes them, tasks named as they were', () => {
    const run = spawnSync(process.execPath, [CLI, trace], { encoding: 'utf8', maxBuffer: 256 << 20 });
    expect(run.status).toBe(0);
    const reader = openTrace(trace);
    const tasks = new CommTracker();
    for (const [pid, name] of (reader as { metadata?: FtraceMetadata }).metadata?.cmdlines ?? []) tasks.seed(pid, name);
    const line = createJsonFormatter({ comm: (pid, e) => tasks.commOf(pid, e.cpu ?? undefined) });
    const want = [...reader.events()]
      .map((e) => {
        const text = line(e);
        tasks.observe(e);
        return text;
      })
      .join('');
    expect(run.stdout).toBe(want);
    expect(run.stdout).toMatch(/"comm":"[^"]+"/);
  });

  it('writes the first N events of the live demo with -n and ends by itself', () => {
    const run = spawnSync(process.execPath, [CLI, '-n', '25'], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, EVTRACE_AGENT_SOCKET: `${dir}/no-agent.sock` },
    });
    expect(run.status).toBe(0);
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(25);
    for (let i = 1; i < lines.length; i++) expect(BigInt(lines[i].ts_ns) >= BigInt(lines[i - 1].ts_ns)).toBe(true);
    expect(new Set(lines.map((l) => l.event.split(':')[0]))).toEqual(new Set(['kmem', 'sched']));
  });
});
