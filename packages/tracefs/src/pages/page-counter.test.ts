import { kernelPageLayout } from '@evtrace/trace-format';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assembleCountPages } from '../../scripts/assemble-wasm.ts';
import { COUNT_PAGES_WASM } from './count-pages.wasm.ts';
import { PageCounter } from './page-counter.ts';
import { countPages, type PagesCount } from './pages.ts';

const fresh = (): PagesCount => ({ records: 0, dataBytes: 0, missedPages: 0 });

describe('PageCounter (count-pages.wat)', () => {
  it('ships the bytes its .wat assembles to (run scripts/assemble-wasm.ts after editing it)', async () => {
    expect(Buffer.from(COUNT_PAGES_WASM, 'base64').equals(Buffer.from(await assembleCountPages()))).toBe(true);
  });

  it('counts built pages as countPages does, records by type summed over batches', () => {
    const layout = kernelPageLayout(4096);
    const counter = new PageCounter(layout, 4);
    // Page n: n + 5 records of type_len 2 (8 payload bytes), common_type 700 + (i % 3); page 1 says events were missed.
    for (let n = 0; n < 4; n++) {
      const base = n * 4096;
      let p = base + 16;
      for (let i = 0; i < n + 5; i++, p += 12) {
        counter.pages.writeUInt32LE(2, p);
        counter.pages.writeUInt16LE(700 + (i % 3), p + 4);
      }
      counter.pages.writeUInt32LE(((p - base - 16) | (n === 1 ? 0x80000000 : 0)) >>> 0, base + 8);
    }
    expect(counter.count(4, fresh())).toEqual({ records: 26, dataBytes: 26 * 12, missedPages: 1 });
    expect(counter.count(2, fresh()).records).toBe(11);
    // Summed over both calls: 26 + 11 records.
    expect(counter.byType[700]! + counter.byType[701]! + counter.byType[702]!).toBe(37);
  });

  it('agrees with countPages on any bytes, corrupt headers and commits included', () => {
    for (const pageSize of [4096, 8192]) {
      const layout = kernelPageLayout(pageSize);
      const counter = new PageCounter(layout, 3);
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 3 }),
          fc.uint8Array({ minLength: 0, maxLength: 3 * pageSize }),
          fc.array(fc.tuple(fc.nat(2), fc.nat(pageSize + 64)), { maxLength: 3 }),
          (n, bytes, commits) => {
            counter.pages.fill(0);
            counter.pages.set(bytes.subarray(0, n * pageSize));
            // Plausible commits too, so that records get walked, not only refused.
            for (const [page, commit] of commits)
              counter.pages.writeUInt32LE(commit, page * pageSize + layout.commitOffset);
            const byType = new Float64Array(65536);
            const js = countPages(counter.pages.subarray(0, n * pageSize), 0, n, layout, byType, fresh());
            counter.byType.fill(0);
            expect(counter.count(n, fresh())).toEqual(js);
            expect(counter.byType).toEqual(byType);
          },
        ),
        { numRuns: 300 },
      );
    }
  });
});
