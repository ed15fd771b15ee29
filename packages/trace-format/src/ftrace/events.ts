/**
 * From per-CPU page streams to {@link TraceEvent}s: what raw-page directories and trace.dat files share once their
 * containers are opened.
 */
import { type Location, located } from '@evtrace/errors';
import { TraceFormatError } from '../errors.ts';
import type { ByteOrder, EventClass, EventReadOptions, RecordTest, TraceEvent } from '../model/types.ts';
import type { PageLayout } from './headers.ts';
import { readPage } from './page.ts';
import { compileEventDecoder, type EventDecoder, RecordError } from './record.ts';
import type { Kallsyms } from './symbols.ts';

/** Everything needed to decode an ftrace recording, whatever its container. */
export interface FtraceMetadata {
  readonly byteOrder: ByteOrder;
  /** Size of the recording kernel's `long`, in bytes. */
  readonly longSize: number;
  readonly page: PageLayout;
  readonly eventClasses: readonly EventClass[];
  /** pid → command name, from `saved_cmdlines`. */
  readonly cmdlines: ReadonlyMap<number, string>;
  /** Kernel symbols, parsed on first use (they are large). */
  readonly kallsyms: () => Kallsyms | undefined;
  /** The `/proc/kallsyms` text the symbols came from, for writers. */
  readonly kallsymsText?: string;
  /** The kernel's printk formats by address (see `parsePrintkFormats`), and their text, for writers. */
  readonly printk?: ReadonlyMap<bigint, string>;
  readonly printkText?: string;
  /** The trace clock's name (`local`, `global`, `mono`...), when known. */
  readonly clock?: string;
}

/** The pages of one CPU: concatenated sub-buffers. */
export interface CpuPages {
  readonly cpu: number;
  /** The pages, or a sequence of chunks of whole pages (decompressed lazily, for instance). */
  readonly bytes: Buffer | (() => Iterable<Buffer>);
  /**
   * The chunks `bytes` yields, each readable alone and in any order (a compressed file's chunks): what an index keeps
   * instead of the decompressed pages. Absent when `bytes` is one buffer.
   */
  readonly chunks?: readonly PageChunk[];
  /**
   * The pieces `bytes` yields, read into one buffer reused from piece to piece: each is valid only until the next is
   * asked for. For a reader done with a piece before it takes the next (decoding copies what it keeps), which then
   * leaves the collector nothing per piece.
   */
  readonly transientBytes?: () => Iterable<Buffer>;
  /** For error messages: the file and the offset of the first byte in it. */
  readonly file?: string;
  readonly fileOffset?: number;
}

/** One chunk of a CPU's pages, read on demand. */
export interface PageChunk {
  /** Bytes `read` returns. */
  readonly size: number;
  /**
   * The chunk's pages (decompressed anew at each call).
   * @throws TraceFormatError when the chunk does not decompress.
   */
  read(): Buffer;
}

/** All of a CPU's pages in one buffer (its chunks joined, when they come in chunks). */
export function wholePages(pages: CpuPages): Buffer {
  return typeof pages.bytes === 'function' ? Buffer.concat([...pages.bytes()]) : pages.bytes;
}

export interface DecodeOptions {
  /** Report a corrupt page through `warn` and continue with the next one instead of throwing. */
  readonly lenient?: boolean;
  readonly warn: (message: string) => void;
  /** Called for each page the kernel lost events before, with the count when it stored one. */
  readonly onMissed?: (count: number | undefined) => void;
}

interface ClassEntry {
  readonly eventClass: EventClass;
  readonly decode: EventDecoder;
  /** Which records to decode (undefined: all), once {@link EventTable.get} has asked the selector. */
  test: RecordTest | undefined;
  selected: boolean;
}

/** Compiled decoders by event id. */
export class EventTable {
  readonly #byId = new Map<number, ClassEntry>();
  readonly #le: boolean;
  readonly #typeOffset: number;
  readonly #typeSize: number;
  readonly #select: EventReadOptions['select'];

  constructor(meta: Pick<FtraceMetadata, 'eventClasses' | 'byteOrder' | 'longSize'>, options: EventReadOptions = {}) {
    this.#le = meta.byteOrder === 'le';
    this.#select = options.select;
    for (const ec of meta.eventClasses) {
      const decode = compileEventDecoder(ec, meta.byteOrder, meta.longSize);
      this.#byId.set(ec.id, { eventClass: ec, decode, test: undefined, selected: this.#select === undefined });
    }
    const commonType = meta.eventClasses[0]?.ftrace?.fields.find((f) => f.name === 'common_type');
    this.#typeOffset = commonType?.offset ?? 0;
    this.#typeSize = commonType?.size ?? 2;
  }

  /** The event id of the record at `start`. */
  typeOf(view: DataView, start: number, length: number): number {
    if (length < this.#typeOffset + this.#typeSize) return -1;
    return this.#typeSize === 4
      ? view.getUint32(start + this.#typeOffset, this.#le)
      : view.getUint16(start + this.#typeOffset, this.#le);
  }

  /** The class of event `id`, with the test of the records to decode that the selector gave when first asked. */
  get(id: number): ClassEntry | undefined {
    const entry = this.#byId.get(id);
    if (entry !== undefined && !entry.selected) {
      entry.selected = true;
      entry.test = this.#select!(entry.eventClass);
    }
    return entry;
  }
}

/**
 * Decodes one CPU's pages in order. Missed events (page flags) are reported through `warn`, and carried by the page's
 * first event as `scopes.lost.events` (the count, or null when the kernel did not store it) when that event is the
 * page's first entry, which is where trace-cmd report prints its `CPU:N [N EVENTS DROPPED]` line. Unknown event ids
 * are reported once each and skipped.
 */
export function* cpuEvents(
  meta: FtraceMetadata,
  table: EventTable,
  pages: CpuPages,
  options: DecodeOptions,
): Generator<TraceEvent> {
  for (const batch of cpuEventBatches(meta, table, pages, options)) yield* batch;
}

/** {@link cpuEvents} a page at a time: one array per page with events (cheaper to merge than single events). */
export function* cpuEventBatches(
  meta: FtraceMetadata,
  table: EventTable,
  pages: CpuPages,
  options: DecodeOptions,
): Generator<TraceEvent[]> {
  const { cpu } = pages;
  const pageSize = meta.page.pageSize;
  const unknown = new Set<number>();
  let batch: TraceEvent[] = [];
  /** Whether the current page's first record is yet to come, and whether it was decoded (as `batch[0]`). */
  let awaitingFirst = true;
  let firstDecoded = false;
  let bytes: Buffer = Buffer.alloc(0);
  let view = new DataView(bytes.buffer);
  const source = { file: pages.file, fileOffset: pages.fileOffset ?? 0 };
  const onRecord = (tsNs: bigint, start: number, length: number) => {
    const id = table.typeOf(view, start, length);
    const entry = table.get(id);
    const decode = entry !== undefined && (entry.test === undefined || entry.test(view, start, length, cpu, tsNs));
    if (awaitingFirst) {
      awaitingFirst = false;
      firstDecoded = decode;
    }
    if (!decode) {
      if (entry === undefined && !unknown.has(id)) {
        unknown.add(id);
        options.warn(
          located(`CPU ${cpu}: record of unknown event id ${id} skipped (reported once)`, pageLocation(source, start)),
        );
      }
      return;
    }
    try {
      batch.push(entry.decode(bytes, view, start, length, tsNs, cpu));
    } catch (e) {
      if (e instanceof RecordError) {
        throw new TraceFormatError('ERR_TRACE_FTRACE_PAGE', `${entry.eventClass.name}: ${e.message}`, {
          file: source.file,
          offset: source.fileOffset + e.at,
        });
      }
      throw e;
    }
  };
  const chunks = pages.transientBytes?.() ?? (typeof pages.bytes === 'function' ? pages.bytes() : [pages.bytes]);
  for (const chunk of chunks) {
    bytes = chunk;
    view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let at = 0; at < bytes.byteLength; at += pageSize) {
      awaitingFirst = true;
      firstDecoded = false;
      try {
        const info = readPage(bytes, at, meta.page, onRecord, source);
        if (info.missedEvents) {
          if (info.leadingRecord && firstDecoded) batch[0] = withLoss(batch[0]!, info.missedCount ?? null);
          options.onMissed?.(info.missedCount);
          const count = info.missedCount === undefined ? 'an unknown number of' : String(info.missedCount);
          options.warn(located(`CPU ${cpu}: ${count} events lost before this page`, pageLocation(source, at)));
        }
      } catch (e) {
        if (!(options.lenient && e instanceof TraceFormatError)) throw e;
        options.warn(`${e.message}; CPU ${cpu}: rest of the page skipped`);
      }
      if (batch.length > 0) {
        yield batch;
        batch = [];
      }
    }
    source.fileOffset += bytes.byteLength;
  }
}

/** `event` marked as the first after a loss of `count` events (null: the kernel kept no count). */
export function withLoss(event: TraceEvent, count: number | null): TraceEvent {
  return { ...event, scopes: { ...event.scopes, lost: { events: count } } };
}

/** Where byte `at` of a page read from `source` lies in its file (`<pages>` when the pages came without one). */
export function pageLocation(source: { file?: string | undefined; fileOffset: number }, at: number): Location {
  return { file: source.file ?? '<pages>', offset: source.fileOffset + at };
}

/**
 * Decodes pages of one CPU at once, for readers that receive pages as they are produced (a live recording's
 * `cpuN.raw` as it grows). Returns the events and the number of events the kernel lost before them (an unknown
 * count counts as 1).
 */
export function decodeCpuPages(
  meta: FtraceMetadata,
  pages: CpuPages,
  options: { readonly lenient?: boolean; readonly warn?: (message: string) => void } = {},
): { events: TraceEvent[]; lost: number } {
  let lost = 0;
  const onMissed = (count: number | undefined) => {
    lost += count ?? 1;
  };
  const warn = options.warn ?? (() => {});
  const events: TraceEvent[] = [];
  for (const batch of cpuEventBatches(meta, tableFor(meta), pages, { lenient: options.lenient, warn, onMissed })) {
    for (const e of batch) events.push(e);
  }
  return { events, lost };
}

const tables = new WeakMap<FtraceMetadata, EventTable>();
function tableFor(meta: FtraceMetadata): EventTable {
  let t = tables.get(meta);
  if (t === undefined) tables.set(meta, (t = new EventTable(meta)));
  return t;
}

/** Merges per-CPU event streams (each in time order) into one, ties broken by CPU order. */
export function mergeByTime(streams: readonly Iterable<TraceEvent>[]): IterableIterator<TraceEvent> {
  return mergeBatches(
    streams.map(function* (s) {
      for (const e of s) yield [e];
    }),
  );
}

/** Merges streams of time-ordered batches (per-page arrays) into one time-ordered stream, ties by stream order. */
export function mergeBatches(streams: readonly Iterable<TraceEvent[]>[]): IterableIterator<TraceEvent> {
  return new BatchMerge(streams.map((s) => s[Symbol.iterator]()));
}

/**
 * The merge as a plain iterator rather than a generator: `for...of` loops inline its `next()`, which matters at
 * millions of events per second. Each step takes the run of events of the stream with the earliest head that still
 * precede every other stream's head, so interleaved CPUs cost one comparison per event.
 */
class BatchMerge implements IterableIterator<TraceEvent> {
  readonly #iters: Iterator<TraceEvent[]>[];
  readonly #arrays: (TraceEvent[] | undefined)[];
  readonly #index: number[];
  #current: TraceEvent[] | undefined;
  #k = 0;
  #end = 0;
  #stream = -1;

  constructor(iters: Iterator<TraceEvent[]>[]) {
    this.#iters = iters;
    this.#arrays = iters.map(() => undefined);
    this.#index = iters.map(() => 0);
    for (let i = 0; i < iters.length; i++) this.#refill(i);
  }

  [Symbol.iterator](): this {
    return this;
  }

  next(): IteratorResult<TraceEvent> {
    if (this.#k < this.#end) return { done: false, value: this.#current![this.#k++]! };
    if (this.#stream >= 0) {
      // The run is over: store where it stopped.
      const i = this.#stream;
      if (this.#k >= this.#arrays[i]!.length) this.#refill(i);
      else this.#index[i] = this.#k;
      this.#stream = -1;
    }
    if (!this.#plan()) return { done: true, value: undefined };
    return { done: false, value: this.#current![this.#k++]! };
  }

  #refill(i: number): void {
    for (;;) {
      const r = this.#iters[i]!.next();
      if (r.done) {
        this.#arrays[i] = undefined;
        return;
      }
      if (r.value.length > 0) {
        this.#arrays[i] = r.value;
        this.#index[i] = 0;
        return;
      }
    }
  }

  /** Picks the stream with the earliest head and how far its run goes. */
  #plan(): boolean {
    const arrays = this.#arrays;
    let best = -1;
    let bestTs = 0n;
    for (let i = 0; i < arrays.length; i++) {
      const a = arrays[i];
      if (a === undefined) continue;
      const ts = a[this.#index[i]!]!.tsNs;
      if (best < 0 || ts < bestTs) {
        best = i;
        bestTs = ts;
      }
    }
    if (best < 0) return false;
    // The run goes on while its times stay at most the other heads' (below them for streams of a lower index: ties go
    // to the lower stream index), compared without a bigint made per bound.
    let limit: bigint | undefined;
    let strict = false;
    for (let i = 0; i < arrays.length; i++) {
      const o = arrays[i];
      if (i === best || o === undefined) continue;
      const ts = o[this.#index[i]!]!.tsNs;
      if (limit === undefined || ts < limit || (ts === limit && i < best)) {
        limit = ts;
        strict = i < best;
      }
    }
    const a = arrays[best]!;
    let end = this.#index[best]! + 1;
    if (limit === undefined) end = a.length;
    else if (strict) while (end < a.length && a[end]!.tsNs < limit) end++;
    else while (end < a.length && a[end]!.tsNs <= limit) end++;
    this.#current = a;
    this.#k = this.#index[best]!;
    this.#end = end;
    this.#stream = best;
    return true;
  }
}
