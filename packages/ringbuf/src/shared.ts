import { H, MAX_READERS, READER_SLOT_SIZE, SLOT } from './header.ts';

// Helpers on the header's live words shared by writers and readers. Page sequence numbers grow without bound in
// JS numbers; the header keeps their low 32 bits, so every comparison is a wrapping 32-bit difference.

/**
 * True on x86 and x86-64, whose total store order makes plain stores visible to other threads in program order (V8
 * emits typed-array stores in program order): a commit there is a plain store of the commit word, as the kernel's own
 * ring buffer relies on `smp_wmb()` being a compiler barrier on x86. Elsewhere commits stay `Atomics.store`. In V8 every
 * Atomics call is a builtin call, a large share of a small record's cost (src/ringbuf.bench.ts prints it).
 */
export const ORDERED_STORES: boolean =
  typeof process === 'object' && (process.arch === 'x64' || process.arch === 'ia32');

/** Pages `a` is ahead of `b`, both as 32-bit sequence words. */
export function seqDiff(a: number, b: number): number {
  return (a - b) | 0;
}

/** Raises the header's tail (oldest page still wanted by a consumer) to `seq`, never lowering it. */
export function raiseTail(i32: Int32Array, seq: number): void {
  const want = seq | 0;
  for (;;) {
    const cur = Atomics.load(i32, H.tail >> 2);
    if (seqDiff(want, cur) <= 0) return;
    if (Atomics.compareExchange(i32, H.tail >> 2, cur, want) === cur) return;
  }
}

/** Lowest cursor of the active readers, or undefined when none is registered. */
export function minReaderCursor(i32: Int32Array): number | undefined {
  let min: number | undefined;
  const high = Math.min(Atomics.load(i32, H.readerHigh >> 2), MAX_READERS);
  for (let s = 0; s < high; s++) {
    const at = (H.readerSlots + s * READER_SLOT_SIZE) >> 2;
    if (Atomics.load(i32, at + (SLOT.state >> 2)) !== 1) continue;
    const c = Atomics.load(i32, at + (SLOT.cursor >> 2));
    if (min === undefined || seqDiff(c, min) < 0) min = c;
  }
  return min;
}

/** Records that slot `slot` is in use, so scans stop at the highest slot ever used. */
export function raiseReaderHigh(i32: Int32Array, slot: number): void {
  for (;;) {
    const cur = Atomics.load(i32, H.readerHigh >> 2);
    if (cur > slot) return;
    if (Atomics.compareExchange(i32, H.readerHigh >> 2, cur, slot + 1) === cur) return;
  }
}

/** Wakes readers waiting in {@link Reader.wait} whose watermark `head` has reached (all of them when `all`). */
export function wakeReaders(i32: Int32Array, head: number, all: boolean): void {
  if (Atomics.load(i32, H.waiters >> 2) === 0) return;
  let due = all;
  const high = Math.min(Atomics.load(i32, H.readerHigh >> 2), MAX_READERS);
  for (let s = 0; s < high && !due; s++) {
    const at = (H.readerSlots + s * READER_SLOT_SIZE) >> 2;
    if (Atomics.load(i32, at + (SLOT.state >> 2)) !== 1) continue;
    if (seqDiff(head, Atomics.load(i32, at + (SLOT.wakeAt >> 2))) >= 0) due = true;
  }
  if (!due) return;
  Atomics.add(i32, H.wake >> 2, 1);
  Atomics.notify(i32, H.wake >> 2);
}
