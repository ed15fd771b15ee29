/**
 * CTF files are indexed progressively: the source answers at once with the first rows, grows in the background
 * while the event loop stays free, and ends with every event of the trace, each as trace-format's reader decodes it.
 */
import { rmSync } from 'node:fs';
import { openTrace, type TraceEvent } from '@evtrace/trace-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { largeCtfTrace, tempDir } from '../testing/traces.ts';
import { openFileSource } from './file-source.ts';
import { pidOf } from './store.ts';

const N = 300_000;
const dir = tempDir('evtrace-view-ctf-');
let trace: string;
beforeAll(async () => {
  trace = await largeCtfTrace(dir, N);
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const plain = (e: TraceEvent) => ({ tsNs: e.tsNs, cpu: e.cpu, name: e.eventClass.name, fields: e.fields });

describe('a CTF trace as a file source', { timeout: 120_000 }, () => {
  it('shows the first rows before the trace is read, then grows to all of it without blocking the event loop', async () => {
    const reader = openTrace(trace);
    const want: ReturnType<typeof plain>[] = [];
    const pids: number[] = [];
    for (const e of reader.events()) {
      want.push(plain(e));
      pids.push(pidOf(e));
    }
    expect(want).toHaveLength(N);

    const source = openFileSource(trace);
    try {
      const first = source.store();
      expect(first.length).toBeGreaterThanOrEqual(2000);
      expect(first.length).toBeLessThan(N);
      expect(source.label).toMatch(/ctf-300000 \(ctf\) indexing \d+%/);
      for (let i = 0; i < 60; i++) {
        expect(plain(first.event(i))).toEqual(want[i]);
        expect(first.pid(i)).toBe(pids[i]);
      }
      // The indexing runs in slices: timers keep firing meanwhile, and views hear of the growth.
      let ticks = 0;
      const timer = setInterval(() => ticks++, 10);
      const lengths: number[] = [];
      await new Promise<void>((resolve) => {
        const off = source.subscribe(() => {
          lengths.push(source.store().length);
          if (!source.label.includes('indexing')) {
            off();
            resolve();
          }
        });
      });
      clearInterval(timer);
      expect(ticks).toBeGreaterThan(0);
      expect(lengths.at(-1)).toBe(N);
      for (let k = 1; k < lengths.length; k++) expect(lengths[k]!).toBeGreaterThanOrEqual(lengths[k - 1]!);
      const store = source.store();
      // Spread over the trace: each lands in another packet, decoded again with it.
      for (let k = 0; k < 200; k++) {
        const i = Math.floor((k * 7919 * 104729) % N);
        expect(plain(store.event(i)), `event ${i}`).toEqual(want[i]);
        expect(store.tsNs(i)).toBe(want[i]!.tsNs);
        expect(store.cpu(i)).toBe(want[i]!.cpu);
      }
      expect(source.stats().total).toBe(N);
      expect(source.stats().cpus.map((c) => c.events)).toEqual([N / 4, N / 4, N / 4, N / 4]);
    } finally {
      await source.close();
    }
  });
});
