import type { ClockClass } from '../model/types.ts';

const NS_PER_S = 1_000_000_000n;

/** A 1 GHz clock at origin 0, for traces whose timestamps map to no declared clock (as babeltrace2 does). */
export const DEFAULT_CLOCK: ClockClass = {
  name: 'default',
  freq: NS_PER_S,
  offsetSeconds: 0n,
  offsetCycles: 0n,
  absolute: false,
};

/** Converts clock cycles to nanoseconds from the clock's origin. */
export interface CyclesToNs {
  (cycles: number | bigint): bigint;
  /** Whether a cycle is a nanosecond: then two times differ by their cycles' difference. */
  readonly nanoseconds: boolean;
}

/** One conversion per clock: streams that share a clock share it, so their events' times compare by cycles. */
const converters = new WeakMap<ClockClass, CyclesToNs>();

/**
 * Builds the cycles-to-nanoseconds conversion of a clock: offset seconds, plus offset cycles and the value each
 * converted with truncation (babeltrace2's arithmetic). Repeated values reuse the last result.
 */
export function cyclesToNs(clock: ClockClass): CyclesToNs {
  let convert = converters.get(clock);
  if (convert === undefined) converters.set(clock, (convert = converter(clock)));
  return convert;
}

function converter(clock: ClockClass): CyclesToNs {
  const freq = clock.freq;
  const base = clock.offsetSeconds * NS_PER_S + (clock.offsetCycles * NS_PER_S) / freq;
  let lastCycles: number | bigint = -1;
  let lastNs = 0n;
  if (freq === NS_PER_S) {
    const ns = (cycles: number | bigint) => {
      if (cycles === lastCycles) return lastNs;
      lastCycles = cycles;
      lastNs = base + (typeof cycles === 'bigint' ? cycles : BigInt(cycles));
      return lastNs;
    };
    return Object.assign(ns, { nanoseconds: true });
  }
  const ns = (cycles: number | bigint) => {
    if (cycles === lastCycles) return lastNs;
    lastCycles = cycles;
    lastNs = base + ((typeof cycles === 'bigint' ? cycles : BigInt(cycles)) * NS_PER_S) / freq;
    return lastNs;
  };
  return Object.assign(ns, { nanoseconds: false });
}

const SAFE = Number.MAX_SAFE_INTEGER;

/**
 * Applies a timestamp field of `bits` bits to a clock value (CTF 1.8): the field replaces the clock's low bits, and a
 * smaller value than the current low bits means the field wrapped once. Numbers are used while exact.
 */
export function updateClock(clock: number | bigint, value: number | bigint, bits: number): number | bigint {
  if (bits >= 64) return value;
  if (typeof clock === 'number' && typeof value === 'number') {
    const range = 2 ** bits;
    const low = clock % range;
    let next = clock - low + value;
    if (value < low) next += range;
    if (next <= SAFE) return next;
  }
  const c = BigInt(clock);
  const v = BigInt(value);
  const range = 1n << BigInt(bits);
  const low = c & (range - 1n);
  let next = c - low + v;
  if (v < low) next += range;
  return next <= BigInt(SAFE) ? Number(next) : next;
}

/** {@link updateClock} specialised for one field width; fields of up to 32 bits take a bit-operation fast path. */
export function clockUpdater(bits: number): (clock: number | bigint, value: number | bigint) => number | bigint {
  if (bits >= 64) return (_clock, value) => value;
  if (bits > 32) return (clock, value) => updateClock(clock, value, bits);
  const range = 2 ** bits;
  const mask = bits === 32 ? 0xffffffff : range - 1;
  return (clock, value) => {
    if (typeof clock === 'number' && typeof value === 'number' && clock <= SAFE - 2 * range) {
      // ToUint32 of an exact integer is its value modulo 2^32, so `>>> 0` yields the low bits without a division.
      const low = bits === 32 ? clock >>> 0 : (clock >>> 0) & mask;
      return value < low ? clock - low + value + range : clock - low + value;
    }
    return updateClock(clock, value, bits);
  };
}
