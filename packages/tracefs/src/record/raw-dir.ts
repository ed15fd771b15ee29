/**
 * The raw-pages directory a recording writes (the layouts @evtrace/trace-format's `openRawPagesDir` reads): the
 * directory, each CPU's `cpuN.raw` or its region of one `cpus.raw`, and the head room left for a trace.dat. A write
 * that fails (a full disk) is an `ERR_TRACEFS_OUTPUT` naming the file.
 */
import {
  closeSync,
  constants,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { errnoText } from '@evtrace/errors';
import { RAW_HEAD_ROOM_FILE, RAW_REGIONS_FILE, RAW_REGIONS_PAGES_FILE, regionsText } from '@evtrace/trace-format';
import { outputError, TracefsError } from '../errors.ts';
import { largestFileSize, planRegions, type Region, regionsSupported } from '../output/regions.ts';
import { traceDatHeadRoom } from '../output/tracedat.ts';

/** Creates the output directory, private unless shared; its parent must exist. */
export function createOutputDir(dir: string, share = false): void {
  try {
    mkdirSync(dir, share ? 0o755 : 0o700);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? `directory ${dirname(dir)} does not exist`
        : code === 'EEXIST'
          ? 'already exists'
          : errnoText(error);
    throw new TracefsError('ERR_TRACEFS_OUTPUT', `cannot create ${dir}: ${why}`, {
      path: dir,
      errno: code,
      cause: error,
    });
  }
}

/** Runs a write of the output directory, turning its failure (a full disk) into an `ERR_TRACEFS_OUTPUT` naming `file`. */
export function output<T>(file: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw outputError(file, error);
  }
}

/**
 * The head room of a recording that will become a trace.dat, written to `head_room`: the head as the metadata
 * stands, with the kernel's whole saved-cmdlines table (the one copied at the end may have grown). 0, and no file,
 * when the table's size cannot be read.
 */
export function headRoom(tracefs: string, dir: string, pageSize: number, cpus: readonly number[]): number {
  let entries: number;
  try {
    entries = Number(readFileSync(join(tracefs, 'saved_cmdlines_size'), 'utf8').trim());
  } catch {
    return 0;
  }
  if (!Number.isSafeInteger(entries) || entries <= 0) return 0;
  const room = traceDatHeadRoom(dir, pageSize, Math.max(0, ...cpus) + 1, entries);
  output(join(dir, RAW_HEAD_ROOM_FILE), () => writeFileSync(join(dir, RAW_HEAD_ROOM_FILE), `${room}\n`));
  return room;
}

/** Opens a new `cpuN.raw` whose pages start after `room` bytes of hole: appends land at the end. */
export function openRaw(path: string, room: number): number {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_APPEND, 0o644);
  if (room > 0) {
    try {
      ftruncateSync(fd, room);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }
  return fd;
}

/**
 * Opens the regions layout's pages file where the file system allows it (see regions.ts), with `cpu_regions` saying
 * where each CPU's pages go; undefined elsewhere (each CPU then gets its own `cpuN.raw`).
 */
export function openRegions(
  dir: string,
  cpus: readonly number[],
  room: number,
  pageSize: number,
): { fd: number; path: string; regions: Region[] } | undefined {
  if (cpus.length === 0 || !regionsSupported(dir)) return undefined;
  const path = join(dir, RAW_REGIONS_PAGES_FILE);
  const fd = output(path, () => openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_TRUNC, 0o644));
  try {
    const max = largestFileSize(fd, room);
    const align = Math.max(pageSize, 1 << 20);
    const regions = max === undefined ? [] : planRegions(cpus, room, max, align);
    if (regions.length === 0 || regions[0]!.end - regions[0]!.start < align) {
      closeSync(fd);
      rmSync(path, { force: true });
      return undefined;
    }
    const file = join(dir, RAW_REGIONS_FILE);
    output(file, () => {
      writeFileSync(`${file}.next`, regionsText(regions));
      renameSync(`${file}.next`, file);
    });
    return { fd, path, regions };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}
