/**
 * Time order across CPUs for live sources, whose CPUs deliver their events at different moments: each CPU's events
 * wait until every CPU that produces has reached their time, then all are merged.
 */
import { mergeByTime, type TraceEvent } from '@evtrace/trace-format';

/** Per-CPU queues of events in time order, released in one time order. */
export class CpuMerger {
  readonly #pending = new Map<number, TraceEvent[]>();
  readonly #reached = new Map<number, bigint | undefined>();
  /** Wall time each CPU last delivered (or the merger started, for the CPUs it was told of). */
  readonly #heard = new Map<number, number>();
  readonly #idleMs: number;
  readonly #now: () => number;

  /**
   * @param cpus CPUs known to produce: their events are waited for from the start.
   * @param idleMs A CPU silent for this long is not waited for (an idle CPU would hold everything back).
   */
  constructor(cpus: readonly number[] = [], idleMs = 1000, now: () => number = () => performance.now()) {
    this.#idleMs = idleMs;
    this.#now = now;
    for (const cpu of cpus) {
      this.#reached.set(cpu, undefined);
      this.#heard.set(cpu, now());
    }
  }

  /** Adds one CPU's next events (in time order). */
  add(cpu: number, events: readonly TraceEvent[]): void {
    if (events.length === 0) return;
    let p = this.#pending.get(cpu);
    if (p === undefined) this.#pending.set(cpu, (p = []));
    for (const e of events) p.push(e);
    this.#reached.set(cpu, events[events.length - 1]!.tsNs);
    this.#heard.set(cpu, this.#now());
  }

  /** The least time the CPUs still worth waiting for have reached; -1n while one has reached nothing yet. */
  #mark(): bigint | undefined {
    const now = this.#now();
    let mark: bigint | undefined;
    for (const [cpu, r] of this.#reached) {
      if (now - this.#heard.get(cpu)! > this.#idleMs) continue;
      if (r === undefined) return -1n;
      if (mark === undefined || r < mark) mark = r;
    }
    return mark ?? (this.#reached.size > 0 ? maxReached(this.#reached) : undefined);
  }

  /** The events every CPU has gone past, merged by time; with `all`, everything pending (the producers ended). */
  take(all = false): TraceEvent[] {
    const mark = all ? undefined : this.#mark();
    const ready: TraceEvent[][] = [];
    for (const [cpu, p] of this.#pending) {
      let n = p.length;
      if (!all) {
        n = 0;
        while (n < p.length && mark !== undefined && p[n]!.tsNs <= mark) n++;
      }
      if (n === 0) continue;
      ready.push(p.slice(0, n));
      this.#pending.set(cpu, p.slice(n));
    }
    return ready.length === 0 ? [] : [...mergeByTime(ready)];
  }
}

/** The time every CPU has reached: the least of their newest events (a CPU yet to produce holds nothing back). */
export function watermark(reached: readonly (bigint | undefined)[]): bigint | undefined {
  let mark: bigint | undefined;
  for (const r of reached) if (r !== undefined && (mark === undefined || r < mark)) mark = r;
  return mark;
}

function maxReached(reached: ReadonlyMap<number, bigint | undefined>): bigint | undefined {
  let max: bigint | undefined;
  for (const r of reached.values()) if (r !== undefined && (max === undefined || r > max)) max = r;
  return max;
}
