/**
 * Random access to the events of an ftrace recording (trace.dat or raw pages) without decoding them all: one pass over
 * the page headers and record headers notes where each record lies; an event is decoded only when asked for. A
 * million events cost about 22 bytes each in the index (time, CPU, position, length, event id), instead of the
 * hundreds a decoded event object takes.
 */
import { located } from '@evtrace/errors';
import { TraceFormatError } from '../errors.ts';
import type { EventClass, TraceEvent } from '../model/types.ts';
import { EventTable, pageLocation, wholePages, withLoss } from './events.ts';
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
  /** Number of events. */
  readonly length: number;
  /** Events lost before pages, per CPU, as the kernel counted them (an unknown count counts as 1). */
  readonly lost: ReadonlyMap<number, number>;
  /** Bytes of each CPU's pages in the trace. */
  readonly bytes: ReadonlyMap<number, number>;
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

/** A growable column of one typed-array kind. */
class Column<T extends BigInt64Array | Uint32Array> {
  #data: T;
  length = 0;
  readonly #make: (n: number) => T;
  constructor(make: (n: number) => T) {
    this.#make = make;
    this.#data = make(1024);
  }
  push(v: T[number]): void {
    if (this.length === this.#data.length) {
      const bigger = this.#make(this.#data.length * 2);
      bigger.set(this.#data as never);
      this.#data = bigger;
    }
    this.#data[this.length++] = v;
  }
  /** The filled part, trimmed. */
  done(): T {
    return this.#data.slice(0, this.length) as T;
  }
}

interface CpuIndex {
  readonly cpu: number;
  readonly bytes: Buffer;
  readonly view: DataView;
  readonly file: string | undefined;
  readonly fileOffset: number;
  readonly ts: BigInt64Array;
  readonly start: Uint32Array;
  readonly size: Uint32Array;
  readonly id: Uint32Array;
  /** Records that come first after a loss (by index in this CPU's columns): the count, or null when unknown. */
  readonly losses: ReadonlyMap<number, number | null>;
}

/**
 * Indexes the records of an ftrace reader. Records of event ids the recording does not describe are left out with a
 * warning, as the sequential reader does.
 *
 * @throws TraceFormatError `ERR_TRACE_FTRACE_PAGE` on a corrupt page unless `lenient`.
 */
export function indexFtrace(reader: FtraceReader, options: IndexFtraceOptions = {}): IndexedTrace {
  const meta = reader.metadata;
  const table = new EventTable(meta);
  const layout = meta.page;
  const warnings = reader.warnings as string[];
  const lost = new Map<number, number>();
  const commonPid = meta.eventClasses[0]?.ftrace?.fields.find((f) => f.name === 'common_pid');
  const pidOffset = commonPid?.offset ?? 4;
  const le = meta.byteOrder === 'le';
  const cpus: CpuIndex[] = [];
  for (const pages of reader.cpuPages()) {
    const bytes = wholePages(pages);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const ts = new Column((n) => new BigInt64Array(n));
    const start = new Column((n) => new Uint32Array(n));
    const size = new Column((n) => new Uint32Array(n));
    const id = new Column((n) => new Uint32Array(n));
    const unknown = new Set<number>();
    const losses = new Map<number, number | null>();
    const source = { file: pages.file, fileOffset: pages.fileOffset ?? 0 };
    /** The index of the page's first record, -1 before it, -2 when it was left out. */
    let first = -1;
    const onRecord = (t: bigint, at: number, length: number) => {
      const type = table.typeOf(view, at, length);
      if (first === -1) first = table.get(type) === undefined ? -2 : ts.length;
      if (table.get(type) === undefined) {
        if (!unknown.has(type)) {
          unknown.add(type);
          warnings.push(
            located(
              `CPU ${pages.cpu}: record of unknown event id ${type} skipped (reported once)`,
              pageLocation(source, at),
            ),
          );
        }
        return;
      }
      ts.push(t);
      start.push(at);
      size.push(length);
      id.push(type);
    };
    let missed = 0;
    for (let at = 0; at < bytes.byteLength; at += layout.pageSize) {
      first = -1;
      try {
        const info = readPage(bytes, at, layout, onRecord, source);
        if (info.missedEvents) missed += info.missedCount ?? 1;
        if (info.missedEvents && info.leadingRecord && first >= 0) losses.set(first, info.missedCount ?? null);
      } catch (e) {
        if (!(options.lenient && e instanceof TraceFormatError)) throw e;
        // The records before the corruption in this page are already indexed and kept.
        warnings.push(`${e.message}; CPU ${pages.cpu}: rest of the page skipped`);
      }
    }
    lost.set(pages.cpu, missed);
    cpus.push({
      cpu: pages.cpu,
      bytes,
      view,
      file: pages.file,
      fileOffset: source.fileOffset,
      ts: ts.done(),
      start: start.done(),
      size: size.done(),
      id: id.done(),
      losses,
    });
  }
  const { which, at } = mergeOrder(cpus.map((c) => c.ts));
  const offset = reader.tsOffsetNs;
  const check = (i: number) => {
    if (!(i >= 0 && i < which.length)) throw new RangeError(`event ${i} outside [0, ${which.length})`);
  };
  const classOf = (c: CpuIndex, k: number) => table.get(c.id[k]!)!;
  return {
    length: which.length,
    lost,
    bytes: new Map(cpus.map((c) => [c.cpu, c.bytes.byteLength])),
    tsNs(i) {
      check(i);
      return cpus[which[i]!]!.ts[at[i]!]! + offset;
    },
    cpu(i) {
      check(i);
      return cpus[which[i]!]!.cpu;
    },
    eventClass(i) {
      check(i);
      const c = cpus[which[i]!]!;
      return classOf(c, at[i]!).eventClass;
    },
    pid(i) {
      check(i);
      const c = cpus[which[i]!]!;
      const k = at[i]!;
      return c.size[k]! >= pidOffset + 4 ? c.view.getInt32(c.start[k]! + pidOffset, le) : -1;
    },
    event(i) {
      check(i);
      const c = cpus[which[i]!]!;
      const k = at[i]!;
      const entry = classOf(c, k);
      try {
        const event = entry.decode(c.bytes, c.view, c.start[k]!, c.size[k]!, c.ts[k]! + offset, c.cpu);
        const loss = c.losses.size === 0 ? undefined : c.losses.get(k);
        return loss === undefined ? event : withLoss(event, loss);
      } catch (e) {
        if (e instanceof RecordError) {
          throw new TraceFormatError('ERR_TRACE_FTRACE_PAGE', `${entry.eventClass.name}: ${e.message}`, {
            file: c.file,
            offset: c.fileOffset + e.at,
          });
        }
        throw e;
      }
    },
  };
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
