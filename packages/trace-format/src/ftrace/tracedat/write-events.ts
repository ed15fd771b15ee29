/**
 * trace.dat from events: each event's record encoded again (classes from ftrace keep their formats; others, from CTF,
 * get a synthesized one), then packed into pages per CPU and written as version 6 or 7.
 */
import type { EventClass, TraceEvent } from '../../model/types.ts';
import { type OutputAccess, writeBytesAtomically } from '../../output/atomic.ts';
import { compileRecordWriter, MAX_DYNAMIC, packPages, type RecordWriter, type TimedRecord } from '../encode.ts';
import { formatFileText, HEADER_EVENT_TEXT, headerPageText } from '../format-text.ts';
import { kernelPageLayout } from '../headers.ts';
import { LONG, type Meta } from './blocks.ts';
import type { TraceDatCpuPages } from './pages.ts';
import { synthesizeFtraceClass } from './synthesize.ts';
import { writeV6 } from './v6.ts';
import { memorySink, writeV7 } from './v7.ts';

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

/** One CPU's pages as {@link TraceDatCpuPages} offers them, from bytes in memory. */
const inMemory = (pages: Buffer): TraceDatCpuPages => ({ size: pages.length, chunks: () => [pages] });

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

  /** The records in time order (stable for equal times), each made as it is taken: never all at once. */
  *records(): Generator<TimedRecord> {
    const n = this.#ts.length;
    let order: number[] | undefined;
    if (!this.#sorted) {
      order = this.#ts.map((_, i) => i);
      order.sort((a, b) => (this.#ts[a]! < this.#ts[b]! ? -1 : this.#ts[a]! > this.#ts[b]! ? 1 : a - b));
    }
    for (let k = 0; k < n; k++) {
      const i = order === undefined ? k : order[k]!;
      const record = { tsNs: this.#ts[i]!, data: this.#buf.subarray(this.#at[i]!, this.#at[i]! + this.#len[i]!) };
      const missed = this.#missed.get(i);
      yield missed === undefined ? record : { ...record, missed };
    }
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
