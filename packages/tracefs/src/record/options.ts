/** What a recording is asked for ({@link record}'s options) and what it produced. */
import type { EventClass } from '@evtrace/trace-format';
import type { ScopedFilter } from '../filter/event-filters.ts';
import type { EventFilterPlan } from '../filter/filter.ts';

/** Options of {@link record}. */
export interface RecordOptions {
  /** Event patterns: `system:event`, globs allowed (`sched:*`), or a bare system. */
  readonly events: readonly string[];
  /** The raw-pages directory to create. Its parent must exist; the directory itself must not. */
  readonly dir: string;
  /**
   * The directory is readable by every user (0755 less the umask). Default false: its owner only (0700), since
   * recordings hold kernel addresses.
   */
  readonly share?: boolean;
  /** An ftrace filter applied to every selected event (kernel part pushed down, the rest left to the reader). */
  readonly filter?: string;
  /**
   * Filters for some of the selected events (trace-cmd's `-e EVENT -f FILTER`). An event named by several filters,
   * or by one and `filter`, gets all of them joined with `&&`.
   */
  readonly filters?: readonly ScopedFilter[];
  /** Per-CPU buffer size in KiB (`buffer_size_kb`). Default: the kernel's. */
  readonly bufferKb?: number;
  /** Sub-buffer size in KiB (`buffer_subbuf_size_kb`). Default: the kernel's. */
  readonly subbufKb?: number;
  /** Trace clock (`trace_clock`). Default: the kernel's (`local`). */
  readonly clock?: string;
  /** The tracefs mount point. Default: found through /proc/mounts, mounted when root. */
  readonly tracefs?: string;
  /** Stops the recording when aborted. */
  readonly signal?: AbortSignal;
  /** Stops the recording after this many milliseconds. */
  readonly durationMs?: number;
  /**
   * How the recorder raises its threads once tracing is on (only where allowed; put back afterwards, see
   * priority.ts): by default to SCHED_FIFO priority 1, or nice -20 where real-time scheduling is refused; a number
   * asks for that nice value instead; false keeps the priority as it is.
   */
  readonly priority?: number | false;
  /**
   * Readers: `single` (default) reads all CPUs in one loop on the calling thread; `per-cpu` reads each CPU in its
   * own worker thread, sleeping on an Atomics wait. Under the benchmark's load (record.bench.ts) both lose about as
   * much; the single loop uses less CPU (no thread start-up).
   */
  readonly threads?: 'per-cpu' | 'single';
  /**
   * How the single reader sleeps between passes. `event-loop` (default): on a timer, so the calling thread keeps
   * serving its other work. `blocking`: in `Atomics.wait` on the calling thread, returning to the event loop at
   * least every YIELD_MS (readers.ts) so that signals, child exits and the abort signal are still seen. A
   * futex wake-up costs less than a timer's under load, so a program with nothing else to do on that thread (the
   * `evtrace record` command) records for less CPU (figures: the README's benchmark section). Where
   * poll(2) can be called, `blocking` waits in it instead: the kernel wakes the reader when a CPU's buffer reaches
   * the instance's `buffer_percent` (WAKE_PERCENT, pipe-wait.ts), so an idle recording wakes only to turn to the
   * event loop, and a burst is read at once rather than at the next timer.
   */
  readonly sleep?: 'event-loop' | 'blocking';
  /** Called once tracing is on, before the reader raises its priority (so a workload started here keeps its own). */
  readonly onStart?: () => void;
  /**
   * Leave room for a trace.dat head (a sparse hole, noted in `head_room`) before the pages, so that
   * `finalizeRecording` to trace.dat builds the file where the pages lie instead of copying them. On ext4 and XFS
   * every CPU then writes into its own region of one `cpus.raw` (`cpu_regions`), whose holes finalizing closes;
   * elsewhere each `cpuN.raw` gets the room and the largest becomes the file. Default false.
   */
  readonly headRoom?: boolean;
}

/** Events the kernel lost on one CPU, from `per_cpu/cpuN/stats`. */
export interface CpuLoss {
  readonly cpu: number;
  /** Events overwritten before they were read (overwrite mode). */
  readonly overrun: number;
  /** Events dropped because the buffer was full (non-overwrite mode, evtrace's). */
  readonly dropped: number;
  /** Events lost because an interrupt nested too deep while writing. */
  readonly commitOverrun: number;
  /** Pages read with the kernel's missed-events flag. */
  readonly missedPages: number;
}

/** What a recording produced. */
export interface RecordResult {
  /** The raw-pages directory. */
  readonly dir: string;
  /** The tracefs instance used (already removed). */
  readonly instance: string;
  readonly pageSize: number;
  /** Records read, by `system:event`. */
  readonly events: ReadonlyMap<string, number>;
  /** Total records read. */
  readonly total: number;
  /** Loss by CPU. */
  readonly lost: readonly CpuLoss[];
  /** Sub-buffers read. */
  readonly pages: number;
  /** Bytes of record data in them. */
  readonly dataBytes: number;
  /** Bytes of pages written (to the `cpuN.raw` files or the regions of `cpus.raw`). */
  readonly rawBytes: number;
  /** The selected events' classes. */
  readonly eventClasses: readonly EventClass[];
  /** User-space remainders of the filter, by `system:event` (empty when the kernel applies all of it). */
  readonly userSpaceFilters: ReadonlyMap<string, EventFilterPlan>;
  /** The nice value the reader ran at, when it changed it. */
  readonly priority: number | undefined;
  /** The SCHED_FIFO priority the recorder's threads ran at, when it raised them to it. */
  readonly realtime: number | undefined;
  /** Wall time of the recording in ms. */
  readonly durationMs: number;
  /** Synthetic events from the demo source, not from the kernel. */
  readonly demo?: boolean;
}
