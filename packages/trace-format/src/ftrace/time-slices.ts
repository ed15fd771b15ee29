/**
 * Time slices of an ftrace recording, for readers that share one recording between threads: slice k is
 * `[startNs + k * widthNs, startNs + (k + 1) * widthNs)` of the pages' clock. A thread that takes every n-th slice
 * decodes only its slices' records (through an {@link EventReadOptions} `select` test, which sees each record's
 * time), and the slices' text, written in slice order, is the whole recording's.
 */
import type { RecordTest } from '../model/types.ts';
import type { CpuPages } from './events.ts';
import type { PageLayout } from './headers.ts';
import type { FtraceReader } from './raw-dir.ts';

/** Equal spans of a recording's time, counted from its first page. */
export interface TimeSlices {
  readonly startNs: bigint;
  readonly widthNs: bigint;
  /** Records the recording holds, estimated from its bytes of pages. */
  readonly records: number;
}

/** An ftrace record with its header takes about this many bytes of a page (kmem, sched and irq events). */
const BYTES_PER_RECORD = 48;

/**
 * Slices of `reader`'s recording that hold about `recordsPerSlice` records each when events are spread evenly: its
 * span (from the earliest first page to the latest last page) divided by its page bytes' record estimate. Reads the
 * first and last page of each CPU (a compressed file's first and last chunk), never the rest. Undefined when the
 * recording has no pages.
 */
export function timeSlices(reader: FtraceReader, recordsPerSlice = 32768): TimeSlices | undefined {
  const layout = reader.metadata.page;
  let first: bigint | undefined;
  let last: bigint | undefined;
  let pageBytes = 0;
  for (const cpu of reader.cpuPages()) {
    const ends = pageEnds(cpu, layout);
    if (ends === undefined) continue;
    pageBytes += ends.bytes;
    if (first === undefined || ends.first < first) first = ends.first;
    if (last === undefined || ends.last > last) last = ends.last;
  }
  if (first === undefined || last === undefined) return undefined;
  const records = Math.round(pageBytes / BYTES_PER_RECORD);
  const slices = BigInt(Math.max(1, Math.round(records / recordsPerSlice)));
  const span = last - first + 1n;
  return { startNs: first, widthNs: span / slices > 0n ? span / slices : 1n, records };
}

/** The slice `tsNs` falls in (slice 0 takes every time before the start). */
export function sliceOf(slices: TimeSlices, tsNs: bigint): number {
  return tsNs <= slices.startNs ? 0 : Number((tsNs - slices.startNs) / slices.widthNs);
}

/**
 * A {@link RecordTest} passing the records whose time falls in a slice `k` with `k % count === index`, then `test`
 * (when given). The slice's bounds are kept between calls, so a record within the last one costs two comparisons.
 */
export function sliceTest(slices: TimeSlices, index: number, count: number, test?: RecordTest): RecordTest {
  let lo = 0n;
  let hi = -1n;
  let mine = false;
  return (view, start, length, cpu, tsNs) => {
    if (tsNs < lo || tsNs >= hi) {
      const k = sliceOf(slices, tsNs);
      lo = k === 0 ? -(1n << 63n) : slices.startNs + BigInt(k) * slices.widthNs;
      hi = slices.startNs + BigInt(k + 1) * slices.widthNs;
      mine = k % count === index;
    }
    return mine && (test === undefined || test(view, start, length, cpu, tsNs));
  };
}

/** The times of a CPU's first and last non-empty pages, and its bytes of pages; undefined when it has none. */
function pageEnds(pages: CpuPages, layout: PageLayout): { first: bigint; last: bigint; bytes: number } | undefined {
  let parts: Buffer[];
  let bytes: number;
  if (pages.chunks !== undefined) {
    if (pages.chunks.length === 0) return undefined;
    const head = pages.chunks[0]!.read();
    parts = pages.chunks.length === 1 ? [head] : [head, pages.chunks[pages.chunks.length - 1]!.read()];
    bytes = pages.chunks.reduce((n, c) => n + c.size, 0);
  } else if (typeof pages.bytes === 'function') {
    parts = [...pages.bytes()];
    bytes = parts.reduce((n, c) => n + c.length, 0);
  } else {
    parts = [pages.bytes];
    bytes = pages.bytes.length;
  }
  let first: bigint | undefined;
  let last: bigint | undefined;
  for (const part of parts) {
    const view = new DataView(part.buffer, part.byteOffset, part.byteLength);
    for (let at = 0; at + layout.dataOffset <= part.length; at += layout.pageSize) {
      const committed =
        layout.commitSize === 8
          ? Number(view.getBigUint64(at + layout.commitOffset, layout.byteOrder === 'le') & 0x3fffffffn)
          : view.getUint32(at + layout.commitOffset, layout.byteOrder === 'le') & 0x3fffffff;
      if (committed === 0) continue;
      const ts = view.getBigUint64(at + layout.timestampOffset, layout.byteOrder === 'le');
      if (first === undefined) first = ts;
      last = ts;
    }
  }
  return first === undefined || last === undefined ? undefined : { first, last, bytes };
}
