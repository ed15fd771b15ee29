import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../../errors.ts';
import type { TraceEvent } from '../../model/types.ts';
import { tick, tickEvents } from '../../testing/tick-events.ts';
import { readTraceDat } from './read.ts';
import { encodeTraceDat } from './write-events.ts';
import { writeTraceDatPages } from './write-pages.ts';

const events: TraceEvent[] = tickEvents(2000, 2);
const original = encodeTraceDat([tick], events, { version: 6 }).bytes;
const dir = mkdtempSync(join(tmpdir(), 'evtrace-copy-'));

/** The file offset of CPU 0's second page and the page size. */
function secondPage(bytes: Buffer): { at: number; pageSize: number } {
  const r = readTraceDat(bytes);
  const cpu0 = r.info.buffers[0]!.cpus.find((c) => c.cpu === 0)!;
  expect(cpu0.size).toBeGreaterThan(2 * r.info.pageSize);
  return { at: cpu0.offset + r.info.pageSize, pageSize: r.info.pageSize };
}

/** Copies `bytes`' pages into a trace.dat and reads it back leniently: its events and any page it could not walk. */
function copyAndRead(bytes: Buffer, lenient: boolean): { events: number; pageWarnings: string[]; skipped: number } {
  const copy = readTraceDat(bytes, { file: 'bad.dat', lenient }).pagesInput();
  if (!('input' in copy)) throw new Error(copy.reason);
  const out = join(dir, 'copy.dat');
  writeTraceDatPages(out, copy.input);
  const back = readTraceDat(readFileSync(out), { lenient: true });
  const n = [...back.events()].length;
  return {
    events: n,
    pageWarnings: back.warnings.filter((w) => w.includes('rest of the page skipped')),
    skipped: copy.skipped,
  };
}

describe('trace.dat page copy (pagesInput) checks every page it copies', () => {
  it('refuses a page whose commit runs past the page, naming the file and byte offset', () => {
    const bytes = Buffer.from(original);
    const { at } = secondPage(bytes);
    bytes.writeUInt32LE(0x00ffffff, at + 8);
    // The pages are read and checked as the writer takes them, a few MiB at a time, as compressed chunks are.
    const copy = readTraceDat(bytes, { file: 'bad.dat' }).pagesInput();
    if (!('input' in copy)) throw new Error(copy.reason);
    expect(() => writeTraceDatPages(join(dir, 'v6-bad-copy.dat'), copy.input)).toThrow(
      new TraceFormatError('ERR_TRACE_FTRACE_PAGE', 'commit says 16777215 bytes of data, the page holds 4080', {
        file: 'bad.dat',
        offset: at + 8,
      }),
    );
  });

  it('with lenient, leaves the corrupt page out, counts and reports it, and the copy reads whole', () => {
    const bytes = Buffer.from(original);
    const { at } = secondPage(bytes);
    // An event header whose length word runs past the data: the page's structure is broken, not its header.
    bytes.writeUInt32LE(0, at + 16);
    bytes.writeUInt32LE(0xfffff0, at + 20);
    const reader = readTraceDat(bytes, { file: 'bad.dat', lenient: true });
    const result = copyAndRead(bytes, true);
    expect(result.skipped).toBe(1);
    expect(result.pageWarnings).toEqual([]);
    const perPage = [...readTraceDat(original).events()].length - result.events;
    expect(perPage).toBeGreaterThan(0);
    reader.pagesInput();
    expect(reader.warnings).toContainEqual(
      `bad.dat: byte ${at + 16}: event length 16777200 runs past the data end; CPU 0: page left out of the copy`,
    );
  });

  it('on any damaged page, either refuses it or copies pages that all read', () => {
    const { at, pageSize } = secondPage(Buffer.from(original));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(pageSize * 2 - 1), fc.nat(255)), { minLength: 1, maxLength: 8 }),
        fc.boolean(),
        (edits, lenient) => {
          const bytes = Buffer.from(original);
          for (const [offset, value] of edits) bytes[at + offset] = value;
          try {
            expect(copyAndRead(bytes, lenient).pageWarnings).toEqual([]);
          } catch (error) {
            expect(lenient).toBe(false);
            expect(error).toBeInstanceOf(TraceFormatError);
            expect((error as Error).message).toMatch(/^bad\.dat: byte \d+: /);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('trace.dat page copy of compressed pages, chunk by chunk', () => {
  // Enough pages for several compressed chunks (of ten pages each).
  const many = encodeTraceDat(
    [tick],
    Array.from({ length: 8000 }, (_, i) => ({
      ...events[i % 2000]!,
      tsNs: 1_000_000n + BigInt(i) * 1000n,
      cpu: i % 2,
    })),
    { version: 6 },
  ).bytes;

  /** A v7 zstd file of `many`'s pages, with CPU 0's page `corrupt` given a commit past its end. */
  function v7(corrupt?: number): { bytes: Buffer; pageSize: number; pages: number } {
    const copy = readTraceDat(many).pagesInput();
    if (!('input' in copy)) throw new Error(copy.reason);
    const { pageSize } = copy.input;
    const cpu0 = Buffer.concat([...copy.input.cpus[0]!.chunks()]);
    if (corrupt !== undefined) cpu0.writeUInt32LE(0x00ffffff, corrupt * pageSize + 8);
    const cpus = copy.input.cpus.map((c, i) => (i === 0 ? { size: cpu0.length, chunks: () => [cpu0] } : c));
    const out = join(dir, `v7-${corrupt}.dat`);
    writeTraceDatPages(out, { ...copy.input, cpus }, { version: 7, compression: 'zstd' });
    return { bytes: readFileSync(out), pageSize, pages: cpu0.length / pageSize };
  }

  it('copies every page: the copy reads the same events', () => {
    const { bytes, pages } = v7();
    // More pages than one compressed chunk holds, so the copy goes through several.
    expect(pages).toBeGreaterThan(10);
    const copy = readTraceDat(bytes).pagesInput();
    if (!('input' in copy)) throw new Error(copy.reason);
    const out = join(dir, 'v7-copy.dat');
    writeTraceDatPages(out, copy.input, { version: 7, compression: 'zstd' });
    const times = (b: Buffer) => [...readTraceDat(b).events()].map((e) => `${e.cpu} ${e.tsNs} ${e.fields.n}`);
    expect(times(readFileSync(out))).toEqual(times(many));
  });

  it("refuses a corrupt page in a later chunk, naming its offset in the CPU's decompressed data", () => {
    const { bytes, pageSize, pages } = v7(12);
    expect(pages).toBeGreaterThan(12);
    const copy = readTraceDat(bytes, { file: 'bad7.dat' }).pagesInput();
    if (!('input' in copy)) throw new Error(copy.reason);
    expect(() => writeTraceDatPages(join(dir, 'v7-bad-copy.dat'), copy.input, { version: 7 })).toThrow(
      new TraceFormatError('ERR_TRACE_FTRACE_PAGE', 'commit says 16777215 bytes of data, the page holds 4080', {
        file: 'bad7.dat:cpu0(decompressed)',
        offset: 12 * pageSize + 8,
      }),
    );
  });
});
