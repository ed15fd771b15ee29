/**
 * Reader of trace-cmd `trace.dat` files, versions 6 and 7 (see trace-cmd.dat.v6(5) and trace-cmd.dat.v7(5)): the
 * metadata (header_page, event formats, kallsyms, printk formats, saved cmdlines, options) and the per-CPU
 * flyrecord pages of the top-level buffer, with zlib or zstd compression in version 7.
 */
import { located } from '@evtrace/errors';
import { type ByteSource, fileSource, memorySource } from '../../ctf/byte-source.ts';
import { TraceFormatError } from '../../errors.ts';
import type { ByteOrder, EventClass, EventReadOptions, TraceEvent } from '../../model/types.ts';
import {
  type CpuPages,
  cpuEventBatches,
  EventTable,
  type FtraceMetadata,
  mergeBatches,
  type PageChunk,
  wholePages,
} from '../events.ts';
import { parseFormatFile } from '../format-file.ts';
import { type PageLayout, parseHeaderEvent, parseHeaderPage } from '../headers.ts';
import { checkPages, type PageSource } from '../page.ts';
import type { FtraceReader, FtraceReadOptions } from '../raw-dir.ts';
import { compileRecordCheck } from '../record.ts';
import { Kallsyms, parseCmdlines, parsePrintkFormats } from '../symbols.ts';
import { readBufferOption } from './blocks.ts';
import { asBuffer, Cursor } from './cursor.ts';
import { OPTION, SECTION_COMPRESSED, TRACEDAT_MAGIC } from './ids.ts';
import type { TraceDatCpuPages, TraceDatPagesInput } from './pages.ts';
import { zstdDecodeInto } from './zstd-frames.ts';

/** One flyrecord buffer (the top-level one or an instance) and where its CPU data lies. */
export interface TraceDatBuffer {
  readonly name: string;
  readonly clock?: string;
  readonly pageSize: number;
  readonly cpus: readonly { readonly cpu: number; readonly offset: number; readonly size: number }[];
}

/** What a trace.dat header and options say. */
export interface TraceDatInfo {
  readonly version: 6 | 7;
  readonly byteOrder: ByteOrder;
  readonly longSize: number;
  readonly pageSize: number;
  /** Version 7: the compression algorithm (`none`, `zstd`, `zlib`) and its version. */
  readonly compression?: { readonly name: string; readonly version: string };
  readonly clock?: string;
  readonly uname?: string;
  readonly traceCmdVersion?: string;
  readonly buffers: readonly TraceDatBuffer[];
  /** Raw options (id and data) in file order, including those this reader does not interpret. */
  readonly options: readonly { readonly id: number; readonly data: Buffer }[];
}

/** Options of {@link openTraceDat} and {@link readTraceDat}. */
export interface TraceDatReadOptions extends FtraceReadOptions {
  /** The flyrecord buffer to read: `""` (the top-level one, the default) or an instance's name (`record -B NAME`). */
  readonly buffer?: string;
  /**
   * Every buffer's events, merged by time, as trace-cmd report prints them. Overrides `buffer` for `events()`
   * (`cpuPages()` stays the one buffer's). An instance buffer's events carry `scopes.buffer.name`, read alone or not.
   */
  readonly allBuffers?: boolean;
}

/** What {@link TraceDatReader.pagesInput} gives: the pages and texts to copy, or why a copy would not read the same. */
export type TraceDatPagesCopy =
  | {
      readonly input: TraceDatPagesInput;
      /** Corrupt pages left out (read `lenient`; otherwise the first one throws `ERR_TRACE_FTRACE_PAGE`). */
      readonly skipped: number;
    }
  | { readonly reason: string };

/** A reader over a trace.dat file. */
export interface TraceDatReader extends FtraceReader {
  readonly info: TraceDatInfo;
  /** The names of the buffers whose events `events()` yields (`""` is the top-level one). */
  readonly buffersRead: readonly string[];
  /**
   * The read buffer's raw pages (decompressed) with the file's own header_page, header_event, format, kallsyms,
   * cmdlines, clock and uname texts: the input of `writeTraceDatPages` for a copy that decodes no event, as
   * `trace-cmd convert` copies. Every page is checked as a reader walks it (header, commit size, event headers):
   * a corrupt one throws `ERR_TRACE_FTRACE_PAGE` with its file and byte offset, or with `lenient` is left out, counted in
   * `skipped` and warned about. `{ reason }` where such a copy would not read like this file: evtrace writes
   * little-endian files with 8-byte longs, no timestamp offset option and one buffer whose pages are the file's size.
   */
  pagesInput(): TraceDatPagesCopy;
}

/** Whether `bytes` starts with the trace.dat magic. */
export function isTraceDat(bytes: Uint8Array): boolean {
  return bytes.length >= TRACEDAT_MAGIC.length && TRACEDAT_MAGIC.every((b, i) => bytes[i] === b);
}

/**
 * Opens a trace.dat file. See {@link readTraceDat}. The file is read as the reader goes, in pieces (the metadata, a
 * few MiB of a CPU's pages or compressed chunks at a time), never whole; it is open only while a piece is read.
 */
export function openTraceDat(file: string, options: TraceDatReadOptions = {}): TraceDatReader {
  return readTraceDat(fileSource(file), { ...options, file });
}

interface Metadata {
  headerPage?: string;
  headerEvent?: string;
  ftraceFormats: string[];
  eventFormats: { system: string; text: string }[];
  kallsyms?: string;
  printk?: string;
  cmdlines?: string;
}

const MAX_SECTION = 1 << 30;
/** Largest chunk decoded into a reused buffer (trace-cmd's chunks are a few pages); larger ones take their own. */
const DECODE_INTO_MAX = 1 << 24;
/** Bytes of a CPU's pages (or of its compressed chunks) read from the file at once. */
const PIECE = 2 << 20;

/**
 * Reads a trace.dat image, in memory or read from a {@link ByteSource} as the reader goes. Events of the top-level
 * buffer are decoded lazily, in timestamp order across CPUs.
 *
 * @throws TraceFormatError `ERR_TRACE_DAT` naming the file and byte offset of the first problem in the metadata;
 * page problems are `ERR_TRACE_FTRACE_PAGE` (or warnings with `lenient`).
 */
export function readTraceDat(
  bytes: Buffer | ByteSource,
  options: TraceDatReadOptions & { file?: string } = {},
): TraceDatReader {
  const file = options.file;
  const source = Buffer.isBuffer(bytes) ? memorySource(bytes) : bytes;
  const head = new Cursor(bytes, true, file);
  if (!isTraceDat(source.read(0, TRACEDAT_MAGIC.length))) head.fail('not a trace.dat file (bad magic)', 0);
  head.pos = TRACEDAT_MAGIC.length;
  const versionText = head.cstring('version', 8);
  if (versionText !== '6' && versionText !== '7')
    head.fail(`unsupported trace.dat version ${JSON.stringify(versionText)}`);
  const version = Number(versionText) as 6 | 7;
  const endian = head.take(1, 'endianness')[0]!;
  if (endian > 1) head.fail(`bad endianness flag ${endian}`, head.pos - 1);
  const longSize = head.take(1, 'long size')[0]!;
  if (longSize !== 4 && longSize !== 8) head.fail(`bad long size ${longSize}`, head.pos - 1);
  const c = new Cursor(bytes, endian === 0, file, '', head.pos);
  const pageSize = c.u32('page size');
  if (pageSize < 64 || pageSize > 1 << 27) c.fail(`impossible page size ${pageSize}`, c.pos - 4);
  const meta: Metadata = { ftraceFormats: [], eventFormats: [] };
  const warnings: string[] = [];
  const damage = (message: string) => warnings.push(message);
  const rawOptions: { id: number; data: Buffer }[] = [];
  const buffers: TraceDatBuffer[] = [];
  let compression: { name: string; version: string } | undefined;
  if (version === 6) {
    readV6(c, meta, rawOptions, buffers, pageSize, options.lenient ? damage : undefined);
  } else {
    compression = { name: c.cstring('compression name', 64), version: c.cstring('compression version', 64) };
    if (!['none', 'zstd', 'zlib'].includes(compression.name)) {
      c.fail(`unsupported compression ${JSON.stringify(compression.name)}`);
    }
    readV7(c, compression.name, meta, rawOptions, buffers, pageSize, options.lenient ? damage : undefined);
  }
  const optionText = (id: number) => {
    const o = rawOptions.find((x) => x.id === id);
    return o === undefined
      ? undefined
      : o.data
          .toString('utf8')
          .replace(/\0[\s\S]*$/, '')
          .trim();
  };
  const clockList = optionText(OPTION.traceClock);
  const clock = clockList?.match(/\[(\w[\w-]*)\]/)?.[1] ?? buffers[0]?.clock;
  const wanted = options.buffer ?? '';
  const top = buffers.find((b) => b.name === wanted) ?? (options.buffer === undefined ? buffers[0] : undefined);
  if (top === undefined && options.buffer !== undefined) {
    c.fail(
      `no buffer ${JSON.stringify(wanted)} in the file (it has ${buffers.map((b) => JSON.stringify(b.name)).join(', ')})`,
      0,
    );
  }
  if (meta.headerPage === undefined) c.fail('no header_page in the file');
  const byteOrder: ByteOrder = endian === 0 ? 'le' : 'be';
  const page = parseHeaderPage(meta.headerPage!, {
    file: `${file ?? '<trace.dat>'}:header_page`,
    byteOrder,
    pageSize: top?.pageSize ?? pageSize,
  });
  if (meta.headerEvent !== undefined)
    parseHeaderEvent(meta.headerEvent, { file: `${file ?? '<trace.dat>'}:header_event` });
  const formatFile = (what: string) => `${file ?? '<trace.dat>'}:${what}`;
  const formats = [
    ...meta.ftraceFormats.map((text, i) => ({ text, system: 'ftrace', label: `ftrace format #${i}` })),
    ...meta.eventFormats.map((f, i) => ({ text: f.text, system: f.system, label: `${f.system} format #${i}` })),
  ];
  const eventClasses: EventClass[] = [];
  for (const f of formats) {
    try {
      eventClasses.push(
        parseFormatFile(f.text, { file: formatFile(f.label), system: f.system, byteOrder, longSize: page.commitSize }),
      );
    } catch (e) {
      // Lenient: an event whose format does not parse is left out (its records are then reported as unknown).
      if (!(options.lenient && e instanceof TraceFormatError)) throw e;
      warnings.push(`${e.message}; event left out`);
    }
  }
  let kallsyms: Kallsyms | undefined;
  const metadata: FtraceMetadata = {
    byteOrder,
    longSize: page.commitSize,
    page,
    eventClasses,
    cmdlines: parseCmdlines(meta.cmdlines ?? ''),
    kallsyms: () => (kallsyms ??= meta.kallsyms === undefined ? undefined : Kallsyms.parse(meta.kallsyms)),
    ...(clock !== undefined ? { clock } : {}),
    ...(meta.kallsyms !== undefined ? { kallsymsText: meta.kallsyms } : {}),
    ...(meta.printk ? { printk: parsePrintkFormats(meta.printk), printkText: meta.printk } : {}),
  };
  const uname = optionText(OPTION.uname);
  const traceCmdVersion = optionText(OPTION.version);
  const info: TraceDatInfo = {
    version,
    byteOrder,
    longSize,
    pageSize,
    ...(compression !== undefined ? { compression } : {}),
    ...(clock !== undefined ? { clock } : {}),
    ...(uname !== undefined ? { uname } : {}),
    ...(traceCmdVersion !== undefined ? { traceCmdVersion } : {}),
    buffers,
    options: rawOptions,
  };
  const tsOffset = BigInt(optionText(OPTION.offset)?.match(/^-?\d+/)?.[0] ?? '0');
  const read = options.allBuffers === true ? buffers : top === undefined ? [] : [top];
  if (buffers.length > read.length) {
    const others = buffers.filter((b) => b !== top).map((b) => JSON.stringify(b.name));
    warnings.push(
      `buffer "${top?.name}" is read; the file also holds ${others.join(', ')} (choose one with the buffer option, or read them all with allBuffers)`,
    );
  }
  const pagesOf = (buffer: TraceDatBuffer | undefined): CpuPages[] => {
    const warn = (m: string) => warnings.push(m);
    return (buffer?.cpus ?? []).map((cpu) => {
      const data = cpuData(
        source,
        c,
        cpu,
        compression?.name ?? 'none',
        version,
        buffer!.pageSize,
        options.lenient ? warn : undefined,
      );
      return {
        cpu: cpu.cpu,
        bytes: data.bytes,
        chunks: data.chunks,
        ...(data.transientBytes !== undefined ? { transientBytes: data.transientBytes } : {}),
        file: data.compressed ? `${file ?? '<trace.dat>'}:cpu${cpu.cpu}(decompressed)` : file,
        fileOffset: data.compressed ? 0 : cpu.offset,
      };
    });
  };
  const cpuPages = (): CpuPages[] => pagesOf(top);
  const pagesInput = (): TraceDatPagesCopy => {
    if (byteOrder !== 'le' || longSize !== 8) {
      return { reason: `the file is ${byteOrder === 'le' ? 'little' : 'big'}-endian with ${longSize}-byte longs` };
    }
    if (tsOffset !== 0n) return { reason: `the file shifts its timestamps by ${tsOffset} ns (offset option)` };
    if (read.length !== 1) return { reason: 'every buffer is read at once' };
    const buffer = read[0]!;
    if (buffer.pageSize !== pageSize) {
      return { reason: `buffer "${buffer.name}" has ${buffer.pageSize}-byte pages, the file ${pageSize}-byte ones` };
    }
    if (meta.headerEvent === undefined) return { reason: 'the file has no header_event' };
    const cpus: TraceDatCpuPages[] = [];
    let skipped = 0;
    const table = new EventTable(metadata);
    const checks = new Map(eventClasses.map((ec) => [ec.id, compileRecordCheck(ec, byteOrder)]));
    // Records of unknown events are skipped by readers: only known ones must fit their class.
    const record = (view: DataView, start: number, length: number) =>
      checks.get(table.typeOf(view, start, length))?.(view, start, length);
    for (const pages of pagesOf(buffer)) {
      // Each page is checked as a reader walks it, so the copy reads; a corrupt one fails it, or is left out.
      const chunked = pages.bytes;
      if (!options.lenient && typeof chunked === 'function' && pages.chunks !== undefined) {
        // Strict: every page is kept, so the size is what the pieces state, and each piece is read (decompressed)
        // and checked as the writer takes it, never all of a CPU's pages at once.
        const size = pages.chunks.reduce((n, chunk) => n + chunk.size, 0);
        while (cpus.length < pages.cpu) cpus.push({ size: 0, chunks: () => [] });
        cpus[pages.cpu] = { size, chunks: () => checkedPageChunks(chunked(), pages, page, record) };
        continue;
      }
      // Lenient: pages may be left out, so the size is known once all are checked (v6's head states it first).
      const onCorrupt = (e: TraceFormatError) => {
        skipped++;
        warnings.push(`${e.message}; CPU ${pages.cpu}: page left out of the copy`);
      };
      const data = checkPages(wholePages(pages), page, pages, options.lenient ? { onCorrupt, record } : { record });
      while (cpus.length < pages.cpu) cpus.push({ size: 0, chunks: () => [] });
      cpus[pages.cpu] = { size: data.length, chunks: () => [data] };
    }
    const systems = new Map<string, string[]>();
    for (const f of meta.eventFormats) {
      const list = systems.get(f.system);
      if (list === undefined) systems.set(f.system, [f.text]);
      else list.push(f.text);
    }
    return {
      skipped,
      input: {
        pageSize,
        headerPage: meta.headerPage!,
        headerEvent: meta.headerEvent,
        formats: [['ftrace', meta.ftraceFormats], ...systems],
        cpus,
        ...(meta.kallsyms !== undefined ? { kallsyms: meta.kallsyms } : {}),
        ...(meta.cmdlines !== undefined ? { cmdlines: meta.cmdlines } : {}),
        ...(meta.printk ? { printk: meta.printk } : {}),
        ...(clock !== undefined ? { clock } : {}),
        ...(uname !== undefined ? { uname } : {}),
      },
    };
  };
  /** An instance's events, each tagged with its buffer's name; its pages may have another size. */
  const bufferStreams = (b: TraceDatBuffer, table: EventTable, warn: (m: string) => void) => {
    const own =
      b.pageSize === metadata.page.pageSize
        ? metadata
        : {
            ...metadata,
            page: parseHeaderPage(meta.headerPage!, {
              file: `${file ?? '<trace.dat>'}:header_page`,
              byteOrder,
              pageSize: b.pageSize,
            }),
          };
    const streams = pagesOf(b).map((pages) => cpuEventBatches(own, table, pages, { lenient: options.lenient, warn }));
    return b.name === '' ? streams : streams.map((stream) => tagged(stream, b.name));
  };
  return {
    kind: 'tracedat',
    info,
    metadata,
    eventClasses,
    warnings,
    tsOffsetNs: tsOffset,
    cpuPages,
    pagesInput,
    buffersRead: read.map((b) => b.name),
    events(selection?: EventReadOptions): Iterable<TraceEvent> {
      const table = new EventTable(metadata, selection);
      const warn = (m: string) => warnings.push(m);
      const merged = mergeBatches(read.flatMap((b) => bufferStreams(b, table, warn)));
      return tsOffset === 0n ? merged : shift(merged, tsOffset);
    },
  };
}

/**
 * A CPU's compressed pages, chunk by chunk, each page checked as {@link checkPages} checks it: errors name the byte
 * offset in the CPU's decompressed data as they would if all of it were checked at once. A page split between chunks
 * is checked and given whole with the next.
 */
function* checkedPageChunks(
  chunks: Iterable<Buffer>,
  source: PageSource,
  layout: PageLayout,
  record: (view: DataView, start: number, length: number) => void,
): Generator<Buffer> {
  let offset = 0;
  let tail: Buffer | undefined;
  const check = (part: Buffer) => {
    checkPages(part, layout, { ...source, fileOffset: (source.fileOffset ?? 0) + offset }, { record });
    offset += part.length;
    return part;
  };
  for (const chunk of chunks) {
    const joined = tail === undefined ? chunk : Buffer.concat([tail, chunk]);
    const whole = joined.length - (joined.length % layout.pageSize);
    tail = whole < joined.length ? joined.subarray(whole) : undefined;
    if (whole > 0) yield check(joined.subarray(0, whole));
  }
  if (tail !== undefined) yield check(tail);
}

/** Tags every event of an instance buffer's batches with the buffer's name (`scopes.buffer.name`). */
function* tagged(batches: Iterable<TraceEvent[]>, name: string): Generator<TraceEvent[]> {
  const scope = { name };
  for (const batch of batches) yield batch.map((e) => ({ ...e, scopes: { ...e.scopes, buffer: scope } }));
}

function* shift(events: Iterable<TraceEvent>, by: bigint): Generator<TraceEvent> {
  for (const e of events) yield { ...e, tsNs: e.tsNs + by };
}

/**
 * A CPU's pages, read from `source` as they are asked for: whole pages a few MiB at a time, or its compressed chunks
 * (read a few MiB of them at a time) decompressed one at a time. `chunks` are the same pieces, each readable alone.
 *
 * Damage (the file ending inside the CPU's data, a chunk list cut or corrupt) fails the read naming its byte offset;
 * with `onDamage` it is reported there instead and everything before it is kept: the whole pages of a slice, the
 * whole chunks of a list (a chunk is compressed as one piece, so its pages stand or fall together).
 */
function cpuData(
  source: ByteSource,
  c: Cursor,
  cpu: { cpu: number; offset: number; size: number },
  compression: string,
  version: number,
  pageSize: number,
  onDamage: ((message: string) => void) | undefined,
): {
  bytes: () => Iterable<Buffer>;
  transientBytes?: () => Iterable<Buffer>;
  chunks: PageChunk[];
  compressed: boolean;
} {
  const damaged = (e: unknown, kept: string): void => {
    if (onDamage === undefined || !(e instanceof TraceFormatError)) throw e;
    onDamage(`${e.message}; CPU ${cpu.cpu}: ${kept}`);
  };
  /** `n` bytes at `offset`, which the file held when it was opened. */
  const read = (offset: number, n: number): Buffer => {
    const got = asBuffer(source.read(offset, n));
    if (got.length < n) c.fail(`the file ended while CPU ${cpu.cpu}'s data was read`, offset + got.length);
    return got;
  };
  /**
   * {@link read} into one buffer reused from read to read, each valid until the next, so that reading leaves the
   * collector nothing (a source that copies nothing, memory, returns its own bytes instead).
   */
  const reusing = (): ((offset: number, n: number) => Buffer) => {
    let scratch = Buffer.alloc(0);
    return (offset, n) => {
      if (scratch.length < n) scratch = Buffer.allocUnsafeSlow(n);
      const got = asBuffer(source.read(offset, n, scratch));
      if (got.length < n) c.fail(`the file ended while CPU ${cpu.cpu}'s data was read`, offset + got.length);
      return got;
    };
  };
  if (version === 6 || compression === 'none') {
    let end = cpu.offset + cpu.size;
    if (end > c.end) {
      const whole = Math.floor(Math.max(0, c.end - cpu.offset) / pageSize);
      try {
        c.fail(`the file ends inside CPU ${cpu.cpu}'s data [${cpu.offset}, +${cpu.size})`, c.end);
      } catch (e) {
        damaged(e, `the ${whole} whole pages before it kept`);
      }
      end = Math.min(end, cpu.offset + whole * pageSize);
    }
    const step = Math.max(1, Math.floor(PIECE / pageSize)) * pageSize;
    const pieces: { at: number; size: number }[] = [];
    for (let at = Math.min(cpu.offset, end); at < end; at += step) pieces.push({ at, size: Math.min(step, end - at) });
    return {
      bytes: function* () {
        for (const p of pieces) yield read(p.at, p.size);
      },
      transientBytes: function* () {
        const readPiece = reusing();
        for (const p of pieces) yield readPiece(p.at, p.size);
      },
      chunks: pieces.map((p) => ({ size: p.size, read: () => read(p.at, p.size) })),
      compressed: false,
    };
  }
  if (cpu.size === 0) return { bytes: () => [], chunks: [], compressed: true };
  const { chunks, error } = chunkList(c, cpu);
  if (error !== undefined) damaged(error, `the ${chunks.length} whole chunks before it kept`);
  const dataOf = (k: Chunk) => k.at + 8;
  /** Every chunk's bytes, in order, each from `decode` of its compressed data. */
  function* decoded(decode: (k: Chunk, data: Buffer) => Buffer): Generator<Buffer> {
    // The compressed bytes are done with once decompressed: one buffer takes them all.
    const readBlock = reusing();
    for (let i = 0; i < chunks.length; ) {
      // Consecutive chunks are read together, a few MiB of them at a time.
      const from = dataOf(chunks[i]!);
      let j = i + 1;
      while (j < chunks.length && dataOf(chunks[j]!) + chunks[j]!.csize - from <= PIECE) j++;
      const last = chunks[j - 1]!;
      const block = readBlock(from, dataOf(last) + last.csize - from);
      for (; i < j; i++) {
        const k = chunks[i]!;
        try {
          yield decode(k, block.subarray(dataOf(k) - from, dataOf(k) - from + k.csize));
        } catch (e) {
          // Lenient: a chunk that does not decompress is reported and skipped; the chunks around it still count.
          damaged(e, 'chunk skipped');
        }
      }
    }
  }
  const decompressed = (k: Chunk, data: Buffer) => decompress(c, compression, data, k.usize, k.at);
  return {
    bytes: () => decoded(decompressed),
    // zstd chunks decoded into one buffer reused from chunk to chunk (by one kept context); a chunk that does not
    // decode so is decompressed as the other path does it, which names what is wrong.
    ...(compression === 'zstd'
      ? {
          transientBytes: () => {
            let out = Buffer.alloc(0);
            return decoded((k, data) => {
              // A size beyond what any chunk holds is not allocated before the data shows it true.
              if (k.usize > DECODE_INTO_MAX) return decompressed(k, data);
              if (out.length <= k.usize) out = Buffer.allocUnsafeSlow(k.usize + 1);
              return zstdDecodeInto(data, out, k.usize) ? out.subarray(0, k.usize) : decompressed(k, data);
            });
          },
        }
      : {}),
    chunks: chunks.map((k) => ({
      size: k.usize,
      read: () => decompress(c, compression, read(dataOf(k), k.csize), k.usize, k.at),
    })),
    compressed: true,
  };
}

/** A compressed chunk of a CPU's data: where its header lies, its compressed size and its size. */
interface Chunk {
  readonly at: number;
  readonly csize: number;
  readonly usize: number;
}

/**
 * The compressed chunks of a CPU's data (a count, then each chunk's compressed size, size and bytes), up to the first
 * one the file does not hold whole; `error` names that damage. The stated size leaves out the chunk count, so chunks
 * are bounded by the file, not by it. Only the chunks' headers are read.
 */
function chunkList(
  c: Cursor,
  cpu: { cpu: number; offset: number; size: number },
): { chunks: Chunk[]; end: number; error?: TraceFormatError } {
  const d = c.at(cpu.offset);
  const chunks: Chunk[] = [];
  try {
    const count = d.u32(`CPU ${cpu.cpu} chunk count`);
    if (count > cpu.size / 8) d.fail(`CPU ${cpu.cpu}: ${count} chunks cannot fit in ${cpu.size} bytes`, cpu.offset);
    for (let i = 0; i < count; i++) {
      const at = d.pos;
      const csize = d.u32('chunk compressed size');
      const usize = d.u32('chunk size');
      d.skip(csize, 'chunk data');
      chunks.push({ at, csize, usize });
    }
  } catch (e) {
    if (!(e instanceof TraceFormatError)) throw e;
    return { chunks, end: d.pos, error: e };
  }
  return { chunks, end: d.pos };
}

/** node:zlib, loaded with the first compressed block. */
const zlib = () => process.getBuiltinModule('node:zlib') as typeof import('node:zlib');

/** A compressed block's `usize` bytes; a failure names `at` through `c`. */
export function decompress(c: Cursor, algorithm: string, data: Buffer, usize: number, at: number): Buffer {
  if (usize > MAX_SECTION) c.fail(`compressed block claims ${usize} bytes`, at);
  let out: Buffer;
  // Output in one piece of the stated size: with Node's default 16 KiB pieces, joined afterwards, a 40 KiB chunk took
  // twice as long to decompress with zstd and 2.6 times as long with zlib. Pieces stay at most 1 MiB, so that a corrupt
  // size is not allocated before the data shows it false.
  const options = { maxOutputLength: Math.max(usize, 1), chunkSize: Math.min(Math.max(usize, 64), 1 << 20) };
  try {
    out = algorithm === 'zstd' ? zlib().zstdDecompressSync(data, options) : zlib().inflateSync(data, options);
  } catch (e) {
    c.fail(`${algorithm} block does not decompress: ${(e as Error).message}`, at);
  }
  if (out!.length !== usize) c.fail(`${algorithm} block gives ${out!.length} bytes, its header says ${usize}`, at);
  return out!;
}

/** The metadata parts, shared by v6 (inline) and v7 (one section each). */
function readHeaders(c: Cursor, meta: Metadata): void {
  c.expect('header_page\0', 'header_page tag');
  meta.headerPage = c.text(c.u64('header_page size'), 'header_page');
  c.expect('header_event\0', 'header_event tag');
  meta.headerEvent = c.text(c.u64('header_event size'), 'header_event');
}

function readFtraceFormats(c: Cursor, meta: Metadata): void {
  const n = c.u32('ftrace format count');
  if (n > (c.end - c.pos) / 8) c.fail(`${n} ftrace formats cannot fit`, c.pos - 4);
  for (let i = 0; i < n; i++) meta.ftraceFormats.push(c.text(c.u64('format size'), 'ftrace format'));
}

function readEventFormats(c: Cursor, meta: Metadata): void {
  const systems = c.u32('event system count');
  if (systems > (c.end - c.pos) / 5) c.fail(`${systems} event systems cannot fit`, c.pos - 4);
  for (let s = 0; s < systems; s++) {
    const system = c.cstring('system name', 256);
    const n = c.u32('event count');
    if (n > (c.end - c.pos) / 8) c.fail(`${n} event formats cannot fit`, c.pos - 4);
    for (let i = 0; i < n; i++) meta.eventFormats.push({ system, text: c.text(c.u64('format size'), 'event format') });
  }
}

/**
 * The metadata block as version 6 lays it out inline, from header_page to the printk formats: also what perf.data's
 * HEADER_TRACING_DATA holds after its own version text (perf writes it with the same code lineage).
 */
export function readTracingMetadata(c: Cursor): {
  headerPage: string;
  headerEvent: string;
  ftraceFormats: string[];
  eventFormats: { system: string; text: string }[];
  kallsyms: string;
  printk: string;
} {
  const meta: Metadata = { ftraceFormats: [], eventFormats: [] };
  readHeaders(c, meta);
  readFtraceFormats(c, meta);
  readEventFormats(c, meta);
  const kallsyms = c.text(c.u32('kallsyms size'), 'kallsyms');
  const printk = c.text(c.u32('printk formats size'), 'printk formats');
  return { ...meta, headerPage: meta.headerPage!, headerEvent: meta.headerEvent!, kallsyms, printk };
}

function readV6(
  c: Cursor,
  meta: Metadata,
  options: { id: number; data: Buffer }[],
  buffers: TraceDatBuffer[],
  pageSize: number,
  onDamage: ((message: string) => void) | undefined,
): void {
  readHeaders(c, meta);
  readFtraceFormats(c, meta);
  readEventFormats(c, meta);
  meta.kallsyms = c.text(c.u32('kallsyms size'), 'kallsyms');
  meta.printk = c.text(c.u32('printk formats size'), 'printk formats');
  meta.cmdlines = c.text(c.u64('cmdlines size'), 'cmdlines');
  const cpuCount = c.u32('CPU count');
  if (cpuCount > 4096) c.fail(`${cpuCount} CPUs`, c.pos - 4);
  let tag = c.text(10, 'section tag');
  if (tag === 'options  \0') {
    for (;;) {
      const id = c.u16('option id');
      if (id === OPTION.done) break;
      const size = c.u32('option size');
      options.push({ id, data: c.take(size, 'option data') });
    }
    tag = c.text(10, 'section tag');
  }
  if (tag === 'latency  \0') c.fail('latency (text) traces are not supported', c.pos - 10);
  if (tag !== 'flyrecord\0') c.fail(`expected "flyrecord", found ${JSON.stringify(tag)}`, c.pos - 10);
  const cpus = [];
  for (let cpu = 0; cpu < cpuCount; cpu++)
    cpus.push({ cpu, offset: c.u64('CPU data offset'), size: c.u64('CPU data size') });
  const clock = options
    .find((o) => o.id === OPTION.traceClock)
    ?.data.toString('latin1')
    .match(/\[(\w+)\]/)?.[1];
  buffers.push({ name: '', pageSize, cpus, ...(clock !== undefined ? { clock } : {}) });
  // Instance buffers (record -B): an option with the offset of their own flyrecord table, then their name.
  for (const o of options) {
    if (o.id !== OPTION.buffer) continue;
    const d = new Cursor(o.data, c.le, c.file, 'buffer option byte ');
    try {
      const at = d.u64('buffer section offset');
      const name = d.cstring('buffer name');
      const t = c.at(at);
      if (t.text(10, 'buffer section tag') !== 'flyrecord\0')
        t.fail(`buffer ${JSON.stringify(name)}: no flyrecord section at its offset`, at);
      const own = [];
      for (let cpu = 0; cpu < cpuCount; cpu++)
        own.push({ cpu, offset: t.u64('CPU data offset'), size: t.u64('CPU data size') });
      buffers.push({ name, pageSize, cpus: own });
    } catch (e) {
      // Instance tables trail the file: a cut file keeps the top buffer, whose table leads it.
      if (onDamage === undefined || !(e instanceof TraceFormatError)) throw e;
      onDamage(`${e.message}; that buffer is left out`);
    }
  }
}

function readV7(
  c: Cursor,
  compression: string,
  meta: Metadata,
  options: { id: number; data: Buffer }[],
  buffers: TraceDatBuffer[],
  pageSize: number,
  onDamage: ((message: string) => void) | undefined,
): void {
  const sectionsAt = c.pos + 8;
  let next = c.u64('first options offset');
  const seen = new Set<number>();
  const section = (offset: number, expectId: number): Cursor => {
    const s = c.at(offset);
    const id = s.u16('section id');
    if (id !== expectId) s.fail(`section ${id} found where section ${expectId} was expected`, offset);
    const flags = s.u16('section flags');
    s.u32('section description');
    const size = s.u64('section size');
    s.need(size, 'section');
    if ((flags & SECTION_COMPRESSED) === 0 || compression === 'none') {
      const at = s.pos;
      return new Cursor(s.take(size, 'section'), c.le, c.file, '', 0, at);
    }
    const at = s.pos;
    const csize = s.u32('compressed size');
    const usize = s.u32('uncompressed size');
    const data = decompress(s, compression, s.take(csize, 'compressed data'), usize, at);
    return new Cursor(data, c.le, c.file, `section at byte ${offset}, decompressed byte `);
  };
  /** The metadata sections read, each once (the sections read in file order meet those the options named). */
  const loaded = new Set<number>();
  /** Reads the section an option points to, when it holds metadata. */
  const metadataSection = (id: number, s: () => Cursor): void => {
    if (loaded.has(id)) return;
    if (id >= OPTION.headerInfo && id <= OPTION.cmdlines) loaded.add(id);
    switch (id) {
      case OPTION.headerInfo:
        readHeaders(s(), meta);
        break;
      case OPTION.ftraceEvents:
        readFtraceFormats(s(), meta);
        break;
      case OPTION.eventFormats:
        readEventFormats(s(), meta);
        break;
      case OPTION.kallsyms: {
        const k = s();
        meta.kallsyms = k.text(k.u32('kallsyms size'), 'kallsyms');
        break;
      }
      case OPTION.cmdlines: {
        const k = s();
        meta.cmdlines = k.text(k.u64('cmdlines size'), 'cmdlines');
        break;
      }
      case OPTION.printk: {
        const k = s();
        meta.printk = k.text(k.u32('printk formats size'), 'printk formats');
        break;
      }
    }
  };
  /** The options of one options section; returns the offset of the next one (0: none). */
  const readOptions = (s: Cursor): number => {
    while (s.pos < s.end) {
      const id = s.u16('option id');
      const size = s.u32('option size');
      const data = s.take(size, 'option data');
      if (id === OPTION.done) return size >= 8 ? new Cursor(data, c.le, c.file).u64('next options offset') : 0;
      options.push({ id, data });
      const d = new Cursor(data, c.le, c.file, `option ${id} at byte `);
      if (id === OPTION.buffer) {
        const { name, clock, pageSize: bufPageSize, cpus } = readBufferOption(d, size);
        buffers.push({ name, clock, pageSize: bufPageSize, cpus });
      } else {
        metadataSection(id, () => section(d.u64('section offset'), id));
      }
    }
    return 0;
  };
  try {
    while (next !== 0) {
      if (seen.has(next)) c.fail('options sections form a loop', next);
      seen.add(next);
      next = readOptions(section(next, OPTION.done));
    }
  } catch (e) {
    if (onDamage === undefined || !(e instanceof TraceFormatError)) throw e;
    if (buffers.length > 0) {
      onDamage(`${e.message}; the options after it are left out`);
      return;
    }
    // trace-cmd writes the options that describe the CPU data after it: a cut file keeps its sections, not its table.
    onDamage(`${e.message}; the sections are read in file order instead`);
    recoverV7(c, sectionsAt, buffers, pageSize, compression === 'none', {
      options: (offset) => {
        if (seen.has(offset)) return;
        seen.add(offset);
        readOptions(section(offset, OPTION.done));
      },
      metadata: (id, offset) => metadataSection(id, () => section(offset, id)),
      warn: onDamage,
    });
  }
}

/**
 * A version 7 file whose options chain is damaged, read as trace-cmd and evtrace lay it out: sections back to back
 * after the header, metadata first, then the flyrecord section whose CPU data (each a chunk list) follow one another
 * at page boundaries. What the sections hold is taken up to the first damaged one; CPUs are numbered in file order,
 * which the lost table would have confirmed, so the reader says so.
 */
function recoverV7(
  c: Cursor,
  at: number,
  buffers: TraceDatBuffer[],
  pageSize: number,
  uncompressed: boolean,
  read: {
    options: (offset: number) => void;
    metadata: (id: number, offset: number) => void;
    warn: (message: string) => void;
  },
): void {
  try {
    while (at + 16 <= c.end && buffers.length === 0) {
      const h = c.at(at);
      const id = h.u16('section id');
      h.u16('section flags');
      h.u32('section description');
      const size = h.u64('section size');
      if (id === OPTION.buffer) {
        if (uncompressed) {
          h.fail('the CPU table is lost and uncompressed CPU data cannot be told apart', at);
        }
        const cpus = [];
        const end = Math.min(c.end, h.pos + size);
        let offset = Math.ceil(h.pos / pageSize) * pageSize;
        while (offset + 4 <= end) {
          const found = chunkList(c, { cpu: cpus.length, offset, size: end - offset - 4 });
          if (found.chunks.length === 0) break;
          // A CPU cut by the damage keeps its stated extent: reading it reports the damage and keeps its whole chunks.
          cpus.push({ cpu: cpus.length, offset, size: (found.error === undefined ? found.end : end) - offset - 4 });
          if (found.error !== undefined) break;
          offset = Math.ceil(found.end / pageSize) * pageSize;
        }
        read.warn(
          located(`${cpus.length} CPUs' data found in the flyrecord section; CPUs numbered in file order`, {
            file: c.file ?? '<trace.dat>',
            offset: at,
          }),
        );
        buffers.push({ name: '', pageSize, cpus });
        return;
      }
      h.need(size, `section ${id}`);
      if (id === OPTION.done) read.options(at);
      else read.metadata(id, at);
      at = h.pos + size;
    }
  } catch (e) {
    if (!(e instanceof TraceFormatError)) throw e;
    read.warn(`${e.message}; nothing after it is read`);
  }
}
