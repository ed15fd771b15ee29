import {
  closeSync,
  cpSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import type { TraceEvent } from '../model/types.ts';
import { captureRawPages, smallWorkload } from '../testing/capture.ts';
import { findTracefs } from '../testing/tracefs.ts';
import { isRawPagesDir, listRawCpuFiles, openRawPagesDir } from './raw-dir.ts';
import {
  finalizingLine,
  RAW_FINALIZING_REGIONS_FILE,
  RAW_REGIONS_FILE,
  RAW_REGIONS_PAGES_FILE,
  regionsText,
} from './raw-regions.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-regions-'));
  dirs.push(dir);
  return dir;
}

/** A sub-buffer as the kernel writes one: a non-zero timestamp and commit, then `commit` bytes of records. */
function page(pageSize: number, commit: number, fill: number): Buffer {
  const p = Buffer.alloc(pageSize);
  p.writeBigUInt64LE(1000n + BigInt(fill), 0);
  p.writeBigUInt64LE(BigInt(commit), 8);
  p.fill(fill | 1, 16, 16 + commit);
  return p;
}

function writeAt(fd: number, bytes: Uint8Array, at: number): void {
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done, at + done);
}

interface Layout {
  pageSize: number;
  spacing: number;
  counts: number[];
  /** CPU whose last page is torn (header block written, the rest not), or -1. */
  tornCpu: number;
}

/** Writes a regions-layout directory; returns each CPU's expected [cpu, start, end]. */
function writeRegions(dir: string, l: Layout): [number, number, number][] {
  writeFileSync(join(dir, 'buffer_subbuf_size_kb'), `${l.pageSize / 1024}\n`);
  const regions = l.counts.map((_, cpu) => ({ cpu, start: l.pageSize * 2 + cpu * l.spacing }));
  writeFileSync(join(dir, RAW_REGIONS_FILE), regionsText(regions));
  const fd = openSync(join(dir, RAW_REGIONS_PAGES_FILE), 'w');
  try {
    const expected: [number, number, number][] = [];
    l.counts.forEach((n, cpu) => {
      const start = regions[cpu]!.start;
      for (let i = 0; i < n; i++) {
        const full = page(l.pageSize, l.pageSize - 16 - 8 * (i % 3), cpu * 16 + i);
        const isTorn = cpu === l.tornCpu && i === n - 1;
        writeAt(fd, isTorn ? full.subarray(0, 4096) : full, start + i * l.pageSize);
      }
      const whole = cpu === l.tornCpu && n > 0 ? n - 1 : n;
      expected.push([cpu, start, start + whole * l.pageSize]);
    });
    return expected;
  } finally {
    closeSync(fd);
  }
}

describe('the regions layout (every CPU in one file)', () => {
  it('finds where each region ends: its first unwritten page, less a torn last page', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(4096, 8192, 16384),
        fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 10, max: 1 << 18 }),
        fc.integer({ min: -1, max: 3 }),
        (pageSize, counts, spacingPages, tornCpu) => {
          const dir = tempDir();
          const torn = pageSize > 4096 && tornCpu < counts.length ? tornCpu : -1;
          const expected = writeRegions(dir, { pageSize, spacing: spacingPages * pageSize, counts, tornCpu: torn });
          expect(listRawCpuFiles(dir).map((f) => [f.cpu, f.start, f.end])).toEqual(expected);
          expect(isRawPagesDir(dir)).toBe(false); // no events/header_page yet
          rmSync(dir, { recursive: true, force: true });
        },
      ),
      { numRuns: 60 },
    );
  });

  it('takes a page that only fills part of its sub-buffer as whole, and the file may end anywhere', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'buffer_subbuf_size_kb'), '8\n');
    writeFileSync(join(dir, RAW_REGIONS_FILE), '1 16384\n0 1073741824\n');
    const fd = openSync(join(dir, RAW_REGIONS_PAGES_FILE), 'w');
    // CPU 1: two pages, the second holding 40 bytes of records (its second block is zeros, as the kernel leaves it).
    writeAt(fd, page(8192, 8176, 1), 16384);
    writeAt(fd, page(8192, 40, 2), 16384 + 8192);
    // CPU 0: one page and a partial one at the end of the file (a write cut short by a full disk).
    writeAt(fd, page(8192, 8176, 3), 1073741824);
    writeAt(fd, page(8192, 8176, 4).subarray(0, 100), 1073741824 + 8192);
    closeSync(fd);
    expect(listRawCpuFiles(dir).map((f) => [f.cpu, f.start, f.end])).toEqual([
      [0, 1073741824, 1073741824 + 8192],
      [1, 16384, 16384 + 16384],
    ]);
  });

  it('follows finalizing_regions by the size of the pages file, and names the file it cannot use', () => {
    const dir = tempDir();
    writeFileSync(join(dir, RAW_REGIONS_FILE), '0 4096\n1 1048576\n');
    writeFileSync(join(dir, RAW_REGIONS_PAGES_FILE), Buffer.alloc(12288));
    writeFileSync(
      join(dir, RAW_FINALIZING_REGIONS_FILE),
      finalizingLine(1052672, [
        { cpu: 0, start: 4096, end: 8192 },
        { cpu: 1, start: 1048576, end: 1052672 },
      ]) +
        finalizingLine(12288, [
          { cpu: 0, start: 4096, end: 8192 },
          { cpu: 1, start: 8192, end: 12288 },
        ]),
    );
    expect(listRawCpuFiles(dir).map((f) => [f.cpu, f.start, f.end])).toEqual([
      [0, 4096, 8192],
      [1, 8192, 12288],
    ]);
    writeFileSync(join(dir, RAW_REGIONS_PAGES_FILE), Buffer.alloc(16384));
    expect(() => listRawCpuFiles(dir)).toThrow(/bad finalizing_regions: no layout for a cpus\.raw of 16384 bytes/);
  });

  it('takes any cpu_regions and finalizing_regions text either as extents or as a TraceFormatError naming the file', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'buffer_subbuf_size_kb'), '4\n');
    writeFileSync(join(dir, RAW_REGIONS_PAGES_FILE), Buffer.alloc(8192));
    const numbersText = fc
      .array(fc.array(fc.integer({ min: 0, max: 20000 }), { maxLength: 7 }), { maxLength: 4 })
      .map((rows) => rows.map((r) => `${r.join(' ')}\n`).join(''));
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), numbersText),
        fc.option(fc.oneof(fc.string(), numbersText)),
        (regions, finalizing) => {
          writeFileSync(join(dir, RAW_REGIONS_FILE), regions);
          if (finalizing === null) rmSync(join(dir, RAW_FINALIZING_REGIONS_FILE), { force: true });
          else writeFileSync(join(dir, RAW_FINALIZING_REGIONS_FILE), finalizing);
          try {
            for (const f of listRawCpuFiles(dir)) {
              expect(Number.isSafeInteger(f.start) && f.start >= 0).toBe(true);
              // A region starting past the end of the file is empty.
              expect(f.end! >= f.start && (f.end === f.start || f.end! <= 8192)).toBe(true);
            }
          } catch (e) {
            expect(e).toBeInstanceOf(TraceFormatError);
            expect((e as TraceFormatError).message).toMatch(/bad (cpu_regions|finalizing_regions)/);
          }
        },
      ),
      { numRuns: 300 },
    );
    rmSync(join(dir, RAW_FINALIZING_REGIONS_FILE), { force: true });
    writeFileSync(join(dir, RAW_REGIONS_FILE), '0 4096\n');
    rmSync(join(dir, 'buffer_subbuf_size_kb'));
    expect(() => listRawCpuFiles(dir)).toThrow(
      /bad buffer_subbuf_size_kb: "" \(the regions layout needs the page size\)/,
    );
    rmSync(join(dir, RAW_REGIONS_PAGES_FILE));
    expect(() => listRawCpuFiles(dir)).toThrow(/cpu_regions without cpus\.raw/);
  });
});

const tracefs = findTracefs();
const root = process.getuid?.() === 0 && 'path' in tracefs ? tracefs.path : undefined;
const why = root === undefined ? ('why' in tracefs ? tracefs.why : 'not root') : '';

describe.skipIf(root === undefined)(
  `kernel pages in the regions layout${why ? ` (skipped: ${why})` : ''}`,
  { timeout: 60_000 },
  () => {
    it('decode to the same events as the same pages in cpuN.raw files', async () => {
      const c = await captureRawPages(root!, ['kmem/kmalloc', 'sched/sched_switch'], smallWorkload);
      dirs.push(c.dir);
      const dir = tempDir();
      for (const name of readdirSync(c.dir)) {
        if (!/^cpu\d+\.raw$/.test(name)) cpSync(join(c.dir, name), join(dir, name), { recursive: true });
      }
      writeFileSync(join(dir, 'buffer_subbuf_size_kb'), `${c.pageSize / 1024}\n`);
      const cpus = readdirSync(c.dir)
        .map((n) => /^cpu(\d+)\.raw$/.exec(n))
        .filter((m) => m !== null)
        .map((m) => Number(m[1]))
        .sort((a, b) => b - a);
      // In reverse CPU order, 256 MiB apart: neither the order nor the holes matter.
      const regions = cpus.map((cpu, i) => ({ cpu, start: c.pageSize + i * (256 << 20) }));
      writeFileSync(join(dir, RAW_REGIONS_FILE), regionsText(regions));
      const fd = openSync(join(dir, RAW_REGIONS_PAGES_FILE), 'w');
      for (const r of regions) writeAt(fd, readFileSync(join(c.dir, `cpu${r.cpu}.raw`)), r.start);
      closeSync(fd);
      expect(isRawPagesDir(dir)).toBe(true);
      expect(statSync(join(dir, RAW_REGIONS_PAGES_FILE)).blocks * 512).toBeLessThan(64 << 20);
      const key = (e: TraceEvent) =>
        `${e.tsNs} ${e.cpu} ${e.eventClass.name} ${JSON.stringify(e.fields, (_, v) => (typeof v === 'bigint' ? `${v}` : v))}`;
      const ours = [...openRawPagesDir(dir).events()].map(key);
      const theirs = [...openRawPagesDir(c.dir).events()].map(key);
      expect(theirs.length).toBeGreaterThan(0);
      expect(ours).toEqual(theirs);
    });
  },
);
