/**
 * Decoding of one ring-buffer sub-buffer ("page") as `trace_pipe_raw` returns it and trace.dat stores it: a header
 * (timestamp, commit word) followed by compressed event headers. Each event header is a 32-bit word holding a 5-bit
 * type_len and a 27-bit time delta (type_len in the low bits on little-endian kernels, the high bits on big-endian):
 * 1..28 = data of type_len*4 bytes, 0 = data whose length follows, 29 = padding, 30 = time extend, 31 = absolute stamp.
 */
import { TraceFormatError } from '../errors.ts';
import type { PageLayout } from './headers.ts';
import { RecordError } from './record.ts';

const TYPE_PADDING = 29;
const TYPE_TIME_EXTEND = 30;
const TYPE_TIME_STAMP = 31;
const DELTA_MASK = (1 << 27) - 1;
const MISSED_EVENTS = 0x80000000;
const MISSED_STORED = 0x40000000;
/** Data lengths use the commit word's low bits; the top two are the missed-events flags. */
const COMMIT_MASK = 0x3fffffff;
/** Absolute time stamps carry 59 bits; the rest come from the page's time. */
const ABS_MASK = (1n << 59n) - 1n;

/** What a page header says besides its records. */
export interface PageInfo {
  /** The page's base timestamp. */
  readonly tsNs: bigint;
  /** Bytes of records in the page. */
  readonly dataLength: number;
  /** The kernel dropped events before this page (overwrite mode or a reader that fell behind). */
  readonly missedEvents: boolean;
  /** How many, when the kernel could store the count after the data. */
  readonly missedCount?: number;
  /**
   * The page's first entry is a data record (not a time stamp or padding): the record trace-cmd reports the page's
   * missed events with (libtraceevent's kbuffer gives the count to a record at the page's start only).
   */
  readonly leadingRecord: boolean;
}

/** Receives each data record: its timestamp, and the byte range of its payload (starting with `common_type`). */
export type RecordSink = (tsNs: bigint, start: number, length: number) => void;

/** Where a page lies, for error messages. */
export interface PageSource {
  readonly file?: string;
  /** File offset of `bytes[0]`. */
  readonly fileOffset?: number;
}

/**
 * Walks the page at `bytes[pageStart..pageStart+layout.pageSize)`, calling `onRecord` for each data record in order.
 * Returns the header's facts. A page shorter than `pageSize` is accepted when it holds all its committed data.
 *
 * @throws TraceFormatError `ERR_TRACE_FTRACE_PAGE` naming the file offset of the corrupt header or record.
 */
export function readPage(
  bytes: Uint8Array,
  pageStart: number,
  layout: PageLayout,
  onRecord: RecordSink,
  source: PageSource = {},
): PageInfo {
  const le = layout.byteOrder === 'le';
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const fileBase = source.fileOffset ?? 0;
  const fail = (at: number, why: string): never => {
    throw new TraceFormatError('ERR_TRACE_FTRACE_PAGE', why, { file: source.file, offset: fileBase + at });
  };
  const avail = Math.min(layout.pageSize, bytes.byteLength - pageStart);
  if (avail < layout.dataOffset) fail(pageStart, `page header truncated (${avail} bytes)`);
  const pageTs = view.getBigUint64(pageStart + layout.timestampOffset, le);
  // On big-endian kernels with an 8-byte commit the flags sit in the low-order word, i.e. the second four bytes.
  const commitAt = pageStart + layout.commitOffset + (!le && layout.commitSize === 8 ? 4 : 0);
  const commit = view.getUint32(commitAt, le);
  const dataLength = commit & COMMIT_MASK;
  const dataStart = pageStart + layout.dataOffset;
  const dataEnd = dataStart + dataLength;
  if (dataLength > layout.pageSize - layout.dataOffset || dataEnd > pageStart + avail) {
    fail(commitAt, `commit says ${dataLength} bytes of data, the page holds ${avail - layout.dataOffset}`);
  }
  const missedEvents = (commit & MISSED_EVENTS) !== 0;
  let missedCount: number | undefined;
  if (missedEvents && (commit & MISSED_STORED) !== 0 && dataEnd + layout.commitSize <= pageStart + avail) {
    missedCount = layout.commitSize === 8 ? Number(view.getBigUint64(dataEnd, le)) : view.getUint32(dataEnd, le);
  }
  let ts = pageTs;
  let p = dataStart;
  const first = dataStart < dataEnd ? view.getUint32(dataStart, le) : 0;
  const firstType = le ? first & 31 : first >>> 27;
  const leadingRecord = dataStart < dataEnd && firstType <= 28;
  while (p < dataEnd) {
    if (dataEnd - p < 4) fail(p, 'event header cut by the end of the data');
    const word = view.getUint32(p, le);
    const typeLen = le ? word & 31 : word >>> 27;
    const delta = le ? word >>> 5 : word & DELTA_MASK;
    if (typeLen === 0) {
      if (dataEnd - p < 8) fail(p, 'event length word cut by the end of the data');
      const len = view.getUint32(p + 4, le);
      if (len < 4 || p + 4 + len > dataEnd) fail(p, `event length ${len} runs past the data end`);
      ts += BigInt(delta);
      onRecord(ts, p + 8, len - 4);
      p += 4 + ((len + 3) & ~3);
    } else if (typeLen <= 28) {
      const len = typeLen * 4;
      if (p + 4 + len > dataEnd) fail(p, `event of ${len} bytes runs past the data end`);
      ts += BigInt(delta);
      onRecord(ts, p + 4, len);
      p += 4 + len;
    } else if (typeLen === TYPE_PADDING) {
      // A zero delta marks the rest of the page as unused; otherwise it is a discarded event of known length, whose
      // delta still counts: the next event's delta is relative to it (as libtraceevent's kbuffer reads it).
      if (delta === 0) break;
      if (dataEnd - p < 8) fail(p, 'padding length cut by the end of the data');
      const len = view.getUint32(p + 4, le);
      if (p + 4 + len > dataEnd || len < 4) fail(p, `padding of ${len} bytes runs past the data end`);
      ts += BigInt(delta);
      p += 4 + len;
    } else {
      if (dataEnd - p < 8) fail(p, 'time stamp cut by the end of the data');
      const high = view.getUint32(p + 4, le);
      const value = (BigInt(high) << 27n) | BigInt(delta);
      ts = typeLen === TYPE_TIME_EXTEND ? ts + value : (ts & ~ABS_MASK) | value;
      p += 8;
    }
  }
  return missedCount === undefined
    ? { tsNs: pageTs, dataLength, missedEvents, leadingRecord }
    : { tsNs: pageTs, dataLength, missedEvents, missedCount, leadingRecord };
}

/** Constants of the event header, for writers. */
export const EVENT_TYPE = { padding: TYPE_PADDING, timeExtend: TYPE_TIME_EXTEND, timeStamp: TYPE_TIME_STAMP } as const;

/** Options of {@link checkPages}. */
export interface CheckPagesOptions {
  /** Takes a corrupt page's error instead of throwing it: the page is then left out of the result. */
  readonly onCorrupt?: (error: TraceFormatError) => void;
  /**
   * Checks each record's bounds against its class: the `RecordCheck` `compileRecordCheck` compiled for the record's
   * event id. Its failure is reported as the page's, with the file offset of the field at fault.
   */
  readonly record?: (view: DataView, start: number, length: number) => void;
}

/**
 * Checks every page of `bytes` as a reader walks it (header, commit size, the chain of event headers, and each
 * record's bounds with `options.record`), decoding no value, so a copy of the pages reads as they do. Returns
 * `bytes`, or with `onCorrupt` the pages that read, joined, after reporting each one left out.
 *
 * @throws TraceFormatError `ERR_TRACE_FTRACE_PAGE` naming the file and byte offset of the first corrupt page, unless
 *   `onCorrupt` takes it.
 */
export function checkPages(
  bytes: Buffer,
  layout: PageLayout,
  source: PageSource = {},
  options: CheckPagesOptions = {},
): Buffer {
  const { onCorrupt, record } = options;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const sink: RecordSink =
    record === undefined
      ? () => {}
      : (_ts, start, length) => {
          try {
            record(view, start, length);
          } catch (e) {
            if (!(e instanceof RecordError)) throw e;
            throw new TraceFormatError('ERR_TRACE_FTRACE_PAGE', e.message, {
              file: source.file,
              offset: (source.fileOffset ?? 0) + e.at,
            });
          }
        };
  let kept: Buffer[] | undefined;
  for (let at = 0; at < bytes.byteLength; at += layout.pageSize) {
    try {
      readPage(bytes, at, layout, sink, source);
      kept?.push(bytes.subarray(at, at + layout.pageSize));
    } catch (error) {
      if (onCorrupt === undefined || !(error instanceof TraceFormatError)) throw error;
      onCorrupt(error);
      kept ??= [bytes.subarray(0, at)];
    }
  }
  return kept === undefined ? bytes : Buffer.concat(kept);
}
