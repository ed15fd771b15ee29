// A data page (sub-buffer) starts with an 80-byte header of fixed-width little-endian integers, naturally aligned,
// shaped like a CTF packet context so a closed page can be written to disk verbatim as one CTF packet.

/** Byte offsets of the page header fields, relative to the page start. */
export const P = {
  /** u64: timestamp of the first record. */
  timestampBegin: 0,
  /** u64: timestamp of the last record (set when the page closes). */
  timestampEnd: 8,
  /** u64: bits of header + records (CTF content_size), set when the page closes. */
  contentSize: 16,
  /** u64: bits of the whole page (CTF packet_size). */
  packetSize: 24,
  /** u64: records the writer dropped (discard mode) since the stream began, as of this page's opening. */
  eventsDiscarded: 32,
  /** u64: page sequence number; its low word is the generation readers check before and after reading. */
  seq: 40,
  /** u64: records committed to earlier pages since the stream began. */
  recordsBefore: 48,
  /** u32: bytes from the page start up to the end of the committed records (Atomics). */
  commit: 56,
  /** u32: multi-writer reservation cursor, bytes from the page start (Atomics). */
  reserved: 60,
  /** u32: multi-writer: where the records end once the page is full, 0 while open (Atomics). */
  closeEnd: 64,
  /** u32: records in the page (set when a single-writer page closes). */
  recordCount: 68,
  /** u32: PAGE_* flags (Atomics). */
  flags: 72,
  /** u32: stream id given by the writer (thread, CPU). */
  streamId: 76,
} as const;

export const PAGE_HEADER_SIZE = 80;

/** The writer has finished the page: commit, content_size, timestamp_end and record_count are final. */
export const PAGE_CLOSED = 1;
/** Records were dropped between the previous page and this one. */
export const PAGE_LOST_BEFORE = 2;
/** The page was filled by several writers (records carry extended headers; record_count is 0). */
export const PAGE_MULTI_WRITER = 4;

/** A page header, decoded. */
export interface PageHeader {
  timestampBegin: number;
  timestampEnd: number;
  /** Bytes of header + records. */
  contentSize: number;
  /** Bytes of the page. */
  packetSize: number;
  eventsDiscarded: number;
  seq: number;
  recordsBefore: number;
  recordCount: number;
  flags: number;
  streamId: number;
}

const TWO32 = 4294967296;

/** Decodes the page header at 4-aligned byte offset `at` of `u32`'s buffer. */
export function readPageHeader(u32: Uint32Array, at: number): PageHeader {
  const i = at >> 2;
  const u64 = (off: number) => u32[i + (off >> 2)]! + u32[i + (off >> 2) + 1]! * TWO32;
  return {
    timestampBegin: u64(P.timestampBegin),
    timestampEnd: u64(P.timestampEnd),
    contentSize: u64(P.contentSize) / 8,
    packetSize: u64(P.packetSize) / 8,
    eventsDiscarded: u64(P.eventsDiscarded),
    seq: u64(P.seq),
    recordsBefore: u64(P.recordsBefore),
    recordCount: u32[i + (P.recordCount >> 2)]!,
    flags: u32[i + (P.flags >> 2)]!,
    streamId: u32[i + (P.streamId >> 2)]!,
  };
}
