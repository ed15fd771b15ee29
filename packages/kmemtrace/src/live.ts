/**
 * Analysis of events as they arrive: a running agent session's stream (its JSON events, each CPU's in time order but
 * the CPUs delivered at different moments) or a viewer's already merged window. Events wait per CPU until every CPU
 * still producing has passed their time, then enter one {@link KmemAnalyzer} in time order, so a free on one CPU is
 * never analysed before the allocation another CPU made earlier. The report at any moment is the offline report of
 * the events released so far.
 */
import type { FieldValue, Kallsyms, TraceEvent } from '@evtrace/trace-format';
import { AddressKeys } from './address.ts';
import { type AnalyzeOptions, type KmemAnalysis, KmemAnalyzer } from './analyze.ts';
import type { KmemEvent, KmemSource } from './event.ts';
import { type GfpTable, gfpNamer } from './gfp.ts';
import { buildReport, type KmemReport, type ReportOptions } from './report.ts';
import { addressNamer } from './symbols.ts';
import { fromFields, fromTraceEvent, INTERRUPT_FLAGS, kmemKind } from './tracepoints.ts';

/**
 * One event as the evtrace agent streams it and `evtrace cat --json` prints it (`@evtrace/trace-format`'s
 * `schemas/event.json`): `ts_ns` a decimal string, 64-bit integers as decimal strings, addresses as `"0x..."`.
 */
export interface JsonEvent {
  readonly ts_ns: string | number;
  readonly cpu: number | null;
  /** `system:event`. */
  readonly event: string;
  /** ftrace's common flags, decoded; null or absent when the source records none. */
  readonly flags?: { readonly hardirq?: unknown; readonly softirq?: unknown; readonly nmi?: unknown } | null;
  readonly fields: Readonly<Record<string, unknown>>;
}

const INTEGER = /^(?:-?\d+|0x[\da-f]+)$/i;

/** A JSON field as a trace-format value: decimal (64-bit) and hex (address) strings become bigints. */
function jsonField(v: unknown): FieldValue | undefined {
  if (typeof v === 'string') return INTEGER.test(v) ? BigInt(v) : v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return v;
  return undefined;
}

/** The JSON `flags` object as common_flags bits, as far as the analysis reads them (in interrupt context or not). */
function jsonFlags(flags: JsonEvent['flags']): number | undefined {
  if (typeof flags !== 'object' || flags === null) return undefined;
  return flags.hardirq === true || flags.softirq === true || flags.nmi === true ? INTERRUPT_FLAGS : 0;
}

/** The fields the analysis reads. */
const USED = [
  'call_site',
  'ptr',
  'bytes_req',
  'bytes_alloc',
  'gfp_flags',
  'node',
  'name',
  'pfn',
  'order',
  'migratetype',
];

/** Converts one JSON event; undefined for events that are not kmem allocator events. */
export function fromJsonEvent(e: JsonEvent, keys: AddressKeys): KmemEvent | undefined {
  // Shapes are checked, not trusted: a line of `evtrace cat --json` may come from anywhere.
  if (typeof e?.event !== 'string') return undefined;
  const kind = kmemKind({ name: e.event });
  if (kind === undefined) return undefined;
  const raw = typeof e.fields === 'object' && e.fields !== null ? e.fields : {};
  const fields: Record<string, FieldValue> = {};
  for (const k of USED) {
    const v = jsonField(raw[k]);
    if (v !== undefined) fields[k] = v;
  }
  const ts = typeof e.ts_ns === 'number' ? e.ts_ns : typeof e.ts_ns === 'string' ? Number(e.ts_ns) : Number.NaN;
  const cpu = typeof e.cpu === 'number' && Number.isInteger(e.cpu) ? e.cpu : -1;
  return fromFields(kind, Number.isFinite(ts) ? ts : 0, cpu, fields, jsonFlags(e.flags), keys);
}

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

interface CpuQueue {
  events: KmemEvent[];
  head: number;
  /** Time of the newest event received; -Infinity before the first. */
  reached: number;
  /** When it last delivered (clock of `now`). */
  heard: number;
}

/**
 * Incremental kmem analysis of a live stream. `pushJson` (per-CPU time order, any interleaving of CPUs) or
 * `pushTrace` (already in one time order), `release` now and then, `report` whenever a report is wanted; at the end
 * `release(true)` lets every pending event in.
 */
export class LiveKmemAnalysis {
  readonly keys = new AddressKeys();
  /** Naming for {@link buildReport}: call sites through the kallsyms given, gfp flags through the table given. */
  readonly names: Pick<KmemSource, 'siteName' | 'ptrName' | 'siteOrder' | 'gfpNames'>;
  readonly #analyzer: KmemAnalyzer;
  readonly #cpus = new Map<number, CpuQueue>();
  readonly #idleMs: number;
  readonly #now: () => number;
  #received = 0;
  #analysed = 0;
  #pending = 0;
  #lost = 0;

  constructor(options: LiveKmemOptions = {}) {
    this.#analyzer = new KmemAnalyzer(options);
    this.#idleMs = options.idleMs ?? 1000;
    this.#now = options.now ?? (() => performance.now());
    const now = this.#now();
    for (const cpu of options.cpus ?? [])
      this.#cpus.set(cpu, { events: [], head: 0, reached: Number.NEGATIVE_INFINITY, heard: now });
    this.names = { ...addressNamer(this.keys, options.kallsyms), gfpNames: gfpNamer(options.gfpTable) };
  }

  /** Adds a streamed event. Each CPU's events must come in time order; CPUs may interleave anyhow. */
  pushJson(e: JsonEvent): void {
    this.#received++;
    const k = fromJsonEvent(e, this.keys);
    if (k === undefined) return;
    const cpu = k.cpu;
    let q = this.#cpus.get(cpu);
    if (q === undefined)
      this.#cpus.set(cpu, (q = { events: [], head: 0, reached: Number.NEGATIVE_INFINITY, heard: 0 }));
    q.events.push(k);
    q.reached = k.tsNs;
    q.heard = this.#now();
    this.#pending++;
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
    if (this.#pending === 0) return 0;
    let mark = Number.POSITIVE_INFINITY;
    if (!all) {
      const now = this.#now();
      let newest = Number.NEGATIVE_INFINITY;
      for (const q of this.#cpus.values()) {
        if (q.reached > newest) newest = q.reached;
        if (now - q.heard <= this.#idleMs && q.reached < mark) mark = q.reached;
      }
      // Every CPU idle: nothing is being waited for.
      if (mark === Number.POSITIVE_INFINITY) mark = newest;
    }
    const queues = [...this.#cpus.entries()].sort((a, b) => a[0] - b[0]).map(([, q]) => q);
    let n = 0;
    // k-way merge of the ready prefixes; few CPUs, so a linear scan for the least head.
    for (;;) {
      let best: CpuQueue | undefined;
      let bestTs = Number.POSITIVE_INFINITY;
      for (const q of queues) {
        if (q.head >= q.events.length) continue;
        const ts = q.events[q.head]!.tsNs;
        if (ts <= mark && ts < bestTs) {
          best = q;
          bestTs = ts;
        }
      }
      if (best === undefined) break;
      this.#analyzer.push(best.events[best.head++]!);
      n++;
    }
    for (const q of queues) {
      if (q.head === 0) continue;
      q.events = q.events.slice(q.head);
      q.head = 0;
    }
    this.#pending -= n;
    this.#analysed += n;
    return n;
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
    return { received: this.#received, analysed: this.#analysed, pending: this.#pending, lost: this.#lost };
  }
}
