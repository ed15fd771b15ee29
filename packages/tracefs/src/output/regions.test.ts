import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { collapseRange, largestFileSize, planFinalLayout, planRegions, regionsSupported } from './regions.ts';

const work = mkdtempSync(join(tmpdir(), 'evtrace-regions-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Regions of whole 4 KiB pages, each starting after the previous one's pages, in a random order of CPUs. */
const placed = fc
  .array(fc.record({ pages: fc.integer({ min: 0, max: 6 }), gap: fc.integer({ min: 0, max: 5 }) }), {
    minLength: 1,
    maxLength: 5,
  })
  .chain((rows) =>
    fc.tuple(
      fc.constant(rows),
      fc.shuffledSubarray([0, 1, 2, 3, 4, 5, 6, 7], { minLength: rows.length, maxLength: rows.length }),
    ),
  )
  .map(([rows, cpus]) => {
    let at = 4096 * 2;
    return rows.map((r, i) => {
      const p = { cpu: cpus[i]!, start: at, size: r.pages * 4096 };
      at += p.size + r.gap * 4096;
      return p;
    });
  });

describe('planFinalLayout', () => {
  it('closes every hole so the pages follow each other, and each step says where every CPU then is', () => {
    fc.assert(
      fc.property(placed, (pages) => {
        const plan = planFinalLayout(pages);
        // A model of the file: which CPU's byte (page granular) lies at each page.
        let file: (number | undefined)[] = [];
        for (const p of pages) for (let i = 0; i < p.size / 4096; i++) file[p.start / 4096 + i] = p.cpu;
        file.length = plan.steps[0]!.size / 4096;
        const check = (k: number) => {
          const step = plan.steps[k]!;
          expect(step.size).toBe(file.length * 4096);
          for (const e of step.extents) {
            const size = pages.find((p) => p.cpu === e.cpu)!.size;
            expect(e.end - e.start).toBe(size);
            for (let a = e.start; a < e.end; a += 4096) expect(file[a / 4096]).toBe(e.cpu);
          }
        };
        check(0);
        plan.holes.forEach((h, k) => {
          // A hole holds no pages and ends before the end of the file, as COLLAPSE_RANGE requires.
          expect(file.slice(h.at / 4096, (h.at + h.length) / 4096).every((c) => c === undefined)).toBe(true);
          expect(h.at + h.length).toBeLessThan(file.length * 4096);
          file = [...file.slice(0, h.at / 4096), ...file.slice((h.at + h.length) / 4096)];
          check(k + 1);
        });
        // The finished file: the pages from where the first region starts (whether it got any), without a gap.
        const total = pages.reduce((n, p) => n + p.size, 0);
        const first = Math.min(...pages.map((p) => p.start));
        expect(plan.first).toBe(first);
        expect(plan.size).toBe(first + total);
        expect(plan.steps.at(-1)!.size).toBe(plan.size);
        for (const p of pages) {
          if (p.size > 0)
            expect(plan.offsets.get(p.cpu)).toBe(plan.steps.at(-1)!.extents.find((e) => e.cpu === p.cpu)!.start);
          else expect(plan.offsets.get(p.cpu)).toBe(first);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('planRegions', () => {
  it('splits the largest size evenly after the room, aligned, without overlap', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 512 }),
        fc.integer({ min: 1, max: 64 }),
        fc.constantFrom(2 ** 30, 2 ** 43, 2 ** 52),
        (count, roomPages, max) => {
          const room = roomPages * 4096;
          const regions = planRegions(
            Array.from({ length: count }, (_, i) => i),
            room,
            max,
            1 << 20,
          );
          expect(regions[0]!.start).toBe(room);
          for (const [i, r] of regions.entries()) {
            expect((r.start - room) % (1 << 20)).toBe(0);
            expect(r.end).toBeLessThanOrEqual(max);
            if (i > 0) expect(r.start).toBe(regions[i - 1]!.end);
          }
        },
      ),
    );
  });
});

describe.skipIf(!regionsSupported(work))(
  `collapsing a real file${regionsSupported(work) ? '' : ` (skipped: ${work} is not on ext4 or XFS, or there is no FFI)`}`,
  () => {
    it('probes the largest file size, and COLLAPSE_RANGE moves the pages after a 1 TiB hole down', () => {
      const file = join(work, 'pages');
      const fd = openSync(file, 'w+');
      try {
        const max = largestFileSize(fd, 4096)!;
        expect(max).toBeGreaterThanOrEqual(2 ** 40);
        expect(statSync(file).size).toBe(4096);
        const a = Buffer.alloc(8192, 0xa1);
        const b = Buffer.alloc(12288, 0xb2);
        writeSync(fd, a, 0, a.length, 4096);
        writeSync(fd, b, 0, b.length, 2 ** 40);
        expect(collapseRange(fd, 4096 + 8192, 2 ** 40 - 4096 - 8192)).toBe(true);
        // Not aligned to the file system's blocks: refused, nothing changed.
        expect(collapseRange(fd, 100, 4096)).toBe(false);
      } finally {
        closeSync(fd);
      }
      const bytes = readFileSync(file);
      expect(bytes.length).toBe(4096 + 8192 + 12288);
      expect(bytes.subarray(4096, 4096 + 8192).every((x) => x === 0xa1)).toBe(true);
      expect(bytes.subarray(4096 + 8192).every((x) => x === 0xb2)).toBe(true);
    });
  },
);
