import { RecordCursor } from './cursor.ts';
import { RingbufError } from './errors.ts';
import { H, HEADER_SIZE } from './header.ts';
import { P, PAGE_CLOSED, PAGE_HEADER_SIZE, type PageHeader, readPageHeader } from './page.ts';
import { COMPACT_HEADER_SIZE, MAX_COMPACT_TYPE } from './record.ts';
import type { Region } from './region.ts';
import { getU64, setU64 } from './u64.ts';
import { walkRecords } from './walk.ts';

/**
 * A sequence of whole pages held in memory, each a verbatim CTF packet: a snapshot of a live buffer, or pages read
 * back from disk. Iterate records with next() (decoded in place), or take pages with {@link page}.
 * Every page is validated as it is reached; a page whose records do not add up throws ERR_RINGBUF_CORRUPT_PAGE with the
 * byte offset in {@link bytes}.
 */
export class Snapshot extends RecordCursor {
  /** Pages in the snapshot. */
  declare readonly pageCount: number;
  declare readonly pageSize: number;
  /** Records produced before the first page that the snapshot cannot show (overwritten or dropped). */
  declare readonly lostBefore: number;
  private pageIndex = -1;
  private pageBase = 0;
  private exhausted = false;

  /**
   * Wraps `bytes`: whole pages of `pageSize` bytes (a multiple of 4096), e.g. written out by {@link page}.
   * @param lostBefore what to report as {@link lostBefore}; defaults to the first page's records_before plus
   * events_discarded.
   */
  constructor(bytes: Uint8Array, pageSize: number, lostBefore?: number) {
    if (!Number.isInteger(pageSize) || pageSize < 4096 || (pageSize & (pageSize - 1)) !== 0) {
      throw new RingbufError('ERR_RINGBUF_ARGUMENT', `page size ${pageSize} must be a power of two >= 4096`);
    }
    if (bytes.length % pageSize !== 0) {
      throw new RingbufError(
        'ERR_RINGBUF_CORRUPT_PAGE',
        `${bytes.length} bytes is not a whole number of ${pageSize}-byte pages`,
        bytes.length - (bytes.length % pageSize),
      );
    }
    // Records are decoded through u32 words, which need a 4-aligned start.
    const own = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
    super(
      own,
      new DataView(own.buffer, own.byteOffset, own.length),
      new Uint32Array(own.buffer, own.byteOffset, own.length >> 2),
    );
    this.pageSize = pageSize;
    this.pageCount = bytes.length / pageSize;
    this.lostBefore =
      lostBefore ??
      (this.pageCount === 0 ? 0 : getU64(this.words, P.recordsBefore) + getU64(this.words, P.eventsDiscarded));
  }

  /** The i-th page, a view on the snapshot's bytes (a complete CTF packet). */
  page(i: number): Uint8Array {
    if (!Number.isInteger(i) || i < 0 || i >= this.pageCount) {
      throw new RingbufError('ERR_RINGBUF_ARGUMENT', `page ${i} is outside 0..${this.pageCount - 1}`);
    }
    return this.bytes.subarray(i * this.pageSize, (i + 1) * this.pageSize);
  }

  /** The decoded header of the i-th page. */
  pageHeader(i: number): PageHeader {
    this.page(i);
    return readPageHeader(this.words, i * this.pageSize);
  }

  /** True once next() has returned false: every record was visited. */
  get ended(): boolean {
    return this.exhausted;
  }

  /** Goes back to the first record. */
  rewind(): void {
    this.pageIndex = -1;
    this.pos = this.end = 0;
    this.exhausted = false;
  }

  next(): boolean {
    const p = this.pos;
    if (p < this.end) {
      const w = this.words;
      const i = p >> 2;
      const w0 = w[i]!;
      const tag = w0 & 31;
      const len = w[i + 1]!;
      const padded = (len + 3) & ~3;
      const next = p + COMPACT_HEADER_SIZE + padded;
      // padded < len when a corrupt length wraps the 32-bit arithmetic.
      if (tag <= MAX_COMPACT_TYPE && next <= this.end && padded >= len) {
        this.advanceTs(w0 >>> 5);
        this.type = tag;
        this.offset = p + COMPACT_HEADER_SIZE;
        this.pos = next;
        return true;
      }
    }
    for (;;) {
      if (this.pos < this.end) {
        const r = this.decodeOther();
        if (r === 1) return true;
        if (r === 0) continue;
        throw new RingbufError(
          'ERR_RINGBUF_CORRUPT_PAGE',
          `page ${this.pageIndex}: record at page offset ${this.pos - this.pageBase} runs past the content end ${this.end - this.pageBase}`,
          this.pos,
        );
      }
      if (this.pageIndex + 1 >= this.pageCount) {
        this.exhausted = true;
        return false;
      }
      this.startPage(++this.pageIndex);
    }
  }

  private startPage(index: number): void {
    const base = index * this.pageSize;
    const u32 = this.words;
    const packet = getU64(u32, base + P.packetSize);
    if (packet !== this.pageSize * 8) {
      throw new RingbufError(
        'ERR_RINGBUF_CORRUPT_PAGE',
        `page ${index}: packet_size ${packet} bits, expected ${this.pageSize * 8}`,
        base + P.packetSize,
      );
    }
    const content = getU64(u32, base + P.contentSize);
    if (content % 32 !== 0 || content < PAGE_HEADER_SIZE * 8 || content > packet) {
      throw new RingbufError(
        'ERR_RINGBUF_CORRUPT_PAGE',
        `page ${index}: content_size ${content} bits is not a multiple of 32 between ${PAGE_HEADER_SIZE * 8} and ${packet}`,
        base + P.contentSize,
      );
    }
    this.pageBase = base;
    this.setTs(getU64(u32, base + P.timestampBegin));
    this.pos = base + PAGE_HEADER_SIZE;
    this.end = base + content / 8;
  }
}

export interface SnapshotContext {
  region: Region;
  pageSize: number;
  pageCount: number;
  multiWriter: boolean;
}

/**
 * Copies the pages a live buffer holds, oldest first, while writers keep writing. Each page is checked against its
 * generation after the copy; when one was recycled under the copy, the pages before it are dropped too, so the
 * snapshot is always one gap-free run of pages ending at the writer's position.
 */
export function takeSnapshot(ctx: SnapshotContext): Snapshot {
  const { region, pageSize, pageCount } = ctx;
  const i32 = region.i32;
  const head = Atomics.load(i32, H.head >> 2);
  const out = new Uint8Array(head === -1 ? 0 : pageCount * pageSize);
  const outWords = new Uint32Array(out.buffer);
  let kept = 0;
  if (head !== -1) {
    const last = head >>> 0;
    for (let s = Math.max(0, last - pageCount + 1); s <= last; s++) {
      const base = HEADER_SIZE + (s % pageCount) * pageSize;
      const gen = s | 0;
      if (Atomics.load(i32, (base + P.seq) >> 2) !== gen) {
        kept = 0;
        continue;
      }
      let commit: number;
      let closed: boolean;
      if (ctx.multiWriter) {
        const closeEnd = Atomics.load(i32, (base + P.closeEnd) >> 2);
        const c = Atomics.load(i32, (base + P.commit) >> 2);
        closed = closeEnd !== 0 && c === closeEnd;
        commit = closed ? c : closeEnd === 0 && Atomics.load(i32, (base + P.reserved) >> 2) === c ? c : 0;
        if (commit === 0) break;
      } else {
        closed = (Atomics.load(i32, (base + P.flags) >> 2) & PAGE_CLOSED) !== 0;
        commit = Atomics.load(i32, (base + P.commit) >> 2);
      }
      if (commit < PAGE_HEADER_SIZE || commit > pageSize || commit % 4 !== 0) {
        kept = 0;
        continue;
      }
      const dst = kept * pageSize;
      out.set(region.u8.subarray(base, base + commit), dst);
      if (Atomics.load(i32, (base + P.seq) >> 2) !== gen) {
        kept = 0;
        continue;
      }
      out.fill(0, dst + commit, dst + pageSize);
      const walked = walkRecords(
        outWords,
        dst + PAGE_HEADER_SIZE,
        dst + commit,
        getU64(outWords, dst + P.timestampBegin),
      );
      if (walked.stop !== dst + commit) {
        throw new RingbufError(
          'ERR_RINGBUF_CORRUPT_PAGE',
          `page ${s}: records do not add up to its committed size ${commit}`,
          base,
        );
      }
      // Make the copy a complete packet: an open page gets its end now.
      setU64(outWords, dst + P.contentSize, commit * 8);
      setU64(outWords, dst + P.packetSize, pageSize * 8);
      if (!closed || ctx.multiWriter) {
        setU64(outWords, dst + P.timestampEnd, walked.maxTs);
        outWords[(dst + P.recordCount) >> 2] = walked.count;
      }
      kept++;
    }
  }
  return new Snapshot(out.subarray(0, kept * pageSize), pageSize);
}
