/**
 * The regions layout of a raw-pages directory: every CPU's pages in one file, `cpus.raw`, each CPU from its own
 * offset (`cpu_regions`: `CPU OFFSET` lines), far enough apart that no CPU reaches the next one's. The holes between
 * them cost nothing on a file system with sparse files, and a recorder that turns the directory into a trace.dat
 * closes them (`fallocate` COLLAPSE_RANGE) instead of copying every CPU's pages but one.
 *
 * A region's pages end at its first page that was never written: a hole reads as zeros, and a sub-buffer from the
 * kernel never starts with 16 zero bytes (its commit word counts at least one byte). While the holes are closed,
 * `finalizing_regions` gives the layout for each size the file passes through (`SIZE CPU START END ...` lines).
 */
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { endianness } from 'node:os';
import { join } from 'node:path';
import { TraceFormatError } from '../errors.ts';

/** The pages file of the regions layout. */
export const RAW_REGIONS_PAGES_FILE = 'cpus.raw';
/** `CPU OFFSET` lines: where each CPU's pages start in {@link RAW_REGIONS_PAGES_FILE}. */
export const RAW_REGIONS_FILE = 'cpu_regions';
/** `SIZE CPU START END ...` lines: the layout of the pages file at each size it takes while its holes are closed. */
export const RAW_FINALIZING_REGIONS_FILE = 'finalizing_regions';

/** Where one CPU's pages lie. */
export interface RegionExtent {
  readonly cpu: number;
  readonly start: number;
  readonly end: number;
}

/** The smallest block a file system allocates here: a torn write leaves whole blocks of zeros. */
const BLOCK = 4096;
/** Bytes of a sub-buffer header that are never all zero once the kernel wrote it (timestamp and commit). */
const HEADER_PROBE = 16;

function badFile(dir: string, name: string, what: string): TraceFormatError {
  return new TraceFormatError('ERR_TRACE_INPUT', `bad ${name}: ${what}`, { file: join(dir, name) });
}

/** Lines of whole numbers, or a TraceFormatError naming the file and line. */
function numberLines(dir: string, name: string, text: string, check: (n: readonly number[]) => string | undefined) {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  return lines.map((line, i) => {
    const words = line.trim().split(/\s+/);
    if (!words.every((w) => /^\d{1,15}$/.test(w))) throw badFile(dir, name, `line ${i + 1} ${JSON.stringify(line)}`);
    const numbers = words.map(Number);
    const problem = check(numbers);
    if (problem !== undefined) throw badFile(dir, name, `line ${i + 1} ${JSON.stringify(line)}: ${problem}`);
    return numbers;
  });
}

/** Parses `cpu_regions`: CPUs in order of their offsets, each once, offsets strictly increasing. */
export function parseRegions(dir: string, text: string): { cpu: number; start: number }[] {
  const rows = numberLines(dir, RAW_REGIONS_FILE, text, (n) => (n.length === 2 ? undefined : 'expected CPU OFFSET'));
  if (rows.length === 0) throw badFile(dir, RAW_REGIONS_FILE, 'no regions');
  const regions = rows.map(([cpu, start]) => ({ cpu: cpu!, start: start! }));
  for (let i = 1; i < regions.length; i++) {
    if (regions[i]!.start <= regions[i - 1]!.start) throw badFile(dir, RAW_REGIONS_FILE, 'offsets must increase');
  }
  if (new Set(regions.map((r) => r.cpu)).size !== regions.length) {
    throw badFile(dir, RAW_REGIONS_FILE, 'a CPU appears twice');
  }
  return regions;
}

/** Formats `cpu_regions`. */
export function regionsText(regions: readonly { cpu: number; start: number }[]): string {
  return regions.map((r) => `${r.cpu} ${r.start}\n`).join('');
}

/** Formats one `finalizing_regions` line: the file's size and every CPU's extent at that size. */
export function finalizingLine(size: number, extents: readonly RegionExtent[]): string {
  return `${size} ${extents.map((e) => `${e.cpu} ${e.start} ${e.end}`).join(' ')}\n`;
}

/** The extents `finalizing_regions` gives for a pages file of `size` bytes, or undefined if no line has that size. */
export function finalizingExtents(dir: string, text: string, size: number): RegionExtent[] | undefined {
  const rows = numberLines(dir, RAW_FINALIZING_REGIONS_FILE, text, (n) =>
    n.length >= 4 && (n.length - 1) % 3 === 0 ? undefined : 'expected SIZE then CPU START END triples',
  );
  const row = rows.find((n) => n[0] === size);
  if (row === undefined) return undefined;
  const extents: RegionExtent[] = [];
  for (let i = 1; i < row.length; i += 3) {
    const [cpu, start, end] = [row[i]!, row[i + 1]!, row[i + 2]!];
    if (end < start || end > size) throw badFile(dir, RAW_FINALIZING_REGIONS_FILE, `CPU ${cpu} ends outside the file`);
    extents.push({ cpu, start, end });
  }
  return extents;
}

/** Reads `length` bytes at `at` (fewer past the end of the file). */
function readAt(fd: number, at: number, length: number): Buffer {
  const buf = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, buf, done, length - done, at + done);
    if (n === 0) break;
    done += n;
  }
  return buf;
}

const isZero = (b: Uint8Array, from = 0, to = b.length) => {
  for (let i = from; i < to; i++) if (b[i] !== 0) return false;
  return true;
};

/**
 * A page whose header was written but whose later blocks were not (a writer killed in the middle of a write of a
 * sub-buffer larger than a block): some block it commits bytes in is all zeros, which a written record never is.
 */
function torn(fd: number, at: number, pageSize: number): boolean {
  if (pageSize <= BLOCK) return false;
  const page = readAt(fd, at, pageSize);
  // The commit word's low 32 bits hold the data length below its flag bits, in the kernel's (this machine's) order.
  const low = endianness() === 'LE' ? page.readUInt32LE(8) : page.readUInt32BE(12);
  const used = Math.min(pageSize, HEADER_PROBE + (low & 0x0fffffff));
  for (let b = BLOCK; b < used; b += BLOCK) if (isZero(page, b, Math.min(b + BLOCK, used))) return true;
  return false;
}

/**
 * The end of the pages written from `start`, below `bound`: a binary search for the first page that starts with
 * zeros (pages are written in order from `start`, so written pages form a prefix), less a torn last page.
 */
function regionEnd(fd: number, start: number, bound: number, pageSize: number): number {
  let lo = 0;
  let hi = Math.max(0, Math.floor((bound - start) / pageSize));
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (isZero(readAt(fd, start + mid * pageSize, HEADER_PROBE))) hi = mid;
    else lo = mid + 1;
  }
  if (lo > 0 && torn(fd, start + (lo - 1) * pageSize, pageSize)) lo--;
  return start + lo * pageSize;
}

/**
 * Every CPU's extent in the pages file of a regions-layout directory: from `finalizing_regions` while that file is
 * being completed, else found from `cpu_regions` and the pages themselves.
 *
 * @throws TraceFormatError `ERR_TRACE_INPUT` naming the file that is missing or malformed.
 */
export function regionExtents(dir: string, regionsText: string): { file: string; extents: RegionExtent[] } {
  const file = join(dir, RAW_REGIONS_PAGES_FILE);
  const stat = statSync(file, { throwIfNoEntry: false });
  if (stat === undefined) {
    throw new TraceFormatError('ERR_TRACE_INPUT', `${RAW_REGIONS_FILE} without ${RAW_REGIONS_PAGES_FILE}`, { file });
  }
  const regions = parseRegions(dir, regionsText);
  const finalizing = join(dir, RAW_FINALIZING_REGIONS_FILE);
  if (existsSync(finalizing)) {
    const extents = finalizingExtents(dir, readFileSync(finalizing, 'utf8'), stat.size);
    if (extents !== undefined) return { file, extents };
    throw badFile(dir, RAW_FINALIZING_REGIONS_FILE, `no layout for a ${RAW_REGIONS_PAGES_FILE} of ${stat.size} bytes`);
  }
  const kbFile = join(dir, 'buffer_subbuf_size_kb');
  const kb = existsSync(kbFile) ? readFileSync(kbFile, 'utf8').trim() : '';
  if (!/^\d{1,7}$/.test(kb) || Number(kb) === 0) {
    throw badFile(dir, 'buffer_subbuf_size_kb', `${JSON.stringify(kb)} (the regions layout needs the page size)`);
  }
  const pageSize = Number(kb) * 1024;
  const fd = openSync(file, 'r');
  try {
    const extents = regions.map((r, i) => {
      const bound = Math.min(regions[i + 1]?.start ?? stat.size, stat.size);
      return { cpu: r.cpu, start: r.start, end: r.start >= bound ? r.start : regionEnd(fd, r.start, bound, pageSize) };
    });
    return { file, extents };
  } finally {
    closeSync(fd);
  }
}
