/**
 * Raw kernel pages as the trace.dat writers take them: each CPU's pages, bytes that lie in a file (which the kernel
 * may copy), the kernel's own header and format texts; and the check that a CPU's chunks add up to its size.
 */
import { TraceFormatError } from '../../errors.ts';

/**
 * Bytes that already lie in a file (a recording's copy of /proc/kallsyms), for {@link writeTraceDatPages} and
 * {@link completeTraceDatPages}: copied by the kernel where the caller can, read otherwise.
 */
export interface TraceDatFileBytes {
  readonly size: number;
  /** The `size` bytes, read when they cannot be copied. */
  read(): Uint8Array;
  /**
   * Writes the bytes into the open file `fd` at offset `at` without passing them through user space (e.g.
   * `copy_file_range`). Returns false, having written nothing, when it cannot. Version 6 only.
   */
  copyTo?(fd: number, at: number): boolean;
}

/** One CPU's raw pages for {@link writeTraceDatPages}. */
export interface TraceDatCpuPages {
  /** Bytes of pages (a whole number of sub-buffers). */
  readonly size: number;
  /** The pages' bytes in order, `size` in total: read lazily (e.g. a file in large chunks) and written as they come. */
  chunks(): Iterable<Uint8Array>;
  /**
   * Writes the `size` bytes into the open file `fd` at offset `at` without passing them through user space (e.g.
   * `copy_file_range`). Returns false, having written nothing, when it cannot: the writer then reads
   * {@link chunks}. Version 6 only.
   */
  copyTo?(fd: number, at: number): boolean;
}

/** What {@link writeTraceDatPages} stores: the kernel's own texts and the raw pages of each CPU. */
export interface TraceDatPagesInput {
  /** Sub-buffer size the pages were read with. */
  readonly pageSize: number;
  /** `events/header_page` text. */
  readonly headerPage: string;
  /** `events/header_event` text. */
  readonly headerEvent: string;
  /** `format` file texts by system (`[system, formats]`); the `ftrace` system's go to the ftrace section. */
  readonly formats: readonly (readonly [system: string, formats: readonly string[]])[];
  /** `/proc/kallsyms` as bytes (copied as is), text, or bytes in a file. */
  readonly kallsyms?: Uint8Array | string | TraceDatFileBytes;
  /** `saved_cmdlines` text (`pid comm` lines). */
  readonly cmdlines?: string;
  /** `printk_formats` text (`0xADDR : "text"` lines). */
  readonly printk?: string;
  /** Trace clock name. Default `local`. */
  readonly clock?: string;
  /** Text of the uname option (trace-cmd shows it as the system the trace came from). */
  readonly uname?: string;
  /** Pages by CPU number (index); CPUs without pages have size 0. */
  readonly cpus: readonly TraceDatCpuPages[];
}

/** A CPU's chunks, checked to add up to its declared size. */
export function* checkedChunks(pages: TraceDatCpuPages, cpu: number, file: string | undefined): Iterable<Uint8Array> {
  let seen = 0;
  for (const c of pages.chunks()) {
    seen += c.length;
    if (seen > pages.size) break;
    yield c;
  }
  if (seen !== pages.size)
    throw new TraceFormatError('ERR_TRACE_DAT', `CPU ${cpu}'s pages are ${seen} bytes, not ${pages.size}`, {
      ...(file !== undefined ? { file } : {}),
    });
}
