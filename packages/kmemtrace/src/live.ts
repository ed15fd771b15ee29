/**
 * Analysis of events as they arrive: a running agent session's stream (each CPU's events in time order, the CPUs
 * delivered at different moments; decoded by trace-format's JSON event codec) or a viewer's already merged window.
 * Events wait per CPU in trace-format's `LiveMerge` until every CPU still producing has passed their time, then
 * enter one {@link KmemAnalyzer} in time order, so a free on one CPU is never analysed before the allocation another
 * CPU made earlier. The report at any moment is the offline report of the events released so far.
 */
import { type Kallsyms, LiveMerge, type TraceEvent } from '@evtrace/trace-format';
import { AddressKeys } from './address.ts';
import { type AnalyzeOptions, type KmemAnalysis, KmemAnalyzer } from './analyze.ts';
import type { KmemEvent, KmemSource } from './event.ts';
import { type GfpTable, gfpNamer } from './gfp.ts';
import { buildReport, type KmemReport, type ReportOptions } from './report.ts';
import { addressNamer } from './symbols.ts';
import { fromTraceEvent, kmemKind } from './tracepoints.ts';

export interface LiveKmemOptions extends AnalyzeOptions {
  /** Symbols for call sites (the running kernel's /proc/kallsyms for a local session). */
  readonly kallsyms?: Kallsyms;
  /** The recording kernel's gfp flag table, when known (its format files); the built-in table otherwise. */
  readonly gfpTable?: GfpTable;
  /**
   * CPUs known to produce (a session's): waited for from the start, so an early event of one is not overtaken by
   * another's. CPUs not listed are waited for from their first event on.
   */
  readonly cpus?: readonly number[];
  /** A CPU silent for this long (ms) is not waited for: an idle CPU would hold every other back. Default 1000. */
  readonly idleMs?: number;
  /** Clock for `idleMs`, in ms. */
  readonly now?: () => number;
}

/** Counters of what a live analysis received. */
export interface LiveKmemStats {
  /** Events received, kmem or not. */
  readonly received: number;
  /** kmem allocator events analysed. */
  readonly analysed: number;
  /** kmem events waiting for another CPU to pass their time. */
  readonly pending: number;
  /** Events the stream said this consumer lost (it read too slowly). */
  readonly lost: number;
}

/** A kmem event waiting in the merge, by the time of the event it came from. */
interface Pending {
  readonly tsNs: bigint;
  readonly event: KmemEvent;
}

/**
 * Incremental kmem analysis of a live stream. `push` (per-CPU time order, any interleaving of CPUs) or `pushTrace`
 * (already in one time order), `release` now and then, `report` whenever a report is wanted; at the end
 * `release(true)` lets every pending event in.
 */
export class LiveKmemAnalysis {
  readonly keys = new AddressKeys();
  /** Naming for {@link buildReport}: call sites through the kallsyms given, gfp flags through the table given. */
  readonly names: Pick<KmemSource, 'siteName' | 'ptrName' | 'siteOrder' | 'gfpNames'>;
  readonly #analyzer: KmemAnalyzer;
  readonly #merge: LiveMerge<Pending>;
  #received = 0;
  #analysed = 0;
  #lost = 0;

  constructor(options: LiveKmemOptions = {}) {
    this.#analyzer = new KmemAnalyzer(options);
    this.#merge = new LiveMerge({
      ...(options.cpus !== undefined ? { cpus: options.cpus } : {}),
      ...(options.idleMs !== undefined ? { idleMs: options.idleMs } : {}),
      ...(options.now !== undefined ? { now: options.now } : {}),
    });
    this.names = { ...addressNamer(this.keys, options.kallsyms), gfpNames: gfpNamer(options.gfpTable) };
  }

  /**
   * Adds a streamed event (a subscription's, decoded by its session's classes). Each CPU's events must come in time
   * order; CPUs may interleave anyhow.
   */
  push(e: TraceEvent): void {
    this.#received++;
    const k = fromTraceEvent(e, this.keys);
    if (k === undefined) return;
    this.#merge.add(e.cpu ?? -1, [{ tsNs: e.tsNs, event: k }]);
  }

  /** Adds an event of a stream already in one time order (a viewer's merged window): analysed at once. */
  pushTrace(e: TraceEvent): void {
    this.#received++;
    if (kmemKind(e.eventClass) === undefined) return;
    const k = fromTraceEvent(e, this.keys);
    if (k === undefined) return;
    this.#analyzer.push(k);
    this.#analysed++;
  }

  /** Counts events the stream lost for this consumer. */
  noteLost(count: number): void {
    this.#lost += count;
  }

  /**
   * Analyses the pending events every CPU still producing has passed, in time order (ties by CPU number, as the
   * offline readers merge); with `all`, every pending event (the stream ended). Returns how many were analysed.
   */
  release(all = false): number {
    const ready = this.#merge.take(all);
    for (const p of ready) this.#analyzer.push(p.event);
    this.#analysed += ready.length;
    return ready.length;
  }

  /** The analysis of the events released so far. */
  analysis(): KmemAnalysis {
    return this.#analyzer.result();
  }

  /** The report of the events released so far, as `evtrace kmem report` builds it for a file. */
  report(options: ReportOptions = {}): KmemReport {
    return buildReport(this.analysis(), this.names, options);
  }

  stats(): LiveKmemStats {
    return { received: this.#received, analysed: this.#analysed, pending: this.#merge.pending, lost: this.#lost };
  }
}
