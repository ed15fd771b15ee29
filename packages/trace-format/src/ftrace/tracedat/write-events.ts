/**
 * trace.dat from events: each event's record encoded again (classes from ftrace keep their formats; others, from CTF,
 * get a synthesized one), packed into pages per CPU as it comes, and written as version 6 or 7.
 */
import { TraceFormatError } from '../../errors.ts';
import type { EventClass, TraceEvent } from '../../model/types.ts';
import { type OutputAccess, writeFileAtomically } from '../../output/atomic.ts';
import { compileRecordWriter, MAX_DYNAMIC, type RecordWriter } from '../encode.ts';
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
  const store = fileStore(file);
  try {
    const encoded = encodeEvents(eventClasses, events, options, store);
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

/** Events encoded into per-CPU pages kept in `store`, and the file's texts. */
function encodeEvents(
  eventClasses: readonly EventClass[],
  events: Iterable<TraceEvent>,
  options: TraceDatWriteOptions,
  store: Store,
) {
  const version = options.version ?? 7;
  const compression = version === 6 ? 'none' : (options.compression ?? 'zstd');
  const pageSize = options.pageSize ?? 4096;
  const layout: PageLayout = kernelPageLayout(pageSize);
  const classes = new Classes(eventClasses);
  const perCpu: (CpuWriter | undefined)[] = [];
  let scratch = Buffer.alloc(1 << 16);
  let view = new DataView(scratch.buffer);
  let lastClass: EventClass | undefined;
  let write: Writer | undefined;
  let count = 0;
  const none = {};
  for (const e of events) {
    if (e.eventClass !== lastClass) {
      lastClass = e.eventClass;
      write = classes.get(lastClass);
      if (write.fixed + MAX_DYNAMIC > scratch.length) {
        scratch = Buffer.alloc(write.fixed + MAX_DYNAMIC);
        view = new DataView(scratch.buffer);
      }
    }
    const cpu = e.cpu ?? 0;
    if (!Number.isInteger(cpu) || cpu < 0 || cpu >= MAX_CPUS) {
      throw new TraceFormatError(
        'ERR_TRACE_FORMAT',
        `event ${count} (${e.eventClass.name}) is on CPU ${cpu}, not 0 to ${MAX_CPUS - 1}`,
      );
    }
    const packer = (perCpu[cpu] ?? (perCpu[cpu] = new CpuWriter(layout, store, compression))).packer;
    const common = e.scopes?.['event.context'] ?? none;
    if (write!.dynamic) {
      const n = write!(e.fields, common, scratch, view, 0);
      packer.add(e.tsNs, scratch, n, lostBefore(e));
    } else {
      // Its length known before it is written: encoded in its page, not copied there.
      write!(e.fields, common, packer.page, packer.view, packer.place(e.tsNs, write!.fixed, lostBefore(e)));
    }
    count++;
  }
  const cpus: (TraceDatCpuPages | ChunkedCpuPages)[] = [];
  for (let cpu = 0; cpu < Math.max(1, perCpu.length); cpu++)
    cpus.push(perCpu[cpu]?.finish() ?? { size: 0, chunks: () => [] });
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
  return { version, compression, pageSize, meta, cpus, events: count, synthesized: classes.synthesized };
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

/** A class's record writer, its fixed part's size and whether records carry dynamic data after it. */
type Writer = RecordWriter & { readonly fixed: number; readonly dynamic: boolean };

/** Encoders by class, synthesizing ftrace formats (and ids) for classes without one. */
class Classes {
  readonly synthesized: string[] = [];
  readonly #byClass = new Map<EventClass, { ftraceClass: EventClass; write: Writer }>();
  readonly #ids = new Set<number>();
  #nextId = 1000;

  constructor(known: readonly EventClass[]) {
    for (const c of known) if (c.ftrace !== undefined) this.#ids.add(c.id);
  }

  get(ec: EventClass): Writer {
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
