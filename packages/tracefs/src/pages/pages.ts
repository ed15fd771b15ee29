/**
 * A lean walk over raw ring-buffer pages that only counts records by `common_type`, for the recorder's live summary
 * (no timestamps, no decoding). `readPage` of @evtrace/trace-format is the full decoder; tests check both agree.
 */
import type { PageLayout } from '@evtrace/trace-format';

const COMMIT_MASK = 0x3fffffff;
const MISSED_EVENTS = 0x80000000;

/** What one page holds, for the recorder. */
export interface PageCount {
  /** Data records in the page. */
  records: number;
  /** Bytes of record data (the commit length). */
  dataBytes: number;
  /** The page says the kernel lost events before it. */
  missed: boolean;
  /** The page is malformed from this byte offset on (relative to the page); -1 when it is sound. */
  corruptAt: number;
}

/** What a run of pages holds, for the recorder's read loop. */
export interface PagesCount {
  /** Data records in the pages. */
  records: number;
  /** Bytes of record data (the commit lengths of the sound pages). */
  dataBytes: number;
  /** Pages that say the kernel lost events before them. */
  missedPages: number;
}

/**
 * Counts the data records of the little-endian page at `bytes[start..start+layout.pageSize)`, adding one to
 * `byType[common_type]` for each. Stops at the first malformed header and reports where: a length that runs past
 * the commit, or one that leaves the 4-byte alignment every kernel record keeps.
 */
export function countPageRecords(
  bytes: Buffer,
  start: number,
  layout: PageLayout,
  byType: Float64Array,
  out: PageCount,
): PageCount {
  if (((bytes.byteOffset + start) & 3) !== 0) {
    // A page at an unaligned address (a small pooled Buffer): counted from an aligned copy.
    const n = Math.min(layout.pageSize, bytes.length - start);
    const copy = Buffer.alloc(n + 3);
    const at = (4 - (copy.byteOffset & 3)) & 3;
    bytes.copy(copy, at, start, start + n);
    return countPageRecords(copy.subarray(at, at + n), 0, layout, byType, out);
  }
  const stop = walkPages(wordsOf(bytes), bytes.length, start, 1, layout, byType, scratch);
  out.records = scratch.records;
  out.dataBytes = scratch.dataBytes;
  out.missed = scratch.missedPages > 0;
  out.corruptAt = stop === BAD_COMMIT ? layout.commitOffset : stop >= 0 ? stop - start : -1;
  return out;
}

const scratch: PagesCount = { records: 0, dataBytes: 0, missedPages: 0 };

/**
 * {@link countPageRecords} over `pages` consecutive pages from `start` (4-byte aligned, as the recorder's batch
 * buffer is): records and data bytes summed, pages with the missed-events flag counted. The read loop counts with
 * its WebAssembly twin (`PageCounter`, count-pages.wat), which tests hold to this one.
 */
export function countPages(
  bytes: Buffer,
  start: number,
  pages: number,
  layout: PageLayout,
  byType: Float64Array,
  out: PagesCount,
): PagesCount {
  if (((bytes.byteOffset + start) & 3) !== 0 || (layout.pageSize & 3) !== 0) {
    throw new RangeError(`countPages needs 4-byte aligned pages (offset ${bytes.byteOffset + start})`);
  }
  walkPages(wordsOf(bytes), bytes.length, start, pages, layout, byType, out);
  return out;
}

let lastBytes: Buffer | undefined;
let lastWords: Uint32Array<ArrayBufferLike> = new Uint32Array(0);

/** `bytes` as u32 words (its byteOffset is 4-aligned), the view kept for the next page of the same buffer. */
function wordsOf(bytes: Buffer): Uint32Array<ArrayBufferLike> {
  if (bytes !== lastBytes || lastWords.buffer !== bytes.buffer) {
    lastWords = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length >>> 2);
    lastBytes = bytes;
  }
  return lastWords;
}

/** {@link walkPages}: the last page's commit length runs past its page or the buffer. */
const BAD_COMMIT = -2;

/**
 * Walks the records of `pages` pages from the aligned byte offset `start` of `w` (`length` bytes long), summing into
 * `out`. Returns where the last page's walk stopped, relative to `w`: -1 at its end marker or its commit's end,
 * {@link BAD_COMMIT}, else the offset of a malformed header (or past a padding record that leaves the 4-byte
 * alignment, which every other record length keeps). One function, whole-word loads: a third of the cost of
 * Buffer's byte-composing reads, and a single unit for V8 to compile.
 */
function walkPages(
  w: Uint32Array<ArrayBufferLike>,
  length: number,
  start: number,
  pages: number,
  layout: PageLayout,
  byType: Float64Array,
  out: PagesCount,
): number {
  let records = 0;
  let dataBytes = 0;
  let missedPages = 0;
  let stop = -1;
  for (let n = 0, page = start; n < pages; n++, page += layout.pageSize) {
    const commit = w[(page + layout.commitOffset) >> 2]!;
    if ((commit & MISSED_EVENTS) !== 0) missedPages++;
    const dataLength = commit & COMMIT_MASK;
    let p = page + layout.dataOffset;
    const end = p + dataLength;
    if (end > page + layout.pageSize || end > length) {
      stop = BAD_COMMIT;
      continue;
    }
    dataBytes += dataLength;
    stop = -1;
    while (p < end) {
      if (end - p < 4) break;
      const word = w[p >> 2]!;
      const typeLen = word & 31;
      let payload: number;
      let next: number;
      if (typeLen !== 0 && typeLen <= 28) {
        next = p + 4 + typeLen * 4;
        if (next > end) break;
        payload = p + 4;
      } else if (typeLen === 0) {
        if (end - p < 8) break;
        const len = w[(p >> 2) + 1]!;
        if (len < 4 || p + 4 + len > end) break;
        payload = p + 8;
        next = p + 4 + ((len + 3) & ~3);
      } else if (typeLen === 29) {
        // The end marker: the rest of the page holds no records.
        if (word >>> 5 === 0) {
          p = -1;
          break;
        }
        if (end - p < 8) break;
        const len = w[(p >> 2) + 1]!;
        if (len < 4 || p + 4 + len > end) break;
        p += 4 + len;
        // The only record whose length can leave the 4-byte alignment: a corrupt one, reported where it ends.
        if ((len & 3) !== 0) break;
        continue;
      } else {
        if (end - p < 8) break;
        p += 8;
        continue;
      }
      byType[w[payload >> 2]! & 0xffff]!++;
      records++;
      p = next;
    }
    // p is -1 at the end marker, end when the records filled the commit, else where a header was malformed.
    stop = p === end ? -1 : p;
  }
  out.records = records;
  out.dataBytes = dataBytes;
  out.missedPages = missedPages;
  return stop;
}

/** Parses `per_cpu/cpuN/stats`: `name: value` lines into numbers keyed by name (`overrun`, `dropped events`...). */
export function parseCpuStats(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const value = Number(line.slice(colon + 1).trim());
    if (Number.isFinite(value)) out[line.slice(0, colon).trim()] = value;
  }
  return out;
}
