import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kernelPageLayout, parseHeaderPage, readPage, TraceFormatError } from '@evtrace/trace-format';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { record } from '../record/recorder.ts';
import { smallWorkload, tracefsForTests } from '../testing/env.ts';
import { PageCounter } from './page-counter.ts';
import { countPageRecords, countPages, type PageCount, type PagesCount, parseCpuStats } from './pages.ts';

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

describe('countPageRecords on built pages', () => {
  const layout = kernelPageLayout(4096);
  /** A page of `n` records of 8 payload bytes (type_len 2) whose common_type alternates 300, 301. */
  function page(n: number): Buffer {
    const b = Buffer.alloc(4096);
    let p = 16;
    for (let i = 0; i < n; i++, p += 12) {
      b.writeUInt32LE(2, p);
      b.writeUInt16LE(300 + (i & 1), p + 4);
    }
    b.writeUInt32LE(p - 16, 8);
    return b;
  }
  const fresh = (): PageCount => ({ records: 0, dataBytes: 0, missed: false, corruptAt: -1 });

  it('counts a page at an unaligned address as it counts the same page aligned', () => {
    const aligned = new Float64Array(65536);
    const a = countPageRecords(page(101), 0, layout, aligned, fresh());
    expect(a.records).toBe(101);
    expect([aligned[300], aligned[301]]).toEqual([51, 50]);
    for (const shift of [1, 2, 3]) {
      const holder = Buffer.alloc(4096 + 8);
      page(101).copy(holder, shift);
      const byType = new Float64Array(65536);
      const u = countPageRecords(holder, shift, layout, byType, fresh());
      expect({ records: u.records, corruptAt: u.corruptAt, dataBytes: u.dataBytes }).toEqual({
        records: 101,
        corruptAt: -1,
        dataBytes: 101 * 12,
      });
      expect([byType[300], byType[301]]).toEqual([51, 50]);
    }
  });

  it('stops at a padding length that leaves the 4-byte alignment, saying where', () => {
    const b = page(3);
    // A padding record (type_len 29, non-zero delta) of 5 bytes after the third record, then a fourth record.
    b.writeUInt32LE(29 | (1 << 5), 16 + 36);
    b.writeUInt32LE(5, 16 + 40);
    b.writeUInt32LE(16 + 36 + 4 + 5 + 12 - 16, 8);
    const out = countPageRecords(b, 0, layout, new Float64Array(65536), fresh());
    expect(out.records).toBe(3);
    expect(out.corruptAt).toBe(16 + 36 + 4 + 5);
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
    // A batch counts as its pages one by one, mutated ones (missed flag, bad commits, broken headers) included.
    const batches: PagesCount = { records: 0, dataBytes: 0, missedPages: 0 };
    fc.assert(
      fc.property(
        fc.nat(pageCount - 1),
        fc.integer({ min: 1, max: 8 }),
        fc.array(
          fc.tuple(
            // Anywhere, or in a page's commit word (length and missed-events flags).
            fc.oneof(
              fc.nat(8 * r.pageSize - 1),
              fc.nat(7).map((i) => i * r.pageSize + layout.commitOffset + (i % 4)),
            ),
            fc.integer({ min: 0, max: 255 }),
          ),
          { maxLength: 12 },
        ),
        (first, want, edits) => {
          const n = Math.min(want, pageCount - first);
          const run = Buffer.from(pages.subarray(first * r.pageSize, (first + n) * r.pageSize));
          for (const [at, v] of edits) if (at < run.length) run[at] = v;
          const one = new Float64Array(65536);
          let records = 0;
          let dataBytes = 0;
          let missedPages = 0;
          for (let i = 0; i < n; i++) {
            countPageRecords(run, i * r.pageSize, layout, one, out);
            records += out.records;
            dataBytes += out.dataBytes;
            if (out.missed) missedPages++;
          }
          const batch = new Float64Array(65536);
          countPages(run, 0, n, layout, batch, batches);
          expect(batches).toEqual({ records, dataBytes, missedPages });
          expect(batch).toEqual(one);
        },
      ),
      { numRuns: 300 },
    );
    // The read loop's WebAssembly count agrees with countPages on the same mutated batches.
    const counter = new PageCounter(layout, 8);
    fc.assert(
      fc.property(
        fc.nat(pageCount - 1),
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.tuple(fc.nat(8 * r.pageSize - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 12 }),
        (first, want, edits) => {
          const n = Math.min(want, pageCount - first);
          pages.copy(counter.pages, 0, first * r.pageSize, (first + n) * r.pageSize);
          for (const [at, v] of edits) if (at < n * r.pageSize) counter.pages[at] = v;
          const js: PagesCount = { records: 0, dataBytes: 0, missedPages: 0 };
          const byType = new Float64Array(65536);
          countPages(counter.pages.subarray(0, n * r.pageSize), 0, n, layout, byType, js);
          counter.byType.fill(0);
          expect(counter.count(n, { records: 0, dataBytes: 0, missedPages: 0 })).toEqual(js);
          expect(counter.byType).toEqual(byType);
        },
      ),
      { numRuns: 300 },
    );
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
