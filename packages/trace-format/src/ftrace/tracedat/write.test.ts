import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { TraceFormatError } from '../../errors.ts';
import type { EventClass, TraceEvent } from '../../model/types.ts';
import { expectSameAsReport, RECORD_ARGS, recordTraceDat, reportRaw } from '../../testing/tracecmd.ts';
import { findTracefs, hasTool } from '../../testing/tracefs.ts';
import { withLoss } from '../events.ts';
import { formatFileText, HEADER_EVENT_TEXT, headerPageText } from '../format-text.ts';
import type { TraceDatPagesInput } from './pages.ts';
import { openTraceDat, readTraceDat } from './read.ts';
import { synthesizeFtraceClass } from './synthesize.ts';
import { encodeTraceDat, writeTraceDat } from './write-events.ts';
import { completeTraceDatPages, traceDatPagesHeadSize, writeTraceDatHead, writeTraceDatPages } from './write-pages.ts';

/** Every file version and compression the writer writes. */
const FORMATS = [
  [6, 'none'],
  [7, 'none'],
  [7, 'zstd'],
  [7, 'zlib'],
] as const;

const dir = mkdtempSync(join(tmpdir(), 'evtrace-write-'));

/** A class as a CTF reader would give it: no ftrace info. */
const ctfClass: EventClass = {
  id: 3,
  name: 'app:request',
  streamId: 0,
  payload: {
    kind: 'struct',
    minAlign: 8,
    members: [
      {
        name: 'id',
        type: { kind: 'int', size: 64, signed: false, align: 8, byteOrder: 'le', base: 10, encoding: 'none' },
      },
      {
        name: 'delta',
        type: { kind: 'int', size: 32, signed: true, align: 8, byteOrder: 'le', base: 10, encoding: 'none' },
      },
      { name: 'path', type: { kind: 'string', encoding: 'utf8' } },
    ],
  },
};

function ctfEvents(n: number): TraceEvent[] {
  return Array.from({ length: n }, (_, i) => ({
    // Gaps beyond 2^27 ns force time extends.
    tsNs: 5_000_000_000n + BigInt(i) * 200_000_000n + BigInt(i % 7),
    cpu: i % 2,
    eventClass: ctfClass,
    fields: { id: BigInt(i) * 1_000_000_007n, delta: i === 0 ? 0 : -i, path: `/srv/item/${i}` },
  }));
}

describe('trace.dat writing, read back by evtrace', () => {
  it('round-trips v6, v7 uncompressed, zstd and zlib with time extends and synthesized formats', () => {
    for (const [version, compression] of FORMATS) {
      const res = encodeTraceDat([ctfClass], ctfEvents(50), { version, compression });
      expect(res.synthesized).toEqual(['app:request']);
      const back = readTraceDat(res.bytes, { file: `${version}-${compression}` });
      expect(back.info.version).toBe(version);
      if (version === 7) expect(back.info.compression?.name).toBe(compression);
      const events = [...back.events()];
      expect(events.length).toBe(50);
      const want = ctfEvents(50).sort((a, b) => (a.tsNs < b.tsNs ? -1 : 1));
      events.forEach((e, i) => {
        expect(e.tsNs).toBe(want[i]!.tsNs);
        expect(e.cpu).toBe(want[i]!.cpu);
        expect(e.eventClass.name).toBe('app:request');
        expect(e.fields).toEqual(want[i]!.fields);
      });
    }
  });

  it('spreads records over several pages of the chosen size', () => {
    const res = encodeTraceDat([ctfClass], ctfEvents(2000), { version: 7, compression: 'none', pageSize: 8192 });
    const back = readTraceDat(res.bytes);
    expect(back.metadata.page.pageSize).toBe(8192);
    expect([...back.events()].length).toBe(2000);
  });
});

describe('writeTraceDat writes events as they come', () => {
  /** `n` events over four CPUs, made one at a time: nothing holds them all. */
  function* stream(n: number): Generator<TraceEvent> {
    for (let i = 0; i < n; i++) {
      yield {
        tsNs: 9_000_000_000n + BigInt(i) * 1000n,
        cpu: (i * 7) % 4,
        eventClass: ctfClass,
        fields: { id: BigInt(i), delta: i === 0 ? 0 : -i, path: `/p/${i % 101}` },
      };
    }
  }

  it('reads back every event of many chunks per CPU, in every version and compression, leaving no temporary file', () => {
    const n = 20_000;
    const key = (e: TraceEvent) => `${e.tsNs} ${e.cpu} ${e.fields.id} ${e.fields.delta} ${e.fields.path}`;
    const want = [...stream(n)].map(key);
    for (const [version, compression] of FORMATS) {
      const sub = mkdtempSync(join(dir, 'stream-'));
      const file = join(sub, 'out.dat');
      const result = writeTraceDat(file, [ctfClass], stream(n), { version, compression });
      expect(result).toEqual({ size: readFileSync(file).length, events: n, synthesized: ['app:request'] });
      const back = openTraceDat(file);
      // Each CPU's pages span several chunks.
      for (const p of back.cpuPages()) {
        const size = typeof p.bytes === 'function' ? p.chunks!.reduce((k, c) => k + c.size, 0) : p.bytes.length;
        expect(size).toBeGreaterThan(20 * 4096);
      }
      expect([...back.events()].map(key)).toEqual(want);
      expect(readdirSync(sub)).toEqual(['out.dat']);
    }
  });

  it("keeps a CPU's records in the order given, one earlier than the one before it with an absolute time stamp", () => {
    const file = join(dir, 'back-in-time.dat');
    const times = [5_000_000n, 3_000_000n, 7_000_000n];
    writeTraceDat(
      file,
      [ctfClass],
      times.map((tsNs, i) => ({ tsNs, cpu: 0, eventClass: ctfClass, fields: { id: BigInt(i), delta: 0, path: '' } })),
    );
    expect([...openTraceDat(file).events()].map((e) => [e.tsNs, e.fields.id])).toEqual([
      [5_000_000n, 0n],
      [3_000_000n, 1n],
      [7_000_000n, 2n],
    ]);
  });

  it('refuses an event on a CPU a file cannot hold, naming it', () => {
    for (const cpu of [-1, 4096, 1.5]) {
      const event = { ...stream(1).next().value!, cpu };
      expect(() => writeTraceDat(join(dir, 'bad-cpu.dat'), [ctfClass], [event])).toThrow(
        new TraceFormatError('ERR_TRACE_FORMAT', `event 0 (app:request) is on CPU ${cpu}, not 0 to 4095`),
      );
    }
  });

  it('leaves neither the file nor a temporary one when the events fail part way', () => {
    const sub = mkdtempSync(join(dir, 'failing-'));
    const file = join(sub, 'out.dat');
    function* failing(): Generator<TraceEvent> {
      yield* stream(5000);
      throw new Error('input broke');
    }
    expect(() => writeTraceDat(file, [ctfClass], failing())).toThrow('input broke');
    expect(readdirSync(sub)).toEqual([]);
  });
});

const tracefs = findTracefs();
const why = !hasTool('trace-cmd')
  ? 'trace-cmd is not installed (apt install trace-cmd)'
  : process.getuid?.() !== 0
    ? 'not root'
    : 'why' in tracefs
      ? tracefs.why
      : '';

describe.skipIf(!hasTool('trace-cmd'))(
  'trace.dat written by evtrace, judged by trace-cmd report (skipped without trace-cmd: apt-get install trace-cmd)',
  { timeout: 30_000 },
  () => {
    it('trace-cmd report prints the synthesized events with their fields and timestamps', () => {
      for (const [version, compression] of [
        [6, 'none'],
        [7, 'zstd'],
      ] as const) {
        const file = join(dir, `ctf-${version}.dat`);
        writeTraceDat(file, [ctfClass], ctfEvents(30), { version, compression });
        const reported = reportRaw(file);
        const ours = [...openTraceDat(file).events()];
        expect(reported.length).toBe(30);
        expect(reported.map((e) => e.name)).toEqual(ours.map(() => 'request'));
        expect(reported.map((e) => e.ts)).toEqual(ours.map((e) => e.tsNs));
        expect(reported.map((e) => e.fields.get('path'))).toEqual(ours.map((e) => e.fields.path));
        expect(reported.map((e) => e.fields.get('delta'))).toEqual(ours.map((e) => String(e.fields.delta)));
      }
    });
  },
);

describe.skipIf(why !== '')(
  `re-writing a real recording${why ? ` (skipped: ${why})` : ''}`,
  { timeout: 60_000 },
  () => {
    const original = join(dir, 'rec.dat');
    beforeAll(async () => {
      await recordTraceDat((tracefs as { path: string }).path, original, RECORD_ARGS, 800);
    }, 60_000);

    it('writes v6 and v7 files whose trace-cmd report equals the original events', () => {
      const r = openTraceDat(original);
      const events = [...r.events()];
      for (const [version, compression] of [
        [6, 'none'],
        [7, 'zstd'],
        [7, 'none'],
      ] as const) {
        const file = join(dir, `re-${version}-${compression}.dat`);
        writeTraceDat(file, r.eventClasses, events, {
          version,
          compression,
          cmdlines: r.metadata.cmdlines,
          ...(r.metadata.kallsymsText !== undefined ? { kallsyms: r.metadata.kallsymsText } : {}),
          ...(r.metadata.clock !== undefined ? { clock: r.metadata.clock } : {}),
        });
        expectSameAsReport(events, reportRaw(file), r.metadata.kallsyms());
        // trace-cmd's own view of the original and of our copy agree line for line.
        const theirs = execFileSync('trace-cmd', ['report', '-t', original], {
          encoding: 'utf8',
          maxBuffer: 1 << 28,
          stdio: ['ignore', 'pipe', 'ignore'],
        });
        const ourCopy = execFileSync('trace-cmd', ['report', '-t', file], {
          encoding: 'utf8',
          maxBuffer: 1 << 28,
          stdio: ['ignore', 'pipe', 'ignore'],
        });
        expect(ourCopy).toBe(theirs);
      }
    });

    it('keeps losses the kernel marked: trace-cmd report prints its DROPPED lines before the same events', () => {
      const r = openTraceDat(original);
      // The recording's own losses, if any, and more: a counted one and an uncounted one on each CPU, mid-page.
      const seen = new Map<number, number>();
      const events = [...r.events()].map((e) => {
        const n = seen.get(e.cpu!) ?? 0;
        seen.set(e.cpu!, n + 1);
        return n === 5 ? withLoss(e, 1234 + e.cpu!) : n === 9 ? withLoss(e, null) : e;
      });
      const marked = events.filter((e) => e.scopes?.lost !== undefined);
      expect(marked.length).toBeGreaterThanOrEqual(2 * seen.size);
      for (const [version, compression] of [
        [6, 'none'],
        [7, 'zstd'],
      ] as const) {
        const file = join(dir, `lost-${version}-${compression}.dat`);
        writeTraceDat(file, r.eventClasses, events, { version, compression, cmdlines: r.metadata.cmdlines });
        expectSameAsReport(events, reportRaw(file), r.metadata.kallsyms());
        const report = execFileSync('trace-cmd', ['report', '-t', file], {
          encoding: 'utf8',
          maxBuffer: 1 << 28,
          stdio: ['ignore', 'pipe', 'ignore'],
        });
        const dropped = report.split('\n').filter((l) => l.includes('EVENTS DROPPED'));
        expect(dropped).toEqual(
          marked.map((e) =>
            e.scopes!.lost!.events === null
              ? `CPU:${e.cpu} [EVENTS DROPPED]`
              : `CPU:${e.cpu} [${e.scopes!.lost!.events} EVENTS DROPPED]`,
          ),
        );
        expect([...openTraceDat(file).events()].map((e) => e.scopes?.lost ?? null)).toEqual(
          events.map((e) => e.scopes?.lost ?? null),
        );
      }
    });
  },
);

/** Raw pages and texts as a recorder would hold them, taken from a v6 file our event writer made (the reference). */
function pagesFromReference(reference: string, uname?: string): TraceDatPagesInput {
  const bytes = readFileSync(reference);
  const r = readTraceDat(bytes);
  const pageSize = r.info.pageSize;
  const ftraceClass = synthesizeFtraceClass(ctfClass, 1000);
  const layout = {
    byteOrder: 'le',
    timestampOffset: 0,
    commitOffset: 8,
    commitSize: 8,
    dataOffset: 16,
    pageSize,
  } as const;
  return {
    pageSize,
    headerPage: headerPageText(layout),
    headerEvent: HEADER_EVENT_TEXT,
    formats: [['app', [formatFileText(ftraceClass)]]],
    kallsyms: Buffer.from('ffffffff81000000 T _stext\n'),
    cmdlines: '1 init\n',
    ...(uname !== undefined ? { uname } : {}),
    cpus: r.info.buffers[0]!.cpus.map((c) => ({
      size: c.size,
      // Odd-sized chunks: the writer must not assume page-sized pieces.
      *chunks() {
        for (let at = 0; at < c.size; at += 3001)
          yield bytes.subarray(c.offset + at, c.offset + Math.min(c.size, at + 3001));
      },
    })),
  };
}

describe('trace.dat from raw pages (writeTraceDatPages)', () => {
  const reference = join(dir, 'pages-ref.dat');
  writeTraceDat(reference, [ctfClass], ctfEvents(2000), { version: 6 });

  it('copies the pages verbatim into v6 and v7 (zstd) files that read back as the same events', () => {
    const want = [...openTraceDat(reference).events()].map((e) => [e.tsNs, e.cpu, e.fields]);
    for (const version of [6, 7] as const) {
      const file = join(dir, `pages-${version}.dat`);
      const n = writeTraceDatPages(file, pagesFromReference(reference, 'evtrace demo'), { version });
      expect(n).toBe(readFileSync(file).length);
      const back = openTraceDat(file);
      expect(back.info.version).toBe(version);
      expect(back.info.uname).toBe('evtrace demo');
      if (version === 7) expect(back.info.compression?.name).toBe('zstd');
      expect([...back.events()].map((e) => [e.tsNs, e.cpu, e.fields])).toEqual(want);
    }
  });

  it('writes a head of more pieces than one writev takes (IOV_MAX 1024) whole, kallsyms byte for byte', () => {
    // 600 systems of one format each: about 2 400 pieces before the pages.
    const input = pagesFromReference(reference);
    const extra: [string, string[]][] = Array.from({ length: 600 }, (_, i) => [
      `sys${i}`,
      [formatFileText(synthesizeFtraceClass({ ...ctfClass, name: `sys${i}:ev` }, 2000 + i))],
    ]);
    const kallsyms = Buffer.from(
      Array.from({ length: 5000 }, (_, i) => `ffffffff81${i.toString(16).padStart(6, '0')} T sym_${i}\n`).join(''),
    );
    const file = join(dir, 'many-pieces.dat');
    const n = writeTraceDatPages(file, { ...input, formats: [...input.formats, ...extra], kallsyms });
    expect(n).toBe(readFileSync(file).length);
    const back = openTraceDat(file);
    expect(back.eventClasses.map((c) => c.name)).toEqual(
      expect.arrayContaining(['app:request', 'sys0:ev', 'sys599:ev']),
    );
    expect(back.metadata.kallsymsText).toBe(kallsyms.toString());
    const want = [...openTraceDat(reference).events()].map((e) => [e.tsNs, e.cpu, e.fields]);
    expect([...back.events()].map((e) => [e.tsNs, e.cpu, e.fields])).toEqual(want);
  });

  it('lets a CPU copy its own pages into the file (copyTo), and reads its chunks when copyTo declines', () => {
    const want = [...openTraceDat(reference).events()].map((e) => [e.tsNs, e.cpu, e.fields]);
    const bytes = readFileSync(reference);
    const cpus = readTraceDat(bytes).info.buffers[0]!.cpus;
    const input = pagesFromReference(reference);
    const copied: number[] = [];
    for (const accept of [true, false]) {
      const file = join(dir, `copy-to-${accept}.dat`);
      let chunkReads = 0;
      const n = writeTraceDatPages(file, {
        ...input,
        cpus: input.cpus.map((c, cpu) => ({
          size: c.size,
          *chunks() {
            chunkReads++;
            yield* c.chunks();
          },
          // Writes at the offset given, as copy_file_range does with one: the writer must carry on after it.
          copyTo(fd: number, at: number) {
            if (!accept) return false;
            writeSync(fd, bytes, cpus[cpu]!.offset, c.size, at);
            copied.push(cpu);
            return true;
          },
        })),
      });
      expect(n).toBe(readFileSync(file).length);
      expect(chunkReads).toBe(accept ? 0 : input.cpus.filter((c) => c.size > 0).length);
      expect([...openTraceDat(file).events()].map((e) => [e.tsNs, e.cpu, e.fields])).toEqual(want);
    }
    expect(copied.length).toBeGreaterThan(0);
  });

  it('takes kallsyms from a file: copied at its offset when copyTo accepts, read when it declines', () => {
    const input = pagesFromReference(reference);
    const text = Array.from({ length: 5000 }, (_, i) => `ffffffff8${String(i).padStart(7, '0')} T sym_${i}\n`).join('');
    const plain = join(dir, 'kallsyms-plain.dat');
    writeTraceDatPages(plain, { ...input, kallsyms: Buffer.from(text) });
    const expected = readFileSync(plain);
    for (const accept of [true, false]) {
      const file = join(dir, `kallsyms-file-${accept}.dat`);
      const calls: string[] = [];
      const n = writeTraceDatPages(file, {
        ...input,
        kallsyms: {
          size: Buffer.byteLength(text),
          read: () => {
            calls.push('read');
            return Buffer.from(text);
          },
          // Positional, as copy_file_range with an offset: no file position moves.
          copyTo: (fd, at) => {
            calls.push(`copy@${at}`);
            if (!accept) return false;
            writeSync(fd, Buffer.from(text), 0, Buffer.byteLength(text), at);
            return true;
          },
        },
      });
      expect(n).toBe(expected.length);
      // Byte for byte the file written from memory, whichever way the symbols came.
      expect(readFileSync(file).equals(expected)).toBe(true);
      expect(calls).toEqual(accept ? [`copy@${expected.indexOf(text)}`] : [`copy@${expected.indexOf(text)}`, 'read']);
      expect(openTraceDat(file).metadata.kallsymsText).toBe(text);
    }
    // The head's size counts the file's bytes without reading them.
    const sized = { size: Buffer.byteLength(text), read: () => expect.unreachable('read') as never };
    expect(traceDatPagesHeadSize({ ...input, kallsyms: sized }, input.cpus.length)).toBe(
      traceDatPagesHeadSize({ ...input, kallsyms: Buffer.from(text) }, input.cpus.length),
    );
  });

  it('refuses a CPU whose chunks do not add up to its declared size', () => {
    const input = pagesFromReference(reference);
    const short = { ...input, cpus: input.cpus.map((c) => ({ size: c.size + 4096, chunks: () => c.chunks() })) };
    expect(() => writeTraceDatPages(join(dir, 'short.dat'), short)).toThrow(/CPU 0's pages are \d+ bytes, not \d+/);
  });

  /** A file holding only CPU `cpu`'s pages, at the room a head needs (rounded up by `extra` pages). */
  function anchored(input: TraceDatPagesInput, cpu: number, name: string, extra = 0): { file: string; room: number } {
    const room = traceDatPagesHeadSize(input, input.cpus.length) + extra * input.pageSize;
    const file = join(dir, name);
    const fd = openSync(file, 'w');
    let at = room;
    for (const chunk of input.cpus[cpu]!.chunks()) at += writeSync(fd, chunk, 0, chunk.length, at);
    closeSync(fd);
    return { file, room };
  }

  function complete(file: string, input: TraceDatPagesInput, cpu: number, offset: number): number {
    const fd = openSync(file, 'r+');
    try {
      return completeTraceDatPages(fd, input, { cpu, offset });
    } finally {
      closeSync(fd);
    }
  }

  it("completes a file around any one CPU's pages, in place: the others follow it, the head precedes it", () => {
    const want = [...openTraceDat(reference).events()].map((e) => [e.tsNs, e.cpu, e.fields]);
    const input = pagesFromReference(reference, 'evtrace demo');
    expect(input.cpus.filter((c) => c.size > 0).length).toBe(2);
    for (const cpu of [0, 1]) {
      // Spare room between the head and the pages must not matter either.
      const { file, room } = anchored(input, cpu, `anchored-${cpu}.dat`, cpu);
      const size = complete(file, input, cpu, room);
      expect(size).toBe(readFileSync(file).length);
      const back = openTraceDat(file);
      expect(back.info.version).toBe(6);
      expect(back.info.uname).toBe('evtrace demo');
      expect(back.info.buffers[0]!.cpus[cpu]!.offset).toBe(room);
      expect([...back.events()].map((e) => [e.tsNs, e.cpu, e.fields])).toEqual(want);
    }
  });

  it('completes through copyTo at an offset, and refuses a head that does not fit before the pages', () => {
    const want = [...openTraceDat(reference).events()].map((e) => [e.tsNs, e.cpu, e.fields]);
    const input = pagesFromReference(reference);
    const { file, room } = anchored(input, 0, 'anchored-copy.dat');
    const placed: number[] = [];
    complete(
      file,
      {
        ...input,
        cpus: input.cpus.map((c) => ({
          ...c,
          copyTo(fd: number, at?: number) {
            let pos = at!;
            placed.push(pos);
            for (const chunk of c.chunks()) pos += writeSync(fd, chunk, 0, chunk.length, pos);
            return true;
          },
        })),
      },
      0,
      room,
    );
    expect(placed).toEqual([room + input.cpus[0]!.size]);
    expect([...openTraceDat(file).events()].map((e) => [e.tsNs, e.cpu, e.fields])).toEqual(want);
    const tight = anchored(input, 0, 'anchored-tight.dat');
    expect(() => complete(tight.file, input, 0, tight.room - input.pageSize)).toThrow(
      /the head needs \d+ bytes; \d+ were left before CPU 0's pages/,
    );
  });

  it("writes only the head of a file whose CPUs' pages already lie where the CPU table will say", () => {
    const want = [...openTraceDat(reference).events()].map((e) => [e.tsNs, e.cpu, e.fields]);
    const input = pagesFromReference(reference);
    const head = traceDatPagesHeadSize(input, input.cpus.length);
    const file = join(dir, 'placed.dat');
    // CPU 1 first, then CPU 0, each page-aligned after the head: any order and gaps.
    const offsets = [head + input.cpus[1]!.size + 2 * input.pageSize, head];
    const fd = openSync(file, 'w+');
    try {
      for (const cpu of [0, 1]) {
        let at = offsets[cpu]!;
        for (const chunk of input.cpus[cpu]!.chunks()) at += writeSync(fd, chunk, 0, chunk.length, at);
      }
      const before = readFileSync(file).subarray(head);
      expect(writeTraceDatHead(fd, input, offsets)).toBe(head);
      // The pages were not touched.
      expect(readFileSync(file).subarray(head).equals(before)).toBe(true);
      expect(() => writeTraceDatHead(fd, input, [offsets[0]!, head - input.pageSize])).toThrow(
        /the head needs \d+ bytes; the first pages are at \d+/,
      );
      expect(() => writeTraceDatHead(fd, input, [offsets[0]! + 1, head])).toThrow(/CPU offsets must be 2 multiples/);
    } finally {
      closeSync(fd);
    }
    const back = openTraceDat(file);
    expect(back.info.buffers[0]!.cpus.map((c) => c.offset)).toEqual(offsets);
    expect([...back.events()].map((e) => [e.tsNs, e.cpu, e.fields])).toEqual(want);
  });

  it.skipIf(!hasTool('trace-cmd'))(
    'trace-cmd report prints the copy exactly as the reference (skipped without trace-cmd: apt-get install trace-cmd)',
    { timeout: 30_000 },
    () => {
      const report = (f: string) =>
        execFileSync('trace-cmd', ['report', '-t', f], {
          maxBuffer: 1 << 28,
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
        });
      const theirs = report(reference);
      expect(theirs).toMatch(/request/);
      for (const version of [6, 7] as const) {
        const file = join(dir, `pages-report-${version}.dat`);
        writeTraceDatPages(file, pagesFromReference(reference), { version });
        expect(report(file)).toBe(theirs);
      }
      // Completed around CPU 1: its pages come first in the file, after a gap, the CPU table says where.
      const input = pagesFromReference(reference);
      const { file, room } = anchored(input, 1, 'anchored-report.dat', 3);
      complete(file, input, 1, room);
      expect(report(file)).toBe(theirs);
    },
  );
});
