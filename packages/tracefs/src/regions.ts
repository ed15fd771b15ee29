/**
 * The regions layout for a recording that becomes a trace.dat (see @evtrace/trace-format's raw-regions): every CPU's
 * pages go into one file, each CPU from its own offset, as far apart as the file system allows. Finalizing then
 * closes the holes between them with `fallocate(FALLOC_FL_COLLAPSE_RANGE)`, which moves extents instead of bytes:
 * cheaper than copying the pages into another file and unlinking this one (packages/tracefs/src/record.bench.ts
 * prints a recording's CPU).
 */
import { ftruncateSync, statfsSync } from 'node:fs';
import type { RegionExtent } from '@evtrace/trace-format';
import { loadLibc, systemError } from './libc.ts';

/** File systems with sparse files and COLLAPSE_RANGE (a hole of terabytes costs nothing there): ext4, XFS. */
const COLLAPSING_FILE_SYSTEMS = new Set([0xef53, 0x58465342]);
const FALLOC_FL_COLLAPSE_RANGE = 0x08;
/** errno values that mean this file or file system cannot collapse (nothing was changed). */
const UNSUPPORTED = new Set([
  22, // EINVAL: offsets not aligned to this file system's blocks
  95, // EOPNOTSUPP: ext4 without extents, and others
  38, // ENOSYS
  1, // EPERM: some seccomp profiles
]);

/** Whether the regions layout can be used in `dir`: a file system that collapses, and the FFI to ask it. */
export function regionsSupported(dir: string): boolean {
  try {
    return COLLAPSING_FILE_SYSTEMS.has(Number(statfsSync(dir).type)) && loadLibc() !== null;
  } catch {
    return false;
  }
}

/**
 * The largest size the open file `fd` can take here (the file system's limit, or a lower RLIMIT_FSIZE), probed by
 * extending it, in powers of two from 2^52 down to 2^30; undefined below that. Leaves the file `size` bytes long:
 * not 0, because ext4 takes a truncation to 0 for a file being replaced and, at its close, starts writing out every
 * page written since, in the closing process (CPU that record.bench.ts counts in a recording's).
 */
export function largestFileSize(fd: number, size: number): number | undefined {
  let found: number | undefined;
  for (let bits = 52; bits >= 30 && found === undefined; bits--) {
    try {
      ftruncateSync(fd, 2 ** bits);
      found = 2 ** bits;
    } catch {}
  }
  ftruncateSync(fd, size);
  return found;
}

/** One CPU's region: its pages go from `start` and may not reach `end`. */
export interface Region {
  readonly cpu: number;
  readonly start: number;
  readonly end: number;
}

/**
 * Regions for `cpus` after `room` bytes, splitting `maxSize` evenly and aligned to `align` (a power of two at least
 * the page size): on ext4, 8 TiB each for two CPUs, 32 GiB each for 256.
 */
export function planRegions(cpus: readonly number[], room: number, maxSize: number, align: number): Region[] {
  const spacing = Math.floor((maxSize - room) / Math.max(1, cpus.length) / align) * align;
  return cpus.map((cpu, i) => ({ cpu, start: room + i * spacing, end: room + (i + 1) * spacing }));
}

/**
 * Removes `[offset, offset + length)` from the open file `fd`, moving what follows down (COLLAPSE_RANGE). Returns
 * false, having changed nothing, when the file system cannot; throws an fs-style error otherwise.
 */
export function collapseRange(fd: number, offset: number, length: number): boolean {
  const c = loadLibc();
  if (c === null) return false;
  if (c.fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, offset, length) === 0) return true;
  const errno = c.errno();
  if (UNSUPPORTED.has(errno)) return false;
  throw systemError(errno, 'fallocate');
}

/** A CPU's pages in the pages file: where they start and how many bytes they take. */
export interface PlacedPages {
  readonly cpu: number;
  readonly start: number;
  readonly size: number;
}

/** How the regions become one trace.dat: the holes to close in order, and the layout after each. */
export interface FinalLayout {
  /** Where the first region starts (the end of the head room): the first pages lie there once moved. */
  readonly first: number;
  /** Where each CPU's pages end up, by CPU (CPUs without pages: at the first pages). */
  readonly offsets: ReadonlyMap<number, number>;
  /** The holes, each at its offset once the ones before it are closed. */
  readonly holes: readonly { readonly at: number; readonly length: number }[];
  /** `steps[k]`: every CPU's extent after `k` holes closed (empty ones as [0, 0)), and the file's size then. */
  readonly steps: readonly { readonly size: number; readonly extents: readonly RegionExtent[] }[];
  /** The size of the finished file. */
  readonly size: number;
}

/**
 * Plans the finalizing of a pages file whose CPUs' pages lie at `pages` (in any order, not overlapping): each CPU's
 * pages move down to follow the previous one's, the first CPU's with pages to where the first region starts (the
 * first region may have none), by closing the hole in front of them. The file is taken to end with the last pages.
 */
export function planFinalLayout(pages: readonly PlacedPages[]): FinalLayout {
  const inOrder = pages.toSorted((a, b) => a.start - b.start);
  // Where the first region starts, whether or not it got pages: the first pages that exist move there.
  const first = inOrder[0]?.start ?? 0;
  const offsets = new Map<number, number>();
  const holes: { at: number; length: number }[] = [];
  let target = first;
  let moved = 0;
  for (const p of inOrder) {
    if (p.size === 0) continue;
    const now = p.start - moved;
    if (now > target) {
      holes.push({ at: target, length: now - target });
      moved += now - target;
    }
    offsets.set(p.cpu, target);
    target += p.size;
  }
  for (const p of inOrder) if (!offsets.has(p.cpu)) offsets.set(p.cpu, first);
  // A hole lies before a CPU's pages when it starts before them: holes only ever lie between pages.
  const extentsAfter = (closed: number): RegionExtent[] =>
    inOrder.map((p) => {
      if (p.size === 0) return { cpu: p.cpu, start: 0, end: 0 };
      let start = p.start;
      for (const h of holes.slice(0, closed)) if (h.at < start) start -= h.length;
      return { cpu: p.cpu, start, end: start + p.size };
    });
  let size = Math.max(first, ...inOrder.map((p) => (p.size > 0 ? p.start + p.size : 0)));
  const steps = [{ size, extents: extentsAfter(0) }];
  holes.forEach((h, i) => {
    size -= h.length;
    steps.push({ size, extents: extentsAfter(i + 1) });
  });
  return { first, offsets, holes, steps, size: target };
}
