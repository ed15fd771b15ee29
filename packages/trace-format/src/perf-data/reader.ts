/**
 * A perf.data file read without perf: its events (attributes), the tracepoint formats of its HEADER_TRACING_DATA
 * feature (parsed by the ftrace format parser, as trace.dat's are), the kernel's build id and release, and its samples
 * in time order, read a chunk at a time.
 */
import { formatLocation } from '@evtrace/errors';
import { type ByteSource, fileSource, memorySource } from '../ctf/byte-source.ts';
import { TraceFormatError } from '../errors.ts';
import { parseFormatFile } from '../ftrace/format-file.ts';
import { parseHeaderPage } from '../ftrace/headers.ts';
import { Cursor } from '../ftrace/tracedat/cursor.ts';
import { TRACEDAT_MAGIC } from '../ftrace/tracedat/ids.ts';
import { readTracingMetadata } from '../ftrace/tracedat/read.ts';
import type { EventClass } from '../model/types.ts';
import { Feature, fail, type PerfDataHeader, type PerfEventAttr, readPerfDataHeader } from './header.ts';
import { RecordCursor, type SampleLayout, sampleLayout } from './records.ts';
import {
  orderedSamples,
  type PerfSamples,
  type SampleSourceState,
  type SampleVisitor,
  type SampleWalk,
  walkSamples,
} from './samples.ts';

/** Options of {@link openPerfData} and {@link readPerfData}. */
export interface PerfDataReadOptions {
  /** Keep what comes before damage (warned about in `warnings`) instead of throwing `ERR_TRACE_PERF_DATA`. */
  readonly lenient?: boolean;
  /** Samples per batch of {@link PerfDataReader.samples} (default 4096). */
  readonly batch?: number;
}

/** A perf.data file opened for reading. */
export interface PerfDataReader {
  readonly header: PerfDataHeader;
  /** The tracepoint formats of HEADER_TRACING_DATA (none when the file has no tracepoint event). */
  readonly eventClasses: readonly EventClass[];
  /** The event class of each attribute (by index), for tracepoint events whose format the file carries. */
  readonly attrClasses: readonly (EventClass | undefined)[];
  /** The kernel's build id (lowercase hex) from HEADER_BUILD_ID, when recorded. */
  readonly kernelBuildId: string | undefined;
  /** `uname -r` of the recording machine (HEADER_OSRELEASE). */
  readonly osRelease: string | undefined;
  /**
   * The samples in time order (as `perf script` prints them), in batches of columns; read once. The walk reads the
   * file a few MiB at a time; it holds the samples of the rounds not yet delivered. With `visit`, each sample is handed
   * to it as it is delivered instead of written into the batch, which then only counts them (a batch ends after that
   * many samples).
   */
  samples(walked?: SampleWalk, visit?: SampleVisitor): Iterable<PerfSamples>;
  /**
   * The walk `samples()` would make to order the samples, without delivering them (undefined when the samples carry
   * no time: they come in file order). Given to `samples(walked)` of another reader of the same file, on another
   * thread, it delivers the samples in the same order with the same warnings while this thread does other work. Either
   * this or `samples()` is called, once.
   */
  walk(): SampleWalk | undefined;
  /** Damage kept going past (lenient) and lost events the kernel counted; complete once `samples()` has ended. */
  readonly warnings: string[];
  /** Samples the kernel could not record (PERF_RECORD_LOST and LOST_SAMPLES), once `samples()` has ended. */
  readonly lost: () => number;
}

/** Opens a perf.data file; only its head is read until samples are asked for. See {@link readPerfData}. */
export function openPerfData(file: string, options: PerfDataReadOptions = {}): PerfDataReader {
  return readPerfData(fileSource(file), { ...options, file });
}

/**
 * Reads a perf.data image (in memory or from a ByteSource): the header, attributes, tracing data and build ids now,
 * the samples as they are iterated.
 * @throws TraceFormatError `ERR_TRACE_PERF_DATA` with the file and byte offset of the first problem (unless `lenient`
 * where what came before it can be kept).
 */
export function readPerfData(
  bytes: Uint8Array | ByteSource,
  options: PerfDataReadOptions & { readonly file?: string } = {},
): PerfDataReader {
  const source = bytes instanceof Uint8Array ? memorySource(bytes) : bytes;
  const file = options.file;
  const lenient = options.lenient === true;
  const header = readPerfDataHeader(source, file, lenient);
  const warnings = [...header.warnings];
  const eventClasses = tracingClasses(source, header, file, lenient, warnings);
  const byId = new Map(eventClasses.map((c) => [c.id, c]));
  const attrClasses = header.attrs.map((a) => (a.type === 2 ? byId.get(Number(a.config)) : undefined));
  const section = (bit: number) => {
    const s = header.features.get(bit);
    return s === undefined ? undefined : Buffer.from(source.read(s.offset, s.size));
  };
  const osRelease = stringSection(section(Feature.OSRELEASE));
  const kernelBuildId = buildIds(section(Feature.BUILD_ID)).get('[kernel.kallsyms]');
  const counts = { skipped: 0, lost: 0, lostSamples: 0 };
  let read = false;
  return {
    header,
    eventClasses,
    attrClasses,
    kernelBuildId,
    osRelease,
    warnings,
    lost: () => counts.lost + counts.lostSamples,
    walk() {
      // Untimed samples have no order to find: the reader stays unread, for samples().
      const layouts = header.attrs.map(sampleLayout);
      if (layouts.length === 0 || layouts.some((l) => l.time < 0)) return undefined;
      return walkSamples(sampleState());
    },
    samples(walked?: SampleWalk, visit?: SampleVisitor) {
      const state = sampleState(visit);
      if (walked !== undefined) {
        counts.skipped += walked.counts.skipped;
        counts.lost += walked.counts.lost;
        counts.lostSamples += walked.counts.lostSamples;
      }
      return {
        *[Symbol.iterator]() {
          yield* orderedSamples(state, options.batch ?? 4096, walked);
          if (counts.skipped > 10) warnings.push(`${file ?? 'perf.data'}: ${counts.skipped} samples skipped in all`);
          const lost = counts.lost + counts.lostSamples;
          if (lost > 0) warnings.push(`${file ?? 'perf.data'}: the kernel lost ${lost} events while recording`);
        },
      };
    },
  };

  function sampleState(visit?: SampleVisitor): SampleSourceState {
    if (read) throw new TraceFormatError('ERR_TRACE_PERF_DATA', 'the samples of a perf.data reader are read once');
    read = true;
    const layouts = header.attrs.map(sampleLayout);
    checkLayouts(layouts, file);
    const byIdIndex = new Map<number, number>();
    header.attrs.forEach((a: PerfEventAttr, i) => {
      for (const id of a.ids) byIdIndex.set(id, i);
    });
    // Timed samples are queued by file offset and read again when delivered: the walk keeps no chunk.
    const reuse = layouts.every((l) => l.time >= 0);
    const cursor = new RecordCursor(source, header.data, { ...(file !== undefined ? { file } : {}), lenient, reuse });
    const dataEnd = header.data.offset + header.data.size;
    return {
      cursor,
      source,
      dataEnd,
      layouts,
      byId: byIdIndex,
      file,
      lenient,
      counts,
      warnings,
      batches: 0,
      ...(visit !== undefined ? { visit } : {}),
    };
  }
}

/** Samples of several events are told apart by their id, which must lie at one place in all of them. */
function checkLayouts(layouts: readonly SampleLayout[], file: string | undefined): void {
  if (layouts.length < 2) return;
  const at = layouts[0]!.id;
  if (at < 0 || layouts.some((l) => l.id !== at))
    fail(
      'events without a sample id at one place (PERF_SAMPLE_IDENTIFIER or ID): samples cannot be told apart',
      file,
      0,
    );
}

/** A perf_header_string: u32 length, then the NUL-padded text. */
function stringSection(bytes: Buffer | undefined): string | undefined {
  if (bytes === undefined || bytes.length < 4) return undefined;
  const n = Math.min(bytes.readUInt32LE(0), bytes.length - 4);
  return bytes.toString('utf8', 4, 4 + n).replace(/\0[\s\S]*$/, '');
}

/**
 * HEADER_BUILD_ID: `struct perf_record_header_build_id` records (header, pid, 20 id bytes with a size byte after them
 * when misc has PERF_RECORD_MISC_BUILD_ID_SIZE, padding, NUL-terminated file name), by file name.
 */
function buildIds(bytes: Buffer | undefined): Map<string, string> {
  const ids = new Map<string, string>();
  if (bytes === undefined) return ids;
  for (let o = 0; o + 36 <= bytes.length; ) {
    const misc = bytes.readUInt16LE(o + 4);
    const size = bytes.readUInt16LE(o + 6);
    if (size < 36 || o + size > bytes.length) break;
    const idSize = misc & 0x8000 ? Math.min(bytes[o + 32]!, 20) : 20;
    const end = bytes.indexOf(0, o + 36);
    const name = bytes.toString('latin1', o + 36, end < 0 || end > o + size ? o + size : end);
    if (!ids.has(name)) ids.set(name, bytes.toString('hex', o + 12, o + 12 + idSize));
    o += size;
  }
  return ids;
}

/**
 * HEADER_TRACING_DATA: trace.dat's magic, a version text (perf writes "0.6"), endianness, long and page sizes, then
 * the metadata block of trace.dat version 6 (header_page to printk formats). Its event formats parse as trace.dat's.
 */
function tracingClasses(
  source: ByteSource,
  header: PerfDataHeader,
  file: string | undefined,
  lenient: boolean,
  warnings: string[],
): EventClass[] {
  const s = header.features.get(Feature.TRACING_DATA);
  if (s === undefined) return [];
  const bytes = Buffer.from(source.read(s.offset, s.size));
  try {
    const head = new Cursor(bytes, true, file, '', 0, s.offset);
    if (!TRACEDAT_MAGIC.equals(head.take(TRACEDAT_MAGIC.length, 'tracing data magic')))
      head.fail('tracing data without its magic', 0);
    head.cstring('tracing data version', 16);
    const endian = head.take(1, 'endianness')[0]!;
    if (endian > 1) head.fail(`bad endianness flag ${endian}`, head.pos - 1);
    const longSize = head.take(1, 'long size')[0]!;
    const c = new Cursor(bytes, endian === 0, file, '', head.pos, s.offset);
    const pageSize = c.u32('page size');
    const meta = readTracingMetadata(c);
    const byteOrder = endian === 0 ? 'le' : 'be';
    const label = (what: string) => `${file ?? '<perf.data>'}:tracing data ${what}`;
    const page = parseHeaderPage(meta.headerPage, { file: label('header_page'), byteOrder, pageSize });
    const classes: EventClass[] = [];
    meta.eventFormats.forEach((f, i) => {
      try {
        classes.push(
          parseFormatFile(f.text, {
            file: label(`${f.system} format #${i}`),
            system: f.system,
            byteOrder,
            longSize: longSize === 4 || longSize === 8 ? longSize : page.commitSize,
          }),
        );
      } catch (e) {
        if (!(lenient && e instanceof TraceFormatError)) throw e;
        warnings.push(`${e.message}; event left out`);
      }
    });
    return classes;
  } catch (e) {
    if (!(e instanceof TraceFormatError) || e.code !== 'ERR_TRACE_DAT') throw e;
    const where = formatLocation(e.location);
    const bare = where === '' ? e.message : e.message.slice(where.length + 2);
    const wrapped = new TraceFormatError('ERR_TRACE_PERF_DATA', `tracing data: ${bare}`, e.location, { cause: e });
    if (!lenient) throw wrapped;
    warnings.push(`${wrapped.message}; no tracepoint formats`);
    return [];
  }
}
