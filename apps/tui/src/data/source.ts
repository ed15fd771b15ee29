/**
 * Where the viewer's events come from: a trace file (all its events, fixed), the embedded demo or an agent session
 * (live: a window of the most recent events that moves). Views read a source only through this interface.
 */
import type { BufferList } from '@evtrace/agent-protocol';
import type { EventClass } from '@evtrace/trace-format';
import type { EventStore } from './store.ts';
import type { KernelSymbols } from './symbols.ts';

/** Counters of one CPU. */
export interface CpuStats {
  readonly cpu: number;
  /** Events seen (for a file: in the trace). */
  readonly events: number;
  /** Events the kernel or the ring buffer lost. */
  readonly lost: number;
  /** Events per second over time, oldest first (live: one per second; file: the trace cut into equal slices). */
  readonly rates: readonly number[];
  /** Buffer fill in [0, 1], when the source knows it. */
  readonly fill?: number;
  /** What `fill` measures, e.g. "ring buffer" or "viewer window". */
  readonly fillLabel?: string;
  /** A file: bytes of this CPU's data in it, when the format says. */
  readonly bytes?: number;
}

/** One CPU's buffer as the agent's gauges show it over time. */
export interface CpuGauge {
  readonly cpu: number;
  /** Bytes the buffer holds at most. */
  readonly size: number;
  /** Unread part of the buffer now, 0..1, and the fullest it was when read in each interval (oldest first). */
  readonly fill: number;
  readonly fills: readonly number[];
  /** Lost in total, and in each interval between samples (oldest first). */
  readonly lost: number;
  readonly losses: readonly number[];
  /** Events in the buffer not read yet, where counted. */
  readonly entries: number | null;
  /** Read and write positions (events for the kernel's buffers, pages for ring buffers). */
  readonly read: number;
  readonly head: number;
}

/** The buffers of a live session, per CPU over time. */
export interface BufferGaugeView {
  /** Where the gauges come from, e.g. `kernel per-CPU stats, tracefs instance evtrace-...`. */
  readonly origin: string;
  /** What the loss counts: kernel `events` or ring `records` (pages of events). */
  readonly unit: 'events' | 'records';
  /** Milliseconds between two samples. */
  readonly intervalMs: number;
  readonly cpus: readonly CpuGauge[];
}

/** Counts of one event type. */
export interface TypeStats {
  readonly name: string;
  readonly events: number;
  /** Events per second (live: over the last second; file: over the trace's span). */
  readonly rate: number;
}

export interface SourceStats {
  readonly cpus: readonly CpuStats[];
  readonly types: readonly TypeStats[];
  /** Events per second now (file: averaged over the trace's span). */
  readonly eventsPerSec: number;
  readonly lost: number;
  /** Events this viewer missed because it read a live stream too slowly (the source itself lost none of them). */
  readonly viewerLost?: number;
  /** Events this viewer received from a live stream so far. */
  readonly received?: number;
  /** Events seen in total (file: the trace's length). */
  readonly total: number;
  /** A live session's buffer gauges, once the agent sent them. */
  readonly buffers?: BufferGaugeView;
  /** Why a live source has no buffer gauges, when it is known. */
  readonly buffersUnavailable?: string;
}

/** One session as the agent lists it. */
export interface SessionInfo {
  readonly name: string;
  readonly mode: string;
  readonly state: string;
  readonly events: number;
  readonly lost: number;
  readonly bytes: number;
  readonly source?: string;
}

/** What the Sessions view can ask an agent to do. */
export interface SessionControl {
  list(): Promise<readonly SessionInfo[]>;
  create(name: string, events: readonly string[]): Promise<void>;
  stop(name: string): Promise<void>;
  snapshot(name: string): Promise<string>;
  destroy(name: string): Promise<void>;
  /** The persistent buffers as the agent lists them, with the session attached to each (agents of protocol 2). */
  buffers?(): Promise<BufferList>;
}

export interface ViewerSource {
  /** For the status bar, e.g. `trace.dat`, `demo (no agent answered at /run/evtrace/agent.sock)`. */
  readonly label: string;
  readonly live: boolean;
  /** The events now: all of a file's, a live source's recent window (a new store after each change). */
  store(): EventStore;
  eventClasses(): readonly EventClass[];
  stats(): SourceStats;
  /** Events lost so far (cheaper than {@link stats} for a file). */
  lost(): number;
  /** Task name of a pid, when known. */
  taskName(pid: number): string | undefined;
  /**
   * Kernel symbols for naming addresses: the trace's embedded kallsyms, else this machine's /proc/kallsyms where it
   * fits (traces, kernel sessions); looked up on first call.
   */
  symbols?(): KernelSymbols | undefined;
  /**
   * Calls `listener` after each change (live sources, a few times a second; a file as it is indexed, which starts with
   * the first listener); returns the unsubscribe function.
   */
  subscribe(listener: () => void): () => void;
  /** The agent's sessions, when attached to one. */
  readonly sessions?: SessionControl;
  /** Problems met while reading (corrupt pages skipped...). */
  warnings(): readonly string[];
  /** What a live source received, printed when the viewer quits: one line, no newline. */
  summary?(): string | undefined;
  close(): Promise<void>;
}
