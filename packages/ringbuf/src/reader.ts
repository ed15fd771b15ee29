import { RecordCursor } from './cursor.ts';
import { RingbufError } from './errors.ts';
import { H, HEADER_SIZE, MAX_READERS, READER_SLOT_SIZE, SLOT, STATE_WRITER_CLOSED } from './header.ts';
import { P, PAGE_CLOSED, PAGE_HEADER_SIZE } from './page.ts';
import type { Region } from './region.ts';
import { minReaderCursor, ORDERED_STORES, raiseReaderHigh, raiseTail, seqDiff } from './shared.ts';
import { getU64, loadU64 } from './u64.ts';

/** Frees the slot of a reader dropped without close(), so it stops holding pages back. */
const slotReleaser = new FinalizationRegistry<{ i32: Int32Array; at: number }>(({ i32, at }) => {
  Atomics.store(i32, at, 0);
});

/** Options of {@link RingBuffer.reader}. */
export interface ReaderOptions {
  /** Where a reader joining a running stream starts: the oldest page still held (default) or the newest. */
  start?: 'oldest' | 'newest';
}

/** Geometry a reader needs, read once from the header. */
export interface ReaderContext {
  region: Region;
  pageSize: number;
  pageCount: number;
  overwrite: boolean;
  multiWriter: boolean;
}

/**
 * A consuming reader: visits pages in order and decodes records in place. In discard mode it reads the shared pages
 * directly (zero copy) and frees each page for the writer once done. In overwrite mode the writer may recycle a
 * page at any time, so the reader copies each page's new bytes into a private page (one copy per batch, not per
 * record) and checks the page generation after the copy: a page recycled under it is dropped and its records are
 * counted lost, never returned torn.
 *
 * Every record is either delivered (`delivered`) or counted in `lost`, exactly.
 */
export class Reader extends RecordCursor {
  /** Records returned by next(). */
  delivered = 0;
  private lostCount = 0;
  declare private readonly region: Region;
  declare private readonly i32: Int32Array;
  declare private readonly pageSize: number;
  declare private readonly pageCount: number;
  declare private readonly multi: boolean;
  declare private readonly slot: number;
  declare private readonly copyBytes: Uint8Array | undefined;
  declare private cursor: number;
  private started = false;
  private pageClosed = false;
  private regionBase = 0;
  private viewBase = 0;
  /** records_before of the current page, and `delivered` when it started: records expected so far follow. */
  private expectBase = 0;
  private deliveredBase = 0;
  private lastDiscarded = 0;
  declare private counting: boolean;
  /**
   * Word index of the commit word of a started page read in place from a single writer (discard mode) where plain
   * loads keep their order ({@link ORDERED_STORES}), so next() may extend `end` itself; 0 otherwise. A number, not a
   * flag: V8 tests a Smi in one instruction.
   */
  private liveCommit = 0;
  /** 1 where a plain load of a commit word is ordered before the loads that follow it ({@link ORDERED_STORES}). */
  private readonly plainLoads: number = ORDERED_STORES ? 1 : 0;
  /** Polls of a live page that found nothing new by plain loads. */
  private emptyPolls = 0;
  private pageLimit = 0;
  private done = false;
  private released = false;

  constructor(ctx: ReaderContext, options: ReaderOptions = {}) {
    const { region } = ctx;
    const copy = ctx.overwrite ? new ArrayBuffer(ctx.pageSize) : undefined;
    super(
      copy ? new Uint8Array(copy) : region.u8,
      copy ? new DataView(copy) : region.dv,
      copy ? new Uint32Array(copy) : region.u32,
    );
    this.copyBytes = copy ? this.bytes : undefined;
    this.region = region;
    this.i32 = region.i32;
    this.pageSize = ctx.pageSize;
    this.pageCount = ctx.pageCount;
    this.multi = ctx.multiWriter;
    const i32 = this.i32;
    let slot = -1;
    for (let s = 0; s < MAX_READERS && slot < 0; s++) {
      const at = (H.readerSlots + s * READER_SLOT_SIZE + SLOT.state) >> 2;
      if (Atomics.compareExchange(i32, at, 0, 2) === 0) slot = s;
    }
    if (slot < 0) throw new RingbufError('ERR_RINGBUF_READERS_FULL', `all ${MAX_READERS} reader slots are taken`);
    raiseReaderHigh(i32, slot);
    this.slot = H.readerSlots + slot * READER_SLOT_SIZE;
    const head = Atomics.load(i32, H.head >> 2);
    // A reader there before the first page counts every record; one joining later counts from its first page.
    this.counting = head === -1;
    this.cursor = head === -1 ? 0 : options.start === 'newest' ? head >>> 0 : Atomics.load(i32, H.tail >> 2) >>> 0;
    if (head !== -1 && seqDiff(head, this.cursor) >= this.pageCount) this.cursor = (head >>> 0) - this.pageCount + 1;
    Atomics.store(i32, (this.slot + SLOT.cursor) >> 2, this.cursor | 0);
    Atomics.store(i32, (this.slot + SLOT.wakeAt) >> 2, (this.cursor + 1) | 0);
    Atomics.store(i32, (this.slot + SLOT.state) >> 2, 1);
    slotReleaser.register(this, { i32, at: (this.slot + SLOT.state) >> 2 }, this);
  }

  /** Records lost to this reader: dropped by the writer (discard mode) or overwritten before it got to them. */
  get lost(): number {
    return this.lostCount;
  }

  /** True once the writer closed the stream and every record was delivered or counted lost. */
  get ended(): boolean {
    return this.done;
  }

  next(): boolean {
    const p = this.pos;
    const w = this.words;
    let end = this.end;
    if (p >= end) {
      // Zero-copy single-writer page on a CPU that sees stores in order (liveCommit is 0 elsewhere): a plain load of
      // the page's commit word is enough to read the records before it. Anything else (nothing new, another kind of
      // page, Atomics needed) leaves through a call in tail position, so that this path stays free of calls and V8
      // keeps `w` and `this` checked once.
      if (this.liveCommit === 0) return this.nextSlow();
      // `| 0` spares an overflow check: a commit word too large for int32 arithmetic wraps to at most `p`, which is
      // refused below like any other.
      end = (this.regionBase + w[this.liveCommit]!) | 0;
      if (end <= p || end > this.pageLimit) return this.poll(p);
      this.end = end;
    }
    const i = p >> 2;
    const w0 = w[i]!;
    const tag = w0 & 31;
    const len = w[i + 1]!;
    const padded = (len + 3) & ~3;
    // int32 arithmetic (no overflow checks): a sum past 2^31 wraps below p and is refused like any record that runs
    // past `end`; padded < len when a corrupt length wraps. Literals: see Writer.reserveAt.
    const next = (p + 8 + padded) | 0;
    if (tag < 30 && padded >= len && next <= end && next > p) {
      this.advanceTs(w0 >>> 5);
      this.type = tag;
      this.offset = (p + 8) | 0;
      this.pos = next;
      this.delivered++;
      return true;
    }
    return this.nextSlow();
  }

  /**
   * A plain load of a live page's commit word showed nothing new at `p`. A plain load of the page's flags tells
   * whether the page was closed (the slow path moves on); every 16th such empty poll asks with an Atomics.load
   * (about 10 ns in V8) instead, so a reader polling in a loop sees the writer's progress whatever the compiler does
   * with plain loads.
   */
  private poll(p: number): boolean {
    if ((++this.emptyPolls & 15) !== 0 && (this.words[this.liveCommit + 4]! & PAGE_CLOSED) === 0) return false;
    const c = this.regionBase + Atomics.load(this.i32, this.liveCommit);
    if (c > p && c <= this.pageLimit) this.end = c;
    return this.nextSlow();
  }

  private nextSlow(): boolean {
    for (;;) {
      if (this.released) return false;
      if (this.pos < this.end) {
        const r = this.decodeOther();
        if (r === 1) {
          this.delivered++;
          return true;
        }
        if (r === 0) continue;
        this.badRecord();
        continue;
      }
      if (!this.refill()) return false;
    }
  }

  /** A record that does not fit its page: an overwrite under a zero-copy read, or corruption. */
  private badRecord(): void {
    if (Atomics.load(this.i32, (this.regionBase + P.seq) >> 2) !== (this.cursor | 0)) {
      this.dropPage();
      return;
    }
    throw new RingbufError(
      'ERR_RINGBUF_CORRUPT_PAGE',
      `page ${this.cursor}: record at page offset ${this.pos - this.viewBase} runs past the committed end ${this.end - this.viewBase}`,
      this.regionBase + (this.pos - this.viewBase),
    );
  }

  private dropPage(): void {
    this.started = false;
    this.liveCommit = 0;
    this.pos = this.end = 0;
    this.cursor++;
  }

  /** Makes new bytes available (pos < end) or finishes pages. Returns false when nothing more is there now. */
  private refill(): boolean {
    const i32 = this.i32;
    for (;;) {
      if (!this.started) {
        const head = Atomics.load(i32, H.head >> 2);
        const ahead = head === -1 ? -1 : seqDiff(head, this.cursor | 0);
        if (ahead < 0) {
          if ((Atomics.load(i32, H.state >> 2) & STATE_WRITER_CLOSED) === 0) return false;
          // Closed: the head read after the state is final.
          const final = Atomics.load(i32, H.head >> 2);
          if (final !== -1 && seqDiff(final, this.cursor | 0) >= 0) continue;
          this.finish();
          return false;
        }
        // Lapped (overwrite mode): skip to the oldest page still held; the next page's records_before counts the loss.
        if (ahead >= this.pageCount) this.cursor += ahead - this.pageCount + 1;
        if (!this.startPage()) {
          this.cursor++;
          continue;
        }
      }
      const grown = this.extend();
      if (grown < 0) {
        this.dropPage();
        continue;
      }
      if (this.pos < this.end) return true;
      if (this.pageClosed) {
        this.started = false;
        this.liveCommit = 0;
        this.pos = this.end = 0;
        this.cursor++;
        this.release();
        continue;
      }
      return false;
    }
  }

  private finish(): void {
    if (this.done) return;
    const discarded = loadU64(this.i32, H.discarded);
    if (discarded > this.lastDiscarded) {
      this.lostCount += discarded - this.lastDiscarded;
      this.lastDiscarded = discarded;
    }
    this.done = true;
  }

  /** Tells writers this reader is done with every page before the cursor. */
  private release(): void {
    const i32 = this.i32;
    Atomics.store(i32, (this.slot + SLOT.cursor) >> 2, this.cursor | 0);
    const min = minReaderCursor(i32);
    if (min !== undefined) raiseTail(i32, min);
  }

  private pageBase(seq: number): number {
    return HEADER_SIZE + (seq % this.pageCount) * this.pageSize;
  }

  /** Reads the header of page `cursor`. False when the page was recycled under it. */
  private startPage(): boolean {
    const base = this.pageBase(this.cursor);
    const gen = this.cursor | 0;
    const i32 = this.i32;
    if (Atomics.load(i32, (base + P.seq) >> 2) !== gen) return false;
    let viewBase = base;
    if (this.copyBytes) {
      this.copyBytes.set(this.region.u8.subarray(base, base + PAGE_HEADER_SIZE), 0);
      if (Atomics.load(i32, (base + P.seq) >> 2) !== gen) return false;
      viewBase = 0;
    }
    const u32 = this.words;
    const recordsBefore = getU64(u32, viewBase + P.recordsBefore);
    const discarded = getU64(u32, viewBase + P.eventsDiscarded);
    if (this.counting) {
      const expected = this.expectBase + this.delivered - this.deliveredBase;
      if (!this.multi && recordsBefore > expected) this.lostCount += recordsBefore - expected;
      if (discarded > this.lastDiscarded) this.lostCount += discarded - this.lastDiscarded;
    }
    this.counting = true;
    this.expectBase = recordsBefore;
    this.deliveredBase = this.delivered;
    this.lastDiscarded = Math.max(this.lastDiscarded, discarded);
    this.setTs(getU64(u32, viewBase + P.timestampBegin));
    this.regionBase = base;
    this.viewBase = viewBase;
    // The flags word is 4 words after the commit word: next() reads it as liveCommit + 4.
    this.liveCommit = !this.copyBytes && !this.multi && this.plainLoads === 1 ? (base + P.commit) >> 2 : 0;
    this.pageLimit = base + this.pageSize;
    this.pos = this.end = viewBase + PAGE_HEADER_SIZE;
    this.started = true;
    this.pageClosed = false;
    return true;
  }

  /** Extends `end` to the page's committed bytes. 1 if it grew, 0 if not, -1 if the page was recycled. */
  private extend(): number {
    const i32 = this.i32;
    const base = this.regionBase;
    const have = this.end - this.viewBase;
    const ci = (base + P.commit) >> 2;
    const si = (base + P.seq) >> 2;
    // Plain loads where they keep their order (x86, see next()), except that a poll finding nothing new asks with
    // Atomics every 16th time, so a polling reader sees progress whatever the compiler does with plain loads.
    const plain = this.plainLoads === 1 && (i32[ci]! > have || (++this.emptyPolls & 15) !== 0);
    let commit: number;
    let closed: boolean;
    if (!this.multi) {
      // The writer stores the final commit before it sets the closed flag, so flags are only worth a load when
      // the commit word did not grow, and a commit loaded after seeing the flag is final.
      commit = plain ? i32[ci]! : Atomics.load(i32, ci);
      closed = false;
      if (commit <= have) {
        const fi = (base + P.flags) >> 2;
        closed = ((plain ? i32[fi]! : Atomics.load(i32, fi)) & PAGE_CLOSED) !== 0;
        if (closed) commit = plain ? i32[ci]! : Atomics.load(i32, ci);
      }
    } else {
      const closeEnd = Atomics.load(i32, (base + P.closeEnd) >> 2);
      const c = Atomics.load(i32, ci);
      if (closeEnd !== 0) {
        closed = c === closeEnd;
        commit = closed ? closeEnd : 0;
      } else {
        closed = false;
        commit = Atomics.load(i32, (base + P.reserved) >> 2) === c ? c : 0;
      }
    }
    const gen = this.cursor | 0;
    if (commit < PAGE_HEADER_SIZE || commit > this.pageSize) {
      if (Atomics.load(i32, si) !== gen) return -1;
      if (commit === 0) return 0;
      throw new RingbufError(
        'ERR_RINGBUF_CORRUPT_PAGE',
        `page ${this.cursor}: committed size ${commit} is outside ${PAGE_HEADER_SIZE}..${this.pageSize}`,
        base + P.commit,
      );
    }
    if (commit > have) {
      if (this.copyBytes) {
        this.copyNew(base, have, commit);
        // The seqlock's second read, after the copy.
        if ((plain ? i32[si]! : Atomics.load(i32, si)) !== gen) return -1;
      }
      this.end = this.viewBase + commit;
      this.pageClosed = closed;
      return 1;
    }
    // No growth: the page may also have been recycled under a reader that finished its copy.
    if ((plain ? i32[si]! : Atomics.load(i32, si)) !== gen) return -1;
    this.pageClosed = closed && commit === have;
    return 0;
  }

  /**
   * Copies page bytes [have, commit) into the private page. A few records (the usual growth between two reads)
   * are copied word by word: no subarray to allocate and no builtin call. Both ends are 4-aligned.
   */
  private copyNew(base: number, have: number, commit: number): void {
    if (commit - have <= 256) {
      const src = this.region.u32;
      const dst = this.words;
      for (let i = have >> 2, j = (base + have) >> 2, e = commit >> 2; i < e; i++, j++) dst[i] = src[j]!;
    } else {
      this.bytes.set(this.region.u8.subarray(base + have, base + commit), have);
    }
  }

  /**
   * Waits (without spinning) until `watermark` more pages are complete, the writer flushes or closes, or
   * `timeoutMs` passes. Resolves to false on timeout. Uses Atomics.waitAsync on a SharedArrayBuffer; on a plain
   * ArrayBuffer (single thread) it resolves at once.
   */
  async wait(timeoutMs = Number.POSITIVE_INFINITY, watermark = 1): Promise<boolean> {
    const i32 = this.i32;
    if (!this.region.shared) return true;
    Atomics.store(i32, (this.slot + SLOT.wakeAt) >> 2, (this.cursor + Math.max(1, watermark)) | 0);
    Atomics.add(i32, H.waiters >> 2, 1);
    try {
      const seen = Atomics.load(i32, H.wake >> 2);
      const head = Atomics.load(i32, H.head >> 2);
      if (head !== -1 && seqDiff(head, (this.cursor + Math.max(1, watermark)) | 0) >= 0) return true;
      if ((Atomics.load(i32, H.state >> 2) & STATE_WRITER_CLOSED) !== 0) return true;
      const result = Atomics.waitAsync(i32, H.wake >> 2, seen, timeoutMs);
      const outcome = result.async ? await result.value : result.value;
      return outcome !== 'timed-out';
    } finally {
      Atomics.sub(i32, H.waiters >> 2, 1);
    }
  }

  /** Unregisters: writers in discard mode no longer keep pages for this reader. */
  close(): void {
    if (this.released) return;
    this.released = true;
    slotReleaser.unregister(this);
    Atomics.store(this.i32, (this.slot + SLOT.state) >> 2, 0);
  }
}
