/**
 * The tracefs kernel source of the evtrace agent: a private instance whose per-CPU `trace_pipe_raw` pages are
 * delivered, one record each, into the agent's ring buffers ({@link EventSource}). Unlike `record`, it writes no
 * files and runs no loop of its own: the agent polls it, so several sessions share one event loop. The instance is
 * in non-overwrite mode (the kernel counts what the reader misses as dropped); overwriting is the ring buffers' job.
 *
 * Several consumers can share one instance through {@link KernelSource.tap}: the kernel writes and the agent reads
 * each event once, and every page read is handed to each running tap's own sinks, with per-tap counters.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type EventClass,
  type EventSource,
  FTRACE_PAGE_RECORD,
  type PageSink,
  parseHeaderPage,
  type SourceCpuCounters,
} from '@evtrace/trace-format';
import { ioError, outputError, TracefsError } from '../errors.ts';
import { type EventFilterPlan, planEventFilter, writeKernelFilter } from '../filter/filter.ts';
import { listEvents, matchEvents, readEventFormat } from '../instance/catalog.ts';
import { createInstance, type Instance, OWN_INSTANCE, removeInstanceDir } from '../instance/instance.ts';
import { findTracefs } from '../instance/mount.ts';
import {
  closeRawPipes,
  kernelLoss,
  openRawPipe,
  type RawPipe,
  RawPipeDrain,
  rawPipeCpus,
  withoutStackTraces,
} from '../pages/raw-pipe.ts';

/** Options of {@link KernelSource}. */
export interface KernelSourceOptions {
  /** Event patterns (`kmem:kmalloc`, `sched:*`). */
  readonly events: readonly string[];
  /** An ftrace filter for every selected event: the kernel applies what it can, see `userSpaceFilters`. */
  readonly filter?: string;
  /** Per-CPU kernel buffer size in KiB. Default: the kernel's. */
  readonly bufferKb?: number;
  /** The tracefs mount point. Default: found (mounted when root). */
  readonly tracefs?: string;
  /**
   * Re-adopt this instance (`evtrace-[OWNER-]PID-N` of a process that died) instead of creating one: its configuration and
   * the events its buffers still hold are kept.
   */
  readonly adopt?: string;
  /** Tag new instances with this owner (8 hex digits) so that other evtrace processes leave them to it. */
  readonly owner?: string;
}

/** One consumer of the pages: its sinks (one per CPU) and what it got, by CPU index, over all its runs. */
interface Consumer {
  sinks: readonly PageSink[];
  readonly events: Float64Array;
  readonly refused: Float64Array;
  readonly bytes: Float64Array;
  /** Bytes written to each sink since its last flush. */
  readonly pending: Float64Array;
  /** The kernel's loss counters when the consumer last started: it is charged only with what was lost while it ran. */
  lossBase: readonly number[];
  /** Kernel loss charged for its earlier runs. */
  readonly kernelLost: Float64Array;
}

const set = (file: string, value: string, what: string) => {
  try {
    writeFileSync(file, value);
  } catch (error) {
    const e = ioError(file, error, what);
    throw e.code === 'ERR_TRACEFS_PERMISSION'
      ? e
      : new TracefsError('ERR_TRACEFS_SETTING', `${what} (${value}): ${e.message}`, e);
  }
};

const read = (file: string): Buffer => {
  try {
    return readFileSync(file);
  } catch (error) {
    throw ioError(file, error, 'cannot read');
  }
};

/** The live kernel source. */
export class KernelSource implements EventSource {
  readonly kind = 'kernel';
  readonly demo = false;
  cpus: readonly number[] = [];
  pageSize = 4096;
  eventClasses: readonly EventClass[] = [];
  /** Parts of the filter the kernel cannot evaluate, by `system:event`: the agent applies them while decoding. */
  userSpaceFilters: ReadonlyMap<string, EventFilterPlan> = new Map();
  readonly #options: KernelSourceOptions;
  #tracefs = '';
  #instance: Instance | undefined;
  #drain: RawPipeDrain | undefined;
  #selected: { system: string; event: string }[] = [];
  #cpus: RawPipe[] = [];
  /** Who gets the pages: the taps that run, or the one consumer of {@link start}. */
  #consumers: Consumer[] = [];
  #own: Consumer | undefined;
  /** Taps that have prepared and not closed yet: the last one to close releases the instance. */
  #refs = 0;
  #prepared = false;

  constructor(options: KernelSourceOptions) {
    this.#options = options;
  }

  /** The instance name. */
  get resource(): string | undefined {
    return this.#instance?.name;
  }

  /** True once {@link prepare} succeeded (and until {@link close}). */
  get prepared(): boolean {
    return this.#prepared;
  }

  /**
   * A consumer sharing this source: an {@link EventSource} with its own sinks and counters, whose `prepare`
   * prepares the source if nobody did, whose `start`/`stop` turn tracing on with the first running tap and off with
   * the last, and whose `close` releases the instance when it is the last tap.
   */
  tap(): KernelTap {
    return new KernelTap(this, {
      acquire: () => {
        if (!this.#prepared) this.prepare();
        this.#refs++;
      },
      release: () => {
        if (--this.#refs <= 0) this.close();
      },
      consumer: () => this.#consumer(),
      attach: (consumer, sinks) => this.#attach(consumer, sinks),
      detach: (consumer) => this.#detach(consumer),
      poll: () => this.poll(),
      counters: (consumer) => this.#countersOf(consumer),
    });
  }

  prepare(): void {
    const o = this.#options;
    if (o.events.length === 0) throw new TracefsError('ERR_TRACEFS_EVENT', 'no event selected');
    this.#tracefs = o.tracefs ?? findTracefs();
    const selected = matchEvents(listEvents(this.#tracefs), o.events);
    this.#selected = selected;
    const classes = selected.map((e) => readEventFormat(this.#tracefs, e).eventClass);
    const plans = new Map<string, EventFilterPlan>();
    if (o.filter !== undefined && o.filter.trim() !== '')
      for (const c of classes) plans.set(c.name, planEventFilter(o.filter, c));
    this.eventClasses = classes;
    this.userSpaceFilters = new Map([...plans].filter(([, p]) => p.userSpace !== undefined));
    if (o.adopt !== undefined) {
      if (!OWN_INSTANCE.test(o.adopt))
        throw new TracefsError('ERR_TRACEFS_SETTING', `${o.adopt} is not an evtrace instance`);
      const path = join(this.#tracefs, 'instances', o.adopt);
      read(join(path, 'tracing_on'));
      let removed = false;
      this.#instance = {
        name: o.adopt,
        path,
        remove() {
          if (!removed) removeInstanceDir(path);
          removed = true;
        },
      };
    } else this.#instance = createInstance(this.#tracefs, o.owner);
    try {
      this.#configure(plans);
    } catch (error) {
      this.close();
      throw error;
    }
    this.#prepared = true;
  }

  #configure(plans: ReadonlyMap<string, EventFilterPlan>): void {
    const p = this.#instance!.path;
    const adopted = this.#options.adopt !== undefined;
    if (!adopted) {
      set(join(p, 'tracing_on'), '0', 'cannot stop tracing in the instance');
      if (this.#options.bufferKb !== undefined)
        set(join(p, 'buffer_size_kb'), String(this.#options.bufferKb), 'the kernel refused the buffer size');
      set(join(p, 'options', 'overwrite'), '0', 'cannot set non-overwrite mode');
      for (const [name, plan] of plans) {
        if (plan.kernel === undefined) continue;
        const [system, event] = [name.slice(0, name.indexOf(':')), name.slice(name.indexOf(':') + 1)];
        writeKernelFilter(p, join(p, 'events', system, event), plan.kernel);
      }
      for (const e of this.#selected)
        set(join(p, 'events', e.system, e.event, 'enable'), '1', `cannot enable ${e.system}:${e.event}`);
    }
    this.pageSize = Number(read(join(p, 'buffer_subbuf_size_kb')).toString().trim()) * 1024;
    const layout = parseHeaderPage(read(join(p, 'events', 'header_page')).toString(), { pageSize: this.pageSize });
    this.#drain = new RawPipeDrain(layout);
    for (const cpu of rawPipeCpus(p)) this.#cpus.push(openRawPipe(p, cpu));
    this.cpus = this.#cpus.map((c) => c.cpu);
  }

  writeMetadata(dir: string): void {
    const p = this.#instance!.path;
    const put = (file: string, data: Buffer | string) => {
      try {
        writeFileSync(file, data);
      } catch (error) {
        throw outputError(file, error);
      }
    };
    const mk = (d: string) => {
      try {
        mkdirSync(d, { recursive: true });
      } catch (error) {
        throw outputError(d, error);
      }
    };
    mk(join(dir, 'events'));
    for (const f of ['header_page', 'header_event']) put(join(dir, 'events', f), read(join(p, 'events', f)));
    for (const e of this.#selected) {
      mk(join(dir, 'events', e.system, e.event));
      put(join(dir, 'events', e.system, e.event, 'format'), read(join(p, 'events', e.system, e.event, 'format')));
    }
    put(join(dir, 'buffer_subbuf_size_kb'), read(join(p, 'buffer_subbuf_size_kb')));
    put(join(dir, 'trace_clock'), read(join(p, 'trace_clock')));
    put(join(dir, 'saved_cmdlines'), read(join(this.#tracefs, 'saved_cmdlines')));
    put(join(dir, 'printk_formats'), read(join(this.#tracefs, 'printk_formats')));
    try {
      put(join(dir, 'kallsyms'), readFileSync('/proc/kallsyms'));
    } catch (error) {
      // Symbols are optional (readers print addresses); a full disk is not.
      if ((error as TracefsError).code === 'ERR_TRACEFS_OUTPUT') throw error;
    }
  }

  start(sinks: readonly PageSink[]): void {
    this.#own ??= this.#consumer();
    this.#attach(this.#own, sinks);
  }

  #consumer(): Consumer {
    const n = this.#cpus.length;
    return {
      sinks: [],
      events: new Float64Array(n),
      refused: new Float64Array(n),
      bytes: new Float64Array(n),
      pending: new Float64Array(n),
      lossBase: [],
      kernelLost: new Float64Array(n),
    };
  }

  #attach(consumer: Consumer, sinks: readonly PageSink[]): void {
    if (this.#consumers.includes(consumer))
      throw new TracefsError('ERR_TRACEFS_SETTING', 'the source is running already');
    if (sinks.length !== this.#cpus.length)
      throw new TracefsError('ERR_TRACEFS_SETTING', `${this.#cpus.length} sinks needed`);
    consumer.sinks = sinks;
    consumer.lossBase = this.#kernelLoss();
    this.#consumers = [...this.#consumers, consumer];
    if (this.#consumers.length === 1) set(join(this.#instance!.path, 'tracing_on'), '1', 'cannot start tracing');
  }

  /** Hands the consumer what is ready and lets it go; the last one turns tracing off and gets everything left. */
  #detach(consumer: Consumer): void {
    if (!this.#consumers.includes(consumer)) return;
    if (this.#consumers.length === 1) {
      try {
        set(join(this.#instance!.path, 'tracing_on'), '0', 'cannot stop tracing');
      } catch {}
      while (this.poll() > 0);
    } else this.poll();
    const kernel = this.#kernelLoss();
    for (let i = 0; i < kernel.length; i++) consumer.kernelLost[i]! += Math.max(0, kernel[i]! - consumer.lossBase[i]!);
    this.#consumers = this.#consumers.filter((c) => c !== consumer);
  }

  poll(): number {
    if (this.#consumers.length === 0) return 0;
    return withoutStackTraces(() => {
      let fastest = 0;
      for (let i = 0; i < this.#cpus.length; i++) fastest = Math.max(fastest, this.#drainCpu(i));
      return fastest;
    });
  }

  /** Hands every running consumer the pages CPU `i` has ready, then flushes the sinks that took any. */
  #drainCpu(i: number): number {
    const consumers = this.#consumers;
    const bytes = this.#drain!.drain(this.#cpus[i]!, (page, ts, count) => {
      // Every consumer copies the page into its own sink: the kernel wrote it once and it was read once.
      for (let k = 0; k < consumers.length; k++) {
        const s = consumers[k]!;
        if (s.sinks[i]!.writeBytes(FTRACE_PAGE_RECORD, page, ts)) {
          s.events[i]! += count.records;
          s.bytes[i]! += count.dataBytes;
          s.pending[i]! += count.dataBytes;
        } else s.refused[i]! += count.records;
      }
    });
    for (let k = 0; k < consumers.length; k++) {
      const s = consumers[k]!;
      if (s.pending[i]! > 0) {
        s.pending[i] = 0;
        s.sinks[i]!.flush();
      }
    }
    return bytes;
  }

  stop(): void {
    if (this.#own !== undefined) this.#detach(this.#own);
  }

  /** The kernel's overruns and drops per CPU index, as its `stats` files say now. */
  #kernelLoss(): number[] {
    const p = this.#instance?.path;
    return this.#cpus.map((c) => (p === undefined ? 0 : kernelLoss(p, c.cpu)));
  }

  #countersOf(consumer: Consumer | undefined): readonly SourceCpuCounters[] {
    // A running consumer is also charged with the kernel's loss of its current run.
    const kernel = consumer !== undefined && this.#consumers.includes(consumer) ? this.#kernelLoss() : undefined;
    return this.#cpus.map((c, i) => ({
      cpu: c.cpu,
      events: consumer?.events[i] ?? 0,
      lost:
        (consumer?.refused[i] ?? 0) +
        (consumer?.kernelLost[i] ?? 0) +
        (kernel !== undefined ? Math.max(0, kernel[i]! - consumer!.lossBase[i]!) : 0),
      bytes: consumer?.bytes[i] ?? 0,
    }));
  }

  counters(): readonly SourceCpuCounters[] {
    return this.#countersOf(this.#own);
  }

  close(): void {
    closeRawPipes(this.#cpus);
    this.#cpus = [];
    this.#consumers = [];
    this.#own = undefined;
    this.#prepared = false;
    this.#instance?.remove();
  }
}

/** What a {@link KernelTap} may do with its source. */
interface TapLink {
  acquire(): void;
  release(): void;
  consumer(): Consumer;
  attach(consumer: Consumer, sinks: readonly PageSink[]): void;
  detach(consumer: Consumer): void;
  poll(): number;
  counters(consumer: Consumer | undefined): readonly SourceCpuCounters[];
}

/**
 * One consumer of a shared {@link KernelSource} (made by {@link KernelSource.tap}): an {@link EventSource} of its
 * own, whose sinks get every page the instance gives while it runs, and whose counters are its own (events it took,
 * pages its sinks refused, the kernel's loss while it ran).
 */
export class KernelTap implements EventSource {
  readonly kind = 'kernel';
  readonly demo = false;
  /** The source shared. */
  readonly shared: KernelSource;
  readonly #link: TapLink;
  #consumer: Consumer | undefined;
  #held = false;

  constructor(shared: KernelSource, link: TapLink) {
    this.shared = shared;
    this.#link = link;
  }

  get cpus(): readonly number[] {
    return this.shared.cpus;
  }
  get pageSize(): number {
    return this.shared.pageSize;
  }
  get eventClasses(): readonly EventClass[] {
    return this.shared.eventClasses;
  }
  get userSpaceFilters(): ReadonlyMap<string, EventFilterPlan> {
    return this.shared.userSpaceFilters;
  }
  get resource(): string | undefined {
    return this.shared.resource;
  }

  prepare(): void {
    if (this.#held) return;
    this.#link.acquire();
    this.#held = true;
    this.#consumer = this.#link.consumer();
  }

  writeMetadata(dir: string): void {
    this.shared.writeMetadata(dir);
  }

  start(sinks: readonly PageSink[]): void {
    if (this.#consumer === undefined) throw new TracefsError('ERR_TRACEFS_SETTING', 'the tap is not prepared');
    this.#link.attach(this.#consumer, sinks);
  }

  poll(): number {
    return this.#link.poll();
  }

  stop(): void {
    if (this.#consumer !== undefined) this.#link.detach(this.#consumer);
  }

  counters(): readonly SourceCpuCounters[] {
    return this.#link.counters(this.#consumer);
  }

  close(): void {
    if (!this.#held) return;
    this.#held = false;
    try {
      this.stop();
    } catch {}
    this.#link.release();
  }
}
