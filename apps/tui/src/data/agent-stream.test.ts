import { rmSync } from 'node:fs';
import { encodeJsonEvent, JsonEventDecoder, openTrace, type TraceEvent } from '@evtrace/trace-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordDemoTrace, tempDir } from '../testing/traces.ts';
import { LiveColumns, type StreamRows } from './agent-stream.ts';
import { pidOf } from './store.ts';

const dir = tempDir();
let events: TraceEvent[];
beforeAll(async () => {
  events = [...openTrace(await recordDemoTrace(dir, 200)).events()];
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function texts(each: readonly string[]): { text: string; ends: Uint32Array } {
  let end = 0;
  return { text: each.join(''), ends: Uint32Array.from(each, (t) => (end += t.length)) };
}

/** Events as the stream's reader thread posts them: columns, class ids by first appearance, the JSON text. */
function rows(batch: readonly TraceEvent[], ids: Map<string, number>): StreamRows {
  const classes: string[] = [];
  const cls = batch.map((e) => {
    let id = ids.get(e.eventClass.name);
    if (id === undefined) {
      ids.set(e.eventClass.name, (id = ids.size));
      classes.push(e.eventClass.name);
    }
    return id;
  });
  return {
    kind: 'rows',
    ts: BigUint64Array.from(batch.map((e) => e.tsNs)),
    cpu: Int32Array.from(batch.map((e) => e.cpu ?? -1)),
    pid: Int32Array.from(batch.map(pidOf)),
    cls: Uint16Array.from(cls),
    ...texts(batch.map((e) => encodeJsonEvent(e).slice(0, -1))),
    classes,
    tasks: [],
    received: 0,
    lost: 0,
  };
}

describe('LiveColumns', () => {
  it('keeps the newest events as columns, decodes a row from its text when asked, and counts every event', () => {
    const classes = [...new Set(events.map((e) => e.eventClass))];
    const w = new LiveColumns(1000, new JsonEventDecoder(classes));
    const ids = new Map<string, number>();
    for (let i = 0; i < events.length; i += 700) w.push(rows(events.slice(i, i + 700), ids));
    const s = w.snapshot();
    expect(s.length).toBe(1000);
    const newest = events.slice(-1000);
    for (let i = 0; i < 1000; i += 37) {
      const e = newest[i]!;
      expect(s.tsNs(i)).toBe(e.tsNs);
      expect(s.cpu(i)).toBe(e.cpu);
      expect(s.pid(i)).toBe(pidOf(e));
      expect(s.eventClass(i).name).toBe(e.eventClass.name);
      expect(s.event(i).fields).toEqual(e.fields);
      // Decoded once while in the ring.
      expect(s.event(i)).toBe(s.event(i));
    }
    const stats = w.stats();
    expect(stats.total).toBe(events.length);
    expect(stats.cpus.map((c) => c.events)).toEqual([0, 1].map((cpu) => events.filter((e) => e.cpu === cpu).length));
    expect(w.eventClasses.map((c) => c.name).sort()).toEqual(classes.map((c) => c.name).sort());
  });

  it('drops whole chunks older than the window and keeps the newest events, over many batches', () => {
    const w = new LiveColumns(5000, new JsonEventDecoder([...new Set(events.map((e) => e.eventClass))]));
    const ids = new Map<string, number>();
    // The same events again and again, each round later in time: far more than the window over chunk boundaries.
    const all: TraceEvent[] = [];
    for (let round = 0; all.length < 30_000; round++)
      all.push(...events.map((e) => ({ ...e, tsNs: e.tsNs + BigInt(round) * 10n ** 12n })));
    const held: ReturnType<LiveColumns['snapshot']>[] = [];
    for (let i = 0; i < all.length; i += 999) {
      w.push(rows(all.slice(i, i + 999), ids));
      held.push(w.snapshot());
    }
    const s = w.snapshot();
    expect(s.length).toBe(5000);
    for (let i = 0; i < 5000; i += 251) expect(s.tsNs(i)).toBe(all[all.length - 5000 + i]!.tsNs);
    expect(s.event(4999).tsNs).toBe(all.at(-1)!.tsNs);
    // An early snapshot still reads its own events, long after they left the window.
    const early = held[2]!;
    expect(early.length).toBe(2997);
    expect(early.tsNs(0)).toBe(all[0]!.tsNs);
    expect(early.event(2996).tsNs).toBe(all[2996]!.tsNs);
    expect(w.stats().total).toBe(all.length);
  });

  it('keeps a snapshot whole after its events left the window', () => {
    const w = new LiveColumns(300, new JsonEventDecoder([...new Set(events.map((e) => e.eventClass))]));
    const ids = new Map<string, number>();
    w.push(rows(events.slice(0, 500), ids));
    const before = w.snapshot();
    w.push(rows(events.slice(500, 1400), ids));
    expect(before.length).toBe(300);
    expect(before.tsNs(0)).toBe(events[200]!.tsNs);
    expect(before.event(299).tsNs).toBe(events[499]!.tsNs);
    expect(w.snapshot().event(0).tsNs).toBe(events[1100]!.tsNs);
  });
});
