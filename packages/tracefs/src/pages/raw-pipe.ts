/**
 * The per-CPU raw pipes of a tracefs instance (`per_cpu/cpuN/trace_pipe_raw`), read without blocking one sub-buffer
 * at a time, as the live sources read them: the agent's kernel source and the persistent-buffer source of
 * @evtrace/persistent-events drain their pipes through {@link RawPipeDrain}. (The recorder reads batches of pages
 * straight into files, see record/reader.ts.)
 */
import { closeSync, constants, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import type { PageLayout } from '@evtrace/trace-format';
import { ioError } from '../errors.ts';
import { countPageRecords, type PageCount, parseCpuStats } from './pages.ts';

/** One CPU's raw pipe, opened O_RDONLY|O_NONBLOCK. */
export interface RawPipe {
  readonly cpu: number;
  readonly fd: number;
  /** `per_cpu/cpuN/trace_pipe_raw` of the instance, for error messages. */
  readonly path: string;
  /** The time given to the last page read: pages are stamped non-decreasing, as ring-buffer timestamps must be. */
  lastTs: number;
}

/** The CPUs an instance has raw pipes for (its `per_cpu/cpuN` directories), in ascending order. */
export function rawPipeCpus(instance: string): number[] {
  let names: string[];
  try {
    names = readdirSync(join(instance, 'per_cpu'));
  } catch (error) {
    throw ioError(join(instance, 'per_cpu'), error, 'cannot list the CPUs');
  }
  const cpus: number[] = [];
  for (const name of names) {
    const m = /^cpu(\d+)$/.exec(name);
    if (m !== null) cpus.push(Number(m[1]));
  }
  return cpus.sort((a, b) => a - b);
}

/**
 * Opens one CPU's raw pipe of the instance directory `instance`, without blocking.
 *
 * @throws TracefsError `ERR_TRACEFS_PERMISSION` or `ERR_TRACEFS_IO` naming the file.
 */
export function openRawPipe(instance: string, cpu: number): RawPipe {
  const path = join(instance, 'per_cpu', `cpu${cpu}`, 'trace_pipe_raw');
  try {
    return { cpu, fd: openSync(path, constants.O_RDONLY | constants.O_NONBLOCK), path, lastTs: 0 };
  } catch (error) {
    throw ioError(path, error, 'cannot open the raw pipe');
  }
}

/** Closes raw pipes, ignoring those already closed. */
export function closeRawPipes(pipes: readonly RawPipe[]): void {
  for (const p of pipes) {
    try {
      closeSync(p.fd);
    } catch {}
  }
}

/**
 * The events the kernel lost on one CPU of an instance (overrun, dropped and commit-overrun events of its
 * `per_cpu/cpuN/stats`); 0 when the file cannot be read.
 */
export function kernelLoss(instance: string, cpu: number): number {
  try {
    const s = parseCpuStats(readFileSync(join(instance, 'per_cpu', `cpu${cpu}`, 'stats'), 'utf8'));
    return (s.overrun ?? 0) + (s['dropped events'] ?? 0) + (s['commit overrun'] ?? 0);
  } catch {
    return 0;
  }
}

/**
 * Receives a page a drain read: `page` (reused by the next read: copy what must outlive the call), its base time
 * kept non-decreasing (ns, the trace clock's), and its records counted.
 */
export type RawPageHandler = (page: Buffer, ts: number, count: Readonly<PageCount>) => void;

/**
 * Runs `drains` (the drains of one poll) with stack traces off: every drained pipe ends in an EAGAIN, which Node
 * throws, and without a stack trace that error is cheap.
 */
export function withoutStackTraces<T>(drains: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return drains();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** Pages one drain takes from a CPU at most: a burst is spread over polls rather than stalling the loop. */
export const MAX_PAGES_PER_DRAIN = 256;

/** Reads raw pipes page by page into one page buffer, counting each page's records. */
export class RawPipeDrain {
  readonly layout: PageLayout;
  readonly #page: Buffer;
  readonly #count: PageCount = { records: 0, dataBytes: 0, missed: false, corruptAt: -1 };
  readonly #byType = new Float64Array(65536);

  /** `layout`: the instance's page layout (its `header_page` at its sub-buffer size). */
  constructor(layout: PageLayout) {
    this.layout = layout;
    this.#page = Buffer.alloc(layout.pageSize);
  }

  /**
   * Hands `onPage` the pages `pipe` has ready, at most {@link MAX_PAGES_PER_DRAIN}, stopping at the first page less
   * than half full (the kernel handed out what it had). A short read is padded with zeros to a whole page.
   * Returns the bytes of record data read.
   *
   * @throws TracefsError when a read fails other than with EAGAIN, naming the pipe.
   */
  drain(pipe: RawPipe, onPage: RawPageHandler): number {
    const page = this.#page;
    const half = (page.length - this.layout.dataOffset) / 2;
    let bytes = 0;
    for (let n = 0; n < MAX_PAGES_PER_DRAIN; n++) {
      let got: number;
      try {
        got = readSync(pipe.fd, page, 0, page.length, null);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
        throw ioError(pipe.path, error, 'reading the raw pipe failed');
      }
      if (got === 0) break;
      if (got < page.length) page.fill(0, got);
      const count = countPageRecords(page, 0, this.layout, this.#byType, this.#count);
      // The page's base time (u64 ns).
      const ts = Math.max(pipe.lastTs, Number(page.readBigUInt64LE(0)));
      pipe.lastTs = ts;
      onPage(page, ts, count);
      bytes += count.dataBytes;
      if (count.dataBytes < half) break;
    }
    return bytes;
  }
}
