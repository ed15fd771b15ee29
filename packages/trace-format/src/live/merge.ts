/**
 * Time order across CPUs for live streams, whose CPUs deliver their events at different moments (the agent sends
 * each CPU's in order, the CPUs interleaved as their pages fill): each CPU's events wait until every CPU still
 * producing has reached their time, then all are released in one time order, ties by CPU number as the file readers
 * merge. A CPU silent for `idleMs` is not waited for: an idle CPU would hold everything back.
 */

/** Anything with a time: events, or a consumer's own records of them. */
export interface Timed {
  readonly tsNs: bigint;
}

/** Options of {@link LiveMerge}. */
export interface LiveMergeOptions {
  /**
   * CPUs known to produce (a session's): waited for from the start, so an early event of one is not overtaken by
   * another's. CPUs not listed are waited for from their first event on.
   */
  readonly cpus?: readonly number[];
  /** A CPU silent for this long (ms) is not waited for. Default 1000. */
  readonly idleMs?: number;
  /** Clock for `idleMs`, in ms. Default `performance.now`. */
  readonly now?: () => number;
}

interface CpuQueue<T> {
  readonly cpu: number;
  items: T[];
  head: number;
  /** Time of the newest item received; undefined before the first. */
  reached: bigint | undefined;
  /** When it last delivered (or the merge started, for CPUs it was told of). */
  heard: number;
}

/** Per-CPU queues of items in time order, released in one time order. */
export class LiveMerge<T extends Timed> {
  /** By CPU number, ascending: the order ties are released in. */
  #queues: CpuQueue<T>[] = [];
  readonly #byCpu = new Map<number, CpuQueue<T>>();
  readonly #idleMs: number;
  readonly #now: () => number;
  #pending = 0;

  constructor(options: LiveMergeOptions = {}) {
    this.#idleMs = options.idleMs ?? 1000;
    this.#now = options.now ?? (() => performance.now());
    const now = this.#now();
    for (const cpu of options.cpus ?? []) this.#queue(cpu, now);
  }

  /** Items waiting for another CPU to pass their time. */
  get pending(): number {
    return this.#pending;
  }

  #queue(cpu: number, heard: number): CpuQueue<T> {
    let q = this.#byCpu.get(cpu);
    if (q === undefined) {
      q = { cpu, items: [], head: 0, reached: undefined, heard };
      this.#byCpu.set(cpu, q);
      this.#queues = [...this.#byCpu.values()].sort((a, b) => a.cpu - b.cpu);
    }
    return q;
  }

  /** Adds one CPU's next items; each CPU's must come in time order, CPUs may interleave anyhow. */
  add(cpu: number, items: readonly T[]): void {
    if (items.length === 0) return;
    const now = this.#now();
    const q = this.#queue(cpu, now);
    for (const item of items) q.items.push(item);
    q.reached = items[items.length - 1]!.tsNs;
    q.heard = now;
    this.#pending += items.length;
  }

  /**
   * The time every CPU still waited for has reached, and the lowest CPU that has reached no further (it may deliver
   * more items at that time, which go before higher CPUs' items at it); undefined while a CPU waited for has reached
   * nothing yet.
   */
  #mark(): { readonly at: bigint; readonly tieCpu: number } | undefined {
    const now = this.#now();
    let mark: bigint | undefined;
    let tieCpu = Number.POSITIVE_INFINITY;
    let newest: bigint | undefined;
    for (const q of this.#queues) {
      if (q.reached !== undefined && (newest === undefined || q.reached > newest)) newest = q.reached;
      if (now - q.heard > this.#idleMs) continue;
      if (q.reached === undefined) return undefined;
      // Queues are in CPU order: the first to reach the least time is the lowest CPU at it.
      if (mark === undefined || q.reached < mark) {
        mark = q.reached;
        tieCpu = q.cpu;
      }
    }
    // Every CPU idle: nothing is being waited for.
    if (mark === undefined) return newest === undefined ? undefined : { at: newest, tieCpu: Number.POSITIVE_INFINITY };
    return { at: mark, tieCpu };
  }

  /**
   * The items every CPU still producing has gone past, in time order (ties by CPU number); with `all`, every item
   * pending (the stream ended).
   */
  take(all = false): T[] {
    if (this.#pending === 0) return [];
    const mark = all ? undefined : this.#mark();
    if (!all && mark === undefined) return [];
    // An item before the mark is released; one at it only from a CPU no lower CPU may still put items before.
    const passed = (ts: bigint, cpu: number) => all || ts < mark!.at || (ts === mark!.at && cpu <= mark!.tieCpu);
    const ready = (q: CpuQueue<T>) => q.head < q.items.length && passed(q.items[q.head]!.tsNs, q.cpu);
    const out: T[] = [];
    // Runs from the CPU with the least head while it stays before every other CPU's head: interleaved CPUs cost
    // one scan per run, not per item.
    for (;;) {
      let best: CpuQueue<T> | undefined;
      for (const q of this.#queues)
        if (ready(q) && (best === undefined || q.items[q.head]!.tsNs < best.items[best.head]!.tsNs)) best = q;
      if (best === undefined) break;
      let bound: bigint | undefined;
      let boundCpu = 0;
      for (const q of this.#queues) {
        if (q === best || !ready(q)) continue;
        const ts = q.items[q.head]!.tsNs;
        if (bound === undefined || ts < bound) {
          bound = ts;
          boundCpu = q.cpu;
        }
      }
      const items = best.items;
      let i = best.head;
      do out.push(items[i++]!);
      while (
        i < items.length &&
        passed(items[i]!.tsNs, best.cpu) &&
        (bound === undefined || items[i]!.tsNs < bound || (items[i]!.tsNs === bound && best.cpu < boundCpu))
      );
      best.head = i;
    }
    for (const q of this.#queues) {
      if (q.head === 0) continue;
      q.items = q.items.slice(q.head);
      q.head = 0;
    }
    this.#pending -= out.length;
    return out;
  }
}
