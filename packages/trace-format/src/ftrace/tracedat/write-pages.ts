/**
 * trace.dat from raw kernel pages, copied verbatim (no decoding) after the kernel's own header and format files:
 * streamed into a new file, or completed around pages that already lie in one (a recording's).
 */
import { writeSync } from 'node:fs';
import { TraceFormatError } from '../../errors.ts';
import { type OutputAccess, writeFileAtomically } from '../../output/atomic.ts';
import type { Meta } from './blocks.ts';
import { checkedChunks, type TraceDatPagesInput } from './pages.ts';
import { asBuffer, isFileBytes, putBytes, putParts } from './parts.ts';
import { v6HeadParts, writeV6File } from './v6.ts';
import { writeV7 } from './v7.ts';

/** Options of {@link writeTraceDatPages}. */
export interface TraceDatPagesOptions extends OutputAccess {
  /** File version. Default 6. Either is streamed: version 7 compresses each CPU's pages ten at a time as they come. */
  readonly version?: 6 | 7;
  /** Version 7 compression. Default `zstd`. */
  readonly compression?: 'none' | 'zstd' | 'zlib';
}

/**
 * Writes `file` as trace.dat with each CPU's raw pages copied verbatim (no decoding) after the kernel's own header
 * and format files, kallsyms and saved cmdlines, whole or not at all (see {@link writeFileAtomically}): readable by
 * its owner only unless `share` or `mode` says otherwise. Returns the bytes written.
 *
 * @throws TraceFormatError `ERR_TRACE_DAT` when a CPU's chunks do not add up to its declared size; `ERR_TRACE_OUTPUT`
 *   naming `file` when it cannot be written.
 */
export function writeTraceDatPages(
  file: string,
  input: TraceDatPagesInput,
  options: TraceDatPagesOptions = {},
): number {
  const version = options.version ?? 6;
  const { pageSize } = input;
  const meta = pagesMeta(input);
  const cpus = input.cpus.length === 0 ? [{ size: 0, chunks: () => [] }] : input.cpus;
  if (version === 7) {
    const compression = options.compression ?? 'zstd';
    return writeFileAtomically(
      file,
      (fd) => writeV7(meta, cpus, pageSize, compression, { write: (bytes, at) => putBytes(fd, bytes, at) }, file),
      options,
    );
  }
  return writeFileAtomically(file, (fd) => writeV6File(fd, meta, cpus, pageSize, file), options);
}

/** Where one CPU's pages already lie in a file that {@link completeTraceDatPages} completes. */
export interface TraceDatAnchor {
  readonly cpu: number;
  /** Offset of its first page: the room left for the head. */
  readonly offset: number;
}

/**
 * The size of a version 6 file's head for `input` and `cpuCount` CPUs: the bytes before the first page, whatever the
 * page counts. A recorder that leaves this much room before one CPU's pages can have the file completed around them.
 */
export function traceDatPagesHeadSize(input: Omit<TraceDatPagesInput, 'cpus'>, cpuCount: number): number {
  return v6HeadParts(pagesMeta(input), new Array<number>(Math.max(1, cpuCount)).fill(0), input.pageSize).length;
}

/**
 * Completes a version 6 trace.dat in the open file `fd`, positioned at 0, which already holds the pages of CPU
 * `anchor.cpu` at `[anchor.offset, anchor.offset + size)`: writes the head before them and every other CPU's pages
 * after them (the CPU table gives each CPU's offset, so the order of the regions is free). Nothing is copied of the
 * anchor's pages, the bulk of a recording on few CPUs. Returns the size of the file.
 *
 * @throws TraceFormatError `ERR_TRACE_DAT` when the head does not fit in the room before the anchor's pages or a
 *   CPU's chunks do not add up to its size; Node's `fs` errors when the file cannot be written.
 */
export function completeTraceDatPages(fd: number, input: TraceDatPagesInput, anchor: TraceDatAnchor): number {
  const { pageSize } = input;
  const cpus = input.cpus;
  const pagesLength = (size: number) => Math.ceil(size / pageSize) * pageSize;
  if (anchor.offset % pageSize !== 0 || cpus[anchor.cpu] === undefined) {
    throw new TraceFormatError('ERR_TRACE_DAT', `no CPU ${anchor.cpu} pages at offset ${anchor.offset}`);
  }
  const offsets: number[] = [];
  let end = anchor.offset + pagesLength(cpus[anchor.cpu]!.size);
  for (let cpu = 0; cpu < cpus.length; cpu++) {
    if (cpu === anchor.cpu) offsets.push(anchor.offset);
    else {
      offsets.push(end);
      end += pagesLength(cpus[cpu]!.size);
    }
  }
  const head = v6HeadParts(
    pagesMeta(input),
    cpus.map((c) => c.size),
    pageSize,
    offsets,
  );
  if (head.length > anchor.offset) {
    throw new TraceFormatError(
      'ERR_TRACE_DAT',
      `the head needs ${head.length} bytes; ${anchor.offset} were left before CPU ${anchor.cpu}'s pages`,
    );
  }
  putParts(fd, head.parts);
  for (let cpu = 0; cpu < cpus.length; cpu++) {
    const pages = cpus[cpu]!;
    if (cpu === anchor.cpu || pages.size === 0) continue;
    if (pages.copyTo?.(fd, offsets[cpu]) === true) continue;
    let at = offsets[cpu]!;
    for (const chunk of checkedChunks(pages, cpu, undefined)) {
      for (let done = 0; done < chunk.length; ) done += writeSync(fd, chunk, done, chunk.length - done, at + done);
      at += chunk.length;
    }
  }
  return end;
}

/**
 * Writes the head of a version 6 trace.dat into the open file `fd`, whose every CPU's pages already lie at
 * `offsets[cpu]` (page-aligned, after the head): nothing of the pages is read, written or moved. Returns the size
 * of the head.
 *
 * @throws TraceFormatError `ERR_TRACE_DAT` when an offset is not page-aligned or the head does not fit before the
 *   first pages; Node's `fs` errors when the file cannot be written.
 */
export function writeTraceDatHead(fd: number, input: TraceDatPagesInput, offsets: readonly number[]): number {
  const { pageSize, cpus } = input;
  if (offsets.length !== cpus.length || offsets.some((o) => !Number.isSafeInteger(o) || o < 0 || o % pageSize !== 0)) {
    throw new TraceFormatError('ERR_TRACE_DAT', `CPU offsets must be ${cpus.length} multiples of ${pageSize}`);
  }
  const head = v6HeadParts(
    pagesMeta(input),
    cpus.map((c) => c.size),
    pageSize,
    offsets,
  );
  const first = Math.min(...offsets.filter((_, cpu) => cpus[cpu]!.size > 0));
  if (head.length > first) {
    throw new TraceFormatError('ERR_TRACE_DAT', `the head needs ${head.length} bytes; the first pages are at ${first}`);
  }
  putParts(fd, head.parts);
  return head.length;
}

function pagesMeta(input: Omit<TraceDatPagesInput, 'cpus'>): Meta {
  return {
    headerPage: input.headerPage,
    headerEvent: input.headerEvent,
    ftrace: input.formats.filter(([s]) => s === 'ftrace').flatMap(([, f]) => f),
    systems: input.formats.filter(([s]) => s !== 'ftrace').map(([s, f]) => [s, [...f]] as [string, string[]]),
    kallsyms: isFileBytes(input.kallsyms) ? input.kallsyms : asBuffer(input.kallsyms ?? ''),
    cmdlines: input.cmdlines ?? '',
    printk: input.printk ?? '',
    clock: input.clock ?? 'local',
    ...(input.uname !== undefined ? { uname: input.uname } : {}),
  };
}
