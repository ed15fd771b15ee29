/**
 * Random access to the events of an ftrace recording (trace.dat or raw pages), built as it is read: the CPUs' pages
 * are merged in time order a chunk at a time, and each record leaves only a few numbers behind in block columns (time,
 * CPU, pid, class, where it lies). Compressed pages stay compressed: an event is decoded again from
 * its chunk, decompressed anew (the last few kept in a small cache), when asked for. A viewer can so show the first
 * rows of a recording of any size at once and let the index grow behind it.
 */
import { located } from '@evtrace/errors';
import { TraceFormatError } from '../errors.ts';
import { takeWithin } from '../model/budget.ts';
import type { EventClass, TraceEvent } from '../model/types.ts';
import { EventTable, type PageChunk, pageLocation, wholePages, withLoss } from './events.ts';
import { readPage } from './page.ts';
import type { FtraceReader } from './raw-dir.ts';
import { RecordError } from './record.ts';

/** Options of {@link indexFtrace}. */
export interface IndexFtraceOptions {
  /** Report corrupt pages as warnings (on the reader's `warnings`) and keep the records before and after them. */
  readonly lenient?: boolean;
}

/** Events of an ftrace recording in time order (merged across CPUs, ties by CPU order), addressed by position. */
export interface IndexedTrace {
  /** Events indexed so far (all of them once {@link done}). */
  readonly length: number;
  /** True when every CPU's pages have been read to their end. */
  readonly done: boolean;
  /** Share of the pages' bytes read, in [0, 1]. */
  readonly progress: number;
  /** Events lost before pages, per CPU, as the kernel counted them (an unknown count counts as 1); so far. */
  readonly lost: ReadonlyMap<number, number>;
  /** Bytes of each CPU's pages in the trace (decompressed). */
  readonly bytes: ReadonlyMap<number, number>;
  /**
   * Indexes further: at least `minEvents` more events (fewer only at the end) and then until `budgetMs` of wall time
   * has passed. Returns {@link done}.
   * @throws TraceFormatError `ERR_TRACE_FTRACE_PAGE` on a corrupt page unless lenient.
   */
  advance(budgetMs: number, minEvents?: number): boolean;
  /** Indexes to the end. */
  finish(): this;
  /** Timestamp of the event at `i`, in ns (the trace's offset applied). */
  tsNs(i: number): bigint;
  cpu(i: number): number;
  eventClass(i: number): EventClass;
  /** The `common_pid` of the event at `i`, read without decoding the rest. */
  pid(i: number): number;
  /**
   * Decodes the event at `i`; the first event after a loss carries `scopes.lost`, as the sequential reader's does.
   * @throws TraceFormatError `ERR_TRACE_FTRACE_PAGE` naming the file and byte offset of a corrupt record.
   */
  event(i: number): TraceEvent;
}

/** Pages of an uncompressed CPU read per step of the indexing (its chunks are slices of the file's bytes). */
const SLICE_PAGES = 16;
/** Decompressed chunks kept for {@link IndexedTrace.event}: a screen's rows lie in a few per CPU. */
const CACHED_CHUNKS = 32;
/** Entries per block of a column: blocks are added as the index grows, never copied. */
const BLOCK_BITS = 16;
const BLOCK_MASK = (1 << BLOCK_BITS) - 1;

/** Blocks of a column, added as the index grows. */
const block = <T>(blocks: T[], make: (n: number) => T): T => {
  const b = make(BLOCK_MASK + 1);
  blocks.push(b);
  return b;
};

type ClassEntry = NonNullable<ReturnType<EventTable['get']>>;

/** One CPU's pages as the merge reads them: its chunks, and the records of the chunk read last. */
interface Feed {
  readonly cpu: number;
  readonly file: string | undefined;
  readonly fileOffset: number;
  readonly chunks: readonly PageChunk[];
  /** Offset of each chunk in the CPU's pages. */
  readonly starts: readonly number[];
  /** The next chunk to read. */
  next: number;
  /** Records of the chunk read last, from `head` on not merged yet. */
  readonly ts: bigint[];
  readonly at: number[];
  readonly cls: number[];
  readonly pid: number[];
  /** Those that come first after a loss (by index in the arrays above): the count, or null when unknown. */
  losses: Map<number, number | null>;
  head: number;
  unknown: Set<number>;
}

/**
 * Indexes the records of an ftrace reader to the end. Records of event ids the recording does not describe are left
 * out with a warning, as the sequential reader does.
 *
 * @throws TraceFormatError `ERR_TRACE_FTRACE_PAGE` on a corrupt page unless `lenient`.
 */
export function indexFtrace(reader: FtraceReader, options: IndexFtraceOptions = {}): IndexedTrace {
  return indexFtraceProgressively(reader, options).finish();
}

/**
 * Starts an index of an ftrace reader's records and returns it empty: {@link IndexedTrace.advance} grows it in
 * slices of time, so a viewer can draw between them.
 */
export function indexFtraceProgressively(reader: FtraceReader, options: IndexFtraceOptions = {}): IndexedTrace {
  const meta = reader.metadata;
  const table = new EventTable(meta);
  const layout = meta.page;
  const pageSize = layout.pageSize;
  const warnings = reader.warnings as string[];
  const commonPid = meta.eventClasses[0]?.ftrace?.fields.find((f) => f.name === 'common_pid');
  const pidOffset = commonPid?.offset ?? 4;
  const le = meta.byteOrder === 'le';
  const lost = new Map<number, number>();
  const bytes = new Map<number, number>();
  const feeds: Feed[] = reader.cpuPages().map((pages) => {
    let chunks: readonly PageChunk[];
    if (pages.chunks !== undefined) chunks = pages.chunks;
    else {
      const all = wholePages(pages);
      const step = SLICE_PAGES * pageSize;
      const slices: PageChunk[] = [];
      for (let a = 0; a < all.length; a += step) {
        const slice = all.subarray(a, Math.min(all.length, a + step));
        slices.push({ size: slice.length, read: () => slice });
      }
      chunks = slices;
    }
    const starts: number[] = [];
    let size = 0;
    for (const c of chunks) {
      starts.push(size);
      size += c.size;
    }
    lost.set(pages.cpu, 0);
    bytes.set(pages.cpu, size);
    return {
      cpu: pages.cpu,
      file: pages.file,
      fileOffset: pages.fileOffset ?? 0,
      chunks,
      starts,
      next: 0,
      ts: [],
      at: [],
      cls: [],
      pid: [],
      losses: new Map(),
      head: 0,
      unknown: new Set(),
    };
  });
  let total = 0;
  for (const b of bytes.values()) total += b;
  let read = 0;

  // Dense class numbers, in the order the records show them.
  const classes: ClassEntry[] = [];
  const classOfId = new Map<number, number>();
  // The columns, each in blocks of one element type (kept apart so that every store and load sees one type).
  const tsBlocks: BigInt64Array[] = [];
  const feedBlocks: (Uint8Array | Uint16Array)[] = [];
  const pidBlocks: Int32Array[] = [];
  const clsBlocks: (Uint16Array | Uint32Array)[] = [];
  const atBlocks: (Uint32Array | Float64Array)[] = [];
  const makeFeed = feeds.length <= 256 ? (n: number) => new Uint8Array(n) : (n: number) => new Uint16Array(n);
  const makeCls =
    meta.eventClasses.length <= 65536 ? (n: number) => new Uint16Array(n) : (n: number) => new Uint32Array(n);
  const makeAt =
    Math.max(0, ...bytes.values()) <= 2 ** 32 ? (n: number) => new Uint32Array(n) : (n: number) => new Float64Array(n);
  let length = 0;
  let tsB: BigInt64Array = new BigInt64Array(0);
  let feedB: Uint8Array | Uint16Array = new Uint8Array(0);
  let pidB: Int32Array = new Int32Array(0);
  let clsB: Uint16Array | Uint32Array = new Uint16Array(0);
  let atB: Uint32Array | Float64Array = new Uint32Array(0);
  const losses = new Map<number, number | null>();
  let done = false;

  /** Reads chunks of `f` until it has records to merge; false at its end. */
  const fill = (f: Feed): boolean => {
    while (f.head >= f.ts.length) {
      if (f.next >= f.chunks.length) return false;
      f.ts.length = 0;
      f.at.length = 0;
      f.cls.length = 0;
      f.pid.length = 0;
      f.head = 0;
      if (f.losses.size > 0) f.losses = new Map();
      const k = f.next++;
      const chunk = f.chunks[k]!;
      read += chunk.size;
      let data: Buffer;
      try {
        data = chunk.read();
      } catch (e) {
        if (!(options.lenient && e instanceof TraceFormatError)) throw e;
        // A chunk that does not decompress is skipped, as the sequential reader skips it; the ones around it count.
        warnings.push(`${e.message}; CPU ${f.cpu}: chunk skipped`);
        continue;
      }
      const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
      const source = { file: f.file, fileOffset: f.fileOffset + f.starts[k]! };
      const base = f.starts[k]!;
      /** The index of the page's first record, -1 before it, -2 when it was left out. */
      let first = -1;
      const onRecord = (t: bigint, start: number, length: number) => {
        const type = table.typeOf(view, start, length);
        let c = classOfId.get(type);
        if (c === undefined) {
          const entry = table.get(type);
          if (entry !== undefined) {
            c = classes.length;
            classes.push(entry);
            classOfId.set(type, c);
          }
        }
        if (first === -1) first = c === undefined ? -2 : f.ts.length;
        if (c === undefined) {
          if (!f.unknown.has(type)) {
            f.unknown.add(type);
            warnings.push(
              located(
                `CPU ${f.cpu}: record of unknown event id ${type} skipped (reported once)`,
                pageLocation(source, start),
              ),
            );
          }
          return;
        }
        f.ts.push(t);
        f.at.push(base + start);
        f.cls.push(c);
        f.pid.push(length >= pidOffset + 4 ? view.getInt32(start + pidOffset, le) : -1);
      };
      for (let p = 0; p < data.byteLength; p += pageSize) {
        first = -1;
        try {
          const info = readPage(data, p, layout, onRecord, source);
          if (info.missedEvents) lost.set(f.cpu, lost.get(f.cpu)! + (info.missedCount ?? 1));
          if (info.missedEvents && info.leadingRecord && first >= 0) f.losses.set(first, info.missedCount ?? null);
        } catch (e) {
          if (!(options.lenient && e instanceof TraceFormatError)) throw e;
          // The records before the corruption in this page are already indexed and kept.
          warnings.push(`${e.message}; CPU ${f.cpu}: rest of the page skipped`);
        }
      }
    }
    return true;
  };

  /** Merges the next record (the earliest of the CPUs' heads, ties to the first CPU); false at the end. */
  const take = (): boolean => {
    let best = -1;
    let bestTs = 0n;
    for (let c = 0; c < feeds.length; c++) {
      const f = feeds[c]!;
      if (f.head >= f.ts.length && !fill(f)) continue;
      const t = f.ts[f.head]!;
      if (best < 0 || t < bestTs) {
        best = c;
        bestTs = t;
      }
    }
    if (best < 0) {
      done = true;
      return false;
    }
    const f = feeds[best]!;
    const h = f.head++;
    if (f.losses.size > 0) {
      const loss = f.losses.get(h);
      if (loss !== undefined) losses.set(length, loss);
    }
    const k = length & BLOCK_MASK;
    if (k === 0) {
      tsB = block(tsBlocks, (n) => new BigInt64Array(n));
      feedB = block(feedBlocks, makeFeed);
      pidB = block(pidBlocks, (n) => new Int32Array(n));
      clsB = block(clsBlocks, makeCls);
      atB = block(atBlocks, makeAt);
    }
    tsB[k] = bestTs;
    feedB[k] = best;
    pidB[k] = f.pid[h]!;
    clsB[k] = f.cls[h]!;
    atB[k] = f.at[h]!;
    length++;
    return true;
  };

  /** Decompressed chunks by feed and chunk number, most recently used last. */
  const cache = new Map<number, { data: Buffer; view: DataView }>();
  const chunkData = (c: number, k: number) => {
    const key = k * feeds.length + c;
    let hit = cache.get(key);
    if (hit !== undefined) {
      cache.delete(key);
    } else {
      const data = feeds[c]!.chunks[k]!.read();
      hit = { data, view: new DataView(data.buffer, data.byteOffset, data.byteLength) };
      if (cache.size >= CACHED_CHUNKS) cache.delete(cache.keys().next().value!);
    }
    cache.set(key, hit);
    return hit;
  };
  /** The chunk of `f` holding offset `p` of its pages. */
  const chunkOf = (f: Feed, p: number): number => {
    let lo = 0;
    let hi = f.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (f.starts[mid]! <= p) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };

  const offset = reader.tsOffsetNs;
  const check = (i: number) => {
    if (!(Number.isInteger(i) && i >= 0 && i < length)) {
      throw new RangeError(`event ${i} is outside the ${length} indexed events`);
    }
  };
  const index: IndexedTrace = {
    get length() {
      return length;
    },
    get done() {
      return done;
    },
    get progress() {
      return done ? 1 : total === 0 ? 0 : read / total;
    },
    lost,
    bytes,
    advance(budgetMs, minEvents = 0) {
      if (!done) takeWithin(take, budgetMs, minEvents);
      return done;
    },
    finish() {
      while (take());
      return this;
    },
    tsNs(i) {
      check(i);
      return tsBlocks[i >>> BLOCK_BITS]![i & BLOCK_MASK]! + offset;
    },
    cpu(i) {
      check(i);
      return feeds[feedBlocks[i >>> BLOCK_BITS]![i & BLOCK_MASK]!]!.cpu;
    },
    eventClass(i) {
      check(i);
      return classes[clsBlocks[i >>> BLOCK_BITS]![i & BLOCK_MASK]!]!.eventClass;
    },
    pid(i) {
      check(i);
      return pidBlocks[i >>> BLOCK_BITS]![i & BLOCK_MASK]!;
    },
    event(i) {
      check(i);
      const c = feedBlocks[i >>> BLOCK_BITS]![i & BLOCK_MASK]!;
      const f = feeds[c]!;
      const p = atBlocks[i >>> BLOCK_BITS]![i & BLOCK_MASK]!;
      const k = chunkOf(f, p);
      const { data, view } = chunkData(c, k);
      const start = p - f.starts[k]!;
      const source = { file: f.file, fileOffset: f.fileOffset + f.starts[k]! };
      // The record's length is in its header: walk its page again (the page was read whole when indexed).
      let length = -1;
      try {
        readPage(
          data,
          start - (start % pageSize),
          layout,
          (_t, s, n) => {
            if (s === start) length = n;
          },
          source,
        );
      } catch (e) {
        // A page corrupt after the record: the record itself was read when indexed.
        if (length < 0) throw e;
      }
      const entry = classes[clsBlocks[i >>> BLOCK_BITS]![i & BLOCK_MASK]!]!;
      try {
        const event = entry.decode(
          data,
          view,
          start,
          length,
          tsBlocks[i >>> BLOCK_BITS]![i & BLOCK_MASK]! + offset,
          f.cpu,
        );
        const loss = losses.size === 0 ? undefined : losses.get(i);
        return loss === undefined ? event : withLoss(event, loss);
      } catch (e) {
        if (e instanceof RecordError) {
          throw new TraceFormatError('ERR_TRACE_FTRACE_PAGE', `${entry.eventClass.name}: ${e.message}`, {
            file: f.file,
            offset: source.fileOffset + e.at,
          });
        }
        throw e;
      }
    },
  };
  return index;
}

/**
 * The time order of per-CPU runs: for each position, which run (`which`) and the index in it (`at`). Ties go to the
 * lower run, like the sequential reader's merge.
 */
export function mergeOrder(runs: readonly BigInt64Array[]): { which: Uint16Array; at: Uint32Array } {
  let total = 0;
  for (const r of runs) total += r.length;
  const which = new Uint16Array(total);
  const at = new Uint32Array(total);
  const next = runs.map(() => 0);
  for (let n = 0; n < total; n++) {
    let best = -1;
    let bestTs = 0n;
    for (let r = 0; r < runs.length; r++) {
      const k = next[r]!;
      const run = runs[r]!;
      if (k >= run.length) continue;
      const t = run[k]!;
      if (best < 0 || t < bestTs) {
        best = r;
        bestTs = t;
      }
    }
    which[n] = best;
    at[n] = next[best]!++;
  }
  return { which, at };
}
