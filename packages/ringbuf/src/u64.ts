// 64-bit little-endian fields are two u32 words (low first). Values stay exact JS numbers below 2^53, so no
// BigInt is needed anywhere near the hot path.

const TWO32 = 4294967296;

/** Reads the u64 at 4-aligned byte offset `at` (word index at >> 2). */
export function getU64(u32: Uint32Array, at: number): number {
  const i = at >> 2;
  return u32[i]! + u32[i + 1]! * TWO32;
}

/** Writes a non-negative integer below 2^53 as a u64 at 4-aligned byte offset `at`. */
export function setU64(u32: Uint32Array, at: number, value: number): void {
  const i = at >> 2;
  u32[i] = value >>> 0;
  u32[i + 1] = (value / TWO32) >>> 0;
}

/** Reads a u64 counter that another thread may be updating, retrying when the high word changed under it. */
export function loadU64(i32: Int32Array, at: number): number {
  const i = at >> 2;
  for (;;) {
    const hi = Atomics.load(i32, i + 1) >>> 0;
    const lo = Atomics.load(i32, i) >>> 0;
    if (Atomics.load(i32, i + 1) >>> 0 === hi) return lo + hi * TWO32;
  }
}
