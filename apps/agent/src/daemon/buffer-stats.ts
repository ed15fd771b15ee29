/**
 * The gauges of every running session's buffers, sampled at a steady interval whether or not anyone asks, so that a
 * viewer sees fill and loss over time (and the history before it attached). A kernel session's gauges are the
 * kernel's own per-CPU counters of its tracefs instance, the buffer that loses events when the agent reads too
 * slowly; other sources write straight into the session's @evtrace/ringbuf buffers, whose header counts the same.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type BufferStats, type BufferStatsSample, type CpuBufferStats, STATS_HISTORY } from '@evtrace/agent-protocol';
import type { RingBuffer } from '@evtrace/ringbuf';
import { parseCpuStats } from '@evtrace/tracefs';

/** What the gauges read of a session. */
export interface GaugedSession {
  readonly name: string;
  readonly state: string;
  readonly source: { readonly kind: string; readonly resource?: string | undefined };
  /** The session's own ring buffer of each CPU. */
  readonly rings: readonly { readonly cpu: number; readonly ring: RingBuffer }[];
  /** The most page data one read of the source gave each CPU (by index) since the last call. */
  takeReadPeaks(): readonly number[];
}

/** Options of {@link BufferGauges}. */
export interface BufferGaugesOptions {
  /** Milliseconds between two samples. Default 1000. */
  readonly intervalMs?: number;
  /** The tracefs mount point, looked up when a kernel session is first sampled. */
  readonly tracefs: () => string;
}

interface History {
  readonly origin: BufferStats['origin'];
  readonly instance: string | undefined;
  readonly samples: BufferStatsSample[];
  seq: number;
}

export class BufferGauges {
  readonly intervalMs: number;
  readonly #tracefs: () => string;
  /** By session object: a session created again under the same name starts a new history. */
  readonly #histories = new WeakMap<GaugedSession, History>();
  #timer: NodeJS.Timeout | undefined;

  constructor(options: BufferGaugesOptions) {
    this.intervalMs = options.intervalMs ?? 1000;
    this.#tracefs = options.tracefs;
  }

  /** Samples the running sessions `sessions()` gives every interval, until {@link stop}. */
  start(sessions: () => Iterable<GaugedSession>): void {
    this.#timer ??= setInterval(() => {
      for (const s of sessions()) if (s.state === 'running') this.sample(s);
    }, this.intervalMs);
    // The agent's sockets keep it alive, not its gauges.
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Takes one sample of the session's buffers now. */
  sample(s: GaugedSession): void {
    let h = this.#histories.get(s);
    if (h === undefined) {
      const instance = s.source.kind === 'kernel' ? s.source.resource : undefined;
      h = { origin: instance !== undefined ? 'tracefs' : 'ringbuf', instance, samples: [], seq: 0 };
      this.#histories.set(s, h);
    }
    const peaks = s.takeReadPeaks();
    const cpus =
      h.instance !== undefined
        ? kernelGauges(join(this.#tracefs(), 'instances', h.instance), s.rings, peaks)
        : ringGauges(s, peaks);
    h.samples.push({ seq: ++h.seq, time: Date.now(), cpus });
    if (h.samples.length > STATS_HISTORY) h.samples.splice(0, h.samples.length - STATS_HISTORY);
  }

  /** The samples of a session after `since` (none before the first interval of its run has passed). */
  stats(s: GaugedSession, since = 0): BufferStats {
    const h = this.#histories.get(s);
    const origin = h?.origin ?? (s.source.kind === 'kernel' && s.source.resource !== undefined ? 'tracefs' : 'ringbuf');
    const instance = h?.instance;
    return {
      name: s.name,
      origin,
      unit: origin === 'tracefs' ? 'events' : 'records',
      ...(instance !== undefined ? { instance } : {}),
      interval: this.intervalMs,
      samples: (h?.samples ?? []).filter((x) => x.seq > since),
    };
  }
}

/**
 * The kernel's counters of each CPU of a tracefs instance. `bytes` in `stats` are the bytes of unread events, so
 * over `buffer_size_kb` they are the fill; a CPU whose files cannot be read (the instance went away) reads as empty.
 */
function kernelGauges(dir: string, rings: GaugedSession['rings'], peaks: readonly number[]): CpuBufferStats[] {
  return rings.map(({ cpu }, i) => {
    const perCpu = join(dir, 'per_cpu', `cpu${cpu}`);
    let s: Record<string, number> = {};
    let size = 0;
    try {
      s = parseCpuStats(readFileSync(join(perCpu, 'stats'), 'utf8'));
      size = Number(readFileSync(join(perCpu, 'buffer_size_kb'), 'utf8').match(/\d+/)?.[0] ?? 0) * 1024;
    } catch {}
    const entries = s.entries ?? 0;
    const overrun = s.overrun ?? 0;
    const dropped = (s['dropped events'] ?? 0) + (s['commit overrun'] ?? 0);
    const read = s['read events'] ?? 0;
    const written = read + entries + overrun;
    return {
      cpu,
      size,
      fill: size > 0 ? Math.min(1, (s.bytes ?? 0) / size) : 0,
      peakFill: size > 0 ? Math.min(1, (peaks[i] ?? 0) / size) : 0,
      entries,
      overrun,
      dropped,
      lost: overrun + dropped,
      written,
      read,
      head: written,
    };
  });
}

/**
 * The header of each ring (`peaks`: what one read of the source wrote into it): the whole pages between the oldest one a reader still needs and the one being written are
 * the unread part (the page being written is not full yet); the header's `head` is -1 before the first page.
 */
function ringGauges(s: GaugedSession, peaks: readonly number[]): CpuBufferStats[] {
  return s.rings.map(({ cpu, ring }, i) => {
    const h = ring.stats();
    const head = Math.max(0, h.head);
    const read = Math.max(0, Math.min(h.tail, head));
    const size = ring.pageSize * ring.pageCount;
    return {
      cpu,
      size,
      fill: Math.min(1, (head - read) / ring.pageCount),
      peakFill: Math.min(1, (peaks[i] ?? 0) / size),
      entries: null,
      overrun: h.overwritten,
      dropped: h.discarded,
      lost: h.overwritten + h.discarded,
      written: h.written,
      read,
      head,
    };
  });
}
