/**
 * Writer of trace-cmd `trace.dat` files, version 6 or 7 (uncompressed, zstd or zlib), readable by `trace-cmd report`.
 * Two entry points share the section and option writing: {@link encodeTraceDat} re-encodes events (classes from
 * ftrace keep their formats; others, from CTF, get a synthesized format file), and {@link writeTraceDatPages} copies
 * raw kernel pages verbatim, streamed, with the kernel's own header and format files.
 */
import { writeSync, writevSync } from 'node:fs';
import { TraceFormatError } from '../../errors.ts';
import type { EventClass, FieldClass, FtraceFieldInfo, TraceEvent } from '../../model/types.ts';
import { type OutputAccess, writeBytesAtomically, writeFileAtomically } from '../../output/atomic.ts';
import { compileRecordWriter, MAX_DYNAMIC, packPages, type RecordWriter, type TimedRecord } from '../encode.ts';
import { formatFileText, HEADER_EVENT_TEXT, headerPageText } from '../format-text.ts';
import { kernelPageLayout } from '../headers.ts';
import { OPTION, SECTION_COMPRESSED } from './ids.ts';
import { TRACEDAT_MAGIC } from './read.ts';

/** Options of {@link encodeTraceDat}. */
export interface TraceDatWriteOptions {
  /** File version. Default 7. */
  readonly version?: 6 | 7;
  /** Version 7 compression. Default `zstd` (what trace-cmd 3.1 writes). */
  readonly compression?: 'none' | 'zstd' | 'zlib';
  /** Sub-buffer size. Default 4096. */
  readonly pageSize?: number;
  /** Trace clock name stored in the options. Default `local`. */
  readonly clock?: string;
  /** pid → comm, stored as saved cmdlines. */
  readonly cmdlines?: ReadonlyMap<number, string>;
  /** `/proc/kallsyms` text, for symbol printing by readers. */
  readonly kallsyms?: string;
  /** The kernel's `printk_formats` text, for pointers into its printk strings (`rcu_utilization`'s). */
  readonly printk?: string;
}

/** What {@link encodeTraceDat} produced besides the bytes. */
export interface TraceDatWriteResult {
  readonly bytes: Buffer;
  readonly events: number;
  /** Classes that were given a synthesized ftrace format (they had none), by name. */
  readonly synthesized: readonly string[];
}

const LONG = 8;

/** Encodes events into a trace.dat image. Events need not be sorted; each CPU's records are sorted by time. */
export function encodeTraceDat(
  eventClasses: readonly EventClass[],
  events: Iterable<TraceEvent>,
  options: TraceDatWriteOptions = {},
): TraceDatWriteResult {
  const version = options.version ?? 7;
  const compression = version === 6 ? 'none' : (options.compression ?? 'zstd');
  const pageSize = options.pageSize ?? 4096;
  const layout = kernelPageLayout(pageSize);
  const classes = new Classes(eventClasses);
  const perCpu = new Map<number, Arena>();
  let count = 0;
  for (const e of events) {
    const write = classes.get(e.eventClass);
    const cpu = e.cpu ?? 0;
    let arena = perCpu.get(cpu);
    if (arena === undefined) perCpu.set(cpu, (arena = new Arena()));
    arena.add(e.tsNs, write, e.fields, e.scopes?.['event.context'] ?? {}, lostBefore(e));
    count++;
  }
  const cpuCount = perCpu.size === 0 ? 1 : Math.max(...perCpu.keys()) + 1;
  const cpuPages: Buffer[] = [];
  for (let cpu = 0; cpu < cpuCount; cpu++) cpuPages.push(packPages(perCpu.get(cpu)?.records() ?? [], layout));
  const used = classes.used();
  const meta: Meta = {
    headerPage: headerPageText(layout),
    headerEvent: HEADER_EVENT_TEXT,
    ftrace: used.filter((c) => c.ftrace!.system === 'ftrace').map(formatFileText),
    systems: groupBySystem(used.filter((c) => c.ftrace!.system !== 'ftrace')),
    kallsyms: Buffer.from(options.kallsyms ?? ''),
    cmdlines: [...(options.cmdlines ?? new Map())].map(([pid, comm]) => `${pid} ${comm}\n`).join(''),
    printk: options.printk ?? '',
    clock: options.clock ?? 'local',
  };
  let bytes: Buffer;
  if (version === 6) bytes = writeV6(meta, cpuPages, pageSize);
  else {
    const sink = memorySink();
    writeV7(meta, cpuPages.map(inMemory), pageSize, compression, sink);
    bytes = sink.bytes();
  }
  return { bytes, events: count, synthesized: classes.synthesized };
}

/**
 * Writes events to a trace.dat file, whole or not at all (see {@link writeFileAtomically}): readable by its owner
 * only unless `share` or `mode` says otherwise.
 *
 * @throws TraceFormatError `ERR_TRACE_OUTPUT` naming `file` when it cannot be written.
 */
export function writeTraceDat(
  file: string,
  eventClasses: readonly EventClass[],
  events: Iterable<TraceEvent>,
  options: TraceDatWriteOptions & OutputAccess = {},
): TraceDatWriteResult {
  const result = encodeTraceDat(eventClasses, events, options);
  writeBytesAtomically(file, result.bytes, options);
  return result;
}

/**
 * Bytes that already lie in a file (a recording's copy of /proc/kallsyms), for {@link writeTraceDatPages} and
 * {@link completeTraceDatPages}: copied by the kernel where the caller can, read otherwise.
 */
export interface TraceDatFileBytes {
  readonly size: number;
  /** The `size` bytes, read when they cannot be copied. */
  read(): Uint8Array;
  /**
   * Writes the bytes into the open file `fd` at offset `at` without passing them through user space (e.g.
   * `copy_file_range`). Returns false, having written nothing, when it cannot. Version 6 only.
   */
  copyTo?(fd: number, at: number): boolean;
}

/** One CPU's raw pages for {@link writeTraceDatPages}. */
export interface TraceDatCpuPages {
  /** Bytes of pages (a whole number of sub-buffers). */
  readonly size: number;
  /** The pages' bytes in order, `size` in total: read lazily (e.g. a file in large chunks) and written as they come. */
  chunks(): Iterable<Uint8Array>;
  /**
   * Writes the `size` bytes into the open file `fd` at offset `at` without passing them through user space (e.g.
   * `copy_file_range`). Returns false, having written nothing, when it cannot: the writer then reads
   * {@link chunks}. Version 6 only.
   */
  copyTo?(fd: number, at: number): boolean;
}

/** What {@link writeTraceDatPages} stores: the kernel's own texts and the raw pages of each CPU. */
export interface TraceDatPagesInput {
  /** Sub-buffer size the pages were read with. */
  readonly pageSize: number;
  /** `events/header_page` text. */
  readonly headerPage: string;
  /** `events/header_event` text. */
  readonly headerEvent: string;
  /** `format` file texts by system (`[system, formats]`); the `ftrace` system's go to the ftrace section. */
  readonly formats: readonly (readonly [system: string, formats: readonly string[]])[];
  /** `/proc/kallsyms` as bytes (copied as is), text, or bytes in a file. */
  readonly kallsyms?: Uint8Array | string | TraceDatFileBytes;
  /** `saved_cmdlines` text (`pid comm` lines). */
  readonly cmdlines?: string;
  /** `printk_formats` text (`0xADDR : "text"` lines). */
  readonly printk?: string;
  /** Trace clock name. Default `local`. */
  readonly clock?: string;
  /** Text of the uname option (trace-cmd shows it as the system the trace came from). */
  readonly uname?: string;
  /** Pages by CPU number (index); CPUs without pages have size 0. */
  readonly cpus: readonly TraceDatCpuPages[];
}

/** Options of {@link writeTraceDatPages}. */
export interface TraceDatPagesOptions extends OutputAccess {
  /** File version. Default 6. Either is streamed: version 7 compresses each CPU's pages ten at a time as they come. */
  readonly version?: 6 | 7;
  /** Version 7 compression. Default `zstd`. */
  readonly compression?: 'none' | 'zstd' | 'zlib';
}

/**
 * Writes `file` as trace.dat with each CPU's raw pages copied verbatim (no decoding) after the kernel's own header
 * and format files, kallsyms and saved cmdlines, whole or not at all (see {@link writeFileAtomically}): readable by
 * its owner only unless `share` or `mode` says otherwise. Returns the bytes written.
 *
 * @throws TraceFormatError `ERR_TRACE_DAT` when a CPU's chunks do not add up to its declared size; `ERR_TRACE_OUTPUT`
 *   naming `file` when it cannot be written.
 */
export function writeTraceDatPages(
  file: string,
  input: TraceDatPagesInput,
  options: TraceDatPagesOptions = {},
): number {
  const version = options.version ?? 6;
  const { pageSize } = input;
  const meta = pagesMeta(input);
  const cpus = input.cpus.length === 0 ? [{ size: 0, chunks: () => [] }] : input.cpus;
  const checked = (cpu: number) => checkedChunks(cpus[cpu]!, cpu, file);
  if (version === 7) {
    const compression = options.compression ?? 'zstd';
    return writeFileAtomically(
      file,
      (fd) => writeV7(meta, cpus, pageSize, compression, { write: (bytes, at) => putBytes(fd, bytes, at) }, file),
      options,
    );
  }
  const head = v6HeadParts(
    meta,
    cpus.map((c) => c.size),
    pageSize,
  );
  // Every write is positional: the head's parts may be copied by the kernel at an offset, which moves no position.
  return writeFileAtomically(
    file,
    (fd) => {
      let written = putParts(fd, head.parts);
      for (let cpu = 0; cpu < cpus.length; cpu++) {
        if (cpus[cpu]!.size === 0) continue;
        written = putBytes(fd, Buffer.alloc((pageSize - (written % pageSize)) % pageSize), written);
        if (cpus[cpu]!.copyTo?.(fd, written) === true) written += cpus[cpu]!.size;
        else for (const chunk of checked(cpu)) written = putBytes(fd, chunk, written);
      }
      return written;
    },
    options,
  );
}

/** Where one CPU's pages already lie in a file that {@link completeTraceDatPages} completes. */
export interface TraceDatAnchor {
  readonly cpu: number;
  /** Offset of its first page: the room left for the head. */
  readonly offset: number;
}

/**
 * The size of a version 6 file's head for `input` and `cpuCount` CPUs: the bytes before the first page, whatever the
 * page counts. A recorder that leaves this much room before one CPU's pages can have the file completed around them.
 */
export function traceDatPagesHeadSize(input: Omit<TraceDatPagesInput, 'cpus'>, cpuCount: number): number {
  return v6HeadParts(pagesMeta(input), new Array<number>(Math.max(1, cpuCount)).fill(0), input.pageSize).length;
}

/**
 * Completes a version 6 trace.dat in the open file `fd`, positioned at 0, which already holds the pages of CPU
 * `anchor.cpu` at `[anchor.offset, anchor.offset + size)`: writes the head before them and every other CPU's pages
 * after them (the CPU table gives each CPU's offset, so the order of the regions is free). Nothing is copied of the
 * anchor's pages, the bulk of a recording on few CPUs. Returns the size of the file.
 *
 * @throws TraceFormatError `ERR_TRACE_DAT` when the head does not fit in the room before the anchor's pages or a
 *   CPU's chunks do not add up to its size; Node's `fs` errors when the file cannot be written.
 */
export function completeTraceDatPages(fd: number, input: TraceDatPagesInput, anchor: TraceDatAnchor): number {
  const { pageSize } = input;
  const cpus = input.cpus;
  const pagesLength = (size: number) => Math.ceil(size / pageSize) * pageSize;
  if (anchor.offset % pageSize !== 0 || cpus[anchor.cpu] === undefined) {
    throw new TraceFormatError('ERR_TRACE_DAT', `no CPU ${anchor.cpu} pages at offset ${anchor.offset}`);
  }
  const offsets: number[] = [];
  let end = anchor.offset + pagesLength(cpus[anchor.cpu]!.size);
  for (let cpu = 0; cpu < cpus.length; cpu++) {
    if (cpu === anchor.cpu) offsets.push(anchor.offset);
    else {
      offsets.push(end);
      end += pagesLength(cpus[cpu]!.size);
    }
  }
  const head = v6HeadParts(
    pagesMeta(input),
    cpus.map((c) => c.size),
    pageSize,
    offsets,
  );
  if (head.length > anchor.offset) {
    throw new TraceFormatError(
      'ERR_TRACE_DAT',
      `the head needs ${head.length} bytes; ${anchor.offset} were left before CPU ${anchor.cpu}'s pages`,
    );
  }
  putParts(fd, head.parts);
  for (let cpu = 0; cpu < cpus.length; cpu++) {
    const pages = cpus[cpu]!;
    if (cpu === anchor.cpu || pages.size === 0) continue;
    if (pages.copyTo?.(fd, offsets[cpu]) === true) continue;
    let at = offsets[cpu]!;
    for (const chunk of checkedChunks(pages, cpu, undefined)) {
      for (let done = 0; done < chunk.length; ) done += writeSync(fd, chunk, done, chunk.length - done, at + done);
      at += chunk.length;
    }
  }
  return end;
}

/**
 * Writes the head of a version 6 trace.dat into the open file `fd`, whose every CPU's pages already lie at
 * `offsets[cpu]` (page-aligned, after the head): nothing of the pages is read, written or moved. Returns the size
 * of the head.
 *
 * @throws TraceFormatError `ERR_TRACE_DAT` when an offset is not page-aligned or the head does not fit before the
 *   first pages; Node's `fs` errors when the file cannot be written.
 */
export function writeTraceDatHead(fd: number, input: TraceDatPagesInput, offsets: readonly number[]): number {
  const { pageSize, cpus } = input;
  if (offsets.length !== cpus.length || offsets.some((o) => !Number.isSafeInteger(o) || o < 0 || o % pageSize !== 0)) {
    throw new TraceFormatError('ERR_TRACE_DAT', `CPU offsets must be ${cpus.length} multiples of ${pageSize}`);
  }
  const head = v6HeadParts(
    pagesMeta(input),
    cpus.map((c) => c.size),
    pageSize,
    offsets,
  );
  const first = Math.min(...offsets.filter((_, cpu) => cpus[cpu]!.size > 0));
  if (head.length > first) {
    throw new TraceFormatError('ERR_TRACE_DAT', `the head needs ${head.length} bytes; the first pages are at ${first}`);
  }
  putParts(fd, head.parts);
  return head.length;
}

function pagesMeta(input: Omit<TraceDatPagesInput, 'cpus'>): Meta {
  return {
    headerPage: input.headerPage,
    headerEvent: input.headerEvent,
    ftrace: input.formats.filter(([s]) => s === 'ftrace').flatMap(([, f]) => f),
    systems: input.formats.filter(([s]) => s !== 'ftrace').map(([s, f]) => [s, [...f]] as [string, string[]]),
    kallsyms: isFileBytes(input.kallsyms) ? input.kallsyms : asBuffer(input.kallsyms ?? ''),
    cmdlines: input.cmdlines ?? '',
    printk: input.printk ?? '',
    clock: input.clock ?? 'local',
    ...(input.uname !== undefined ? { uname: input.uname } : {}),
  };
}

/** A CPU's chunks, checked to add up to its declared size. */
function* checkedChunks(pages: TraceDatCpuPages, cpu: number, file: string | undefined): Iterable<Uint8Array> {
  let seen = 0;
  for (const c of pages.chunks()) {
    seen += c.length;
    if (seen > pages.size) break;
    yield c;
  }
  if (seen !== pages.size)
    throw new TraceFormatError('ERR_TRACE_DAT', `CPU ${cpu}'s pages are ${seen} bytes, not ${pages.size}`, {
      ...(file !== undefined ? { file } : {}),
    });
}

interface Meta {
  headerPage: string;
  headerEvent: string;
  ftrace: string[];
  systems: [string, string[]][];
  kallsyms: Part;
  cmdlines: string;
  printk: string;
  clock: string;
  uname?: string;
}

function groupBySystem(classes: EventClass[]): [string, string[]][] {
  const map = new Map<string, string[]>();
  for (const c of classes) {
    const s = c.ftrace!.system || 'evtrace';
    if (!map.has(s)) map.set(s, []);
    map.get(s)!.push(formatFileText(c));
  }
  return [...map];
}

/** The events the kernel lost before `e` (`scopes.lost.events`: a count, or null for an unknown one), if it says so. */
function lostBefore(e: TraceEvent): number | null | undefined {
  const lost = e.scopes?.lost?.events;
  return typeof lost === 'number' ? lost : lost === null ? null : undefined;
}

/** One CPU's records, encoded back to back into one growing buffer (small buffers per record cost GC time). */
class Arena {
  #buf = Buffer.alloc(1 << 16);
  #view = new DataView(this.#buf.buffer, this.#buf.byteOffset, this.#buf.byteLength);
  #used = 0;
  #sorted = true;
  readonly #ts: bigint[] = [];
  readonly #at: number[] = [];
  readonly #len: number[] = [];
  /** Losses before records, by record index. */
  readonly #missed = new Map<number, number | null>();

  add(
    tsNs: bigint,
    write: RecordWriter & { readonly fixed: number },
    fields: TraceEvent['fields'],
    common: NonNullable<TraceEvent['scopes']>[string],
    missed: number | null | undefined,
  ): void {
    const need = this.#used + write.fixed + MAX_DYNAMIC;
    if (need > this.#buf.length) {
      const grown = Buffer.alloc(Math.max(need, this.#buf.length * 2));
      grown.set(this.#buf.subarray(0, this.#used));
      this.#buf = grown;
      this.#view = new DataView(grown.buffer, grown.byteOffset, grown.byteLength);
    }
    const n = write(fields, common, this.#buf, this.#view, this.#used);
    const last = this.#ts.length - 1;
    if (last >= 0 && tsNs < this.#ts[last]!) this.#sorted = false;
    if (missed !== undefined) this.#missed.set(this.#ts.length, missed);
    this.#ts.push(tsNs);
    this.#at.push(this.#used);
    this.#len.push(n);
    this.#used += n;
  }

  /** The records in time order (stable for equal times). */
  records(): TimedRecord[] {
    const order = this.#ts.map((_, i) => i);
    if (!this.#sorted)
      order.sort((a, b) => (this.#ts[a]! < this.#ts[b]! ? -1 : this.#ts[a]! > this.#ts[b]! ? 1 : a - b));
    return order.map((i) => {
      const record = { tsNs: this.#ts[i]!, data: this.#buf.subarray(this.#at[i]!, this.#at[i]! + this.#len[i]!) };
      const missed = this.#missed.get(i);
      return missed === undefined ? record : { ...record, missed };
    });
  }
}

/** Encoders by class, synthesizing ftrace formats (and ids) for classes without one. */
class Classes {
  readonly synthesized: string[] = [];
  readonly #byClass = new Map<
    EventClass,
    { ftraceClass: EventClass; write: RecordWriter & { readonly fixed: number } }
  >();
  readonly #ids = new Set<number>();
  #nextId = 1000;

  constructor(known: readonly EventClass[]) {
    for (const c of known) if (c.ftrace !== undefined) this.#ids.add(c.id);
  }

  get(ec: EventClass): RecordWriter & { readonly fixed: number } {
    let entry = this.#byClass.get(ec);
    if (entry === undefined) {
      let ftraceClass = ec;
      if (ec.ftrace === undefined) {
        while (this.#ids.has(this.#nextId)) this.#nextId++;
        ftraceClass = synthesizeFtraceClass(ec, this.#nextId);
        this.#ids.add(this.#nextId);
        this.synthesized.push(ec.name);
      }
      entry = { ftraceClass, write: compileRecordWriter(ftraceClass, true, LONG) };
      this.#byClass.set(ec, entry);
    }
    return entry.write;
  }

  used(): EventClass[] {
    return [...this.#byClass.values()].map((e) => e.ftraceClass);
  }
}

const COMMON: FtraceFieldInfo[] = [
  { name: 'common_type', cType: 'unsigned short', offset: 0, size: 2, signed: false, common: true },
  { name: 'common_flags', cType: 'unsigned char', offset: 2, size: 1, signed: false, common: true },
  { name: 'common_preempt_count', cType: 'unsigned char', offset: 3, size: 1, signed: false, common: true },
  { name: 'common_pid', cType: 'int', offset: 4, size: 4, signed: true, common: true },
];

const C_INTS: Record<number, string> = { 8: 'char', 16: 'short', 32: 'int', 64: 'long long' };

/** A plain C type for an integer class (libtraceevent prints `s32` and friends as unsigned). */
function cInt(bits: number, signed: boolean): string {
  const base = C_INTS[bits]!;
  return signed ? (bits === 8 ? 'signed char' : base) : `unsigned ${base}`;
}

function intBits(size: number): number {
  return size <= 8 ? 8 : size <= 16 ? 16 : size <= 32 ? 32 : 64;
}

/**
 * Builds ftrace field info for a class that has none (from CTF): integers and enums keep their width (rounded up to
 * a byte multiple), fixed arrays of integers become C arrays, strings and sequences `__data_loc` arrays. Nested
 * structures, variants and floats have no ftrace form and are left out of the record.
 */
export function synthesizeFtraceClass(ec: EventClass, id: number): EventClass {
  const fields: FtraceFieldInfo[] = [...COMMON];
  let offset = 8;
  const add = (name: string, cType: string, size: number, signed: boolean, align: number) => {
    offset = Math.ceil(offset / align) * align;
    fields.push({ name, cType, offset, size, signed, common: false });
    offset += size;
  };
  const intOf = (t: FieldClass): { bits: number; signed: boolean } | undefined =>
    t.kind === 'int'
      ? { bits: intBits(t.size), signed: t.signed }
      : t.kind === 'enum'
        ? { bits: intBits(t.container.size), signed: t.container.signed }
        : undefined;
  for (const m of ec.payload.members) {
    const t = m.type;
    const scalar = intOf(t);
    if (scalar !== undefined) {
      add(m.name, cInt(scalar.bits, scalar.signed), scalar.bits / 8, scalar.signed, scalar.bits / 8);
    } else if (t.kind === 'string' || t.kind === 'dynamic') {
      add(m.name, '__data_loc char[]', 4, false, 4);
    } else if ((t.kind === 'array' || t.kind === 'sequence') && intOf(t.element) !== undefined) {
      const e = intOf(t.element)!;
      const isText = t.element.kind === 'int' && t.element.encoding !== 'none' && e.bits === 8;
      const base = isText ? 'char' : cInt(e.bits, e.signed);
      if (t.kind === 'array') add(`${m.name}`, `${base}[${t.length}]`, (t.length * e.bits) / 8, e.signed, e.bits / 8);
      else add(m.name, `__data_loc ${base}[]`, 4, false, 4);
    }
  }
  const colon = ec.name.indexOf(':');
  const system = colon > 0 ? ec.name.slice(0, colon) : 'ctf';
  const event = (colon > 0 ? ec.name.slice(colon + 1) : ec.name).replace(/[^\w]/g, '_');
  const own = fields.filter((f) => !f.common);
  const conversion = (f: FtraceFieldInfo) =>
    /char\[|__data_loc char/.test(f.cType) ? '%s' : `%${f.size === 8 ? 'll' : ''}${f.signed ? 'd' : 'u'}`;
  const argument = (f: FtraceFieldInfo) => (/__data_loc/.test(f.cType) ? `__get_str(${f.name})` : `REC->${f.name}`);
  const printFormat = `"${own.map((f) => `${f.name}=${conversion(f)}`).join(' ')}"${own.map((f) => `, ${argument(f)}`).join('')}`;
  return {
    id,
    name: `${system}:${event}`,
    streamId: 0,
    payload: ec.payload,
    printFormat,
    ftrace: { system, event, fields },
  };
}

/** A piece of output: bytes in memory, or bytes in a file that the kernel may copy. */
type Part = Buffer | TraceDatFileBytes;

const partSize = (part: Part) => (Buffer.isBuffer(part) ? part.length : part.size);

function isFileBytes(value: Uint8Array | string | TraceDatFileBytes | undefined): value is TraceDatFileBytes {
  return value !== undefined && typeof value !== 'string' && !(value instanceof Uint8Array);
}

class Out {
  readonly parts: Part[] = [];
  length = 0;

  put(b: Part): number {
    const at = this.length;
    this.parts.push(b);
    this.length += partSize(b);
    return at;
  }
  u16(v: number): void {
    const b = Buffer.alloc(2);
    b.writeUInt16LE(v);
    this.put(b);
  }
  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.put(b);
  }
  u64(v: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.put(b);
  }
  str(s: string): void {
    this.put(Buffer.from(s, 'utf8'));
  }
  /** Pads with zeros up to a multiple of `align`. */
  align(align: number): void {
    const pad = (align - (this.length % align)) % align;
    if (pad > 0) this.put(Buffer.alloc(pad));
  }
  bytes(): Buffer {
    return Buffer.concat(
      this.parts.map((p) => (Buffer.isBuffer(p) ? p : asBuffer(p.read()))),
      this.length,
    );
  }
}

function start(out: Out, version: number, pageSize: number): void {
  out.put(TRACEDAT_MAGIC);
  out.str(`${version}\0`);
  out.put(Buffer.from([0, LONG]));
  out.u32(pageSize);
}

function headersBlock(o: Out, meta: Meta): void {
  o.str('header_page\0');
  o.u64(Buffer.byteLength(meta.headerPage));
  o.str(meta.headerPage);
  o.str('header_event\0');
  o.u64(Buffer.byteLength(meta.headerEvent));
  o.str(meta.headerEvent);
}

function ftraceBlock(o: Out, meta: Meta): void {
  o.u32(meta.ftrace.length);
  for (const t of meta.ftrace) {
    o.u64(Buffer.byteLength(t));
    o.str(t);
  }
}

function eventsBlock(o: Out, meta: Meta): void {
  o.u32(meta.systems.length);
  for (const [system, formats] of meta.systems) {
    o.str(`${system}\0`);
    o.u32(formats.length);
    for (const t of formats) {
      o.u64(Buffer.byteLength(t));
      o.str(t);
    }
  }
}

function option(o: Out, id: number, data: Buffer): void {
  o.u16(id);
  o.u32(data.length);
  o.put(data);
}

const u32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
};
const u64 = (v: number) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(v));
  return b;
};

/** Options every version stores: the clock, the uname text when known, the CPU count. */
function commonOptions(o: Out, meta: Meta, cpuCount: number): void {
  option(o, OPTION.traceClock, Buffer.from(`[${meta.clock}]\0`));
  if (meta.uname !== undefined) option(o, OPTION.uname, Buffer.from(`${meta.uname}\0`));
  option(o, OPTION.cpuCount, u32(cpuCount));
}

/** A version 6 file up to its first CPU's pages (zero-padded to a page boundary), given each CPU's page bytes. */
/**
 * `bytes` as a Buffer without copying them (`Buffer.from` of a Buffer copies: kallsyms is ~5 MB); text is encoded.
 */
function asBuffer(bytes: Uint8Array | string): Buffer {
  return typeof bytes === 'string' ? Buffer.from(bytes) : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Writes `parts` in order from offset `at` with gathered writes, so the head is never joined into one copy, and
 * bytes already in a file (kallsyms, ~5 MB) are copied by the kernel where they can be. Returns the end offset.
 */
function putParts(fd: number, parts: readonly Part[], at = 0): number {
  for (let i = 0; i < parts.length; ) {
    const part = parts[i]!;
    if (!Buffer.isBuffer(part)) {
      if (part.copyTo?.(fd, at) !== true) at = putBytes(fd, asBuffer(part.read()), at);
      else at += part.size;
      i++;
      continue;
    }
    // The buffers up to the next file part, at most 1024 (Linux's IOV_MAX) per call.
    let j = i;
    while (j < parts.length && j - i < 1024 && Buffer.isBuffer(parts[j])) j++;
    const run = parts.slice(i, j) as Buffer[];
    let n = writevSync(fd, run, at);
    for (const b of run) {
      if (n >= b.length) {
        n -= b.length;
        at += b.length;
      } else {
        // A short write ended inside this buffer: finish it on its own.
        at = putBytes(fd, b.subarray(n), at + n);
        n = 0;
      }
    }
    i = j;
  }
  return at;
}

/** Writes all of `bytes` at offset `at`; returns the end offset. */
function putBytes(fd: number, bytes: Uint8Array, at: number): number {
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done, at + done);
  return at + bytes.length;
}

function v6Head(meta: Meta, sizes: readonly number[], pageSize: number): Buffer {
  return v6HeadParts(meta, sizes, pageSize).bytes();
}

/** The head of a version 6 file; each CPU's pages follow it in order unless `offsets` places them. */
function v6HeadParts(meta: Meta, sizes: readonly number[], pageSize: number, offsets?: readonly number[]): Out {
  const o = new Out();
  start(o, 6, pageSize);
  headersBlock(o, meta);
  ftraceBlock(o, meta);
  eventsBlock(o, meta);
  o.u32(partSize(meta.kallsyms));
  o.put(meta.kallsyms);
  o.u32(Buffer.byteLength(meta.printk));
  o.str(meta.printk);
  o.u64(Buffer.byteLength(meta.cmdlines));
  o.str(meta.cmdlines);
  o.u32(sizes.length);
  o.str('options  \0');
  commonOptions(o, meta, sizes.length);
  o.u16(OPTION.done);
  o.str('flyrecord\0');
  // The CPU table's offsets are known once the table's own size is: header + 16 bytes per CPU, then page-aligned data.
  let at = Math.ceil((o.length + 16 * sizes.length) / pageSize) * pageSize;
  for (const [cpu, size] of sizes.entries()) {
    o.u64(size === 0 ? 0 : (offsets?.[cpu] ?? at));
    o.u64(size);
    at += Math.ceil(size / pageSize) * pageSize;
  }
  o.align(pageSize);
  return o;
}

function writeV6(meta: Meta, cpuPages: Buffer[], pageSize: number): Buffer {
  const o = new Out();
  o.put(
    v6Head(
      meta,
      cpuPages.map((p) => p.length),
      pageSize,
    ),
  );
  for (const p of cpuPages) {
    if (p.length === 0) continue;
    o.align(pageSize);
    o.put(p);
  }
  return o.bytes();
}

/** node:zlib, loaded when a file is compressed: loading it is a measurable share of a short recording's start. */
const zlib = () => process.getBuiltinModule('node:zlib') as typeof import('node:zlib');

/** Where {@link writeV7} puts its bytes: positional writes, each at most once per byte. */
interface Sink {
  write(bytes: Uint8Array, at: number): void;
}

/** A {@link Sink} in memory, for {@link encodeTraceDat}. */
function memorySink(): Sink & { bytes(): Buffer } {
  const parts: [Uint8Array, number][] = [];
  let end = 0;
  return {
    write(bytes, at) {
      parts.push([bytes, at]);
      end = Math.max(end, at + bytes.length);
    },
    bytes() {
      const out = Buffer.alloc(end);
      for (const [bytes, at] of parts) out.set(bytes, at);
      return out;
    },
  };
}

/** One CPU's pages as {@link TraceDatCpuPages} offers them, from bytes in memory. */
const inMemory = (pages: Buffer): TraceDatCpuPages => ({ size: pages.length, chunks: () => [pages] });

/**
 * Writes a version 7 file to `sink` and returns its size. Each CPU's pages are compressed in chunks of 10 pages
 * (as trace-cmd does) as they are read and written out at once, so no more than a chunk of them is held.
 */
function writeV7(
  meta: Meta,
  cpus: readonly TraceDatCpuPages[],
  pageSize: number,
  compression: 'none' | 'zstd' | 'zlib',
  sink: Sink,
  file?: string,
): number {
  const { clock } = meta;
  let o = new Out();
  let base = 0;
  start(o, 7, pageSize);
  o.str(
    compression === 'none'
      ? 'none\0\0'
      : compression === 'zstd'
        ? `zstd\0${process.versions.zstd ?? '1.5.0'}\0`
        : `zlib\0${process.versions.zlib?.replace(/-.*/, '') ?? '1.2.13'}\0`,
  );
  const firstOptionsAt = o.length;
  o.u64(0); // patched below
  const strings: string[] = [];
  const stringId = (s: string) => {
    const before = strings.join('').length;
    strings.push(`${s}\0`);
    return before;
  };
  const compress = (data: Buffer) =>
    compression === 'zstd' ? zlib().zstdCompressSync(data) : compression === 'zlib' ? zlib().deflateSync(data) : data;
  const section = (id: number, description: string | number, content: Buffer, compressible: boolean): number => {
    const at = base + o.length;
    const packed = compressible && compression !== 'none';
    const body = packed ? Buffer.concat([u32(0), u32(content.length), compress(content)]) : content;
    if (packed) body.writeUInt32LE(body.length - 8, 0);
    o.u16(id);
    o.u16(packed ? SECTION_COMPRESSED : 0);
    o.u32(typeof description === 'number' ? description : stringId(description));
    o.u64(body.length);
    o.put(body);
    return at;
  };
  const block = (fill: (b: Out) => void) => {
    const b = new Out();
    fill(b);
    return b.bytes();
  };
  const headersAt = section(
    OPTION.headerInfo,
    'headers',
    block((b) => headersBlock(b, meta)),
    true,
  );
  const ftraceAt = section(
    OPTION.ftraceEvents,
    'ftrace events',
    block((b) => ftraceBlock(b, meta)),
    true,
  );
  const eventsAt = section(
    OPTION.eventFormats,
    'events format',
    block((b) => eventsBlock(b, meta)),
    true,
  );
  const kallsymsAt = section(
    OPTION.kallsyms,
    'kallsyms',
    block((b) => {
      b.u32(partSize(meta.kallsyms));
      b.put(meta.kallsyms);
    }),
    true,
  );
  const printkAt = section(
    OPTION.printk,
    'printk',
    block((b) => {
      b.u32(Buffer.byteLength(meta.printk));
      b.str(meta.printk);
    }),
    true,
  );
  const cmdlinesAt = section(
    OPTION.cmdlines,
    'command lines',
    block((b) => {
      b.u64(Buffer.byteLength(meta.cmdlines));
      b.str(meta.cmdlines);
    }),
    true,
  );
  // Flyrecord section: CPU data page-aligned inside it; compressed CPU data is a chunk list. Its header, whose size
  // is known once the data is written, is written last.
  const flyAt = o.length;
  const headerSize = 16;
  const head = o.bytes();
  sink.write(head, 0);
  let at = Math.ceil((flyAt + headerSize) / pageSize) * pageSize;
  const chunkSize = pageSize * 10;
  const cpuTable = cpus.map((pages, cpu) => {
    const chunks = checkedChunks(pages, cpu, file);
    if (pages.size === 0) {
      for (const _ of chunks);
      return { cpu, offset: 0, size: 0 };
    }
    const offset = at;
    let end = offset;
    if (compression === 'none') {
      for (const chunk of chunks) {
        sink.write(chunk, end);
        end += chunk.length;
      }
    } else {
      let count = 0;
      end += 4;
      const put = (raw: Uint8Array) => {
        const z = compress(raw as Buffer);
        sink.write(Buffer.concat([u32(z.length), u32(raw.length), z]), end);
        end += 8 + z.length;
        count++;
      };
      const carry = Buffer.allocUnsafe(chunkSize);
      let held = 0;
      for (const chunk of chunks) {
        let i = 0;
        while (i < chunk.length) {
          if (held === 0 && chunk.length - i >= chunkSize) {
            put(chunk.subarray(i, i + chunkSize));
            i += chunkSize;
            continue;
          }
          const n = Math.min(chunkSize - held, chunk.length - i);
          carry.set(chunk.subarray(i, i + n), held);
          held += n;
          i += n;
          if (held === chunkSize) {
            put(carry);
            held = 0;
          }
        }
      }
      if (held > 0) put(carry.subarray(0, held));
      sink.write(u32(count), offset);
    }
    at = Math.ceil(end / pageSize) * pageSize;
    return { cpu, offset, size: end - offset - (compression === 'none' ? 0 : 4) };
  });
  const flyEnd = Math.max(flyAt + headerSize, at);
  const fly = new Out();
  fly.u16(OPTION.buffer);
  fly.u16(compression === 'none' ? 0 : SECTION_COMPRESSED);
  fly.u32(stringId('buffer flyrecord'));
  fly.u64(flyEnd - flyAt - headerSize);
  sink.write(fly.bytes(), flyAt);
  o = new Out();
  base = flyEnd;
  // Options: the metadata references and the buffer description, then the strings.
  const opts = new Out();
  commonOptions(opts, meta, cpus.length);
  for (const [id, off] of [
    [OPTION.headerInfo, headersAt],
    [OPTION.ftraceEvents, ftraceAt],
    [OPTION.eventFormats, eventsAt],
    [OPTION.kallsyms, kallsymsAt],
    [OPTION.printk, printkAt],
    [OPTION.cmdlines, cmdlinesAt],
  ] as const) {
    option(opts, id, u64(off));
  }
  const buf = new Out();
  buf.u64(flyAt);
  buf.str(`\0${clock}\0`);
  buf.u32(pageSize);
  buf.u32(cpuTable.length);
  for (const c of cpuTable) {
    buf.u32(c.cpu);
    buf.u64(c.offset);
    buf.u64(c.size);
  }
  option(opts, OPTION.buffer, buf.bytes());
  option(opts, OPTION.done, u64(0));
  const optionsAt = section(OPTION.done, 'options', opts.bytes(), false);
  const stringsId = stringId('strings');
  section(OPTION.strings, stringsId, Buffer.from(strings.join('')), false);
  const tail = o.bytes();
  sink.write(tail, base);
  const size = base + tail.length;
  if (size > 2 ** 53) throw new TraceFormatError('ERR_TRACE_DAT', 'trace too large');
  sink.write(u64(optionsAt), firstOptionsAt);
  return size;
}
