/**
 * A trace.dat read from its file (openTraceDat) as the reader goes: the same events as the image read from memory,
 * several pieces per CPU, no file descriptor held between reads, a file that shrinks under the reader named, and
 * any damage read from the file as from memory.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { TraceFormatError } from '../../errors.ts';
import type { TraceEvent } from '../../model/types.ts';
import { tick, tickEvents } from '../../testing/tick-events.ts';
import { openTraceDat, readTraceDat, type TraceDatReader } from './read.ts';
import { encodeTraceDat } from './write-events.ts';

/** Enough events that each CPU's pages are several of the pieces the reader takes from the file at a time. */
const events: TraceEvent[] = tickEvents(160_000, 2);

/** Metadata larger than one window of the cursor that reads it from the file. */
const kallsyms = Array.from(
  { length: 8000 },
  (_, i) => `ffffffff${(0x81000000 + i * 64).toString(16)} T function_${i}\n`,
).join('');
const cmdlines = new Map(Array.from({ length: 5000 }, (_, i) => [1000 + i, `task-${i}`]));

const dir = mkdtempSync(join(tmpdir(), 'evtrace-read-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const summary = (r: TraceDatReader) => [...r.events()].map((e) => `${e.cpu} ${e.tsNs} ${e.fields.n} ${e.fields.task}`);
const openDescriptors = () => readdirSync('/proc/self/fd').length;

const kinds = [
  { version: 6, compression: 'none' },
  { version: 7, compression: 'none' },
  { version: 7, compression: 'zstd' },
] as const;

describe('a trace.dat read from its file as the reader goes', { timeout: 60_000 }, () => {
  for (const { version, compression } of kinds) {
    const file = join(dir, `v${version}-${compression}.dat`);
    const bytes = encodeTraceDat([tick], events, { version, compression, kallsyms, cmdlines }).bytes;
    writeFileSync(file, bytes);

    it(`v${version} ${compression}: yields the events of the image read from memory`, () => {
      const fromFile = openTraceDat(file);
      // Each CPU's pages span more than one piece read from the file.
      expect(fromFile.cpuPages().every((p) => p.chunks!.reduce((n, c) => n + c.size, 0) > 2 << 20)).toBe(true);
      const ours = summary(fromFile);
      expect(ours).toHaveLength(events.length);
      expect(ours).toEqual(summary(readTraceDat(bytes)));
      expect(fromFile.warnings).toEqual([]);
      expect(fromFile.metadata.kallsymsText).toBe(kallsyms);
      expect(fromFile.metadata.cmdlines).toEqual(cmdlines);
    });

    it(`v${version} ${compression}: holds no file descriptor between reads, nor once abandoned`, () => {
      const before = openDescriptors();
      const r = openTraceDat(file);
      const it = r.events()[Symbol.iterator]();
      for (let i = 0; i < 10; i++) expect(it.next().done).toBe(false);
      expect(openDescriptors()).toBe(before);
      // Abandoned, as `cat -n 10` leaves it: nothing is left to close.
      it.return?.();
      expect(openDescriptors()).toBe(before);
    });

    it(`v${version} ${compression}: names the file and the offset where it ends when it shrinks under the reader`, () => {
      const copy = `${file}.shrinking`;
      writeFileSync(copy, bytes);
      const r = openTraceDat(copy);
      const cpu1 = r.info.buffers[0]!.cpus[1]!;
      truncateSync(copy, cpu1.offset + 100);
      let error: unknown;
      try {
        for (const _ of r.events());
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(TraceFormatError);
      const e = error as TraceFormatError;
      expect(e.code).toBe('ERR_TRACE_DAT');
      expect(e.location.file).toBe(copy);
      expect(e.message).toMatch(/the file ended while/);
      // Where CPU 1's data was being read when the bytes were missing: its pages, or a chunk header past the cut.
      expect(e.location.offset).toBeGreaterThanOrEqual(cpu1.offset);
      expect(e.location.offset).toBeLessThan(bytes.length);
      expect(readFileSync(copy).length).toBe(cpu1.offset + 100);
    });
  }
});

/** What a reading gives: its events and warnings, or its error (any other than a TraceFormatError fails the test). */
function outcome(read: () => TraceDatReader): string {
  try {
    const r = read();
    return [...summary(r), ...r.warnings].join('\n');
  } catch (e) {
    expect(e).toBeInstanceOf(TraceFormatError);
    return `error: ${(e as Error).message}`;
  }
}

describe('a damaged trace.dat read from its file', { timeout: 60_000 }, () => {
  const few = events.slice(0, 3000);
  for (const { version, compression } of kinds) {
    it(`v${version} ${compression}: reads as its image in memory, strict or lenient, whatever is changed or cut`, () => {
      const base = encodeTraceDat([tick], few, { version, compression }).bytes;
      const file = join(dir, `damaged-v${version}-${compression}.dat`);
      const change = fc.oneof(
        fc.record({ at: fc.nat(base.length - 1), value: fc.nat(255) }),
        fc.record({ cut: fc.nat(base.length - 1) }),
      );
      fc.assert(
        fc.property(change, fc.boolean(), (c, lenient) => {
          const bytes = 'cut' in c ? base.subarray(0, c.cut) : Buffer.from(base);
          if ('at' in c) bytes[c.at] = c.value;
          writeFileSync(file, bytes);
          expect(outcome(() => openTraceDat(file, { lenient }))).toBe(
            outcome(() => readTraceDat(bytes, { file, lenient })),
          );
        }),
        { numRuns: 150 },
      );
    });
  }
});
