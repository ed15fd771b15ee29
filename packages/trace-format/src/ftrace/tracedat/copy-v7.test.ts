import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTextFormatter } from '../../detect.ts';
import { TraceFormatError } from '../../errors.ts';
import type { TraceEvent } from '../../model/types.ts';
import { tick, tickEvents } from '../../testing/tick-events.ts';
import { recordTraceDat, reportRaw, traceCmdRecording } from '../../testing/tracecmd.ts';
import { copyTraceDat } from './copy-v7.ts';
import { OPTION, SECTION_NAMES } from './ids.ts';
import { openTraceDat, readTraceDat } from './read.ts';
import { encodeTraceDat } from './write-events.ts';

const events: TraceEvent[] = tickEvents(3000, 3, 7919n);
const dir = mkdtempSync(join(tmpdir(), 'evtrace-copy7-'));

/** A version 7 file of `events` (three CPUs, many chunks each), written to `dir`. */
function original(compression: 'none' | 'zstd' | 'zlib'): string {
  const file = join(dir, `in-${compression}.dat`);
  writeFileSync(
    file,
    encodeTraceDat([tick], events, { version: 7, compression, cmdlines: new Map([[7, 'seven']]) }).bytes,
  );
  return file;
}

/** Each event as a line: the comparison of two readings. */
const keys = (file: string) =>
  [...openTraceDat(file).events()].map((e) => `${e.tsNs} ${e.cpu} ${e.eventClass.name} ${e.fields.n} ${e.fields.task}`);

/** Each CPU's data as the file stores it: its chunk list, or its pages. */
function cpuData(file: string): Buffer[] {
  const bytes = readFileSync(file);
  const r = readTraceDat(bytes);
  const compressed = r.info.compression?.name !== 'none';
  return r.info.buffers[0]!.cpus.map((c) => bytes.subarray(c.offset, c.offset + c.size + (compressed ? 4 : 0)));
}

describe('copyTraceDat: a version 7 trace.dat copied with nothing decoded or compressed again', () => {
  it('carries every CPU chunk list and every text as they are, and the copy reads as the original (zstd, zlib, none)', () => {
    for (const compression of ['zstd', 'zlib', 'none'] as const) {
      const input = original(compression);
      const out = join(dir, `out-${compression}.dat`);
      const result = copyTraceDat(input, out, { compression });
      expect(result).toEqual({ bytes: readFileSync(out).length, cpus: 3 });
      expect(cpuData(out)).toEqual(cpuData(input));
      expect(keys(out)).toEqual(keys(input));
      const [a, b] = [openTraceDat(input), openTraceDat(out)];
      expect(b.info.compression).toEqual(a.info.compression);
      expect(b.metadata.cmdlines).toEqual(new Map([[7, 'seven']]));
      expect(b.eventClasses.map((c) => c.ftrace)).toEqual(a.eventClasses.map((c) => c.ftrace));
    }
  });

  it('leaves to a decoding conversion what it cannot copy as it is, and says why', () => {
    const zstd = original('zstd');
    const out = join(dir, 'not-copied.dat');
    expect(copyTraceDat(zstd, out, { compression: 'zlib' })).toEqual({
      reason: 'the file is compressed with zstd, the output with zlib',
    });
    expect(copyTraceDat(zstd, out, { version: 6 })).toEqual({ reason: 'version 6 is asked for' });
    const v6 = join(dir, 'v6.dat');
    writeFileSync(v6, encodeTraceDat([tick], events.slice(0, 10), { version: 6 }).bytes);
    expect(copyTraceDat(v6, out)).toEqual({ reason: 'the file is version 6' });
    const text = join(dir, 'text.txt');
    writeFileSync(text, 'not a trace\n');
    expect(copyTraceDat(text, out)).toEqual({ reason: 'not a trace.dat file' });
    expect(existsSync(out)).toBe(false);
  });

  it('refuses a chunk that is not zstd data or runs past the file, naming the file and byte offset, and writes nothing', () => {
    const input = original('zstd');
    const bytes = readFileSync(input);
    const cpu = readTraceDat(bytes).info.buffers[0]!.cpus[1]!;
    const out = join(dir, 'refused.dat');
    // The count, the first chunk's compressed size and size, then its frame's magic.
    const broken = Buffer.from(bytes);
    broken.writeUInt32LE(0xdeadbeef, cpu.offset + 12);
    writeFileSync(join(dir, 'broken.dat'), broken);
    expect(() => copyTraceDat(join(dir, 'broken.dat'), out)).toThrow(
      new TraceFormatError(
        'ERR_TRACE_DAT',
        `CPU 1 chunk 0 is not zstd data of ${bytes.readUInt32LE(cpu.offset + 8)} bytes`,
        {
          file: join(dir, 'broken.dat'),
          offset: cpu.offset + 12,
        },
      ),
    );
    // A chunk whose stated size is not its frame's content size.
    const resized = Buffer.from(bytes);
    const usize = bytes.readUInt32LE(cpu.offset + 8);
    resized.writeUInt32LE(usize + 1, cpu.offset + 8);
    writeFileSync(join(dir, 'resized.dat'), resized);
    expect(() => copyTraceDat(join(dir, 'resized.dat'), out)).toThrow(
      `CPU 1 chunk 0 is not zstd data of ${usize + 1} bytes`,
    );
    writeFileSync(join(dir, 'cut.dat'), bytes.subarray(0, cpu.offset + 100));
    expect(() => copyTraceDat(join(dir, 'cut.dat'), out)).toThrow(/cut\.dat: byte \d+: /);
    expect(existsSync(out)).toBe(false);
  });

  it('on any changed or cut file, throws only a TraceFormatError, or copies what reads as the original reads', () => {
    const input = original('zstd');
    const base = readFileSync(input);
    const mutated = join(dir, 'mutated.dat');
    const out = join(dir, 'mutated-out.dat');
    const reading = (file: string) => {
      try {
        return keys(file);
      } catch (e) {
        expect(e).toBeInstanceOf(TraceFormatError);
        return 'error';
      }
    };
    const change = fc.oneof(
      fc.record({ at: fc.integer({ min: 0, max: base.length - 1 }), value: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ cut: fc.integer({ min: 0, max: base.length - 1 }) }),
    );
    fc.assert(
      fc.property(change, (c) => {
        let bytes = Buffer.from(base);
        if ('cut' in c) bytes = bytes.subarray(0, c.cut);
        else bytes[c.at] = c.value;
        writeFileSync(mutated, bytes);
        let copied: ReturnType<typeof copyTraceDat>;
        try {
          copied = copyTraceDat(mutated, out);
        } catch (e) {
          expect(e).toBeInstanceOf(TraceFormatError);
          expect((e as TraceFormatError).location.file).toBe(mutated);
          return;
        }
        if ('bytes' in copied) expect(reading(out)).toEqual(reading(mutated));
      }),
      { numRuns: 150 },
    );
    // Each run writes and reads files: seconds on a loaded machine.
  }, 60_000);
});

const { why, root } = traceCmdRecording();

describe.skipIf(why !== '')(
  `copyTraceDat on a trace-cmd recording with an instance buffer${why ? ` (skipped: ${why})` : ''}`,
  { timeout: 60_000 },
  () => {
    const name = `evtrace-c${process.pid}`;
    const file = join(dir, 'recorded.dat');
    beforeAll(async () => {
      try {
        await recordTraceDat(
          root,
          file,
          ['-e', 'kmem', '-e', 'sched:sched_switch', '-B', name, '-e', 'sched:sched_process_exec', '-e', 'irq'],
          800,
        );
      } finally {
        // trace-cmd leaves the instance it created behind on this kernel.
        const instance = `${root}/instances/${name}`;
        if (existsSync(instance)) {
          for (const f of ['tracing_on', 'events/enable']) writeFileSync(`${instance}/${f}`, '0');
          rmdirSync(instance);
        }
      }
    }, 60_000);

    const report = (f: string) =>
      execFileSync('trace-cmd', ['report', f], {
        encoding: 'utf8',
        maxBuffer: 1 << 30,
        stdio: ['ignore', 'pipe', 'pipe'],
      });

    it('writes a file trace-cmd report prints exactly as the recording, every buffer and option kept', () => {
      const out = join(dir, 'recorded-copy.dat');
      const result = copyTraceDat(file, out);
      expect('bytes' in result).toBe(true);
      const theirs = report(file);
      expect(theirs.split('\n').length).toBeGreaterThan(20);
      expect(theirs).toContain(`${name}:`);
      expect(report(out)).toBe(theirs);
      // And evtrace's own text (what `evtrace cat` prints) of every buffer.
      const text = (f: string) => {
        const r = openTraceDat(f, { allBuffers: true });
        const line = createTextFormatter(r);
        return [...r.events()].map(line);
      };
      expect(text(out)).toEqual(text(file));
      // Those that say where a section lies (the buffer, the metadata) point into the new file.
      const moved = new Set<number>([OPTION.buffer, ...Object.keys(SECTION_NAMES).map(Number)]);
      const options = (f: string) =>
        openTraceDat(f)
          .info.options.filter((o) => !moved.has(o.id))
          .map((o) => [o.id, o.data]);
      expect(options(out)).toEqual(options(file));
    });

    it('copies the buffer asked for as the only one, as trace-cmd report prints that buffer', () => {
      const out = join(dir, 'recorded-instance.dat');
      expect('bytes' in copyTraceDat(file, out, { buffer: name })).toBe(true);
      expect(openTraceDat(out).info.buffers.map((b) => b.name)).toEqual(['']);
      const ours = reportRaw(out);
      expect(ours.length).toBeGreaterThan(0);
      expect(ours).toEqual(reportRaw(file, name));
      expect(() => copyTraceDat(file, out, { buffer: 'nope' })).toThrow(/no buffer "nope" in the file/);
    });
  },
);
