import { rmSync } from 'node:fs';
import { LiveMerge, openRawPagesDir, openTrace, type TraceEvent } from '@evtrace/trace-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordDemoTrace, tempDir } from '../testing/traces.ts';
import { countRecords } from './demo-source.ts';
import { LiveWindow } from './live-window.ts';

const dir = tempDir();
let events: TraceEvent[];
beforeAll(async () => {
  events = [...openTrace(await recordDemoTrace(dir, 200)).events()];
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('LiveWindow', () => {
  it('keeps the newest events up to its capacity, oldest first, and counts every event', () => {
    const w = new LiveWindow(1000, () => 0);
    for (let i = 0; i < events.length; i += 700) w.push(events.slice(i, i + 700));
    const s = w.snapshot();
    expect(s.length).toBe(1000);
    for (let i = 0; i < 1000; i++) expect(s.event(i)).toBe(events[events.length - 1000 + i]);
    const stats = w.stats();
    expect(stats.total).toBe(events.length);
    expect(stats.cpus.map((c) => c.events)).toEqual([0, 1].map((cpu) => events.filter((e) => e.cpu === cpu).length));
  });

  it('turns each second of counts into a rate sample and keeps a snapshot unchanged by later pushes', () => {
    let now = 0;
    const w = new LiveWindow(10_000, () => now);
    w.push(events.slice(0, 300));
    const before = w.snapshot();
    now = 1000;
    w.push(events.slice(300, 400));
    expect(before.length).toBe(300);
    const stats = w.stats();
    expect(stats.eventsPerSec).toBe(300);
    const total = stats.cpus.reduce((a, c) => a + (c.rates.at(-1) ?? 0), 0);
    expect(total).toBe(300);
    w.lose(1, 7);
    expect(w.stats().lost).toBe(7);
  });
});

describe("trace-format's LiveMerge, as the live sources use it", () => {
  it('releases events in time order once every CPU has gone past them', () => {
    const byCpu = [0, 1].map((cpu) => events.filter((e) => e.cpu === cpu));
    let now = 0;
    const m = new LiveMerge<TraceEvent>({ cpus: [0, 1], idleMs: 1000, now: () => now });
    const out: TraceEvent[] = [];
    // CPU 0 delivers its first half before CPU 1 delivers anything, then the rest arrives in uneven pieces.
    m.add(0, byCpu[0]!.slice(0, 500));
    out.push(...m.take());
    m.add(1, byCpu[1]!.slice(0, 100));
    out.push(...m.take());
    m.add(1, byCpu[1]!.slice(100));
    out.push(...m.take());
    m.add(0, byCpu[0]!.slice(500));
    out.push(...m.take(), ...m.take(true));
    expect(out.length).toBe(events.length);
    // A CPU silent for longer than the idle limit no longer holds the others back.
    const later = (k: bigint): TraceEvent => ({ ...events.at(-1)!, tsNs: events.at(-1)!.tsNs + k });
    m.add(0, [later(1000n)]);
    expect(m.take()).toHaveLength(0);
    now = 5000;
    m.add(0, [later(2000n)]);
    expect(m.take()).toHaveLength(2);
    for (let i = 1; i < out.length; i++) expect(out[i]!.tsNs >= out[i - 1]!.tsNs).toBe(true);
  });
});

describe('countRecords', () => {
  it('counts the records of raw pages by type exactly as decoding them finds', () => {
    const reader = openRawPagesDir(`${dir}/raw`);
    const meta = reader.metadata;
    const names = new Map(meta.eventClasses.map((c) => [c.id, c.name]));
    for (const pages of reader.cpuPages()) {
      const bytes = pages.bytes as Buffer;
      const counted = countRecords(meta, bytes, names);
      const want = new Map<string, number>();
      for (const e of events)
        if (e.cpu === pages.cpu) want.set(e.eventClass.name, (want.get(e.eventClass.name) ?? 0) + 1);
      expect(counted.byType).toEqual(want);
      expect(counted.lost).toBe(0);
    }
  });

  it('LiveWindow.count adds to rates and totals without keeping events', () => {
    const w = new LiveWindow(10, () => 0);
    w.count(0, new Map([['kmem:kmalloc', 5]]));
    w.push(events.slice(0, 3));
    expect(w.snapshot().length).toBe(3);
    expect(w.stats().total).toBe(8);
    expect(w.stats().types.find((t) => t.name === 'kmem:kmalloc')!.events).toBe(
      5 + events.slice(0, 3).filter((e) => e.eventClass.name === 'kmem:kmalloc').length,
    );
  });
});
