/**
 * The interface through which event producers feed the evtrace agent: the tracefs kernel source, the demo source,
 * and the hardware and memory subsystems (hw-mce, kmemtrace, hw-bts, persistent-events) as they join.
 *
 * A source produces ftrace-layout sub-buffers ("pages", as `per_cpu/cpuN/trace_pipe_raw` returns them; build them
 * with `packPages` when the data does not come from the kernel) and writes each page as one record into the
 * per-CPU sink it is given, an @evtrace/ringbuf `Writer` in the agent. Its metadata is a raw-pages directory's
 * (`events/header_page`, `events/SYSTEM/EVENT/format`, ...), so every page a session keeps can be written out as
 * trace.dat or CTF and decoded by `openRawPagesDir`.
 *
 * Lifecycle: the agent calls `prepare` once (configure, fail early with the source's typed error on a bad event or
 * filter), writes the metadata, creates one sink per entry of `cpus`, then `start`, any number of `poll`s (the agent
 * drives time: sources never run their own timers, so several sessions share one loop), `stop`, and `close` (which
 * must release kernel resources whatever state the source is in).
 */
import type { EventClass } from './types.ts';

/** The record type a page is written under in a sink. */
export const FTRACE_PAGE_RECORD = 1;

/** Where a source writes one CPU's pages. @evtrace/ringbuf's `Writer` is one. */
export interface PageSink {
  /**
   * Appends one page as one record stamped `timestamp` (the page's base time, ns of the source's clock; never
   * decreasing per sink). Returns false when the sink dropped it (a full discard-mode buffer): the source counts it.
   */
  writeBytes(type: number, payload: Uint8Array, timestamp?: number): boolean;
  /** Publishes what was written to readers. */
  flush(): void;
}

/** A source's own per-CPU counters: what happened before the sink (the sink counts the rest). */
export interface SourceCpuCounters {
  readonly cpu: number;
  /** Events the source delivered into its sink. */
  readonly events: number;
  /** Events lost at the source: the kernel's overruns and drops, or pages the sink refused. */
  readonly lost: number;
  /** Bytes of event data delivered (record bytes, page headers and padding excluded). */
  readonly bytes: number;
}

/** An event producer the agent can run in a session. */
export interface EventSource {
  /** What the agent reports as the session's source: `kernel`, `demo`, `mce`... */
  readonly kind: string;
  /** True when the events are synthetic; outputs are then labelled. */
  readonly demo: boolean;
  /** The CPUs (or streams) the source produces pages for, ascending; valid after {@link prepare}. */
  readonly cpus: readonly number[];
  /** The size of every page the source writes; valid after {@link prepare}. */
  readonly pageSize: number;
  /** The selected events' classes; valid after {@link prepare}. */
  readonly eventClasses: readonly EventClass[];
  /** The kernel resource the source holds (a tracefs instance name), for the agent's state file. */
  readonly resource?: string;
  /** Checks and configures everything that can fail before data flows (awaited). */
  prepare(): void | Promise<void>;
  /** Writes the metadata of a raw-pages directory into `dir` (which exists). */
  writeMetadata(dir: string): void;
  /** Starts producing into `sinks` (one per entry of {@link cpus}). */
  start(sinks: readonly PageSink[]): void;
  /**
   * Moves what is ready into the sinks; returns the most record bytes one CPU delivered, so the caller can pace its
   * next call (more data, sooner).
   */
  poll(): number;
  /** Stops producing and delivers what is left. */
  stop(): void;
  counters(): readonly SourceCpuCounters[];
  /** Releases everything the source holds (idempotent). */
  close(): void;
}
