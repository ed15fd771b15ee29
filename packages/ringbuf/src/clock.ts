import { performance } from 'node:perf_hooks';

/** Clock ids stored in the header. */
export const ClockId = {
  /** Timestamps supplied by the producer (e.g. kernel ns); the header names their clock. */
  external: 0,
  /** CLOCK_MONOTONIC in nanoseconds, shared by every thread and process of the machine. */
  monotonic: 1,
} as const;
export type ClockId = (typeof ClockId)[keyof typeof ClockId];

/** The name written in the header for {@link ClockId.monotonic}. */
export const MONOTONIC_CLOCK_NAME = 'CLOCK_MONOTONIC';

// performance.now() is the cheapest monotonic source in Node but counts from a per-thread origin. Anchoring it to
// process.hrtime (CLOCK_MONOTONIC) once per thread gives nanoseconds comparable across threads and processes without
// a BigInt per read. The anchor is taken from the tightest of a few samples.
function calibrate(): number {
  let best = Number.POSITIVE_INFINITY;
  let base = 0;
  for (let i = 0; i < 9; i++) {
    const a = performance.now();
    const h = process.hrtime.bigint();
    const b = performance.now();
    if (b - a < best) {
      best = b - a;
      base = Number(h) - ((a + b) / 2) * 1e6;
    }
  }
  return Math.round(base);
}

const base = calibrate();

/**
 * CLOCK_MONOTONIC in integer nanoseconds as a float64 (exact below 2^53 ns, 104 days of uptime).
 * Costs one performance.now(); no allocation, no BigInt.
 */
export function monotonicNs(): number {
  return Math.floor(base + performance.now() * 1e6);
}

/** Wall-clock minus monotonic, in ns: add it to a monotonic timestamp to get Unix time (ms precision). */
export function monotonicToRealtimeOffsetNs(): number {
  return Date.now() * 1e6 - monotonicNs();
}
