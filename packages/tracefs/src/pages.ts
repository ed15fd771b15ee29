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
 * `byType[common_type]` for each. Stops at the first malformed header and reports where.
 */
export function countPageRecords(
  bytes: Buffer,
  start: number,
  layout: PageLayout,
  byType: Float64Array,
  out: PageCount,
): PageCount {
  const commit = bytes.readUInt32LE(start + layout.commitOffset);
  const dataLength = commit & COMMIT_MASK;
  out.records = 0;
  out.dataBytes = dataLength;
  out.missed = (commit & MISSED_EVENTS) !== 0;
  out.corruptAt = -1;
  let p = start + layout.dataOffset;
  const end = p + dataLength;
  if (end > start + layout.pageSize || end > bytes.length) {
    out.corruptAt = layout.commitOffset;
    out.dataBytes = 0;
    return out;
  }
  while (p < end) {
    if (end - p < 4) break;
    const word = bytes.readUInt32LE(p);
    const typeLen = word & 31;
    let payload: number;
    let next: number;
    if (typeLen === 0) {
      if (end - p < 8) break;
      const len = bytes.readUInt32LE(p + 4);
      if (len < 4 || p + 4 + len > end) break;
      payload = p + 8;
      next = p + 4 + ((len + 3) & ~3);
    } else if (typeLen <= 28) {
      if (p + 4 + typeLen * 4 > end) break;
      payload = p + 4;
      next = p + 4 + typeLen * 4;
    } else if (typeLen === 29) {
      if (word >>> 5 === 0) return out;
      if (end - p < 8) break;
      const len = bytes.readUInt32LE(p + 4);
      if (len < 4 || p + 4 + len > end) break;
      p += 4 + len;
      continue;
    } else {
      if (end - p < 8) break;
      p += 8;
      continue;
    }
    byType[bytes.readUInt16LE(payload)]!++;
    out.records++;
    p = next;
  }
  if (p < end) out.corruptAt = p - start;
  return out;
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
