/**
 * The page-reading loop of the recorder, shared by the in-thread reader and the per-CPU worker threads: drains
 * `trace_pipe_raw` file descriptors (opened O_NONBLOCK by the recorder) into `cpuN.raw` descriptors, or into each
 * CPU's region of one `cpus.raw`, counting records by type on the way.
 *
 * One `readv` fetches up to {@link BATCH_PAGES} sub-buffers: `trace_pipe_raw` has no `read_iter`, so the kernel
 * calls its `read` once per iovec (one sub-buffer each) and stops at the first EAGAIN, returning what it got. Under
 * load that is one system call and one write per 64 pages instead of one call per page, and an EAGAIN is thrown
 * only when a CPU had nothing at all.
 */
import { fstatSync, ftruncateSync, readvSync, writeSync } from 'node:fs';
import type { PageLayout } from '@evtrace/trace-format';
import { ioError, outputError } from '../errors.ts';
import { PageCounter } from '../pages/page-counter.ts';
import type { PagesCount } from '../pages/pages.ts';
import { withoutStackTraces } from '../pages/raw-pipe.ts';

/** One CPU's descriptors. */
export interface CpuFds {
  readonly cpu: number;
  /** `per_cpu/cpuN/trace_pipe_raw`, opened O_RDONLY|O_NONBLOCK. */
  readonly pipe: number;
  /** The `cpuN.raw` output. */
  readonly out: number;
  /** Its path, for error messages. */
  readonly outPath: string;
  /**
   * The CPU's region of a file shared by every CPU (the regions layout): pages are written from `start` and never
   * reach `end`. Absent: `out` is the CPU's own file, opened for appending.
   */
  readonly region?: { readonly start: number; readonly end: number };
}

/** What a reader has read so far. */
export interface ReaderTotals {
  /** Records by `common_type`. */
  readonly byType: Float64Array;
  pages: number;
  dataBytes: number;
  rawBytes: number;
  /** Pages with the kernel's missed-events flag, by CPU. */
  readonly missedPages: Record<number, number>;
}

/** Sub-buffers asked for by one readv and written by one write (256 KiB at 4 KiB pages: stays in the L2 cache). */
const BATCH_PAGES = 64;
export const MIN_POLL_MS = 2;
/**
 * The longest sleep, even when idle: a burst must not fill a buffer before the next pass (at this sleep a default
 * buffer absorbs several times what the benchmark's load writes per CPU).
 */
export const MAX_POLL_MS = 20;
/** The share of a CPU buffer the busiest CPU may fill between passes. */
const FILL_BETWEEN_PASSES = 1 / 8;

/**
 * The sleep before the next pass: as long as the busiest CPU needs to fill an eighth of its buffer at the rate just
 * measured, shortened at once when data comes faster, lengthened at most twofold per pass.
 */
export function nextInterval(previous: number, fastestBytes: number, elapsedMs: number, bufferBytes: number): number {
  const rate = fastestBytes / Math.max(elapsedMs, 0.1);
  const target = rate > 0 ? (bufferBytes * FILL_BETWEEN_PASSES) / rate : MAX_POLL_MS;
  return Math.max(MIN_POLL_MS, Math.min(MAX_POLL_MS, target, previous * 2));
}

/** A region about to overflow into the next CPU's: the recording stops there, as on a full disk. */
function regionFull(c: CpuFds): Error {
  return new Error(`CPU ${c.cpu}'s region of ${c.region!.end - c.region!.start} bytes is full`);
}

/** Reads sub-buffers of some CPUs. */
export class PageReader {
  readonly totals: ReaderTotals;
  readonly #cpus: readonly CpuFds[];
  readonly #pageSize: number;
  readonly #pageCap: number;
  readonly #buf: Buffer;
  /** The batch buffer cut into one view per sub-buffer: the iovecs of every readv. */
  readonly #iov: readonly Buffer[];
  readonly #count: PagesCount = { records: 0, dataBytes: 0, missedPages: 0 };
  /** Counts each batch where it was read (the batch buffer lives in its memory). */
  readonly #counter: PageCounter;
  /** Where each CPU's next page goes in its region, by index in `cpus`; unused for appended files. */
  readonly #next: number[];

  constructor(cpus: readonly CpuFds[], layout: PageLayout, bufferBytes: number) {
    this.#cpus = cpus;
    this.#pageSize = layout.pageSize;
    this.#pageCap = Math.max(1, Math.floor(bufferBytes / layout.pageSize));
    this.#counter = new PageCounter(layout, BATCH_PAGES);
    this.#buf = this.#counter.pages;
    this.#iov = Array.from({ length: BATCH_PAGES }, (_, i) =>
      this.#buf.subarray(i * layout.pageSize, (i + 1) * layout.pageSize),
    );
    this.#next = cpus.map((c) => c.region?.start ?? 0);
    this.totals = { byType: this.#counter.byType, pages: 0, dataBytes: 0, rawBytes: 0, missedPages: {} };
    for (const c of cpus) this.totals.missedPages[c.cpu] = 0;
  }

  /** Drains every CPU once (at most one buffer's worth each); returns the most record bytes one CPU gave. */
  drainAll(): number {
    // An idle CPU answers EAGAIN, which Node throws: without a stack trace the error is cheap.
    return withoutStackTraces(() => {
      let fastest = 0;
      for (let i = 0; i < this.#cpus.length; i++) fastest = Math.max(fastest, this.#drain(this.#cpus[i]!, i));
      return fastest;
    });
  }

  /** Drains every CPU until all are empty (after tracing stopped). */
  drainToEnd(): void {
    while (this.drainAll() > 0);
  }

  #flush(c: CpuFds, index: number, length: number): void {
    let done = 0;
    const at = this.#next[index]!;
    try {
      if (c.region === undefined) {
        while (done < length) done += writeSync(c.out, this.#buf, done, length - done);
      } else {
        // The whole pages that still fit go in before a full region stops the recording, as a full disk would.
        const room = Math.min(length, c.region.end - at);
        const fits = room - (room % this.#pageSize);
        while (done < fits) done += writeSync(c.out, this.#buf, done, fits - done, at + done);
        this.#next[index] = at + fits;
        if (fits < length) {
          this.totals.rawBytes += fits;
          throw regionFull(c);
        }
      }
    } catch (error) {
      if (c.region === undefined) this.#dropPartialPage(c);
      else this.#unmarkPartialPage(c, at + done);
      throw outputError(c.outPath, error);
    }
    this.totals.rawBytes += length;
  }

  /**
   * Zeroes the header of a page that a failed write left part-written in a region, so that readers end the region
   * before it (a page that starts with zeros was never written). Its first block was written, so this needs no
   * space; if even that fails, a reader finds the page torn.
   */
  #unmarkPartialPage(c: CpuFds, end: number): void {
    const partial = end % this.#pageSize;
    if (partial === 0) return;
    try {
      writeSync(c.out, Buffer.alloc(Math.min(partial, 16)), 0, Math.min(partial, 16), end - partial);
    } catch {}
  }

  /**
   * Cuts a `cpuN.raw` that a failed write (a full disk) left ending mid-page back to its last whole page, so the
   * directory stays readable to the end. Shrinking a file needs no space; if even that fails, readers skip the
   * trailing partial page anyway.
   */
  #dropPartialPage(c: CpuFds): void {
    try {
      const size = fstatSync(c.out).size;
      ftruncateSync(c.out, size - (size % this.#pageSize));
    } catch {}
  }

  #drain(c: CpuFds, index: number): number {
    const buf = this.#buf;
    const size = this.#pageSize;
    const t = this.totals;
    let bytes = 0;
    for (let pages = 0; pages < this.#pageCap; ) {
      const want = Math.min(BATCH_PAGES, this.#pageCap - pages);
      let got: number;
      try {
        got = readvSync(c.pipe, want === BATCH_PAGES ? this.#iov : this.#iov.slice(0, want));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
        throw ioError(`per_cpu/cpu${c.cpu}/trace_pipe_raw`, error, 'reading the raw pipe failed');
      }
      if (got === 0) break;
      // Every read returns a whole sub-buffer; a short one would be padded so the file stays page-aligned.
      const n = Math.ceil(got / size);
      if (got < n * size) buf.fill(0, got, n * size);
      const count = this.#counter.count(n, this.#count);
      t.missedPages[c.cpu]! += count.missedPages;
      bytes += count.dataBytes;
      t.dataBytes += count.dataBytes;
      t.pages += n;
      pages += n;
      this.#flush(c, index, n * size);
      // Fewer pages than asked for: the kernel hit EAGAIN, the buffer is empty.
      if (n < want) break;
    }
    return bytes;
  }
}
