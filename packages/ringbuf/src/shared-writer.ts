import { RingbufError } from './errors.ts';
import { H, HEADER_SIZE, STATE_WRITER_CLOSED } from './header.ts';
import { P, PAGE_HEADER_SIZE, PAGE_MULTI_WRITER } from './page.ts';
import { EXTENDED_HEADER_SIZE, MAX_TYPE, padded, TAG_EXTENDED } from './record.ts';
import { seqDiff, wakeReaders } from './shared.ts';
import { getU64, loadU64, setU64 } from './u64.ts';
import { walkRecords } from './walk.ts';
import type { WriterContext, WriterStats } from './writer.ts';

/** Attempts before a record is dropped while another writer is opening the next page. */
const MAX_ATTEMPTS = 64;

/**
 * One of several writers sharing a buffer created with `writers: 'multi'`. Each reservation is an `Atomics.add` on
 * the open page's reservation word and each commit an `Atomics.add` on its commit word, so writers on any thread
 * or process interleave without a lock. Records always carry the extended header (full timestamp): reservation
 * order and timestamp order can differ by a few nanoseconds between writers. Never blocks: when the next page is
 * being opened by another writer for longer than a few retries, the record is dropped and counted.
 */
export class SharedWriter {
  declare readonly bytes: Uint8Array;
  declare readonly view: DataView;
  declare readonly words: Uint32Array;
  declare readonly maxPayload: number;
  declare readonly streamId: number;
  declare private readonly i32: Int32Array;
  declare private readonly pageSize: number;
  declare private readonly pageCount: number;
  declare private readonly clock: () => number;
  private pendingIndex = -1;
  private pendingBytes = 0;
  private written = 0;
  private discarded = 0;
  private closed = false;

  constructor(ctx: WriterContext, streamId = 0) {
    this.bytes = ctx.region.u8;
    this.view = ctx.region.dv;
    this.words = ctx.region.u32;
    this.i32 = ctx.region.i32;
    this.pageSize = ctx.pageSize;
    this.pageCount = ctx.pageCount;
    this.clock = ctx.clock;
    this.maxPayload = ctx.pageSize - PAGE_HEADER_SIZE - EXTENDED_HEADER_SIZE;
    this.streamId = streamId;
    Atomics.add(this.i32, H.writers >> 2, 1);
  }

  /** Reserves a record stamped with the buffer's clock; see {@link Writer.reserve}. */
  reserve(type: number, size: number): number {
    return this.reserveAt(type, size, this.clock());
  }

  /** Reserves a record with a caller-supplied timestamp. Returns the payload offset, or -1 when dropped. */
  reserveAt(type: number, size: number, ts: number): number {
    if (this.closed) throw new RingbufError('ERR_RINGBUF_CLOSED', 'the writer is closed');
    if (!Number.isInteger(type) || type < 0 || type > MAX_TYPE) {
      throw new RingbufError('ERR_RINGBUF_ARGUMENT', `record type ${type} must be an integer from 0 to ${MAX_TYPE}`);
    }
    if (!Number.isInteger(size) || size < 0)
      throw new RingbufError('ERR_RINGBUF_ARGUMENT', `record size ${size} is invalid`);
    if (size > this.maxPayload) {
      throw new RingbufError(
        'ERR_RINGBUF_RECORD_TOO_LARGE',
        `a record of ${size} bytes can never fit: pages of this buffer hold at most ${this.maxPayload} payload bytes`,
      );
    }
    if (!Number.isSafeInteger(ts) || ts < 0) {
      throw new RingbufError('ERR_RINGBUF_ARGUMENT', `timestamp ${ts} must be a non-negative integer below 2^53`);
    }
    const need = EXTENDED_HEADER_SIZE + padded(size);
    const i32 = this.i32;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const h = Atomics.load(i32, H.head >> 2);
      if (h !== -1) {
        const base = HEADER_SIZE + ((h >>> 0) % this.pageCount) * this.pageSize;
        const resIndex = (base + P.reserved) >> 2;
        if (Atomics.load(i32, resIndex) <= this.pageSize) {
          const off = Atomics.add(i32, resIndex, need);
          if (off + need <= this.pageSize) return this.put(base, off, need, type, size, ts);
          // The first reservation past the end closes the page where the records stop.
          if (off <= this.pageSize) this.closeAt(base, off, ts);
        }
      }
      const opened = this.tryAdvance(h, ts);
      if (opened === false) break;
    }
    this.discarded++;
    if (Atomics.add(i32, H.discarded >> 2, 1) === -1) Atomics.add(i32, (H.discarded >> 2) + 1, 1);
    return -1;
  }

  private put(base: number, off: number, need: number, type: number, size: number, ts: number): number {
    const commitIndex = (base + P.commit) >> 2;
    if (commitIndex !== this.pendingIndex) {
      this.commit();
      this.pendingIndex = commitIndex;
    }
    const w = this.words;
    const i = (base + off) >> 2;
    w[i] = TAG_EXTENDED;
    w[i + 1] = type;
    w[i + 2] = ts >>> 0;
    w[i + 3] = (ts / 4294967296) >>> 0;
    w[i + 4] = size;
    this.pendingBytes += need;
    this.written++;
    return base + off + EXTENDED_HEADER_SIZE;
  }

  /** Marks where the page's records stop. `ts` becomes timestamp_end (approximate while other writers still commit). */
  private closeAt(base: number, off: number, ts: number): void {
    setU64(this.words, base + P.contentSize, off * 8);
    setU64(this.words, base + P.timestampEnd, ts);
    Atomics.store(this.i32, (base + P.closeEnd) >> 2, off);
  }

  /** Opens page h+1 unless another writer is doing it. Returns false when the buffer is full (discard mode). */
  private tryAdvance(h: number, ts: number): boolean | undefined {
    const i32 = this.i32;
    const next = (h + 1) | 0;
    if (Atomics.compareExchange(i32, H.advance >> 2, h, next) !== h) return undefined;
    if (h !== -1 && seqDiff(next, Atomics.load(i32, H.tail >> 2)) >= this.pageCount) {
      Atomics.store(i32, H.advance >> 2, h);
      return false;
    }
    const seq = next >>> 0;
    const base = HEADER_SIZE + (seq % this.pageCount) * this.pageSize;
    const u32 = this.words;
    Atomics.store(i32, (base + P.seq) >> 2, next);
    u32[(base + P.seq + 4) >> 2] = 0;
    Atomics.store(i32, (base + P.flags) >> 2, PAGE_MULTI_WRITER);
    Atomics.store(i32, (base + P.closeEnd) >> 2, 0);
    Atomics.store(i32, (base + P.commit) >> 2, PAGE_HEADER_SIZE);
    Atomics.store(i32, (base + P.reserved) >> 2, PAGE_HEADER_SIZE);
    setU64(u32, base + P.timestampBegin, ts);
    setU64(u32, base + P.timestampEnd, 0);
    setU64(u32, base + P.contentSize, 0);
    setU64(u32, base + P.packetSize, this.pageSize * 8);
    setU64(u32, base + P.eventsDiscarded, loadU64(i32, H.discarded));
    setU64(u32, base + P.recordsBefore, 0);
    u32[(base + P.recordCount) >> 2] = 0;
    u32[(base + P.streamId) >> 2] = this.streamId;
    Atomics.store(i32, H.head >> 2, next);
    wakeReaders(i32, next, false);
    return true;
  }

  /** Publishes this writer's reserved records (one Atomics.add per call). */
  commit(): void {
    if (this.pendingBytes !== 0) {
      Atomics.add(this.i32, this.pendingIndex, this.pendingBytes);
      this.pendingBytes = 0;
    }
  }

  /** Copies `payload` into one record and commits it. Returns false when dropped. */
  writeBytes(type: number, payload: Uint8Array, ts: number = this.clock()): boolean {
    const off = this.reserveAt(type, payload.length, ts);
    if (off < 0) return false;
    this.bytes.set(payload, off);
    this.commit();
    return true;
  }

  /** Commits and wakes waiting readers. */
  flush(): void {
    this.commit();
    wakeReaders(this.i32, Atomics.load(this.i32, H.head >> 2), true);
  }

  /** Detaches. The last shared writer to close ends the stream: its open page is closed for readers. */
  close(): void {
    if (this.closed) return;
    this.commit();
    this.closed = true;
    const i32 = this.i32;
    if (Atomics.sub(i32, H.writers >> 2, 1) === 1) {
      const h = Atomics.load(i32, H.head >> 2);
      if (h !== -1) {
        const base = HEADER_SIZE + ((h >>> 0) % this.pageCount) * this.pageSize;
        const off = Atomics.add(i32, (base + P.reserved) >> 2, this.pageSize + 1);
        if (off <= this.pageSize) {
          // Every writer has committed: the page's largest timestamp is known.
          const begin = getU64(this.words, base + P.timestampBegin);
          this.closeAt(base, off, walkRecords(this.words, base + PAGE_HEADER_SIZE, base + off, begin).maxTs);
        }
      }
      Atomics.or(i32, H.state >> 2, STATE_WRITER_CLOSED);
      wakeReaders(i32, h, true);
    }
  }

  /** Records this writer committed and dropped. */
  stats(): WriterStats {
    return { written: this.written, discarded: this.discarded };
  }
}
