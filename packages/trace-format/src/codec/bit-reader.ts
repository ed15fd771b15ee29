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
    throw new TraceFormatError('ERR_CTF_PACKET', message, {
      file: this.file,
      offset: this.fileOffset + Math.floor(bitPos / 8),
    });
  }

  /** Aligns the position to `align` bits and checks that `size` bits follow; returns the aligned position. */
  at(align: number, size: number): number {
    let p = this.pos;
    const m = p % align;
    if (m !== 0) p += align - m;
    if (p + size > this.limit) {
      this.fail(`truncated field: needs ${size} bits at bit ${p} of the packet, only ${this.limit - p} left`, p);
    }
    return p;
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
    const end = Math.floor(this.limit / 8);
    const nul = this.bytes.indexOf(0, start);
    if (nul < 0 || nul >= end) this.fail('unterminated string', p);
    this.pos = (nul + 1) * 8;
    return utf8(this.bytes, start, nul);
  }
}

const decoder = new TextDecoder('utf-8');

/** Decodes bytes as UTF-8, with a fast path for short ASCII text (the common case in traces). */
export function utf8(bytes: Uint8Array, start: number, end: number): string {
  if (end - start <= 32) {
    let ascii = true;
    for (let i = start; i < end; i++) {
      if (bytes[i]! >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (ascii) return String.fromCharCode.apply(null, bytes.subarray(start, end) as unknown as number[]);
  }
  return decoder.decode(bytes.subarray(start, end));
}
