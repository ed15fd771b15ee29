import { TraceFormatError } from '../errors.ts';

const TWO_32 = 2 ** 32;

/**
 * A cursor over one packet (or any byte range) that reads CTF fields at bit positions. Alignment is relative to the
 * start of `bytes`, which is why a reader covers exactly one packet. `fileOffset` maps positions back to the file for
 * error messages.
 */
export class BitReader {
  bytes: Uint8Array;
  view: DataView;
  /** Current position in bits from the start of `bytes`. */
  pos = 0;
  /** Readable limit in bits (the packet's content size). */
  limit: number;
  readonly file: string | undefined;
  fileOffset: number;

  constructor(bytes: Uint8Array, file?: string, fileOffset = 0) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.limit = bytes.length * 8;
    this.file = file;
    this.fileOffset = fileOffset;
  }

  /** Points the reader at another byte range, keeping the file name. */
  reset(bytes: Uint8Array, fileOffset: number): void {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.limit = bytes.length * 8;
    this.pos = 0;
    this.fileOffset = fileOffset;
  }

  /** Throws a packet error located at bit position `bitPos`. */
  fail(message: string, bitPos = this.pos): never {
    throw new TraceFormatError('ERR_TRACE_CTF_PACKET', message, {
      file: this.file,
      offset: this.fileOffset + Math.floor(bitPos / 8),
    });
  }

  /** Aligns the position to `align` bits and checks that `size` bits follow; returns the aligned position. */
  at(align: number, size: number): number {
    let p = this.pos;
    const m = p % align;
    if (m !== 0) p += align - m;
    if (p + size > this.limit) this.truncated(p, size);
    return p;
  }

  /** Throws the error of a field of `size` bits at `p` that runs past the limit (out of line: `at` runs per field). */
  private truncated(p: number, size: number): never {
    this.fail(`truncated field: needs ${size} bits at bit ${p} of the packet, only ${this.limit - p} left`, p);
  }

  /** Reads up to 32 bits at any bit position as an unsigned number. */
  bits32(p: number, size: number, le: boolean): number {
    const bytes = this.bytes;
    let index = Math.floor(p / 8);
    let offset = p % 8;
    if (offset + size <= 32 && index + 4 <= bytes.length) {
      // The field lies within one 32-bit word: one load and two shifts.
      const word = this.view.getUint32(index, le);
      return le ? (word << (32 - offset - size)) >>> (32 - size) : (word << offset) >>> (32 - size);
    }
    let remaining = size;
    let value = 0;
    if (le) {
      let scale = 1;
      while (remaining > 0) {
        const take = Math.min(8 - offset, remaining);
        const part = (bytes[index]! >>> offset) & ((1 << take) - 1);
        value += part * scale;
        scale *= 2 ** take;
        remaining -= take;
        offset = 0;
        index++;
      }
    } else {
      while (remaining > 0) {
        const take = Math.min(8 - offset, remaining);
        const part = (bytes[index]! >>> (8 - offset - take)) & ((1 << take) - 1);
        value = value * 2 ** take + part;
        remaining -= take;
        offset = 0;
        index++;
      }
    }
    return value;
  }

  /** Reads an unsigned integer of up to 53 bits as a number. */
  uintNumber(p: number, size: number, le: boolean): number {
    if (size <= 32) return this.bits32(p, size, le);
    if (le) return this.bits32(p, 32, true) + this.bits32(p + 32, size - 32, true) * TWO_32;
    return this.bits32(p, size - 32, false) * TWO_32 + this.bits32(p + size - 32, 32, false);
  }

  /** Reads an unsigned integer of up to 64 bits as a bigint. */
  uintBig(p: number, size: number, le: boolean): bigint {
    if (size <= 32) return BigInt(this.bits32(p, size, le));
    if (le) return BigInt(this.bits32(p, 32, true)) | (BigInt(this.bits32(p + 32, size - 32, true)) << 32n);
    return (BigInt(this.bits32(p, size - 32, false)) << 32n) | BigInt(this.bits32(p + size - 32, 32, false));
  }

  /** Reads a NUL-terminated string at the (byte-aligned) position; a missing NUL is a truncation error. */
  string(p: number): string {
    const start = p / 8;
    const s = textAt(this.bytes, start, Math.floor(this.limit / 8));
    if (textEnd >= Math.floor(this.limit / 8)) this.fail('unterminated string', p);
    this.pos = (textEnd + 1) * 8;
    return s;
  }
}

const decoder = new TextDecoder('utf-8');

/** Index of the NUL (or of the limit) where the last {@link textAt} call stopped. */
export let textEnd = 0;

// Trace strings repeat (command names, file names, labels): short ones are interned by content.
const MAX_CACHED = 64;
const cache = new Map<number, { readonly bytes: Uint8Array; readonly text: string }>();

/**
 * Decodes the UTF-8 text at `start` up to the first NUL or `end` (the stop index is left in {@link textEnd}).
 * Short strings come from a content-keyed cache, so a repeated string costs one pass over its bytes and no allocation.
 */
export function textAt(bytes: Uint8Array, start: number, end: number): string {
  let hash = 0x811c9dc5;
  let ascii = true;
  let i = start;
  for (; i < end; i++) {
    const b = bytes[i]!;
    if (b === 0) break;
    if (b >= 0x80) ascii = false;
    hash = Math.imul(hash ^ b, 16777619);
  }
  textEnd = i;
  const n = i - start;
  if (n === 0) return '';
  if (n > MAX_CACHED) return decoder.decode(bytes.subarray(start, i));
  const key = (hash >>> 0) * 128 + n;
  const hit = cache.get(key);
  if (hit) {
    const b = hit.bytes;
    let same = true;
    for (let k = 0; k < n; k++) {
      if (b[k] !== bytes[start + k]) {
        same = false;
        break;
      }
    }
    if (same) return hit.text;
  }
  const slice = bytes.subarray(start, i);
  const text = ascii ? String.fromCharCode.apply(null, slice as unknown as number[]) : decoder.decode(slice);
  if (cache.size >= 4096) cache.clear();
  cache.set(key, { bytes: slice.slice(), text });
  return text;
}
