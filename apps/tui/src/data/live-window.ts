/**
 * The live sources' memory: the most recent events in a fixed-size ring, per-CPU and per-type counters, and one rate
 * sample per second for the sparklines. Memory stays bounded whatever the event rate; what falls out of the window is
 * still counted.
 */
import type { TraceEvent } from '@evtrace/trace-format';
import type { CpuStats, SourceStats } from './source.ts';
import { arrayStore, type EventStore } from './store.ts';

/** Seconds of rate history kept for the sparklines. */
export const RATE_HISTORY = 60;

interface CpuCounters {
  events: number;
  lost: number;
  /** Events in the current second. */
  current: number;
  rates: number[];
  fill?: number;
}

export class LiveWindow {
  readonly capacity: number;
  readonly #ring: TraceEvent[] = [];
  /** Index in #ring of the oldest event once the ring is full. */
  #head = 0;
  #total = 0;
  readonly #cpus = new Map<number, CpuCounters>();
  readonly #types = new Map<string, { events: number; current: number; rate: number }>();
  #secondStart: number;
  #lastRate = 0;
  #currentSecond = 0;
  readonly #now: () => number;

  constructor(capacity: number, now: () => number = () => performance.now()) {
    this.capacity = capacity;
    this.#now = now;
    this.#secondStart = now();
  }

  /** Adds events in time order. */
  push(events: readonly TraceEvent[]): void {
    this.#tick();
    for (const e of events) {
      if (this.#ring.length < this.capacity) this.#ring.push(e);
      else {
        this.#ring[this.#head] = e;
        this.#head = (this.#head + 1) % this.capacity;
      }
      const c = this.#cpu(e.cpu ?? 0);
      c.events++;
      c.current++;
      let t = this.#types.get(e.eventClass.name);
      if (t === undefined) this.#types.set(e.eventClass.name, (t = { events: 0, current: 0, rate: 0 }));
      t.events++;
      t.current++;
    }
    this.#total += events.length;
    this.#currentSecond += events.length;
  }

  /**
   * Counts events that were not decoded (a live source sampling a fast stream): they count in every rate and total
   * but are not in the window.
   */
  count(cpu: number, byType: ReadonlyMap<string, number>): void {
    this.#tick();
    const c = this.#cpu(cpu);
    let n = 0;
    for (const [name, k] of byType) {
      let t = this.#types.get(name);
      if (t === undefined) this.#types.set(name, (t = { events: 0, current: 0, rate: 0 }));
      t.events += k;
      t.current += k;
      n += k;
    }
    c.events += n;
    c.current += n;
    this.#total += n;
    this.#currentSecond += n;
  }

  /** Records events lost on a CPU (by the kernel, the ring buffer or the stream). */
  lose(cpu: number, count: number): void {
    this.#cpu(cpu).lost += count;
  }

  /** Records a CPU's buffer fill in [0, 1]. */
  setFill(cpu: number, fill: number): void {
    this.#cpu(cpu).fill = fill;
  }

  /** A snapshot of the window, oldest first; later pushes do not change it. */
  snapshot(): EventStore {
    const n = this.#ring.length;
    const events =
      n < this.capacity ? this.#ring.slice() : [...this.#ring.slice(this.#head), ...this.#ring.slice(0, this.#head)];
    return arrayStore(events);
  }

  stats(): SourceStats {
    this.#tick();
    const cpus: CpuStats[] = [...this.#cpus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([cpu, c]) => ({
        cpu,
        events: c.events,
        lost: c.lost,
        rates: c.rates.slice(),
        ...(c.fill !== undefined ? { fill: c.fill, fillLabel: 'ring buffer' } : {}),
      }));
    let lost = 0;
    for (const c of this.#cpus.values()) lost += c.lost;
    return {
      cpus,
      types: [...this.#types.entries()]
        .sort((a, b) => b[1].events - a[1].events)
        .map(([name, t]) => ({ name, events: t.events, rate: t.rate })),
      eventsPerSec: this.#lastRate,
      lost,
      total: this.#total,
    };
  }

  #cpu(cpu: number): CpuCounters {
    let c = this.#cpus.get(cpu);
    if (c === undefined) this.#cpus.set(cpu, (c = { events: 0, lost: 0, current: 0, rates: [] }));
    return c;
  }

  /** Closes the seconds that have passed: their counts become rate samples. */
  #tick(): void {
    const now = this.#now();
    const elapsed = now - this.#secondStart;
    if (elapsed < 1000) return;
    const seconds = Math.floor(elapsed / 1000);
    for (const c of this.#cpus.values()) {
      c.rates.push(c.current / seconds);
      for (let s = 1; s < seconds; s++) c.rates.push(0);
      if (c.rates.length > RATE_HISTORY) c.rates.splice(0, c.rates.length - RATE_HISTORY);
      c.current = 0;
    }
    for (const t of this.#types.values()) {
      t.rate = t.current / seconds;
      t.current = 0;
    }
    this.#lastRate = this.#currentSecond / seconds;
    this.#currentSecond = 0;
    this.#secondStart += seconds * 1000;
  }
}
