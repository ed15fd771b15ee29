/**
 * The `stats` op: the gauges of a session's buffers, per CPU, sampled by the agent at a steady interval. The agent
 * keeps the recent samples; a client asks for those after the last one it has (`since`), so polling at any pace
 * sees every sample, and one that starts late gets the history at once.
 */

/** Where a session's gauges come from. */
export type BufferStatsOrigin =
  /** The kernel's `per_cpu/cpuN/stats` and `buffer_size_kb` of the session's tracefs instance. */
  | 'tracefs'
  /** The header of the session's own @evtrace/ringbuf buffers (sources without a kernel buffer: demo, bts, user). */
  | 'ringbuf';

/** One CPU's buffer at one sample. Counters run from the buffer's creation. */
export interface CpuBufferStats {
  readonly cpu: number;
  /** Bytes the buffer holds at most. */
  readonly size: number;
  /** Unread part of the buffer, 0..1: what is left before the writer loses events (discard) or overwrites (overwrite). */
  readonly fill: number;
  /**
   * The fullest the buffer was when the agent read it since the previous sample, 0..1: the most page data one read
   * took, over `size`. The agent drains its buffers every few milliseconds, so `fill` at the sample is mostly near
   * zero; this shows how close a burst came to losing events.
   */
  readonly peakFill: number;
  /** Events in the buffer not read yet; null where the origin does not count them (ringbuf counts pages). */
  readonly entries: number | null;
  /** Events overwritten before they were read (overwrite mode; tracefs: `overrun`). */
  readonly overrun: number;
  /** Events dropped: the buffer was full in discard mode (tracefs: `dropped events` plus `commit overrun`). */
  readonly dropped: number;
  /** `overrun` plus `dropped`: every event this buffer lost. */
  readonly lost: number;
  /** Written into the buffer (tracefs: read, in the buffer and overrun; ringbuf: records committed). */
  readonly written: number;
  /** The read position: events read (tracefs `read events`) or the oldest ring page still unread (ringbuf). */
  readonly read: number;
  /** The write position: events written (tracefs) or the ring page being written (ringbuf); `head - read` is unread. */
  readonly head: number;
}

/** One sample of every CPU of a session. */
export interface BufferStatsSample {
  /** Increases by one per sample of this session; `since` in the request refers to it. */
  readonly seq: number;
  /** When it was taken, milliseconds since the epoch. */
  readonly time: number;
  readonly cpus: readonly CpuBufferStats[];
}

/** The reply to `stats`. */
export interface BufferStats {
  readonly name: string;
  readonly origin: BufferStatsOrigin;
  /**
   * What `entries`, `overrun`, `dropped`, `lost` and `written` count: kernel events (tracefs) or ring records
   * (ringbuf; the agent's sessions write a source's page of events as one record).
   */
  readonly unit: 'events' | 'records';
  /** The tracefs instance (origin `tracefs`). */
  readonly instance?: string;
  /** Milliseconds between two samples. */
  readonly interval: number;
  /** The samples after `since`, oldest first (at most the agent's history). */
  readonly samples: readonly BufferStatsSample[];
}

/** The `stats` request's members besides `id` and `op`. */
export interface StatsRequest {
  readonly name: string;
  /** Only the samples with a larger `seq`; default all the agent keeps. */
  readonly since?: number;
}

/** Samples the agent keeps per session. */
export const STATS_HISTORY = 300;

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const count = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/**
 * Checks a `stats` reply as a client receives it: the JSON path of the first member that is wrong, or undefined.
 * Clients check what they draw, because a gauge drawn from a wrong number says something false.
 */
export function checkBufferStats(v: unknown): string | undefined {
  if (!isObj(v)) return 'stats: must be an object';
  if (typeof v.name !== 'string') return 'stats.name: must be a string';
  if (v.origin !== 'tracefs' && v.origin !== 'ringbuf') return 'stats.origin: must be tracefs or ringbuf';
  if (v.unit !== 'events' && v.unit !== 'records') return 'stats.unit: must be events or records';
  if (v.instance !== undefined && typeof v.instance !== 'string') return 'stats.instance: must be a string';
  if (!count(v.interval) || (v.interval as number) === 0) return 'stats.interval: must be a positive integer';
  if (!Array.isArray(v.samples)) return 'stats.samples: must be an array';
  for (let i = 0; i < v.samples.length; i++) {
    const s: unknown = v.samples[i];
    const at = `stats.samples[${i}]`;
    if (!isObj(s)) return `${at}: must be an object`;
    if (!count(s.seq)) return `${at}.seq: must be a non-negative integer`;
    if (typeof s.time !== 'number' || !Number.isFinite(s.time)) return `${at}.time: must be a number`;
    if (!Array.isArray(s.cpus)) return `${at}.cpus: must be an array`;
    for (let k = 0; k < s.cpus.length; k++) {
      const c: unknown = s.cpus[k];
      const cat = `${at}.cpus[${k}]`;
      if (!isObj(c)) return `${cat}: must be an object`;
      for (const key of ['cpu', 'size', 'overrun', 'dropped', 'lost', 'written', 'read', 'head'] as const)
        if (!count(c[key])) return `${cat}.${key}: must be a non-negative integer`;
      for (const key of ['fill', 'peakFill'] as const) {
        const f = c[key];
        if (typeof f !== 'number' || !(f >= 0 && f <= 1)) return `${cat}.${key}: must be a number 0..1`;
      }
      if (c.entries !== null && !count(c.entries)) return `${cat}.entries: must be a non-negative integer or null`;
    }
  }
  return undefined;
}
