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
  const commit = bytes.readUInt32LE(start + layout.commitOffset);
  const dataLength = commit & COMMIT_MASK;
  out.records = 0;
  out.dataBytes = dataLength;
  out.missed = (commit & MISSED_EVENTS) !== 0;
  out.corruptAt = -1;
  const p = start + layout.dataOffset;
  const end = p + dataLength;
  if (end > start + layout.pageSize || end > bytes.length) {
    out.corruptAt = layout.commitOffset;
    out.dataBytes = 0;
    return out;
  }
  // Whole-word loads: a third of the cost of Buffer's byte-composing reads.
  const at = walkWords(wordsOf(bytes), p, end, byType, out);
  if (at >= 0 && at < end) out.corruptAt = at - start;
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

/**
 * Walks records from the aligned byte offset `p` (relative to the first byte of `w`) to `end`. Returns -1 at the
 * page's end marker, else where it stopped: `end`, a malformed header, or past a padding record that leaves the
 * 4-byte alignment (every other record length keeps it).
 */
function walkWords(
  w: Uint32Array<ArrayBufferLike>,
  p: number,
  end: number,
  byType: Float64Array,
  out: PageCount,
): number {
  let records = 0;
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
      if (word >>> 5 === 0) {
        out.records += records;
        return -1;
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
  out.records += records;
  return p;
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
