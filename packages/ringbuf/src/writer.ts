import { RingbufError } from './errors.ts';
import { H, HEADER_SIZE, STATE_WRITER_ATTACHED, STATE_WRITER_CLOSED } from './header.ts';
import { P, PAGE_CLOSED, PAGE_HEADER_SIZE, PAGE_LOST_BEFORE } from './page.ts';
import {
  COMPACT_HEADER_SIZE,
  EXTENDED_HEADER_SIZE,
  MAX_COMPACT_TYPE,
  MAX_TYPE,
  padded,
  TAG_EXTENDED,
  TS_LOW_MASK,
  TS_LOW_RANGE,
} from './record.ts';
import type { Region } from './region.ts';
import { ORDERED_STORES, raiseTail, seqDiff, wakeReaders } from './shared.ts';
import { getU64, setU64 } from './u64.ts';
import { walkRecords } from './walk.ts';

/** Geometry and policy a writer needs, read once from the header. */
export interface WriterContext {
  region: Region;
  pageSize: number;
  pageCount: number;
  overwrite: boolean;
  clock: () => number;
}

/** Options of {@link RingBuffer.writer}. */
export interface WriterOptions {
  /** Written into every page header (CTF stream id): the thread, CPU or producer number. Default 0. */
  streamId?: number;
  /** Take over a buffer whose previous writer never detached (it crashed, or its process ended). */
  force?: boolean;
}

/** Counters of one writer since the stream began. */
export interface WriterStats {
  /** Records committed to pages. */
  written: number;
  /** Records dropped because the buffer was full (discard mode). */
  discarded: number;
}

/** The word a writer's commit goes to while no page is open. */
const SCRATCH = new Uint32Array(new SharedArrayBuffer(4));

function checkRecord(type: number, size: number, ts: number, maxPayload: number): void {
  if (!Number.isInteger(type) || type < 0 || type > MAX_TYPE) {
    throw new RingbufError('ERR_RINGBUF_ARGUMENT', `record type ${type} must be an integer from 0 to ${MAX_TYPE}`);
  }
  if (!Number.isInteger(size) || size < 0) {
    throw new RingbufError('ERR_RINGBUF_ARGUMENT', `record size ${size} must be a non-negative integer`);
  }
  if (size > maxPayload) {
    throw new RingbufError(
      'ERR_RINGBUF_RECORD_TOO_LARGE',
      `a record of ${size} bytes can never fit: pages of this buffer hold at most ${maxPayload} payload bytes (use a larger page size)`,
    );
  }
  if (!Number.isSafeInteger(ts) || ts < 0) {
    throw new RingbufError('ERR_RINGBUF_ARGUMENT', `timestamp ${ts} must be a non-negative integer below 2^53`);
  }
}

/**
 * The single writer of a buffer (one per thread: the per-CPU model). Lock-free: it keeps its position in fields of
 * its own and publishes each commit with one `Atomics.store`.
 *
 * ```ts
 * const off = w.reserve(type, 8);        // payload offset in w.bytes / w.view / w.words, or -1 when dropped
 * if (off >= 0) { w.words[off >> 2] = a; w.words[(off >> 2) + 1] = b; w.commit(); }
 * ```
 */
export class Writer {
  // Fields set in the constructor are `declare`d: a class field without an initializer is first defined as
  // undefined, after which V8 no longer knows its type, and every load of a view would check its map again.
  /** The region as bytes; payload offsets returned by reserve index it. */
  declare readonly bytes: Uint8Array;
  /** The region as a little-endian DataView. */
  declare readonly view: DataView;
  /** The region as u32 words: payloads are 4-aligned, so word `off >> 2` is the payload's first. */
  declare readonly words: Uint32Array;
  /** Largest payload one record can carry. */
  declare readonly maxPayload: number;
  declare readonly streamId: number;
  declare protected readonly i32: Int32Array;
  declare private readonly pageSize: number;
  declare private readonly pageCount: number;
  declare private readonly overwrite: boolean;
  declare private readonly clock: () => number;
  /**
   * Where {@link commit} stores: the region's words while a page is open, else a scratch word of the same kind (one
   * shape for V8, no branch in commit).
   */
  private commitWords: Uint32Array = SCRATCH;
  protected pos = 0;
  /** End of the open page, 0 while no page is open (every reserve then takes the slow path). */
  protected end = 0;
  protected pageBase = 0;
  protected commitIndex = 0;
  private seq = -1;
  private lastTs = 0;
  /** Largest timestamp of the open page when an extended record went back in time; else below lastTs. */
  private pageMaxTs = 0;
  private count = 0;
  private written = 0;
  private discarded = 0;
  private discardedAtOpen = 0;
  private overwritten = 0;
  private overwrittenPages = 0;
  private byteCount = 0;
  private closed = false;

  constructor(ctx: WriterContext, options: WriterOptions = {}) {
    const { region } = ctx;
    this.bytes = region.u8;
    this.view = region.dv;
    this.words = region.u32;
    this.i32 = region.i32;
    this.pageSize = ctx.pageSize;
    this.pageCount = ctx.pageCount;
    this.overwrite = ctx.overwrite;
    this.clock = ctx.clock;
    this.maxPayload = ctx.pageSize - PAGE_HEADER_SIZE - EXTENDED_HEADER_SIZE;
    this.streamId = options.streamId ?? 0;
    if (!Number.isInteger(this.streamId) || this.streamId < 0 || this.streamId > 0xffffffff) {
      throw new RingbufError('ERR_RINGBUF_ARGUMENT', `stream id ${this.streamId} must be a u32`);
    }
    const stateIndex = H.state >> 2;
    const prev = Atomics.load(this.i32, stateIndex);
    if ((prev & STATE_WRITER_ATTACHED) !== 0 && !options.force) {
      throw new RingbufError(
        'ERR_RINGBUF_WRITER_BUSY',
        'another writer is attached to this buffer (pass force to take over)',
      );
    }
    if (Atomics.compareExchange(this.i32, stateIndex, prev, STATE_WRITER_ATTACHED) !== prev) {
      throw new RingbufError('ERR_RINGBUF_WRITER_BUSY', 'another writer attached to this buffer at the same time');
    }
    this.resume();
  }

  /** Continues a stream left by an earlier writer: its open page is closed as it stands. */
  private resume(): void {
    const head = Atomics.load(this.i32, H.head >> 2);
    if (head === -1) return;
    const u32 = this.words;
    const base = HEADER_SIZE + ((head >>> 0) % this.pageCount) * this.pageSize;
    this.seq = getU64(u32, base + P.seq);
    this.written = getU64(u32, H.written);
    this.discarded = getU64(u32, H.discarded);
    this.discardedAtOpen = this.discarded;
    this.overwritten = getU64(u32, H.overwritten);
    this.overwrittenPages = getU64(u32, H.overwrittenPages);
    this.byteCount = getU64(u32, H.bytes);
    if ((Atomics.load(this.i32, (base + P.flags) >> 2) & PAGE_CLOSED) !== 0) return;
    // Count what the previous writer committed on its open page, then close it.
    const commit = Math.min(Math.max(Atomics.load(this.i32, (base + P.commit) >> 2), PAGE_HEADER_SIZE), this.pageSize);
    const walked = walkRecords(u32, base + PAGE_HEADER_SIZE, base + commit, getU64(u32, base + P.timestampBegin));
    const at = walked.stop;
    const n = walked.count;
    const ts = walked.lastTs;
    this.pageMaxTs = walked.maxTs;
    this.pageBase = base;
    this.pos = at;
    this.count = n;
    this.written = getU64(u32, base + P.recordsBefore);
    this.lastTs = ts;
    this.closePage();
  }

  /**
   * Reserves a record of `size` payload bytes stamped with the buffer's clock. Returns the payload's byte offset in
   * {@link bytes}/{@link view}/{@link words}, or -1 when the record was dropped (discard mode, buffer full: it is
   * counted lost). Write the fields, then {@link commit}.
   */
  reserve(type: number, size: number): number {
    return this.reserveAt(type, size, this.clock());
  }

  /** Like {@link reserve} with a caller-supplied timestamp (integer ns of the clock named in the header). */
  reserveAt(type: number, size: number, ts: number): number {
    const d = ts - this.lastTs;
    const p = this.pos;
    const next = p + 8 + ((size + 3) & ~3);
    // Literals, not the named constants: V8 loads an imported binding from its cell with a hole check on every use.
    // Each mask test also refuses NaN, fractions and negatives: d is an integer in [0, 2^27) (compact timestamp),
    // type an integer in 0..29, size an integer below 2^26 (above every page's largest payload, so `next` is exact).
    if ((d & 0x7ffffff) === d && (type & 31) === type && type < 30 && (size & 0x3ffffff) === size && next <= this.end) {
      const w = this.words;
      const i = p >> 2;
      // ToInt32 is exact modulo 2^32 for every integer below 2^53: these are the low 27 bits of ts.
      w[i] = ((ts & 0x7ffffff) << 5) | type;
      w[i + 1] = size;
      this.lastTs = ts;
      this.pos = next;
      this.count++;
      return (p + 8) | 0;
    }
    // Both results as int32 (exact: offsets stay below 2^31), so that V8 merges them untagged where this is inlined.
    return this.reserveSlow(type, size, ts) | 0;
  }

  private reserveSlow(type: number, size: number, ts: number): number {
    if (this.closed) throw new RingbufError('ERR_RINGBUF_CLOSED', 'the writer is closed');
    checkRecord(type, size, ts, this.maxPayload);
    if (this.end !== 0) {
      const d = ts - this.lastTs;
      const compact = type <= MAX_COMPACT_TYPE && d >= 0 && d < TS_LOW_RANGE;
      if (this.pos + (compact ? COMPACT_HEADER_SIZE : EXTENDED_HEADER_SIZE) + padded(size) <= this.end) {
        return this.put(type, size, ts, compact);
      }
      this.closePage();
    }
    if (!this.openPage(ts)) {
      this.discarded++;
      return -1;
    }
    return this.put(type, size, ts, type <= MAX_COMPACT_TYPE);
  }

  private put(type: number, size: number, ts: number, compact: boolean): number {
    const i = this.pos >> 2;
    const w = this.words;
    const low = ts & TS_LOW_MASK;
    let payload: number;
    if (compact) {
      w[i] = (low << 5) | type;
      w[i + 1] = size;
      payload = this.pos + COMPACT_HEADER_SIZE;
    } else {
      w[i] = TAG_EXTENDED;
      w[i + 1] = type;
      w[i + 2] = ts >>> 0;
      w[i + 3] = (ts / 4294967296) >>> 0;
      w[i + 4] = size;
      payload = this.pos + EXTENDED_HEADER_SIZE;
    }
    if (this.lastTs > this.pageMaxTs) this.pageMaxTs = this.lastTs;
    this.lastTs = ts;
    this.pos = payload + padded(size);
    this.count++;
    return payload;
  }

  /**
   * Publishes every record reserved so far (call it per record or per batch): one plain store of the page's commit
   * word, which other threads see after the record's own stores on x86 (see {@link ORDERED_STORES}). Elsewhere
   * buffers hand out an {@link AtomicCommitWriter}, whose commit is an `Atomics.store`.
   */
  commit(): void {
    this.commitWords[this.commitIndex] = this.pos - this.pageBase;
  }

  /** Copies `payload` into one record and commits it. Returns false when the record was dropped (counted lost). */
  writeBytes(type: number, payload: Uint8Array, ts: number = this.clock()): boolean {
    const off = this.reserveAt(type, payload.length, ts);
    if (off < 0) return false;
    this.bytes.set(payload, off);
    this.commit();
    return true;
  }

  private closePage(): void {
    const base = this.pageBase;
    const u32 = this.words;
    const size = this.pos - base;
    setU64(u32, base + P.timestampEnd, Math.max(this.lastTs, this.pageMaxTs));
    setU64(u32, base + P.contentSize, size * 8);
    u32[(base + P.recordCount) >> 2] = this.count;
    Atomics.store(this.i32, (base + P.commit) >> 2, size);
    Atomics.or(this.i32, (base + P.flags) >> 2, PAGE_CLOSED);
    this.written += this.count;
    this.byteCount += size - PAGE_HEADER_SIZE;
    this.count = 0;
    this.end = 0;
    this.commitWords = SCRATCH;
    this.commitIndex = 0;
  }

  private openPage(ts: number): boolean {
    const i32 = this.i32;
    const u32 = this.words;
    const next = this.seq + 1;
    const n = this.pageCount;
    if (!this.overwrite && seqDiff(next, Atomics.load(i32, H.tail >> 2)) >= n) return false;
    const base = HEADER_SIZE + (next % n) * this.pageSize;
    if (next >= n) {
      const old = next - n;
      if (this.overwrite && seqDiff(old, Atomics.load(i32, H.tail >> 2)) >= 0) {
        // Recycling a page no registered reader has finished: its records are lost to them.
        this.overwritten += u32[(base + P.recordCount) >> 2]!;
        this.overwrittenPages++;
      }
      if (this.overwrite) raiseTail(i32, old + 1);
    }
    // The generation word changes first: a reader copying the old page sees the change and drops its copy.
    Atomics.store(i32, (base + P.seq) >> 2, next | 0);
    u32[(base + P.seq + 4) >> 2] = (next / 4294967296) >>> 0;
    Atomics.store(i32, (base + P.flags) >> 2, this.discarded > this.discardedAtOpen ? PAGE_LOST_BEFORE : 0);
    Atomics.store(i32, (base + P.commit) >> 2, PAGE_HEADER_SIZE);
    setU64(u32, base + P.timestampBegin, ts);
    setU64(u32, base + P.timestampEnd, 0);
    setU64(u32, base + P.contentSize, 0);
    setU64(u32, base + P.packetSize, this.pageSize * 8);
    setU64(u32, base + P.eventsDiscarded, this.discarded);
    setU64(u32, base + P.recordsBefore, this.written);
    u32[(base + P.reserved) >> 2] = PAGE_HEADER_SIZE;
    u32[(base + P.closeEnd) >> 2] = 0;
    u32[(base + P.recordCount) >> 2] = 0;
    u32[(base + P.streamId) >> 2] = this.streamId;
    this.discardedAtOpen = this.discarded;
    this.seq = next;
    this.pageBase = base;
    this.commitIndex = (base + P.commit) >> 2;
    this.commitWords = u32;
    this.pos = base + PAGE_HEADER_SIZE;
    this.end = base + this.pageSize;
    this.lastTs = ts;
    this.publish();
    Atomics.store(i32, H.head >> 2, next | 0);
    wakeReaders(i32, next, false);
    return true;
  }

  /**
   * Plain stores: the counters are advisory while the writer runs; the Atomics.store of head or state that follows
   * makes them exact for a reader that has seen it.
   */
  private publish(): void {
    const u32 = this.words;
    setU64(u32, H.written, this.written + this.count);
    setU64(u32, H.discarded, this.discarded);
    setU64(u32, H.overwritten, this.overwritten);
    setU64(u32, H.overwrittenPages, this.overwrittenPages);
    setU64(u32, H.bytes, this.byteCount + (this.end === 0 ? 0 : this.pos - this.pageBase - PAGE_HEADER_SIZE));
  }

  /** Commits, updates the header counters and wakes waiting readers so they see a partly filled page. */
  flush(): void {
    this.publish();
    this.commit();
    wakeReaders(this.i32, this.seq, true);
  }

  /** Ends the stream: closes the open page, publishes the counters and detaches. Readers then see the end. */
  close(): void {
    if (this.closed) return;
    if (this.end !== 0) this.closePage();
    this.publish();
    this.closed = true;
    Atomics.store(this.i32, H.state >> 2, STATE_WRITER_CLOSED);
    wakeReaders(this.i32, this.seq, true);
  }

  /** Records written and dropped by this writer's stream. */
  stats(): WriterStats {
    return { written: this.written + this.count, discarded: this.discarded };
  }
}

/**
 * The writer for CPUs that may make plain stores visible out of order (anything but x86, see {@link ORDERED_STORES}):
 * each commit is an `Atomics.store`, which orders the record's stores before it. {@link RingBuffer.writer} picks it;
 * a subclass rather than a branch in {@link Writer.commit}, so that x86's commit is one store and nothing else.
 */
export class AtomicCommitWriter extends Writer {
  override commit(): void {
    if (this.end !== 0) Atomics.store(this.i32, this.commitIndex, this.pos - this.pageBase);
  }
}
