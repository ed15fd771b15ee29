/**
 * Kernel addresses as exact JavaScript numbers. The analysis keys maps by pointer and call site for every event, and
 * bigint keys are slower (packages/kmemtrace/src/analyze.bench.ts prints its speed). In a canonical 64-bit address
 * (x86-64 with 4- or 5-level paging, arm64 without pointer tags) bits 52..63 are all zeros or all ones, so one bit for
 * them plus the low 52 bits identify it and fit a double exactly: keys below 2^52 for the low half, 2^52 + low bits
 * for the high (kernel) half, which keeps the unsigned order. Anything else is interned and keyed by a negative
 * number, so every distinct address keeps a distinct key.
 */

import type { ByteOut } from '@evtrace/trace-format';

const LOW52 = 0xf_ffff_ffff_ffffn;
const TWO52 = 2 ** 52;
const SIGN_EXTENSION = 0xfff0_0000_0000_0000n;
/** Lowercase hexadecimal digits' character codes by value. */
const HEX_DIGITS = new TextEncoder().encode('0123456789abcdef');

/** Maps 64-bit addresses to exact number keys and back. One per analysis (the interned table is its own). */
export class AddressKeys {
  readonly #odd: bigint[] = [];
  readonly #oddIndex = new Map<bigint, number>();

  /** The key of a 64-bit address given as a bigint (or a number below 2^53). */
  key(addr: bigint | number): number {
    if (typeof addr === 'number') return addr >= 0 && addr < TWO52 ? addr : this.key(BigInt(addr));
    const top = Number(addr >> 52n);
    if (top === 0) return Number(addr);
    if (top === 0xfff) return TWO52 + Number(addr & LOW52);
    return this.#intern(addr);
  }

  /**
   * The key of a hexadecimal address (`0x` prefix optional), given as text or as the ASCII bytes of a text read
   * without decoding it, or undefined when it is not one.
   */
  keyOfHex(text: string | Uint8Array, start = 0, end = text.length): number | undefined {
    if (end - start > 2 && codeAt(text, start) === 48 && (codeAt(text, start + 1) | 32) === 120) start += 2;
    const n = end - start;
    if (n === 0 || n > 16) return undefined;
    if (n <= 13) return hexValue(text, start, end);
    const low = hexValue(text, end - 13, end);
    const high = hexValue(text, start, end - 13);
    if (low === undefined || high === undefined) return undefined;
    if (high === 0) return low;
    if (high === 0xfff) return TWO52 + low;
    const digits =
      typeof text === 'string'
        ? text.slice(start, end)
        : Buffer.from(text.buffer, text.byteOffset, text.byteLength).toString('latin1', start, end);
    return this.#intern(BigInt(`0x${digits}`));
  }

  /** `0x…` lowercase hex of the address a key stands for, without a bigint for canonical addresses. */
  hex(key: number): string {
    if (key < 0) return hexAddress(this.#odd[-key - 1]!);
    // Two 32-bit halves: integer-to-hex of small integers is much faster than of a 52-bit double.
    const low = key >= TWO52 ? key - TWO52 : key;
    const hi = Math.floor(low / 4294967296);
    const lo = (low >>> 0).toString(16);
    if (key >= TWO52) return `0xfff${hi.toString(16).padStart(5, '0')}${lo.padStart(8, '0')}`;
    return hi === 0 ? `0x${lo}` : `0x${hi.toString(16)}${lo.padStart(8, '0')}`;
  }

  /** Writes {@link hex}'s text of a key to `out`, from the key's value (no string for canonical addresses). */
  writeHex(key: number, out: ByteOut): void {
    if (key < 0) {
      out.text(hexAddress(this.#odd[-key - 1]!));
      return;
    }
    out.reserve(18);
    const bytes = out.bytes;
    let at = out.length;
    bytes[at++] = 48;
    bytes[at++] = 120;
    if (key < TWO52) {
      out.length = at;
      out.hex(key);
      return;
    }
    // The kernel half: fff, then the low 52 bits as 13 digits.
    let low = key - TWO52;
    at += 16;
    out.length = at;
    for (let k = 0; k < 13; k++) {
      const q = Math.floor(low / 16);
      bytes[--at] = HEX_DIGITS[low - q * 16]!;
      low = q;
    }
    bytes[--at] = 102;
    bytes[--at] = 102;
    bytes[--at] = 102;
  }

  /** The address a key stands for. */
  address(key: number): bigint {
    if (key < 0) return this.#odd[-key - 1]!;
    return key >= TWO52 ? SIGN_EXTENSION | BigInt(key - TWO52) : BigInt(key);
  }

  /** The addresses outside the canonical ranges, in the order of their keys (-1, -2, ...). */
  odd(): readonly bigint[] {
    return this.#odd;
  }

  #intern(addr: bigint): number {
    let i = this.#oddIndex.get(addr);
    if (i === undefined) {
      i = this.#odd.length;
      this.#odd.push(addr);
      this.#oddIndex.set(addr, i);
    }
    return -(i + 1);
  }
}

/**
 * Stores at `out[at]` the key of `0x` and 1 to 16 hex digits in bytes whose bits above the low 52 are all zeros or all
 * ones (a canonical address, what kernels print), or -1 for anything else (for {@link AddressKeys.keyOfHex}). Needs no
 * table, and stores rather than returns: a double returned from a function not inlined is boxed, an allocation a
 * parser would pay per line.
 */
export function storeCanonicalKey(bytes: Uint8Array, from: number, to: number, out: Float64Array, at: number): void {
  out[at] = -1;
  const n = to - from - 2;
  if (n < 1 || n > 16 || bytes[from] !== 48 || bytes[from + 1] !== 120) return;
  const low = Math.max(from + 2, to - 13);
  let high = 0;
  for (let i = from + 2; i < low; i++) {
    const d = hexDigit(bytes[i]!);
    if (d < 0) return;
    high = high * 16 + d;
  }
  if (high !== 0 && high !== 0xfff) return;
  let v = 0;
  for (let i = low; i < to; i++) {
    const d = hexDigit(bytes[i]!);
    if (d < 0) return;
    v = v * 16 + d;
  }
  out[at] = high === 0 ? v : TWO52 + v;
}

const codeAt = (text: string | Uint8Array, i: number): number =>
  typeof text === 'string' ? text.charCodeAt(i) : (text[i] ?? Number.NaN);

/** Value of up to 13 hex digits, or undefined when a character is not one. */
function hexValue(text: string | Uint8Array, start: number, end: number): number | undefined {
  let v = 0;
  if (typeof text === 'string')
    for (let i = start; i < end; i++) {
      const d = hexDigit(text.charCodeAt(i));
      if (d < 0) return undefined;
      v = v * 16 + d;
    }
  else
    for (let i = start; i < end; i++) {
      const d = hexDigit(text[i]!);
      if (d < 0) return undefined;
      v = v * 16 + d;
    }
  return v;
}

/** The value of a hex digit's character code, or -1. */
function hexDigit(c: number): number {
  return c >= 48 && c <= 57 ? c - 48 : (c | 32) >= 97 && (c | 32) <= 102 ? (c | 32) - 87 : -1;
}

/** `0x…` lowercase hex of an address, as perf and the kernel print pointers. */
export function hexAddress(addr: bigint): string {
  return `0x${addr.toString(16)}`;
}
