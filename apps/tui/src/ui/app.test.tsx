import { rmSync } from 'node:fs';
import { compileFilter, FilterError } from '@evtrace/filters';
import { openTrace } from '@evtrace/trace-format';
import { render } from 'ink-testing-library';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ViewerSource } from '../data/source.ts';
import type { EventStore } from '../data/store.ts';
import { largeTrace, openIndexed, recordDemoTrace, tempDir } from '../testing/traces.ts';
import { VIEWS } from '../views/index.ts';
import { App } from './app.tsx';
import { timeText } from './format.ts';

const dir = tempDir();
let demo: string;
let large: string;
beforeAll(async () => {
  demo = await recordDemoTrace(dir, 300);
  large = await largeTrace(tempDir(), 200_000);
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Waits until the frame satisfies `ok` (renders are asynchronous and this machine is loaded); fails after 10 s. */
async function until(app: { lastFrame(): string | undefined }, ok: (frame: string) => boolean): Promise<string> {
  for (let waited = 0; waited < 10_000; waited += 50) {
    const frame = app.lastFrame() ?? '';
    if (ok(frame)) return frame;
    await new Promise((r) => setTimeout(r, 50));
  }
  return app.lastFrame() ?? '';
}
const has = (text: string) => (frame: string) => frame.includes(text);

/** The source with its store wrapped to count the events decoded. */
function counting(source: ViewerSource): { source: ViewerSource; decoded: () => number } {
  let n = 0;
  const base = source.store();
  const store: EventStore = {
    length: base.length,
    tsNs: (i) => base.tsNs(i),
    cpu: (i) => base.cpu(i),
    pid: (i) => base.pid(i),
    eventClass: (i) => base.eventClass(i),
    event: (i) => {
      n++;
      return base.event(i);
    },
  };
  return { source: { ...source, store: () => store }, decoded: () => n };
}

function view(source: ViewerSource, rows = 30, columns = 140) {
  return render(<App source={source} views={VIEWS} size={{ columns, rows }} theme={{ colour: false }} />);
}

/** The selected row of the Events view (marked `>`). */
const selected = (frame: string) => frame.split('\n').find((l) => l.startsWith('>')) ?? '';

/** The start of event `i`'s row, as the list prints it: time and CPU (unique per event in these traces). */
const rowOf = (store: EventStore, i: number) => `>${timeText(store.tsNs(i))} ${String(store.cpu(i)).padStart(3)} `;
const selects = (store: EventStore, i: number) => (frame: string) => selected(frame).startsWith(rowOf(store, i));

describe('Events view', () => {
  it('renders only the rows that fit and decodes only those, on a 200 000-event trace', async () => {
    const { source, decoded } = counting(await openIndexed(large));
    const store = source.store();
    expect(store.length).toBe(200_000);
    const app = view(source, 30);
    const frame = await until(app, selects(store, 0));
    const rows = frame.split('\n').filter((l) => /^[ >]\d+\.\d{6}\s/.test(l));
    expect(rows.length).toBeGreaterThan(10);
    expect(rows.length).toBeLessThanOrEqual(30);
    expect(decoded()).toBeLessThanOrEqual(30 * 4);
    app.stdin.write('G');
    expect(selected(await until(app, selects(store, 199_999)))).toContain(rowOf(store, 199_999).slice(1));
    expect(decoded()).toBeLessThanOrEqual(30 * 8);
    app.unmount();
  });

  it('handles every key of a burst that arrives as one string', async () => {
    const source = await openIndexed(demo);
    const store = source.store();
    const app = view(source);
    await until(app, selects(store, 0));
    app.stdin.write('jjjjj');
    // The row after five moves is the sixth event.
    expect(selected(await until(app, selects(store, 5)))).toContain(store.eventClass(5).ftrace!.event);
    app.stdin.write('jjk');
    expect(selected(await until(app, selects(store, 6)))).toContain(rowOf(store, 6).slice(1));
    app.stdin.write('Gg');
    expect(selected(await until(app, selects(store, 0)))).toContain(rowOf(store, 0).slice(1));
    app.stdin.write('G');
    expect(selected(await until(app, selects(store, store.length - 1)))).toContain(
      rowOf(store, store.length - 1).slice(1),
    );
    app.unmount();
  });

  it('pages down by a screenful and shows the details of the selected event, Esc closes them', async () => {
    const source = await openIndexed(demo);
    const store = source.store();
    const app = view(source, 30);
    await until(app, selects(store, 0));
    app.stdin.write('\x1b[6~');
    // A page is the list's height: the header, footer, status and tab bar take 4 of the 30 rows.
    const pageDown = store.length > 100 ? 30 - 4 : 0;
    await until(app, selects(store, pageDown));
    expect(selected(app.lastFrame()!)).toContain(rowOf(store, pageDown).slice(1));
    app.stdin.write('\r');
    const title = `event ${pageDown + 1} of ${store.length.toLocaleString('en-US')}`;
    const frame = await until(app, has(title));
    expect(frame).toContain(title);
    // Every field, typed: its C type from the trace's format, its value as cat prints it.
    const e = store.event(pageDown);
    for (const name of Object.keys(e.fields)) {
      const cType = e.eventClass.ftrace!.fields.find((f) => f.name === name)!.cType;
      expect(frame).toMatch(new RegExp(`\\n  ${name} +${cType.replace(/[[\]*]/g, '\\$&')} +\\S`));
    }
    app.stdin.write('\x1b');
    expect(await until(app, (f) => !f.includes(title))).not.toContain(title);
    app.unmount();
  });

  it('validates the filter as it is typed: the kernel message and a caret under the wrong column', async () => {
    const source = await openIndexed(demo);
    const app = view(source);
    const expr = 'bytes_req > 256 &&& node == 0';
    await until(app, has('[1 Events]'));
    app.stdin.write(`:${expr}`);
    await until(app, (f) => f.includes(`: ${expr}`) && f.includes('^'));
    const kmalloc = openTrace(demo).eventClasses.find((c) => c.name === 'kmem:kmalloc')!;
    let err: FilterError | undefined;
    try {
      compileFilter(expr, kmalloc, { comm: () => undefined });
    } catch (e) {
      err = e as FilterError;
    }
    expect(err).toBeInstanceOf(FilterError);
    const lines = app.lastFrame()!.split('\n');
    const bar = lines.findIndex((l) => l.startsWith(`: ${expr}`));
    expect(bar).toBeGreaterThan(0);
    // The caret sits under the column the filters package reports, after the ": " prompt.
    expect(lines[bar + 1]!.indexOf('^')).toBe(2 + err!.column);
    expect(lines[bar + 2]).toContain(err!.message);
    app.unmount();
  });

  it('applies a valid filter: only matching events remain and the status bar says so', async () => {
    const source = await openIndexed(demo);
    const app = view(source);
    await until(app, has('[1 Events]'));
    app.stdin.write(':bytes_req > 1000');
    expect(await until(app, has('ok: applies to kmem:kmalloc'))).toContain('ok: applies to kmem:kmalloc');
    app.stdin.write('\r');
    await until(app, has(' match)'));
    const store = source.store();
    let want = 0;
    for (let i = 0; i < store.length; i++) {
      const e = store.event(i);
      if (e.eventClass.name === 'kmem:kmalloc' && Number(e.fields.bytes_req) > 1000) want++;
    }
    expect(app.lastFrame()).toContain(`filter: bytes_req > 1000 (${want.toLocaleString('en-US')} of`);
    const rows = app
      .lastFrame()!
      .split('\n')
      .filter((l) => /^[ >]\s*\d+\.\d{6}\s/.test(l));
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect(r).toMatch(/ kmalloc /);
    app.stdin.write('\x1b');
    expect(await until(app, has('no filter'))).toContain('no filter');
    app.unmount();
  });
});

describe('frame', () => {
  it('switches views with Tab and number keys and shows each view keys in the footer', async () => {
    const source = await openIndexed(demo);
    const app = view(source);
    expect(await until(app, has('[1 Events]'))).toContain('[1 Events]');
    expect(app.lastFrame()).toContain('Enter details');
    app.stdin.write('\t');
    expect(await until(app, has('[2 CPUs]'))).toContain('[2 CPUs]');
    // A file has no buffer fill: what it tells of each CPU, labelled as the file's.
    expect(app.lastFrame()).toContain('FROM THE FILE');
    expect(app.lastFrame()).not.toMatch(/\[#+-*\]/);
    expect(app.lastFrame()).toMatch(/\ncpu0 +\d+ +[\d.]+ KiB +0\n/);
    expect(app.lastFrame()).toContain('kmem:kmalloc');
    app.stdin.write('3');
    expect(await until(app, has('[3 Sessions]'))).toContain('[3 Sessions]');
    expect(app.lastFrame()).toContain('No agent');
    expect(app.lastFrame()).toContain('c create');
    app.unmount();
  });

  it('shows the help overlay on ? and closes it on any key', async () => {
    const app = view(await openIndexed(demo));
    await until(app, has('[1 Events]'));
    app.stdin.write('?');
    expect(await until(app, has('evtrace-view keys'))).toContain('evtrace-view keys');
    app.stdin.write('x');
    expect(await until(app, (f) => !f.includes('evtrace-view keys'))).not.toContain('evtrace-view keys');
    app.unmount();
  });

  it('status bar names the source, the event count, loss and the filter', async () => {
    const source = await openIndexed(demo);
    const app = view(source);
    await until(app, has('no filter'));
    const status = app.lastFrame()!.split('\n').at(-1)!;
    expect(status).toContain('demo.dat (tracedat)');
    expect(status).toContain('lost 0');
    expect(status).toContain('no filter');
    app.unmount();
  });
});
