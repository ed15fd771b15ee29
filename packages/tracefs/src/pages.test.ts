import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseHeaderPage, readPage, TraceFormatError } from '@evtrace/trace-format';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countPageRecords, type PageCount, parseCpuStats } from './pages.ts';
import { record } from './recorder.ts';
import { smallWorkload, tracefsForTests } from './testing/env.ts';

describe('parseCpuStats', () => {
  it('reads the numeric lines of per_cpu/cpuN/stats', () => {
    const text =
      'entries: 12\noverrun: 3\ncommit overrun: 0\nbytes: 4096\noldest event ts:  3261.811906\ndropped events: 7\n';
    expect(parseCpuStats(text)).toEqual({
      entries: 12,
      overrun: 3,
      'commit overrun': 0,
      bytes: 4096,
      'oldest event ts': 3261.811906,
      'dropped events': 7,
    });
  });
});

const env = tracefsForTests();

describe.skipIf(env.why !== undefined)(`counting real pages${env.why ? ` (skipped: ${env.why})` : ''}`, () => {
  it('counts what readPage decodes, on real pages and on mutated ones (never throwing)', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'evtrace-pages-')), 'raw');
    const r = await record({
      events: ['kmem:kmalloc', 'kmem:kfree', 'sched:sched_switch'],
      dir,
      durationMs: 150,
      priority: false,
      onStart: smallWorkload,
    });
    const layout = parseHeaderPage(readFileSync(join(dir, 'events', 'header_page'), 'utf8'), { pageSize: r.pageSize });
    const pages = Buffer.concat(r.lost.map((l) => readFileSync(join(dir, `cpu${l.cpu}.raw`))));
    expect(pages.length).toBe(r.pages * r.pageSize);
    const out: PageCount = { records: 0, dataBytes: 0, missed: false, corruptAt: -1 };
    const reference = (bytes: Buffer, at: number) => {
      let n = 0;
      try {
        readPage(bytes, at, layout, () => n++);
      } catch (error) {
        if (!(error instanceof TraceFormatError)) throw error;
        return undefined;
      }
      return n;
    };
    let total = 0;
    for (let at = 0; at < pages.length; at += r.pageSize) {
      const byType = new Float64Array(65536);
      countPageRecords(pages, at, layout, byType, out);
      expect(out.corruptAt).toBe(-1);
      expect(out.records).toBe(reference(pages, at));
      total += out.records;
    }
    expect(total).toBe(r.total);
    expect(total).toBeGreaterThan(0);
    const pageCount = pages.length / r.pageSize;
    fc.assert(
      fc.property(
        fc.nat(pageCount - 1),
        fc.array(fc.tuple(fc.nat(r.pageSize - 1), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
        (index, edits) => {
          const page = Buffer.from(pages.subarray(index * r.pageSize, (index + 1) * r.pageSize));
          for (const [at, v] of edits) page[at] = v;
          const byType = new Float64Array(65536);
          countPageRecords(page, 0, layout, byType, out);
          const expected = reference(page, 0);
          // A sound page counts exactly as the decoder; a corrupt one stops early and says where.
          if (out.corruptAt === -1 && expected !== undefined) expect(out.records).toBe(expected);
          if (expected === undefined) expect(out.corruptAt).not.toBe(-1);
        },
      ),
      { numRuns: 400 },
    );
  });
});
