/**
 * trace.dat from a raw-pages directory: its metadata files and `cpuN.raw` pages handed to trace-format's
 * `writeTraceDatPages`, which copies the pages verbatim (no decoding), or, for a directory about to be removed that
 * left head room, to `completeTraceDatPages`, which builds the file around the largest CPU's pages where they lie.
 */
import {
  closeSync,
  existsSync,
  fchmodSync,
  ftruncateSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  completeTraceDatPages,
  finalizingLine,
  listRawCpuFiles,
  outputMode,
  RAW_FINALIZING_FILE,
  RAW_FINALIZING_REGIONS_FILE,
  RAW_REGIONS_FILE,
  type RawCpuFile,
  type TraceDatCpuPages,
  type TraceDatFileBytes,
  type TraceDatPagesInput,
  traceDatPagesHeadSize,
  writeTraceDatHead,
  writeTraceDatPages,
} from '@evtrace/trace-format';
import { copyFileRange } from './copy-range.ts';
import { ioError, outputError } from './errors.ts';
import { collapseRange, planFinalLayout } from './regions.ts';

/** Facts of a raw-pages directory the trace.dat writer needs. */
export interface RawDirInfo {
  readonly pageSize: number;
  /** `cpuN.raw` files by CPU number, each with where its pages lie (after the head room, if any). */
  readonly cpuFiles: ReadonlyMap<number, RawCpuFile>;
}

/** Lists the `cpuN.raw` files and the sub-buffer size of a raw-pages directory. */
export function rawDirInfo(dir: string): RawDirInfo {
  const cpuFiles = new Map(listRawCpuFiles(dir).map((f) => [f.cpu, f]));
  const kb = Number(readFileSync(join(dir, 'buffer_subbuf_size_kb'), 'utf8').trim());
  return { pageSize: kb * 1024, cpuFiles };
}

/** Bytes of whole pages in a `cpuN.raw`. */
function pagesBytes(f: RawCpuFile, pageSize: number): number {
  const size = Math.max(0, Math.min(f.end ?? Number.POSITIVE_INFINITY, statSync(f.file).size) - f.start);
  return size - (size % pageSize);
}

const readOptional = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : '');

/** Every `events/SYSTEM/EVENT/format` text of a raw-pages directory, grouped by system. */
function formatsBySystem(eventsDir: string): [string, string[]][] {
  const out: [string, string[]][] = [];
  for (const system of readdirSync(eventsDir, { withFileTypes: true })) {
    if (!system.isDirectory()) continue;
    const texts: string[] = [];
    for (const event of readdirSync(join(eventsDir, system.name)).sort()) {
      const file = join(eventsDir, system.name, event, 'format');
      if (existsSync(file)) texts.push(readFileSync(file, 'utf8'));
    }
    if (texts.length > 0) out.push([system.name, texts]);
  }
  return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/**
 * The recording's copy of /proc/kallsyms: copied by the kernel into the trace.dat where it can, cheaper than reading
 * it into memory and writing it out (record.bench.ts prints a recording's CPU). An empty text when absent.
 */
function kallsymsBytes(dir: string, out: string): TraceDatFileBytes | string {
  const file = join(dir, 'kallsyms');
  const stat = statSync(file, { throwIfNoEntry: false });
  if (stat === undefined) return '';
  return {
    size: stat.size,
    read: () => readFileSync(file),
    copyTo: (fd, at) => copyFromFile(file, 0, stat.size, fd, at, out),
  };
}

/**
 * Copies `length` bytes of `file` from offset `from` into `fd` at `at` with copy_file_range; false when the kernel
 * cannot. A failed write (ENOSPC) is the output's; an input that ends early is the file's.
 */
function copyFromFile(file: string, from: number, length: number, fd: number, at: number, out: string): boolean {
  const input = openSync(file, 'r');
  try {
    return copyFileRange(input, fd, length, { from, to: at });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw Object.assign(error as Error, { path: code === 'ERR_SHORT_INPUT' ? file : out });
  } finally {
    closeSync(input);
  }
}

/**
 * A `cpuN.raw` file's whole pages: copied by the kernel where it can (copy_file_range), else read in 1 MiB chunks
 * (one buffer reused: each chunk is written before the next).
 */
function filePages(f: RawCpuFile, size: number, chunk: Buffer, out: string): TraceDatCpuPages {
  return {
    size,
    copyTo: (fd, at) => copyFromFile(f.file, f.start, size, fd, at, out),
    *chunks() {
      const fd = openSync(f.file, 'r');
      try {
        for (let left = size, at = f.start; left > 0; ) {
          const n = readSync(fd, chunk, 0, Math.min(chunk.length, left), at);
          if (n === 0) break;
          yield chunk.subarray(0, n);
          left -= n;
          at += n;
        }
      } finally {
        closeSync(fd);
      }
    },
  };
}

/** The trace.dat head's inputs from a raw-pages directory (everything but the pages). */
function headInput(
  dir: string,
  pageSize: number,
  kallsyms: TraceDatFileBytes | string,
): Omit<TraceDatPagesInput, 'cpus'> {
  const demo = readOptional(join(dir, 'DEMO')).trim();
  return {
    pageSize,
    headerPage: readFileSync(join(dir, 'events', 'header_page'), 'utf8'),
    headerEvent: readFileSync(join(dir, 'events', 'header_event'), 'utf8'),
    formats: formatsBySystem(join(dir, 'events')),
    kallsyms,
    cmdlines: readOptional(join(dir, 'saved_cmdlines')),
    printk: readOptional(join(dir, 'printk_formats')),
    clock: /\[(\w+)\]/.exec(readOptional(join(dir, 'trace_clock')))?.[1] ?? 'local',
    // A demo recording says so where trace-cmd shows the system it came from.
    ...(demo !== '' ? { uname: demo } : {}),
  };
}

/** The longest `saved_cmdlines` line: a 7-digit pid (PID_MAX_LIMIT), a space, a 15-byte comm, a newline. */
const CMDLINE_BYTES = 24;

/**
 * The room a trace.dat head of the raw-pages directory `dir` needs (its metadata as written now, kallsyms included)
 * for `cpuCount` CPUs, with `cmdlines` entries of saved cmdlines at most, page-aligned. A recorder leaves this much
 * before each CPU's pages (`head_room`) so that {@link writeTraceDatFromRawDir} can build the trace.dat around one
 * of the files instead of copying its pages.
 */
export function traceDatHeadRoom(dir: string, pageSize: number, cpuCount: number, cmdlines: number): number {
  // Only lengths count: kallsyms is never read here.
  return traceDatPagesHeadSize(
    { ...headInput(dir, pageSize, kallsymsBytes(dir, dir)), cmdlines: ' '.repeat(cmdlines * CMDLINE_BYTES) },
    cpuCount,
  );
}

/** Options of {@link writeTraceDatFromRawDir}. */
export interface RawDirTraceDatOptions {
  /**
   * The directory is removed afterwards: the trace.dat may be built around its largest `cpuN.raw` (when it has head
   * room), which then becomes `out`, instead of copying those pages. Default false.
   */
  readonly consume?: boolean;
  /** `out` is readable by every user; default: its owner only, or the mode of the file it replaces. */
  readonly share?: boolean;
  /** Write through a symbolic link at `out`. Default true; false replaces whatever is there. */
  readonly followLinks?: boolean;
}

/**
 * Writes `out` as trace.dat v6 from the raw-pages directory `dir`. Trailing partial pages (a writer killed
 * mid-page) are left out. Returns the bytes written.
 *
 * With `consume` and head room in the directory, the largest `cpuN.raw` is completed in place (the head written into
 * its room, the other CPUs' pages appended) and renamed to `out`. `finalizing` tells readers where its pages are
 * meanwhile, so a failure at any point leaves the directory readable and convertible.
 *
 * @throws TracefsError `ERR_TRACEFS_IO` or `_PERMISSION` naming a file that could not be read, `ERR_TRACEFS_OUTPUT`
 * when `out` could not be written.
 */
export function writeTraceDatFromRawDir(dir: string, out: string, options: RawDirTraceDatOptions = {}): number {
  const { pageSize, cpuFiles } = rawDirInfo(dir);
  const cpuCount = cpuFiles.size === 0 ? 1 : Math.max(...cpuFiles.keys()) + 1;
  const chunk = Buffer.allocUnsafe(Math.max(pageSize, 1 << 20));
  const cpus: TraceDatCpuPages[] = [];
  let anchor: RawCpuFile | undefined;
  for (let cpu = 0; cpu < cpuCount; cpu++) {
    const f = cpuFiles.get(cpu);
    const size = f === undefined ? 0 : pagesBytes(f, pageSize);
    if (f !== undefined && size > 0 && (anchor === undefined || size > cpus[anchor.cpu]!.size)) anchor = f;
    cpus.push(f === undefined ? { size: 0, chunks: () => [] } : filePages(f, size, chunk, out));
  }
  try {
    // Bytes as recorded: ~5 MB of symbols are never decoded to text.
    const input = { ...headInput(dir, pageSize, kallsymsBytes(dir, out)), cpus };
    // Not onto an existing non-regular path when links are followed: a rename would replace a symbolic link that a
    // write goes through.
    const target = lstatSync(out, { throwIfNoEntry: false });
    const access = { share: options.share === true, followLinks: options.followLinks !== false };
    const renamable = target === undefined || target.isFile() || !access.followLinks;
    const mode = outputMode(access, false, target?.isFile() ? target : undefined);
    if (existsSync(join(dir, RAW_REGIONS_FILE))) {
      // Not over a finalizing that failed part-way: the file's layout must stay as that marker says.
      if (options.consume === true && renamable && !existsSync(join(dir, RAW_FINALIZING_REGIONS_FILE))) {
        const size = completeRegions(dir, input, [...cpuFiles.values()], out, mode);
        if (size !== undefined) return size;
        // The file system could not close the holes: copy from the layout as it now stands.
        return writeTraceDatFromRawDir(dir, out, access);
      }
      return writeTraceDatPages(out, input, access);
    }
    // Not over a finalizing that failed part-way: its file's extent must stay as that marker says.
    const untouched = [...cpuFiles.values()].every((f) => f.end === undefined);
    if (
      options.consume === true &&
      untouched &&
      renamable &&
      anchor !== undefined &&
      anchor.start > 0 &&
      anchor.start % pageSize === 0
    ) {
      if (traceDatPagesHeadSize(input, cpuCount) <= anchor.start) {
        // A file replaced by the rename keeps its permissions, as one written over would.
        return completeInPlace(dir, input, anchor, out, mode);
      }
    }
    return writeTraceDatPages(out, input, access);
  } catch (error) {
    const path = (error as NodeJS.ErrnoException)?.path;
    if (path === out) throw outputError(out, error);
    if (typeof path === 'string') throw ioError(path, error, 'cannot read');
    throw error;
  }
}

/**
 * Runs `fn`, making its failure the output's (the raw directory sits beside it): always with `force`, else only when
 * the error names no raw file already.
 */
function blameOutput<T>(out: string, fn: () => T, force = true): T {
  try {
    return fn();
  } catch (error) {
    const path = (error as NodeJS.ErrnoException).path;
    throw Object.assign(error as Error, { path: force || path === undefined ? out : path });
  }
}

/** Writes a finalizing marker atomically: a reader sees either no marker or the whole of it. */
function writeMarker(file: string, text: string): void {
  writeFileSync(`${file}.next`, text);
  renameSync(`${file}.next`, file);
}

/** Builds the trace.dat around `anchor`'s pages, then renames its file to `out`. */
function completeInPlace(
  dir: string,
  input: TraceDatPagesInput,
  anchor: RawCpuFile,
  out: string,
  mode: number,
): number {
  const end = anchor.start + input.cpus[anchor.cpu]!.size;
  // Said before the file changes.
  blameOutput(out, () => writeMarker(join(dir, RAW_FINALIZING_FILE), `${anchor.cpu} ${anchor.start} ${end}\n`));
  // An error that already names a raw file (kallsyms cut short) keeps that name.
  const size = blameOutput(
    out,
    () => {
      const fd = openSync(anchor.file, 'r+');
      try {
        ftruncateSync(fd, end);
        fchmodSync(fd, mode);
        return completeTraceDatPages(fd, input, { cpu: anchor.cpu, offset: anchor.start });
      } finally {
        closeSync(fd);
      }
    },
    false,
  );
  blameOutput(out, () => renameSync(anchor.file, out));
  return size;
}

/**
 * Completes the regions layout's pages file as the trace.dat: writes the head into the room before the first region,
 * closes the hole after each region's pages (COLLAPSE_RANGE: the pages that follow move down without being copied),
 * then renames the file to `out`. `finalizing_regions`, written before anything moves, gives the layout at every
 * size the file passes through, so a failure at any point leaves the directory readable. Returns the size of the
 * file, or undefined when the file system cannot collapse (then the layout is as it was, or as the marker says).
 */
function completeRegions(
  dir: string,
  input: TraceDatPagesInput,
  files: readonly RawCpuFile[],
  out: string,
  mode: number,
): number | undefined {
  const file = files[0]?.file;
  if (file === undefined || files.some((f) => f.start % input.pageSize !== 0)) return undefined;
  const plan = planFinalLayout(files.map((f) => ({ cpu: f.cpu, start: f.start, size: input.cpus[f.cpu]!.size })));
  const offsets = input.cpus.map((_, cpu) => plan.offsets.get(cpu) ?? plan.first);
  const marker = plan.steps.map((s) => finalizingLine(s.size, s.extents)).join('');
  const fd = blameOutput(out, () => openSync(file, 'r+'));
  try {
    // A page cut short at the end of the file (a write that failed) goes first: the sizes in the marker are exact.
    blameOutput(out, () => ftruncateSync(fd, plan.steps[0]!.size));
    blameOutput(out, () => writeMarker(join(dir, RAW_FINALIZING_REGIONS_FILE), marker));
    // The head lies before the first region, which no hole moves: written first, it is right whatever follows.
    blameOutput(out, () => writeTraceDatHead(fd, input, offsets));
    for (const h of plan.holes) if (!blameOutput(out, () => collapseRange(fd, h.at, h.length))) return undefined;
    blameOutput(out, () => fchmodSync(fd, mode));
  } finally {
    closeSync(fd);
  }
  blameOutput(out, () => renameSync(file, out));
  return plan.size;
}
