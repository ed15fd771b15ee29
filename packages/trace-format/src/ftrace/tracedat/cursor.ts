import { TraceFormatError } from '../../errors.ts';

/**
 * Bounds-checked little/big-endian reads over a trace.dat buffer (or a decompressed section of one). Every failure
 * names the file and the byte offset, in the file or, for decompressed data, in the section it came from.
 */
export class Cursor {
  readonly bytes: Buffer;
  readonly le: boolean;
  readonly file: string | undefined;
  /** How to describe offsets in this buffer, e.g. `section at byte 37, +`. */
  readonly where: string;
  pos: number;
  /** The file offset of `bytes[0]`, when they are a piece read from the file rather than all of it. */
  readonly base: number;

  constructor(bytes: Buffer, le: boolean, file: string | undefined, where = '', pos = 0, base = 0) {
    this.bytes = bytes;
    this.le = le;
    this.file = file;
    this.where = where;
    this.pos = pos;
    this.base = base;
  }

  fail(why: string, at = this.pos): never {
    if (this.where === '')
      throw new TraceFormatError('ERR_TRACE_DAT', why, { file: this.file, offset: this.base + at });
    throw new TraceFormatError('ERR_TRACE_DAT', `${this.where}${at}: ${why}`, { file: this.file });
  }

  need(n: number, what: string): void {
    if (n < 0 || this.pos + n > this.bytes.length) {
      this.fail(`${what}: ${n} bytes needed, ${Math.max(0, this.bytes.length - this.pos)} left`);
    }
  }

  u16(what: string): number {
    this.need(2, what);
    const v = this.le ? this.bytes.readUInt16LE(this.pos) : this.bytes.readUInt16BE(this.pos);
    this.pos += 2;
    return v;
  }

  u32(what: string): number {
    this.need(4, what);
    const v = this.le ? this.bytes.readUInt32LE(this.pos) : this.bytes.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }

  /** A 64-bit size or offset; values beyond 2^53 cannot address anything and are rejected. */
  u64(what: string): number {
    this.need(8, what);
    const v = this.le ? this.bytes.readBigUInt64LE(this.pos) : this.bytes.readBigUInt64BE(this.pos);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) this.fail(`${what} ${v} is out of range`);
    this.pos += 8;
    return Number(v);
  }

  /** A NUL-terminated string. */
  cstring(what: string, max = 4096): string {
    const end = this.bytes.indexOf(0, this.pos);
    if (end < 0 || end - this.pos > max) this.fail(`${what}: unterminated string`);
    const s = this.bytes.toString('latin1', this.pos, end);
    this.pos = end + 1;
    return s;
  }

  take(n: number, what: string): Buffer {
    this.need(n, what);
    const b = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
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
