/**
 * The data of the fleet view: every host's last status (polled), hardware errors and threshold crossings of the last
 * day and as they come, and the newest exported events of every host, each read with @evtrace/fleet's readers. A
 * reader that fails (no stream yet: no agent published) is retried, starting where it stopped; a record read twice
 * (its host and channel's sequence number seen) is dropped.
 */
import {
  type FleetRecord,
  fleetHosts,
  type HardwareLine,
  type HostSummary,
  hardwareLine,
  type NatsConnection,
  readChannel,
  type Since,
} from '@evtrace/fleet';
import { errorLine } from '../errors.ts';

/** How far back the hardware errors go when the view opens, as `evtrace fleet errors` by default. */
export const ERRORS_SINCE_MS = 24 * 3600 * 1000;
const HOSTS_EVERY_MS = 1000;
const RETRY_MS = 1000;
const NOTIFY_EVERY_MS = 100;

/** Options of {@link FleetFeed}. */
export interface FleetFeedOptions {
  readonly stream?: string;
  /** Events kept for the tail. */
  readonly tailRows?: number;
  /** Hardware lines kept. */
  readonly errorRows?: number;
}

/** What the view draws; a new object after every change. */
export interface FeedState {
  readonly hosts: readonly HostSummary[];
  /** Hardware lines, oldest first, each with when it was stored. */
  readonly errors: readonly (HardwareLine & { readonly stored: Date })[];
  /** The newest events, oldest first. */
  readonly tail: readonly FleetRecord[];
  /** Events read since the view opened. */
  readonly events: number;
  /** Why a reader is waiting (`evtrace-view: CODE: message` without the program), or undefined. */
  readonly problem: string | undefined;
}

/** Keeps the last `n` items pushed. */
class Ring<T> {
  readonly #items: T[] = [];
  readonly #n: number;
  constructor(n: number) {
    this.#n = n;
  }
  push(x: T): void {
    this.#items.push(x);
    if (this.#items.length > this.#n * 2) this.#items.splice(0, this.#items.length - this.#n);
  }
  list(): T[] {
    return this.#items.slice(-this.#n);
  }
}

/** The fleet view's readers; see the module comment. */
export class FleetFeed {
  readonly #nc: NatsConnection;
  readonly #o: FleetFeedOptions;
  readonly #stop = new AbortController();
  readonly #tail: Ring<FleetRecord>;
  readonly #errors: Ring<HardwareLine & { stored: Date }>;
  readonly #seen = new Map<string, number>();
  readonly #listeners = new Set<() => void>();
  readonly #problems = new Map<string, string>();
  #hosts: readonly HostSummary[] = [];
  #events = 0;
  #state: FeedState | undefined;
  #notify: NodeJS.Timeout | undefined;

  constructor(nc: NatsConnection, o: FleetFeedOptions = {}) {
    this.#nc = nc;
    this.#o = o;
    this.#tail = new Ring(o.tailRows ?? 500);
    this.#errors = new Ring(o.errorRows ?? 200);
  }

  /** Starts the readers. */
  start(): void {
    void this.#pollHosts();
    const errorsSince = new Date(Date.now() - ERRORS_SINCE_MS);
    for (const channel of ['mce', 'edac', 'threshold'])
      void this.#follow(channel, errorsSince, (r) => this.#errors.push({ ...hardwareLine(r), stored: r.stored }));
    void this.#follow('events.>', 'new', (r) => {
      this.#events++;
      this.#tail.push(r);
    });
  }

  /** The current state (the same object until something changes). */
  get state(): FeedState {
    this.#state ??= {
      hosts: this.#hosts,
      errors: this.#errors.list(),
      tail: this.#tail.list(),
      events: this.#events,
      problem: [...this.#problems.values()][0],
    };
    return this.#state;
  }

  /** Calls `listener` (at most every few frames) when the state changed; returns the unsubscription. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Stops the readers. */
  close(): void {
    this.#stop.abort();
    clearTimeout(this.#notify);
  }

  #changed(): void {
    this.#state = undefined;
    this.#notify ??= setTimeout(() => {
      this.#notify = undefined;
      for (const l of this.#listeners) l();
    }, NOTIFY_EVERY_MS);
  }

  #problem(what: string, error: unknown): void {
    if (error === undefined) {
      if (this.#problems.delete(what)) this.#changed();
      return;
    }
    this.#problems.set(what, `${what}: ${errorLine(error)}`);
    this.#changed();
  }

  async #pollHosts(): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      try {
        this.#hosts = await fleetHosts(this.#nc, this.#o.stream !== undefined ? { stream: this.#o.stream } : {});
        this.#problem('hosts', undefined);
        this.#changed();
      } catch (error) {
        if (signal.aborted) return;
        this.#problem('hosts', error);
      }
      await sleep(HOSTS_EVERY_MS, signal);
    }
  }

  /** Follows `channel` from `since`; after a failure, again from the last record's time. */
  async #follow(channel: string, since: Since, take: (r: FleetRecord) => void): Promise<void> {
    const signal = this.#stop.signal;
    let from = since;
    while (!signal.aborted) {
      try {
        this.#problem(channel, undefined);
        const records = readChannel(this.#nc, channel, {
          ...(this.#o.stream !== undefined ? { stream: this.#o.stream } : {}),
          since: from,
          follow: true,
          signal,
        });
        for await (const r of records) {
          const key = `${r.host}.${r.channel}`;
          if (r.seq <= (this.#seen.get(key) ?? 0)) continue;
          this.#seen.set(key, r.seq);
          from = r.stored;
          try {
            take(r);
            this.#problem(channel, undefined);
          } catch (error) {
            // A record that cannot be shown is said and passed over: reading again would meet it again.
            this.#problem(channel, error);
          }
          this.#changed();
        }
      } catch (error) {
        if (signal.aborted) return;
        this.#problem(channel, error);
      }
      await sleep(RETRY_MS, signal);
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
