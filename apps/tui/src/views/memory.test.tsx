import { rmSync } from 'node:fs';
import { AddressKeys, analyze, buildReport, fromTraceEvent, type KmemEvent, openKmemInput } from '@evtrace/kmemtrace';
import { openTrace, type TraceEvent } from '@evtrace/trace-format';
import { render } from 'ink-testing-library';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachAgent } from '../data/agent-source.ts';
import { startDemoSource } from '../data/demo-source.ts';
import { openFileSource } from '../data/file-source.ts';
import { arrayStore } from '../data/store.ts';
import { startTestAgent } from '../testing/agent.ts';
import { recordDemoTrace, tempDir } from '../testing/traces.ts';
import { App } from '../ui/app.tsx';
import { countText } from '../ui/format.ts';
import { VIEWS } from './index.ts';
import { LIVE_INTERVAL_NS, LiveMemory, MEMORY_SORTS, memoryView } from './memory.tsx';

const dir = tempDir();
let demo: string;
beforeAll(async () => {
  demo = await recordDemoTrace(dir, 300);
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

/** The call site rows under the table header: [site, hits, allocated...]. */
function tableRows(frame: string): string[][] {
  const lines = frame.split('\n');
  const header = lines.findIndex((l) => l.includes('CALL SITE'));
  return lines
    .slice(header + 1)
    .map((l) => l.trim().split(/\s{1,}/))
    .filter((cols) => /^0x[0-9a-f]+$/.test(cols[0] ?? ''));
}

describe('Memory view', () => {
  it('shows what evtrace kmem report computes for the same trace: summary, outstanding bytes, call sites; s sorts', async () => {
    // The reference: the kmemtrace analysis of the file through trace-format's reader.
    const ref = openKmemInput(demo);
    const analysis = analyze(ref.events);
    const s = analysis.summary;
    expect(s.allocs).toBeGreaterThan(100);
    const byKeys = (i: number) =>
      buildReport(analysis, ref, { caller: true, sort: MEMORY_SORTS[i]!.keys }).callers!.map((r) => [
        countText(r.hit),
        r.frag_pct.toFixed(2),
        countText(r.ping_pong),
      ]);

    const app = render(
      <App source={openFileSource(demo)} views={VIEWS} size={{ columns: 140, rows: 30 }} theme={{ colour: false }} />,
    );
    app.stdin.write(String(VIEWS.indexOf(memoryView) + 1));
    // The file is read in the background and the view follows it: the figures of the whole file come last.
    const whole = `allocs ${countText(s.allocs)}  frees ${countText(s.frees)}`;
    let frame = await until(app, (f) => f.includes('CALL SITE (by bytes') && f.includes(whole));
    expect(frame).toContain(whole);
    expect(frame).toContain(`fragmentation ${s.fragPct.toFixed(2)}%`);
    expect(frame).toMatch(new RegExp(`in ${countText(analysis.outstanding.count)} objects`));
    expect(frame).toMatch(/outstanding bytes\s+[0-7 ]{10,}/);
    // Rows: hits, frag% and ping-pong in the reference's order for each sort key.
    const shown = (f: string) => tableRows(f).map((c) => [c[1], c.at(-2), c.at(-1)]);
    expect(shown(frame)).toEqual(byKeys(0));
    for (let i = 1; i < MEMORY_SORTS.length; i++) {
      app.stdin.write('s');
      frame = await until(app, (f) => f.includes(`CALL SITE (by ${MEMORY_SORTS[i]!.name}`));
      expect(shown(frame), MEMORY_SORTS[i]!.name).toEqual(byKeys(i));
    }
    app.unmount();
  }, 30_000);

  it('is left out of the tabs of a trace without kmem events (its key does nothing), and says what to record', async () => {
    const { writeTraceDat, parseFormatFile } = await import('@evtrace/trace-format');
    const cls = parseFormatFile(
      'name: sched_wakeup\nID: 9\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int pid;\toffset:4;\tsize:4;\tsigned:1;\n\nprint fmt: "pid=%d", REC->pid\n',
      { system: 'sched' },
    );
    const file = `${dir}/sched.dat`;
    writeTraceDat(file, [cls], [{ tsNs: 1n, cpu: 0, eventClass: cls, fields: { pid: 1 } }]);
    const source = openFileSource(file);
    const app = render(
      <App source={source} views={VIEWS} size={{ columns: 140, rows: 20 }} theme={{ colour: false }} />,
    );
    const tabs = (await until(app, (f) => f.includes('[1 Events]'))).split('\n')[0]!;
    expect(tabs).toContain('2 CPUs');
    for (const hidden of ['Memory', 'Branches', 'Hardware']) expect(tabs).not.toContain(hidden);
    app.stdin.write(String(VIEWS.indexOf(memoryView) + 1));
    app.stdin.write('2');
    await until(app, (f) => f.includes('[2 CPUs]'));
    app.unmount();
    // The view itself, as a live source shows it before any kmem event came.
    const alone = render(
      <memoryView.Component
        source={source}
        store={source.store()}
        tick={0}
        paused={false}
        active
        width={140}
        height={18}
        onStatus={() => {}}
      />,
    );
    expect(await until(alone, (f) => f.includes('no kmem allocator events'))).toMatch(/evtrace kmem record/);
    alone.unmount();
  });
});

/** The one-pass analysis of the kmem events among `events`, with the live view's intervals. */
function reference(events: readonly TraceEvent[]) {
  const keys = new AddressKeys();
  const kmem = events.map((e) => fromTraceEvent(e, keys)).filter((e): e is KmemEvent => e !== undefined);
  return analyze(kmem, { intervalNs: LIVE_INTERVAL_NS });
}

describe('Memory view of a live source', () => {
  it('feeds each refresh only the events new in the moving window: the analysis of every event received', () => {
    const events = [...openTrace(demo).events()];
    expect(events.length).toBeGreaterThan(1000);
    // Events sharing a time across a window edge: the second of a pair must be fed once, not twice or never.
    events[274] = { ...events[274]!, tsNs: events[273]!.tsNs };
    const memory = new LiveMemory();
    // Windows of at most 300 events that move by irregular steps, sometimes not at all, once past events never
    // shown (as while paused): the analysis is that of every event some window held.
    const shown = new Set<number>();
    let end = 0;
    for (const step of [0, 137, 137, 0, 301, 64, 1, 500, 250, events.length]) {
      end = Math.min(events.length, end + step);
      const start = Math.max(0, end - 300);
      for (let i = start; i < end; i++) shown.add(i);
      memory.update(arrayStore(events.slice(start, end)));
    }
    expect(shown.size).toBeLessThan(events.length);
    const held = events.filter((_, i) => shown.has(i));
    expect(memory.live.analysis()).toEqual(reference(held));
  });

  it('follows the demo source refresh after refresh: the analysis of every event received', async () => {
    const source = await startDemoSource({ rate: 4000, sample: false, pollMs: 100 });
    const app = render(
      <App source={source} views={VIEWS} size={{ columns: 140, rows: 30 }} theme={{ colour: false }} />,
    );
    app.stdin.write(String(VIEWS.indexOf(memoryView) + 1));
    // The window as of the last refresh the viewer was told of: it holds every event so far (100 000 at most).
    let last = source.store();
    const unsubscribe = source.subscribe(() => {
      last = source.store();
    });
    try {
      await until(app, (f) => /allocs [1-9][\d,]{3,}/.test(f));
      await source.stop();
      await new Promise((r) => setTimeout(r, 300));
      const received = Array.from({ length: last.length }, (_, i) => last.event(i));
      const ref = reference(received).summary;
      expect(ref.allocs).toBeGreaterThan(1000);
      const frame = await until(app, (f) =>
        f.includes(`allocs ${countText(ref.allocs)}  frees ${countText(ref.frees)}`),
      );
      expect(frame).toContain(`allocs ${countText(ref.allocs)}  frees ${countText(ref.frees)}`);
      expect(frame).toContain(`fragmentation ${ref.fragPct.toFixed(2)}%`);
    } finally {
      unsubscribe();
      app.unmount();
      await source.close();
    }
  }, 30_000);

  it('on a session of the real agent: the figures of `evtrace kmem report` on the session output', async () => {
    const agent = await startTestAgent(dir, ['--demo-rate', '300']);
    const out = `${dir}/agent-out`;
    try {
      await agent.evtrace([
        'session',
        'create',
        'mem',
        '--events',
        'kmem:kmalloc,kmem:kfree',
        '--mode',
        'overwrite',
        '--buffer-size',
        '16M',
        '--source',
        'demo',
        '--output',
        out,
      ]);
      await agent.evtrace(['session', 'start', 'mem']);
      // Attached right after the start: the recent window holds everything so far, then live events follow.
      const source = (await attachAgent({ socket: agent.socket, session: 'mem', refreshMs: 100 }))!;
      const app = render(
        <App source={source} views={VIEWS} size={{ columns: 140, rows: 30 }} theme={{ colour: false }} />,
      );
      try {
        app.stdin.write(String(VIEWS.indexOf(memoryView) + 1));
        await until(app, (f) => /allocs [1-9][\d,]{2,}/.test(f));
        await agent.evtrace(['session', 'stop', 'mem']);
        const status = JSON.parse(await agent.evtrace(['session', 'status', 'mem', '--json']));
        const offline = JSON.parse(await agent.evtrace(['kmem', 'report', status.files[0], '--json'])).summary;
        expect(offline.allocs).toBeGreaterThan(100);
        const want = `allocs ${countText(offline.allocs)}  frees ${countText(offline.frees)}`;
        const frame = await until(app, (f) => f.includes(want));
        expect(frame).toContain(want);
        expect(frame).toContain(`fragmentation ${offline.frag_pct.toFixed(2)}%`);
      } finally {
        app.unmount();
        await source.close();
      }
    } finally {
      await agent.stop();
    }
  }, 120_000);
});
