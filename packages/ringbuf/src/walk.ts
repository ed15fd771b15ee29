import {
  COMPACT_HEADER_SIZE,
  EXTENDED_HEADER_SIZE,
  MAX_COMPACT_TYPE,
  TAG_EXTENDED,
  TAG_PADDING,
  TS_LOW_MASK,
  TS_LOW_RANGE,
} from './record.ts';
import { getU64 } from './u64.ts';

/** What a walk over a page's records found. */
export interface Walk {
  /** Records (padding excluded). */
  count: number;
  /** Timestamp of the last record (tsBegin when none). */
  lastTs: number;
  /** Largest timestamp (extended records may go back in time). */
  maxTs: number;
  /** Where the walk stopped: `end`, or the first record that does not fit. */
  stop: number;
}

/** Walks the records in [start, end) of the words `u32`, rebuilding timestamps from `tsBegin`. */
export function walkRecords(u32: Uint32Array, start: number, end: number, tsBegin: number): Walk {
  let at = start;
  let ts = tsBegin;
  let maxTs = tsBegin;
  let count = 0;
  while (at + COMPACT_HEADER_SIZE <= end) {
    const w0 = u32[at >> 2]!;
    const tag = w0 & 31;
    let header = COMPACT_HEADER_SIZE;
    let len: number;
    if (tag === TAG_EXTENDED) {
      header = EXTENDED_HEADER_SIZE;
      if (at + header > end) break;
      len = u32[(at >> 2) + 4]!;
    } else {
      len = u32[(at >> 2) + 1]!;
    }
    const next = at + header + ((len + 3) & ~3);
    if (next > end || next < at + header + len) break;
    if (tag === TAG_EXTENDED) ts = getU64(u32, at + 8);
    else if (tag <= MAX_COMPACT_TYPE) ts += ((w0 >>> 5) - (ts % TS_LOW_RANGE)) & TS_LOW_MASK;
    if (tag !== TAG_PADDING) {
      count++;
      if (ts > maxTs) maxTs = ts;
    }
    at = next;
  }
  return { count, lastTs: ts, maxTs, stop: at };
}
