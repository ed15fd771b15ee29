import { closeSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kernelPageLayout } from '@evtrace/trace-format';
import { afterAll, describe, expect, it } from 'vitest';
import { TracefsError } from '../errors.ts';
import { PageReader } from './reader.ts';

const work = mkdtempSync(join(tmpdir(), 'evtrace-reader-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const layout = kernelPageLayout(4096);

/** `count` sub-buffers of `records` 8-byte records each (type_len 2), common_type 300 + the page's number. */
function pages(count: number, records: number): Buffer {
  const b = Buffer.alloc(4096 * count);
  for (let n = 0; n < count; n++) {
    const base = n * 4096;
    b.writeBigUInt64LE(1000n + BigInt(n), base);
    let p = base + 16;
    for (let i = 0; i < records; i++, p += 12) {
      b.writeUInt32LE(2, p);
      b.writeUInt16LE(300 + n, p + 4);
    }
    b.writeUInt32LE(p - base - 16, base + 8);
  }
  return b;
}

/**
 * A regular file stands in for `trace_pipe_raw`: each read returns its next pages and 0 at its end, which the reader
 * takes as an empty buffer, as it takes a short read.
 */
function source(name: string, bytes: Buffer): number {
  const file = join(work, name);
  writeFileSync(file, bytes);
  return openSync(file, 'r');
}

function readAt(file: string, at: number, length: number): Buffer {
  const fd = openSync(file, 'r');
  try {
    const b = Buffer.alloc(length);
    expect(readSync(fd, b, 0, length, at)).toBe(length);
    return b;
  } finally {
    closeSync(fd);
  }
}

describe('PageReader into regions of one file', () => {
  it("writes each CPU's pages from its region's start, and counts them", () => {
    const out = join(work, 'cpus.raw');
    const fd = openSync(out, 'w+');
    const a = source('a', pages(3, 5));
    const b = source('b', pages(2, 7));
    try {
      const reader = new PageReader(
        [
          { cpu: 0, pipe: a, out: fd, outPath: out, region: { start: 8192, end: 8192 + 40960 } },
          { cpu: 1, pipe: b, out: fd, outPath: out, region: { start: 1 << 30, end: (1 << 30) + 40960 } },
        ],
        layout,
        1 << 20,
      );
      reader.drainToEnd();
      expect(reader.totals.pages).toBe(5);
      expect(reader.totals.rawBytes).toBe(5 * 4096);
      expect(reader.totals.byType[300]).toBe(5 + 7);
      expect(reader.totals.byType[302]).toBe(5);
    } finally {
      for (const f of [fd, a, b]) closeSync(f);
    }
    expect(statSync(out).size).toBe((1 << 30) + 2 * 4096);
    expect(readAt(out, 8192, 3 * 4096).equals(pages(3, 5))).toBe(true);
    expect(readAt(out, 1 << 30, 2 * 4096).equals(pages(2, 7))).toBe(true);
    expect(statSync(out).blocks * 512).toBeLessThan(1 << 20);
  });

  it('stops with ERR_TRACEFS_OUTPUT at a full region, after the whole pages that fit', () => {
    const out = join(work, 'full.raw');
    const fd = openSync(out, 'w+');
    const a = source('c', pages(5, 3));
    try {
      const reader = new PageReader(
        [{ cpu: 2, pipe: a, out: fd, outPath: out, region: { start: 4096, end: 4096 + 2 * 4096 + 100 } }],
        layout,
        1 << 20,
      );
      let error: unknown;
      try {
        reader.drainToEnd();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(TracefsError);
      expect((error as TracefsError).code).toBe('ERR_TRACEFS_OUTPUT');
      expect((error as TracefsError).message).toBe(`cannot write ${out}: CPU 2's region of 8292 bytes is full`);
      expect(reader.totals.rawBytes).toBe(2 * 4096);
    } finally {
      closeSync(fd);
      closeSync(a);
    }
    const file = readFileSync(out);
    expect(file.length).toBe(3 * 4096);
    expect(file.subarray(4096).equals(pages(2, 3))).toBe(true);
  });
});
