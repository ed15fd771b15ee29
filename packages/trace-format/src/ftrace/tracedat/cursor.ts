import { type ByteSource, memorySource } from '../../ctf/byte-source.ts';
import { TraceFormatError } from '../../errors.ts';

/** Bytes a cursor over a file reads at once: a few sections' headers or a string, not the data after them. */
const WINDOW = 64 << 10;

/** `bytes` as a Buffer, without a copy. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Bounds-checked little/big-endian reads over a trace.dat image, a file read in windows as the cursor moves, or a
 * decompressed section of one. Every failure names the file and the byte offset, in the file or, for decompressed
 * data, in the section it came from.
 */
export class Cursor {
  readonly le: boolean;
  readonly file: string | undefined;
  /** How to describe offsets in this buffer, e.g. `section at byte 37, +`. */
  readonly where: string;
  /** Position, counted from `base`. */
  pos: number;
  /** The file offset of position 0, when the cursor reads a piece of the file rather than all of it. */
  readonly base: number;
  /** Bytes readable from position 0. */
  readonly end: number;
  /** Where the bytes come from, when they are read as the cursor moves. */
  readonly source: ByteSource | undefined;
  /** The bytes read, from position `#at`: all of them when the cursor was given a buffer. */
  #window: Buffer;
  #at = 0;

  constructor(bytes: Buffer | ByteSource, le: boolean, file: string | undefined, where = '', pos = 0, base = 0) {
    this.le = le;
    this.file = file;
    this.where = where;
    this.pos = pos;
    this.base = base;
    if (Buffer.isBuffer(bytes)) {
      this.source = undefined;
      this.#window = bytes;
      this.end = bytes.length;
    } else {
      this.source = bytes;
      this.#window = Buffer.alloc(0);
      this.end = Math.max(0, bytes.size - base);
    }
  }

  /** A cursor at `offset` of the same bytes (file offsets: `base` and `where` are not carried over). */
  at(offset: number): Cursor {
    return new Cursor(this.source ?? memorySource(this.#window), this.le, this.file, '', offset);
  }

  fail(why: string, at = this.pos): never {
    if (this.where === '')
      throw new TraceFormatError('ERR_TRACE_DAT', why, { file: this.file, offset: this.base + at });
    throw new TraceFormatError('ERR_TRACE_DAT', `${this.where}${at}: ${why}`, { file: this.file });
  }

  need(n: number, what: string): void {
    if (n < 0 || this.pos + n > this.end) {
      this.fail(`${what}: ${n} bytes needed, ${Math.max(0, this.end - this.pos)} left`);
    }
  }

  /** The window holding [pos, pos + n), read from the source when it does not already; `n` must be in bounds. */
  #bytes(n: number): Buffer {
    const w = this.#window;
    if (this.pos >= this.#at && this.pos + n <= this.#at + w.length) return w;
    const length = Math.min(Math.max(n, WINDOW), this.end - this.pos);
    const read = asBuffer(this.source!.read(this.base + this.pos, length));
    if (read.length < n) this.fail(`the file ended while it was read (${n} bytes needed, ${read.length} read)`);
    this.#window = read;
    this.#at = this.pos;
    return read;
  }

  u16(what: string): number {
    this.need(2, what);
    const b = this.#bytes(2);
    const i = this.pos - this.#at;
    this.pos += 2;
    return this.le ? b.readUInt16LE(i) : b.readUInt16BE(i);
  }

  u32(what: string): number {
    this.need(4, what);
    const b = this.#bytes(4);
    const i = this.pos - this.#at;
    this.pos += 4;
    return this.le ? b.readUInt32LE(i) : b.readUInt32BE(i);
  }

  /** A 64-bit size or offset; values beyond 2^53 cannot address anything and are rejected. */
  u64(what: string): number {
    this.need(8, what);
    const b = this.#bytes(8);
    const i = this.pos - this.#at;
    const v = this.le ? b.readBigUInt64LE(i) : b.readBigUInt64BE(i);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) this.fail(`${what} ${v} is out of range`);
    this.pos += 8;
    return Number(v);
  }

  /** A NUL-terminated string of at most `max` bytes. */
  cstring(what: string, max = 4096): string {
    const span = Math.min(max + 1, this.end - this.pos);
    const b = this.#bytes(Math.max(0, span));
    const from = this.pos - this.#at;
    const end = b.indexOf(0, from);
    if (end < 0 || end - from > max) this.fail(`${what}: unterminated string`);
    const s = b.toString('latin1', from, end);
    this.pos += end - from + 1;
    return s;
  }

  take(n: number, what: string): Buffer {
    this.need(n, what);
    const b = this.#bytes(n);
    const i = this.pos - this.#at;
    this.pos += n;
    return b.subarray(i, i + n);
  }

  /** Moves past `n` bytes without reading them. */
  skip(n: number, what: string): void {
    this.need(n, what);
    this.pos += n;
  }

  text(n: number, what: string): string {
    return this.take(n, what).toString('utf8');
  }

  expect(literal: string, what: string): void {
    const got = this.take(literal.length, what);
    if (got.toString('latin1') !== literal)
      this.fail(`expected ${JSON.stringify(literal)} (${what})`, this.pos - literal.length);
  }
}
