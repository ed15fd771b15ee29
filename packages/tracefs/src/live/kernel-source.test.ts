import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeCpuPages, openRawPagesDir, type PageSink } from '@evtrace/trace-format';
import { describe, expect, it } from 'vitest';
import { listInstances } from '../instance/instance.ts';
import { smallWorkload, tracefsForTests } from '../testing/env.ts';
import { KernelSource } from './kernel-source.ts';

const env = tracefsForTests();

/** A sink that keeps every page it is given (copies: the source reuses its page buffer). */
function keeper(): PageSink & { pages: Buffer[] } {
  const pages: Buffer[] = [];
  return {
    pages,
    writeBytes: (_type, payload) => {
      pages.push(Buffer.from(payload));
      return true;
    },
    flush: () => {},
  };
}

const events = (s: { counters(): readonly { events: number }[] }) => s.counters().reduce((n, c) => n + c.events, 0);

describe.skipIf(env.why !== undefined)(`a shared kernel source${env.why ? ` (skipped: ${env.why})` : ''}`, () => {
  it('reads the instance once for every running tap, counts per tap, and is removed with the last tap', () => {
    const source = new KernelSource({ events: ['kmem:kmalloc'], tracefs: env.path! });
    const a = source.tap();
    const b = source.tap();
    const dir = mkdtempSync(join(tmpdir(), 'evtrace-tap-'));
    try {
      a.prepare();
      b.prepare();
      expect(a.resource).toMatch(/^evtrace-\d+-\d+$/);
      expect(b.resource).toBe(a.resource);
      const sinksA = a.cpus.map(() => keeper());
      const sinksB = b.cpus.map(() => keeper());
      a.start(sinksA);
      b.start(sinksB);
      for (let i = 0; i < 20 && events(a) < 50; i++) {
        smallWorkload();
        a.poll();
      }
      // b's sinks were fed by a's poll: one read, both consumers.
      expect(events(a)).toBeGreaterThanOrEqual(50);
      expect(events(b)).toBe(events(a));
      expect(sinksB.map((s) => Buffer.concat(s.pages))).toEqual(sinksA.map((s) => Buffer.concat(s.pages)));
      // The pages decode to as many kmalloc events as the tap counted.
      a.writeMetadata(dir);
      for (const cpu of a.cpus) writeFileSync(join(dir, `cpu${cpu}.raw`), '');
      const meta = openRawPagesDir(dir).metadata;
      let decoded = 0;
      a.cpus.forEach((cpu, i) => {
        for (const e of decodeCpuPages(meta, { cpu, bytes: Buffer.concat(sinksA[i]!.pages) }).events) {
          expect(e.eventClass.name).toBe('kmem:kmalloc');
          decoded++;
        }
      });
      expect(decoded).toBe(events(a));
      // a stops: b goes on alone, a's counters stay where they were.
      a.stop();
      const aDone = events(a);
      // What a lost is its own count too (the kernel's, while a read; other jobs on a loaded machine may make some).
      const aLost = a.counters().map((c) => c.lost);
      const bBefore = events(b);
      for (let i = 0; i < 20 && events(b) === bBefore; i++) {
        smallWorkload();
        b.poll();
      }
      expect(events(b)).toBeGreaterThan(bBefore);
      expect(events(a)).toBe(aDone);
      expect(a.counters().map((c) => c.lost)).toEqual(aLost);
      a.close();
      expect(listInstances(env.path!)).toContain(b.resource);
      b.close();
      expect(listInstances(env.path!)).not.toContain(a.resource);
      expect(source.prepared).toBe(false);
    } finally {
      a.close();
      b.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a tap whose source cannot be prepared fails with the typed error and holds nothing', () => {
    const source = new KernelSource({ events: ['no_such_system:nothing'], tracefs: env.path! });
    const tap = source.tap();
    expect(() => tap.prepare()).toThrow(expect.objectContaining({ code: 'ERR_TRACEFS_EVENT' }));
    tap.close();
    expect(source.prepared).toBe(false);
  });
});
