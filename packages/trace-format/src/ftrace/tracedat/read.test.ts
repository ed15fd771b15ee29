import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTextFormatter } from '../../detect.ts';
import { TraceFormatError } from '../../errors.ts';
import { createFtraceTextFormatter } from '../../output/text.ts';
import {
  expectSameAsReport,
  RECORD_ARGS,
  recordTraceDat,
  reportRaw,
  traceCmdRecording,
} from '../../testing/tracecmd.ts';
import { FUZZ_BUDGET_MS, LIVE_TIMEOUT_MS } from '../../testing/tracefs.ts';
import { decodeCpuPages, wholePages } from '../events.ts';
import { indexFtrace } from '../indexed.ts';
import { openTraceDat, readTraceDat, type TraceDatReader } from './read.ts';
import { writeTraceDatPages } from './write-pages.ts';

/** Every CPU's pages of a reader, decompressed, by CPU number. */
function pagesByCpu(r: TraceDatReader): Map<number, Buffer> {
  return new Map(r.cpuPages().map((p) => [p.cpu, wholePages(p)]));
}

/**
 * Reads a mutated image to its end (a million events at most) and takes its pages for a copy, or fails with a
 * TraceFormatError naming it.
 */
function readsOrRefuses(bytes: Buffer, options: { lenient: boolean; allBuffers?: boolean }): void {
  try {
    const r = readTraceDat(bytes, { file: 'mutated.dat', ...options });
    let n = 0;
    for (const _ of r.events()) if (++n > 1e6) break;
    r.pagesInput();
  } catch (e) {
    expect(e).toBeInstanceOf(TraceFormatError);
    expect((e as Error).message).toMatch(/^mutated\.dat/);
  }
}

/**
 * Where each CPU's data lies in a trace.dat, in file order: per page (uncompressed) or per chunk (compressed), the file
 * range and how many bytes of pages it holds.
 */
function pieces(file: string): Map<number, { start: number; end: number; pageBytes: number }[]> {
  const bytes = readFileSync(file);
  const r = readTraceDat(bytes);
  const compressed = r.info.version === 7 && r.info.compression?.name !== 'none';
  const out = new Map<number, { start: number; end: number; pageBytes: number }[]>();
  for (const cpu of r.info.buffers[0]!.cpus) {
    const list: { start: number; end: number; pageBytes: number }[] = [];
    if (!compressed) {
      for (let at = 0; at < cpu.size; at += r.info.pageSize) {
        const end = Math.min(cpu.size, at + r.info.pageSize);
        list.push({ start: cpu.offset + at, end: cpu.offset + end, pageBytes: end - at });
      }
    } else if (cpu.size > 0) {
      let at = cpu.offset + 4;
      for (let i = bytes.readUInt32LE(cpu.offset); i > 0; i--) {
        const csize = bytes.readUInt32LE(at);
        list.push({ start: at, end: at + 8 + csize, pageBytes: bytes.readUInt32LE(at + 4) });
        at += 8 + csize;
      }
    }
    out.set(cpu.cpu, list);
  }
  return out;
}

/** What the damage tests compare with: a file's pieces, each CPU's events, how many each piece holds. */
function reference(file: string) {
  const r = openTraceDat(file);
  const total = [...r.events()].length;
  const layout = pieces(file);
  const cpus = r.cpuPages().map((p) => {
    const bytes = wholePages(p);
    const keys = decodeCpuPages(r.metadata, { cpu: p.cpu, bytes }).events.map((e) => `${e.tsNs} ${e.eventClass.name}`);
    let at = 0;
    const counts = layout.get(p.cpu)!.map((piece) => {
      const slice = bytes.subarray(at, (at += piece.pageBytes));
      return decodeCpuPages(r.metadata, { cpu: p.cpu, bytes: slice }).events.length;
    });
    return { cpu: p.cpu, keys, counts, pieces: layout.get(p.cpu)! };
  });
  return { layout, cpus, total };
}

/**
 * Asserts the rule for damage at byte `at` of `bytes` (a copy of a file, cut or changed there): read with `lenient`,
 * every CPU's events start with those of its pages that lie wholly before `at`, and a cut that loses events is named
 * by a warning with the file and a byte offset; read strictly, the image reads whole or fails with an error naming
 * the file and a byte offset (in the file, or in a CPU's decompressed data).
 */
function keepsWholePagesBefore(ref: ReturnType<typeof reference>, bytes: Buffer, at: number, cut: boolean): void {
  const expected = new Map<number, string[]>();
  for (const c of ref.cpus) {
    let n = 0;
    for (let i = 0; i < c.pieces.length && c.pieces[i]!.end <= at; i++) n += c.counts[i]!;
    expected.set(c.cpu, c.keys.slice(0, n));
  }
  const wanted = [...expected.values()].some((list) => list.length > 0);
  const named = /^damaged\.dat(:cpu\d+\(decompressed\))?: (.*\b)?byte \d+/;
  let lenient: TraceDatReader | undefined;
  const got = new Map<number, string[]>();
  let count = 0;
  try {
    lenient = readTraceDat(bytes, { file: 'damaged.dat', lenient: true });
    for (const e of lenient.events()) {
      const list = got.get(e.cpu!) ?? [];
      list.push(`${e.tsNs} ${e.eventClass.name}`);
      got.set(e.cpu!, list);
      count++;
    }
  } catch (e) {
    // Only damage before every whole page (the headers, the formats) leaves nothing to keep.
    expect(e).toBeInstanceOf(TraceFormatError);
    expect((e as Error).message).toMatch(named);
    expect(wanted).toBe(false);
  }
  if (lenient !== undefined) {
    for (const [cpu, list] of expected) expect((got.get(cpu) ?? []).slice(0, list.length)).toEqual(list);
    if (cut && count < ref.total) expect(lenient.warnings.some((w) => named.test(w))).toBe(true);
  }
  try {
    let n = 0;
    for (const _ of readTraceDat(bytes, { file: 'damaged.dat' }).events()) n++;
    // A cut in what no reader needs (the strings section that ends a v7 file) loses nothing.
    if (cut) expect(n).toBe(ref.total);
  } catch (e) {
    expect(e).toBeInstanceOf(TraceFormatError);
    expect((e as Error).message).toMatch(named);
  }
}

const { why, root } = traceCmdRecording();

describe.skipIf(why !== '')(
  `trace.dat recorded by trace-cmd record --no-filter -d${why ? ` (skipped: ${why})` : ''}`,
  { timeout: LIVE_TIMEOUT_MS },
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'evtrace-dat-'));
    const v7 = join(dir, 'v7.dat');
    const v6 = join(dir, 'v6.dat');
    const v7none = join(dir, 'v7-none.dat');
    beforeAll(async () => {
      await recordTraceDat(root, v7, RECORD_ARGS, 1000);
      execFileSync('trace-cmd', ['convert', '--file-version', '6', '-i', v7, '-o', v6], { stdio: 'ignore' });
      execFileSync('trace-cmd', ['convert', '--compression', 'none', '-i', v7, '-o', v7none], { stdio: 'ignore' });
    }, 60_000);

    it('decodes a v7 zstd file to the events trace-cmd report prints', () => {
      const r = openTraceDat(v7);
      expect(r.info.version).toBe(7);
      expect(r.info.compression?.name).toBe('zstd');
      const ours = [...r.events()];
      expect(ours.length).toBeGreaterThan(10);
      // Losses included: the events after them carry what trace-cmd's DROPPED lines say.
      expectSameAsReport(ours, reportRaw(v7), r.metadata.kallsyms());
      expect(r.warnings.filter((w) => !/: (\d+|an unknown number of) events lost before this page$/.test(w))).toEqual(
        [],
      );
    });

    it('decodes only the records select keeps, asking once per class met, each record tested where it lies', () => {
      const all = [...openTraceDat(v7).events()];
      const r = openTraceDat(v7);
      const kmalloc = r.eventClasses.find((ec) => ec.name === 'kmem:kmalloc')!;
      const size = kmalloc.ftrace!.fields.find((f) => f.name === 'bytes_alloc')!;
      const big = (bytes: number) => bytes > 512;
      const asked: string[] = [];
      let tested = 0;
      const kept = [
        ...r.events({
          select: (ec) => {
            asked.push(ec.name);
            if (ec.name.startsWith('sched:')) return () => false;
            if (ec !== kmalloc) return undefined;
            return (view, start, length, cpu) => {
              tested++;
              expect(length).toBeGreaterThanOrEqual(size.offset + size.size);
              expect(cpu).toBeGreaterThanOrEqual(0);
              return big(view.getUint32(start + size.offset, true));
            };
          },
        }),
      ];
      const wanted = all.filter(
        (e) =>
          !e.eventClass.name.startsWith('sched:') &&
          (e.eventClass.name !== kmalloc.name || big(Number(e.fields.bytes_alloc))),
      );
      const kmallocs = all.filter((e) => e.eventClass.name === kmalloc.name).length;
      expect(wanted.filter((e) => e.eventClass.name === kmalloc.name).length).toBeLessThan(kmallocs);
      expect(kept.map((e) => [e.eventClass.name, e.tsNs, e.fields])).toEqual(
        wanted.map((e) => [e.eventClass.name, e.tsNs, e.fields]),
      );
      expect(new Set(asked).size).toBe(asked.length);
      expect(new Set(asked)).toEqual(new Set(all.map((e) => e.eventClass.name)));
      expect(tested).toBe(kmallocs);
      expect(kept.length).toBeLessThan(all.length);
    });

    it('decodes the same recording converted to v6 and to uncompressed v7', () => {
      const reference = [...openTraceDat(v7).events()];
      for (const f of [v6, v7none]) {
        const r = openTraceDat(f);
        const ours = [...r.events()];
        expectSameAsReport(ours, reportRaw(f), r.metadata.kallsyms());
        expect(ours.map((e) => e.tsNs)).toEqual(reference.map((e) => e.tsNs));
      }
      expect(openTraceDat(v6).info.version).toBe(6);
    });

    it('formats every event as trace-cmd report -N prints it (print fmt evaluated, symbols from kallsyms)', () => {
      const r = openTraceDat(v7);
      const line = createFtraceTextFormatter({
        cmdlines: r.metadata.cmdlines,
        kallsyms: r.metadata.kallsyms,
        plugins: false,
      });
      const theirs = execFileSync('trace-cmd', ['report', '-N', v7], {
        encoding: 'utf8',
        maxBuffer: 1 << 28,
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      // A lost-events line comes with the event after it.
      const ours = [...r.events()].flatMap((e) => line(e).split('\n'));
      expect(ours.length).toBeGreaterThan(10);
      // Every kind recorded is there, exec's __get_str(filename) included.
      for (const name of ['kmalloc:', 'sched_switch:', 'sched_process_exec:'])
        expect(ours.some((l) => l.includes(name))).toBe(true);
      expect(ours).toEqual(
        theirs
          .replace(/^cpus=\d+\n/, '')
          .trimEnd()
          .split('\n'),
      );
    });

    it('in lenient mode skips a chunk that does not decompress and keeps every other event', () => {
      const bytes = Buffer.from(readFileSync(v7));
      const reference = openTraceDat(v7);
      const cpu = reference.info.buffers[0]!.cpus.find((c) => c.size > 0)!;
      const before = [...reference.events()];
      // Break the zstd magic of the first chunk of that CPU (count, compressed size, size, then the frame).
      bytes.writeUInt32LE(0xdeadbeef, cpu.offset + 12);
      expect(() => [...readTraceDat(bytes, { file: 'broken.dat' }).events()]).toThrow(
        /^broken\.dat: byte \d+: zstd block does not decompress/,
      );
      const lenient = readTraceDat(bytes, { file: 'broken.dat', lenient: true });
      const after = [...lenient.events()];
      expect(lenient.warnings.some((w) => w.includes(`CPU ${cpu.cpu}: chunk skipped`))).toBe(true);
      const lost = before.filter((e) => e.cpu === cpu.cpu).length - after.filter((e) => e.cpu === cpu.cpu).length;
      expect(lost).toBeGreaterThan(0);
      expect(after.filter((e) => e.cpu !== cpu.cpu).length).toBe(before.filter((e) => e.cpu !== cpu.cpu).length);
    });

    it('keeps every whole page before a cut, per CPU, and names the cut, wherever it falls (v6, v7 zstd)', () => {
      for (const f of [v6, v7]) {
        const base = readFileSync(f);
        const ref = reference(f);
        const data = [...ref.layout.values()].flat();
        const first = Math.min(...data.map((p) => p.start));
        // Cuts in the headers and formats, at the edges of pages, chunks and CPUs' data, inside them, in the options.
        const cuts = fc.oneof(
          fc.integer({ min: 0, max: first }),
          fc.constantFrom(...data.flatMap((p) => [p.start, p.end, p.end - 1, p.start + 1])),
          fc.integer({ min: first, max: base.length - 1 }),
        );
        fc.assert(
          fc.property(cuts, (at) => keepsWholePagesBefore(ref, base.subarray(0, at), at, true)),
          { numRuns: 15, interruptAfterTimeLimit: FUZZ_BUDGET_MS },
        );
      }
    });

    it('keeps every whole page before a corrupt byte, per CPU (v6, v7 zstd, v7 uncompressed)', () => {
      for (const f of [v6, v7, v7none]) {
        const base = readFileSync(f);
        const ref = reference(f);
        const data = [...ref.layout.values()].flat();
        const first = Math.min(...data.map((p) => p.start));
        fc.assert(
          fc.property(fc.integer({ min: first, max: base.length - 1 }), fc.integer({ min: 0, max: 255 }), (at, v) => {
            const bytes = Buffer.from(base);
            bytes[at] = v;
            keepsWholePagesBefore(ref, bytes, at, false);
          }),
          { numRuns: 10, interruptAfterTimeLimit: FUZZ_BUDGET_MS },
        );
      }
    });

    it('reads a v7 file cut in the middle of its CPU data: the sections in file order, the whole chunks kept', () => {
      const bytes = readFileSync(v7);
      const table = pieces(v7);
      const last = [...table.values()].at(-1)!;
      const at = last[Math.floor(last.length / 2)]!.start + 3;
      const r = readTraceDat(bytes.subarray(0, at), { file: 'cut.dat', lenient: true });
      const cpu = table.size - 1;
      const before = [...openTraceDat(v7).events()].filter((e) => e.cpu !== cpu);
      expect([...r.events()].filter((e) => e.cpu !== cpu)).toEqual(before);
      expect(r.warnings).toContainEqual(
        expect.stringMatching(/^cut\.dat: byte \d+: section id: .*; the sections are read in file order instead$/),
      );
      // Each section once: the formats the options named are not read again in file order.
      expect(r.eventClasses.map((c) => c.name)).toEqual(openTraceDat(v7).eventClasses.map((c) => c.name));
      // How many of its chunks were whole depends on what the recording caught on that CPU: with none, the CPU's
      // data is not found at all and the CPUs are numbered as the file has them.
      const whole = Math.floor(last.length / 2);
      expect(r.warnings).toContainEqual(
        whole > 0
          ? expect.stringMatching(
              new RegExp(`^cut\\.dat: byte ${at - 3}: .*; CPU ${cpu}: the ${whole} whole chunks before it kept$`),
            )
          : expect.stringMatching(/: \d+ CPUs' data found in the flyrecord section; CPUs numbered in file order$/),
      );
      expect(() => readTraceDat(bytes.subarray(0, at), { file: 'cut.dat' })).toThrow(/^cut\.dat: byte \d+: section id/);
      // The indexed reader takes the same pages by the same rule.
      const index = indexFtrace(readTraceDat(bytes.subarray(0, at), { file: 'cut.dat', lenient: true }), {
        lenient: true,
      });
      const sequential = [...readTraceDat(bytes.subarray(0, at), { file: 'cut.dat', lenient: true }).events()];
      expect(index.length).toBe(sequential.length);
      expect(Array.from({ length: index.length }, (_, i) => index.event(i).tsNs)).toEqual(
        sequential.map((e) => e.tsNs),
      );
    });

    it('copies the recording page for page into v6 and v7 files that trace-cmd report prints as the original', () => {
      const original = pagesByCpu(openTraceDat(v7));
      const reported = reportRaw(v7);
      for (const [from, version, compression] of [
        [v7, 6, 'none'],
        [v6, 7, 'zstd'],
        [v7none, 7, 'none'],
        [v7, 7, 'zlib'],
      ] as const) {
        const copy = openTraceDat(from).pagesInput();
        if (!('input' in copy)) throw new Error(`not copied: ${copy.reason}`);
        const out = join(dir, `copy-${version}-${compression}.dat`);
        writeTraceDatPages(out, copy.input, { version, compression });
        const r = openTraceDat(out);
        expect(r.info.version).toBe(version);
        expect(pagesByCpu(r)).toEqual(original);
        expect(r.metadata.kallsyms()!.size).toBe(openTraceDat(from).metadata.kallsyms()!.size);
        expect(r.metadata.cmdlines).toEqual(openTraceDat(from).metadata.cmdlines);
        // Debian 12's trace-cmd reads zstd only ("trace-cmd list -c"): the zlib copy is judged by its pages alone.
        if (compression !== 'zlib') expect(reportRaw(out)).toEqual(reported);
      }
    });

    it('reads saved cmdlines, kallsyms and the clock', () => {
      const r = openTraceDat(v7);
      expect(r.metadata.clock).toBe('local');
      expect(r.metadata.cmdlines.size).toBeGreaterThan(0);
      expect(r.metadata.kallsyms()!.size).toBeGreaterThan(1000);
      expect(r.info.uname).toMatch(/^Linux /);
    });

    it('never fails with anything but a TraceFormatError on mutated files, and stays bounded', () => {
      const files = [v6, v7, v7none].map((f) => {
        const bytes = readFileSync(f);
        // Structure lives in the first 64 KiB (headers, formats) and in the CPU data; kallsyms fill the middle.
        const dataStart = Math.min(
          ...openTraceDat(f)
            .info.buffers[0]!.cpus.map((c) => c.offset)
            .filter((o) => o > 0),
        );
        return { bytes, dataStart };
      });
      fc.assert(
        fc.property(
          fc.nat(files.length - 1),
          fc.array(fc.tuple(fc.boolean(), fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
          fc.option(fc.nat(), { nil: undefined }),
          fc.boolean(),
          (which, edits, cut, lenient) => {
            const { bytes: base, dataStart } = files[which]!;
            const bytes = Buffer.from(base.subarray(0, cut === undefined ? base.length : cut % base.length));
            for (const [inData, pos, value] of edits) {
              const at = inData ? dataStart + (pos % Math.max(1, base.length - dataStart)) : pos % (1 << 16);
              if (at < bytes.length) bytes[at] = value;
            }
            readsOrRefuses(bytes, { lenient });
          },
        ),
        { numRuns: 200, interruptAfterTimeLimit: FUZZ_BUDGET_MS },
      );
    });
  },
);

describe('trace.dat errors', () => {
  it('rejects a file without the magic at byte 0', () => {
    expect(() => readTraceDat(Buffer.from('hello world, not a trace'), { file: 'x.dat' })).toThrow(
      /^x\.dat: byte 0: not a trace\.dat file/,
    );
  });

  it('rejects an unsupported version and a truncated header with the offset', () => {
    const magic = Buffer.from([0x17, 0x08, 0x44, ...Buffer.from('tracing')]);
    expect(() => readTraceDat(Buffer.concat([magic, Buffer.from('5\0')]), { file: 'v5' })).toThrow(
      /unsupported trace\.dat version "5"/,
    );
    const e = (() => {
      try {
        readTraceDat(Buffer.concat([magic, Buffer.from('6\0'), Buffer.from([0, 8, 0, 16, 0, 0])]), { file: 't' });
      } catch (err) {
        return err as TraceFormatError;
      }
    })();
    expect(e?.code).toBe('ERR_TRACE_DAT');
    expect(e?.location.offset).toBe(18);
  });
});

describe.skipIf(why !== '')(
  `trace.dat with an instance buffer (record -B)${why ? ` (skipped: ${why})` : ''}`,
  { timeout: LIVE_TIMEOUT_MS },
  () => {
    const name = `evtrace-b${process.pid}`;
    const file = join(mkdtempSync(join(tmpdir(), 'evtrace-dat-b-')), 'b.dat');
    const v6 = `${file}.v6`;
    beforeAll(async () => {
      try {
        await recordTraceDat(
          root,
          file,
          // sched_process_exec in the top-level buffer too, so that both buffers hold events.
          ['-e', 'sched:sched_process_exec', '-B', name, '-e', 'sched:sched_switch', '-e', 'sched:sched_process_exec'],
          800,
        );
      } finally {
        // trace-cmd leaves the instance it created behind on this kernel.
        const dir = `${root}/instances/${name}`;
        if (existsSync(dir)) {
          for (const f of ['tracing_on', 'events/enable']) writeFileSync(`${dir}/${f}`, '0');
          rmdirSync(dir);
        }
      }
      execFileSync('trace-cmd', ['convert', '--file-version', '6', '-i', file, '-o', v6], { stdio: 'ignore' });
    }, 60_000);

    it('reads the buffer asked for, as trace-cmd report prints it, and names the others', () => {
      const r = openTraceDat(file, { buffer: name });
      expect(r.info.buffers.map((b) => b.name)).toEqual(['', name]);
      const ours = [...r.events()];
      expect(ours.length).toBeGreaterThan(0);
      expectSameAsReport(ours, reportRaw(file, name), r.metadata.kallsyms());
      expect(r.warnings.some((w) => w.includes(`buffer "${name}" is read; the file also holds ""`))).toBe(true);
      expect(() => openTraceDat(file, { buffer: 'nope' })).toThrow(/no buffer "nope" in the file/);
    });

    it('reads every buffer merged by time (allBuffers), each as trace-cmd report prints it, in v7 and in v6', () => {
      for (const f of [file, v6]) {
        const r = openTraceDat(f, { allBuffers: true });
        expect(r.buffersRead).toEqual(['', name]);
        expect(r.warnings).toEqual([]);
        const all = [...r.events()];
        const inTop = all.filter((e) => e.scopes?.buffer === undefined);
        const inInstance = all.filter((e) => e.scopes?.buffer?.name === name);
        expect(inInstance.length).toBeGreaterThan(0);
        expect(inTop.length + inInstance.length).toBe(all.length);
        expectSameAsReport(inTop, reportRaw(f), r.metadata.kallsyms());
        expectSameAsReport(inInstance, reportRaw(f, name), r.metadata.kallsyms());
        for (let i = 1; i < all.length; i++) expect(all[i]!.tsNs >= all[i - 1]!.tsNs).toBe(true);
        // Text lines as trace-cmd report prints several buffers: the instance's name, the top's padding.
        const line = createTextFormatter(r);
        expect(line(inInstance[0]!)).toMatch(new RegExp(`^${name}: \\s*\\S.*-\\d+ +\\[\\d+\\]`));
        expect(line(inTop[0]!).startsWith(' '.repeat(name.length + 2))).toBe(true);
      }
    });

    it("copies the buffer asked for as a file's only buffer, and refuses to copy every buffer into one", () => {
      const copy = openTraceDat(file, { buffer: name }).pagesInput();
      if (!('input' in copy)) throw new Error(`not copied: ${copy.reason}`);
      const out = `${file}.instance-copy`;
      writeTraceDatPages(out, copy.input, { version: 6 });
      expect(reportRaw(out)).toEqual(reportRaw(file, name));
      expect(openTraceDat(file, { allBuffers: true }).pagesInput()).toEqual({ reason: 'every buffer is read at once' });
    });

    it('never fails with anything but a TraceFormatError on mutated files with instance buffers', () => {
      // The headers lead the file; the options of v7 and the instance's flyrecord table of v6 trail it.
      const files = [file, v6].map((f) => readFileSync(f));
      fc.assert(
        fc.property(
          fc.nat(files.length - 1),
          fc.array(fc.tuple(fc.boolean(), fc.nat(1 << 16), fc.integer({ min: 0, max: 255 })), {
            minLength: 1,
            maxLength: 8,
          }),
          fc.boolean(),
          (which, edits, lenient) => {
            const bytes = Buffer.from(files[which]!);
            for (const [tail, pos, value] of edits) {
              const at = tail ? bytes.length - 1 - (pos % bytes.length) : pos % bytes.length;
              bytes[at] = value;
            }
            readsOrRefuses(bytes, { lenient, allBuffers: true });
          },
        ),
        { numRuns: 300, interruptAfterTimeLimit: FUZZ_BUDGET_MS },
      );
    });
  },
);
