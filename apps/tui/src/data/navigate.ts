/**
 * Finding events in a store: by text (the search, `/` then `n`/`N`) and by time (`t`). The search reads events in
 * slices between frames, as the filter scan does, so a long trace never freezes the screen.
 */
import type { EventStore } from './store.ts';

/**
 * What the user typed as a search: a regular expression when it is one (case-insensitive unless it holds a capital,
 * as lnav and less do), else the text itself.
 */
export function searchPattern(text: string): RegExp {
  const flags = /[A-Z]/.test(text) ? '' : 'i';
  try {
    return new RegExp(text, flags);
  } catch {
    return new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), flags);
  }
}

/** Progress of a search: where it is, and the position found (undefined while looking or when nothing matches). */
export interface SearchProgress {
  readonly found?: number;
  readonly scanned: number;
  readonly done: boolean;
}

/**
 * Looks for the first position after `from` (`step` 1) or before it (`step` -1) whose text matches, wrapping around
 * the store once; reports progress after each slice. Returns the cancel function.
 */
export function searchStore(
  store: EventStore,
  from: number,
  step: 1 | -1,
  matches: (i: number) => boolean,
  onProgress: (p: SearchProgress) => void,
  sliceMs = 30,
): () => void {
  const n = store.length;
  let scanned = 0;
  let cancelled = false;
  const run = () => {
    if (cancelled) return;
    const until = performance.now() + sliceMs;
    while (scanned < n) {
      const i = (((from + step * (scanned + 1)) % n) + n) % n;
      scanned++;
      if (matches(i)) {
        onProgress({ found: i, scanned, done: true });
        return;
      }
      if ((scanned & 255) === 0 && performance.now() >= until) break;
    }
    const done = scanned >= n;
    onProgress({ scanned, done });
    if (!done) setImmediate(run);
  };
  run();
  return () => {
    cancelled = true;
  };
}

/**
 * A time the user typed, in nanoseconds: `SECS[.FRACTION]` as the time column prints it, or `+SECS`/`-SECS` from
 * `relativeTo`; the reason when it is not one. The column rounds to the nearest microsecond, as trace-cmd does, so an
 * absolute time of at most six decimals starts half a microsecond earlier: its first event is one shown at that time.
 */
export function parseTime(text: string, relativeTo: bigint): { ns: bigint } | { error: string } {
  const m = /^\s*([+-]?)(\d*)(?:\.(\d{0,9}))?\s*$/.exec(text);
  if (m === null || (m[2] === '' && (m[3] ?? '') === ''))
    return { error: `not a time: "${text}" (seconds as the time column shows them, e.g. 12.524003, or +0.5)` };
  const ns = BigInt(m[2] || '0') * 1_000_000_000n + BigInt((m[3] ?? '').padEnd(9, '0') || '0');
  if (m[1] === '+') return { ns: relativeTo + ns };
  if (m[1] === '-') return { ns: relativeTo - ns };
  return { ns: (m[3] ?? '').length <= 6 && ns >= 500n ? ns - 500n : ns };
}

/** The first position whose time is at or after `ns` (the last one when every event is earlier); stores are in time order. */
export function positionAtTime(store: EventStore, ns: bigint): number {
  let lo = 0;
  let hi = store.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (store.tsNs(mid) < ns) lo = mid + 1;
    else hi = mid;
  }
  return Math.min(lo, Math.max(0, store.length - 1));
}

/** A time difference as people read it: `+1.234 ms`, `-56.789 us`, `+2.000001 s`. */
export function deltaText(ns: bigint): string {
  const sign = ns < 0n ? '-' : '+';
  const a = ns < 0n ? -ns : ns;
  if (a >= 1_000_000_000n) return `${sign}${a / 1_000_000_000n}.${String(a % 1_000_000_000n).padStart(9, '0')} s`;
  if (a >= 1_000_000n) return `${sign}${a / 1_000_000n}.${String(a % 1_000_000n).padStart(6, '0')} ms`;
  if (a >= 1_000n) return `${sign}${a / 1_000n}.${String(a % 1_000n).padStart(3, '0')} us`;
  return `${sign}${a} ns`;
}
