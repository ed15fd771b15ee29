import { RingbufError } from './errors.ts';
import { COMPACT_HEADER_SIZE, EXTENDED_HEADER_SIZE, MAX_COMPACT_TYPE, TAG_EXTENDED, TAG_PADDING } from './record.ts';

/**
 * A position on a record, decoded in place. After `next()` returns true, `type`, `timestamp`, `offset` and
 * `length` describe the current record; its payload is `bytes[offset .. offset + length)` (also reachable through
 * `view` and, 4-aligned, `words[offset >> 2]`). The views can change from page to page: read them per record.
 */
export abstract class RecordCursor {
  /** Record type (event id). */
  type = 0;
  /** Byte offset of the payload in {@link bytes}. */
  offset = 0;
  // `declare`d, not defined as undefined first: see Writer (V8 keeps the views' types, so loads need no map check).
  declare bytes: Uint8Array;
  declare view: DataView;
  declare words: Uint32Array;
  protected pos = 0;
  protected end = 0;
  // The current timestamp as tsHigh * 2^27 + tsLow: two small integers (Smis) that a compact record updates without
  // float arithmetic; the float is only built when `timestamp` is read.
  private tsHigh = 0;
  private tsLow = 0;

  /**
   * Payload length in bytes. Read from the record, not kept per record: in both header forms the word just before
   * the payload holds it (next() then has one field less to store).
   */
  get length(): number {
    const at = this.offset >> 2;
    return at === 0 ? 0 : this.words[at - 1]!;
  }

  /** Timestamp of the current record, in the buffer's clock (ns for CLOCK_MONOTONIC). */
  get timestamp(): number {
    return this.tsHigh * 134217728 + this.tsLow;
  }

  /**
   * Moves to a compact record's timestamp: the first at or after the current one whose low 27 bits are `low`.
   * Literals, not named constants: see Writer.reserveAt.
   */
  protected advanceTs(low: number): void {
    if (low < this.tsLow) this.tsHigh++;
    this.tsLow = low;
  }

  /** Sets an absolute timestamp (an extended record's, or a page's first). */
  protected setTs(ts: number): void {
    // `| 0` keeps both fields Smis: a float result would give the field a double representation, and every
    // compact record would then load, convert and store a boxed number. Exact: high < 2^26, the rest < 2^27.
    const high = Math.floor(ts / 134217728) | 0;
    this.tsHigh = high;
    this.tsLow = (ts - high * 134217728) | 0;
  }

  constructor(bytes: Uint8Array, view: DataView, words: Uint32Array) {
    this.bytes = bytes;
    this.view = view;
    this.words = words;
  }

  /** Moves to the next record. Returns false when none is available (yet). */
  abstract next(): boolean;

  /** A copy of the current payload (allocates; decode fields through `view`/`words` on hot paths). */
  payload(): Uint8Array {
    return this.bytes.slice(this.offset, this.offset + this.length);
  }

  /**
   * Decodes the record at `pos` when it is not a compact one. Returns 1 for a record, 0 for skipped padding and -1
   * for a record that runs past `end` or is cut short (the caller decides whether that is corruption or an
   * overwrite).
   */
  protected decodeOther(): number {
    const p = this.pos;
    const w = this.words;
    const i = p >> 2;
    const tag = w[i]! & 31;
    if (tag === TAG_EXTENDED) {
      if (p + EXTENDED_HEADER_SIZE > this.end) return -1;
      const lo = w[i + 2]!;
      const ts = lo + w[i + 3]! * 4294967296;
      const len = w[i + 4]!;
      const next = p + EXTENDED_HEADER_SIZE + ((len + 3) & ~3);
      if (next > this.end || next < p + EXTENDED_HEADER_SIZE + len) return -1;
      this.type = w[i + 1]!;
      this.setTs(ts);
      this.offset = p + EXTENDED_HEADER_SIZE;
      this.pos = next;
      return 1;
    }
    if (p + COMPACT_HEADER_SIZE > this.end) return -1;
    const len = w[i + 1]!;
    const next = p + COMPACT_HEADER_SIZE + ((len + 3) & ~3);
    if (next > this.end || next < p + COMPACT_HEADER_SIZE + len) return -1;
    if (tag === TAG_PADDING) {
      this.pos = next;
      return 0;
    }
    // A compact record (tag <= MAX_COMPACT_TYPE): cut short by `end`, otherwise the fast path takes it.
    this.advanceTs(w[i]! >>> 5);
    this.type = tag;
    this.offset = p + COMPACT_HEADER_SIZE;
    this.pos = next;
    return tag <= MAX_COMPACT_TYPE ? 1 : -1;
  }

  /** The error for a page whose records do not add up. */
  protected corrupt(what: string, regionOffset: number): RingbufError {
    return new RingbufError('ERR_RINGBUF_CORRUPT_PAGE', what, regionOffset);
  }
}
