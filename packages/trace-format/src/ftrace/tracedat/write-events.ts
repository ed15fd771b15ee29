/**
 * trace.dat from events: each event's record encoded again (classes from ftrace keep their formats; others, from CTF,
 * get a synthesized one), packed into pages per CPU as it comes, and written as version 6 or 7.
 */
import { TraceFormatError } from '../../errors.ts';
import type { EventClass, TraceEvent } from '../../model/types.ts';
import { type OutputAccess, writeFileAtomically } from '../../output/atomic.ts';
import { compileRecordWriter, MAX_DYNAMIC, type PagePacker, type RecordWriter } from '../encode.ts';
import { formatFileText, HEADER_EVENT_TEXT, headerPageText } from '../format-text.ts';
import { kernelPageLayout, type PageLayout } from '../headers.ts';
import { LONG, type Meta } from './blocks.ts';
import { CpuWriter, fileStore, memoryStore, type Store } from './page-store.ts';
import type { TraceDatCpuPages } from './pages.ts';
import { putBytes } from './parts.ts';
import { synthesizeFtraceClass } from './synthesize.ts';
import { writeV6, writeV6File } from './v6.ts';
import { type ChunkedCpuPages, memorySink, writeV7 } from './v7.ts';

/** CPUs a file may hold, as readers accept them. */
const MAX_CPUS = 4096;

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

/** What {@link writeTraceDat} wrote. */
export interface TraceDatFileResult {
  /** Bytes of the file. */
  readonly size: number;
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
  const list = [...events];
  // Stable: events of equal times keep their order.
  if (list.some((e, i) => i > 0 && e.tsNs < list[i - 1]!.tsNs))
    list.sort((a, b) => (a.tsNs < b.tsNs ? -1 : a.tsNs > b.tsNs ? 1 : 0));
  const store = memoryStore();
  const encoded = encodeEvents(eventClasses, list, options, store);
  let bytes: Buffer;
  if (encoded.version === 6) {
    bytes = writeV6(
      encoded.meta,
      encoded.cpus.map((c) => Buffer.concat([...c.chunks()])),
      encoded.pageSize,
    );
  } else {
    const sink = memorySink();
    writeV7(encoded.meta, encoded.cpus, encoded.pageSize, encoded.compression, sink);
    bytes = sink.bytes();
  }
  return { bytes, events: encoded.events, synthesized: encoded.synthesized };
}

/**
 * Writes events to a trace.dat file as they come, whole or not at all (see {@link writeFileAtomically}): readable by
 * its owner only unless `share` or `mode` says otherwise. Each CPU's records keep the order given (a record earlier
 * than the one before it on its CPU gets an absolute time stamp); what is held is a few pages per CPU, the rest waits
 * compressed in a temporary file beside `file` until the file is assembled.
 *
 * @throws TraceFormatError `ERR_TRACE_FORMAT` for an event on a CPU a file cannot hold (below 0, fractional, or
 *   beyond the CPUs readers accept);
 *   `ERR_TRACE_OUTPUT` naming `file` when it cannot be written.
 */
export function writeTraceDat(
  file: string,
  eventClasses: readonly EventClass[],
  events: Iterable<TraceEvent>,
  options: TraceDatWriteOptions & OutputAccess = {},
): TraceDatFileResult {
  return writeTraceDatWith(file, eventClasses, options, (encoder) => {
    for (const e of events) encoder.add(e);
  });
}

/** Events encoded into per-CPU pages kept in `store`, and the file's texts. */
function encodeEvents(
  eventClasses: readonly EventClass[],
  events: Iterable<TraceEvent>,
  options: TraceDatWriteOptions,
  store: Store,
) {
  const encoder = new TraceDatEncoder(eventClasses, options, store);
  for (const e of events) encoder.add(e);
  return encoder.finish(options);
}

/**
 * Writes a trace.dat file as {@link writeTraceDat} does, of the records `fill` gives `encoder` (events, or records a
 * caller encodes itself into the encoder's packers).
 */
export function writeTraceDatWith(
  file: string,
  eventClasses: readonly EventClass[],
  options: TraceDatWriteOptions & OutputAccess,
  fill: (encoder: TraceDatEncoder) => void,
): TraceDatFileResult {
  const store = fileStore(file);
  try {
    const encoder = new TraceDatEncoder(eventClasses, options, store);
    fill(encoder);
    const encoded = encoder.finish(options);
    const { meta, cpus, pageSize, compression } = encoded;
    const size = writeFileAtomically(
      file,
      (fd) =>
        encoded.version === 6
          ? writeV6File(fd, meta, cpus as TraceDatCpuPages[], pageSize, file)
          : writeV7(meta, cpus, pageSize, compression, { write: (bytes, at) => putBytes(fd, bytes, at) }, file),
      options,
    );
    return { size, events: encoded.events, synthesized: encoded.synthesized };
  } finally {
    store.close();
  }
}

/**
 * Records packed into pages per CPU as they come, kept in a store, and the formats of their classes: each event's
 * record encoded ({@link add}), or placed by a caller that writes records itself ({@link packer}, {@link format}).
 */
export class TraceDatEncoder {
  /** Records placed so far. */
  events = 0;
  readonly #classes: Classes;
  readonly #perCpu: (CpuWriter | undefined)[] = [];
  readonly #layout: PageLayout;
  readonly #store: Store;
  readonly #compression: 'none' | 'zstd' | 'zlib';
  #scratch = Buffer.alloc(1 << 16);
  #view = new DataView(this.#scratch.buffer);
  #lastClass: EventClass | undefined;
  #write: Writer | undefined;

  constructor(eventClasses: readonly EventClass[], options: TraceDatWriteOptions, store: Store) {
    const version = options.version ?? 7;
    this.#compression = version === 6 ? 'none' : (options.compression ?? 'zstd');
    this.#layout = kernelPageLayout(options.pageSize ?? 4096);
    this.#classes = new Classes(eventClasses);
    this.#store = store;
  }

  /**
   * The ftrace class of `ec` (a synthesized one for a class without, on its first record) and its record writer.
   */
  format(ec: EventClass): { readonly ftraceClass: EventClass; readonly write: Writer } {
    return this.#classes.entry(ec);
  }

  /**
   * The packer of `cpu`'s pages (opened on its first record); a record placed in it counts as one event.
   *
   * @throws TraceFormatError `ERR_TRACE_FORMAT` for a CPU a file cannot hold, naming the event (`name()`, its class).
   */
  packer(cpu: number, name: () => string): PagePacker {
    const writer = this.#perCpu[cpu];
    if (writer !== undefined) return writer.packer;
    if (!Number.isInteger(cpu) || cpu < 0 || cpu >= MAX_CPUS) {
      throw new TraceFormatError(
        'ERR_TRACE_FORMAT',
        `event ${this.events} (${name()}) is on CPU ${cpu}, not 0 to ${MAX_CPUS - 1}`,
      );
    }
    return (this.#perCpu[cpu] = new CpuWriter(this.#layout, this.#store, this.#compression)).packer;
  }

  /** Encodes `e` and places its record on its CPU. */
  add(e: TraceEvent): void {
    const write = this.#writerOf(e.eventClass);
    const packer = this.packer(e.cpu ?? 0, () => e.eventClass.name);
    const common = e.scopes?.['event.context'] ?? NONE;
    if (write.dynamic) {
      const n = write(e.fields, common, this.#scratch, this.#view, 0);
      packer.add(e.tsNs, this.#scratch, n, lostBefore(e));
    } else {
      // Its length known before it is written: encoded in its page, not copied there.
      write(e.fields, common, packer.page, packer.view, packer.place(e.tsNs, write.fixed, lostBefore(e)));
    }
    this.events++;
  }

  /** Encodes `e`'s record into a buffer of the encoder's (valid until the next call), for a caller to place. */
  encode(e: TraceEvent): Uint8Array {
    const write = this.#writerOf(e.eventClass);
    const n = write(e.fields, e.scopes?.['event.context'] ?? NONE, this.#scratch, this.#view, 0);
    return this.#scratch.subarray(0, n);
  }

  #writerOf(ec: EventClass): Writer {
    if (ec === this.#lastClass) return this.#write!;
    const write = this.#classes.entry(ec).write;
    if (write.fixed + MAX_DYNAMIC > this.#scratch.length) {
      this.#scratch = Buffer.alloc(write.fixed + MAX_DYNAMIC);
      this.#view = new DataView(this.#scratch.buffer);
    }
    this.#lastClass = ec;
    this.#write = write;
    return write;
  }

  /** Closes every CPU's last page; the file's parts. */
  finish(options: TraceDatWriteOptions) {
    const version = options.version ?? 7;
    const layout = this.#layout;
    const cpus: (TraceDatCpuPages | ChunkedCpuPages)[] = [];
    for (let cpu = 0; cpu < Math.max(1, this.#perCpu.length); cpu++)
      cpus.push(this.#perCpu[cpu]?.finish() ?? { size: 0, chunks: () => [] });
    const used = this.#classes.used();
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
    return {
      version,
      compression: this.#compression,
      pageSize: layout.pageSize,
      meta,
      cpus,
      events: this.events,
      synthesized: this.#classes.synthesized,
    };
  }
}

const NONE = {};

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

/** A class's record writer, its fixed part's size and whether records carry dynamic data after it. */
export type Writer = RecordWriter & { readonly fixed: number; readonly dynamic: boolean };

/** Encoders by class, synthesizing ftrace formats (and ids) for classes without one. */
class Classes {
  readonly synthesized: string[] = [];
  readonly #byClass = new Map<EventClass, { ftraceClass: EventClass; write: Writer }>();
  readonly #ids = new Set<number>();
  #nextId = 1000;

  constructor(known: readonly EventClass[]) {
    for (const c of known) if (c.ftrace !== undefined) this.#ids.add(c.id);
  }

  entry(ec: EventClass): { ftraceClass: EventClass; write: Writer } {
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
    return entry;
  }

  used(): EventClass[] {
    return [...this.#byClass.values()].map((e) => e.ftraceClass);
  }
}
