/**
 * `copy_file_range(2)` through the koffi FFI (Node's fs has no offset-taking form of it): the kernel copies between
 * two files' page caches without the bytes passing through user space, so moving a recording's pages into its
 * trace.dat costs less system time than a read/write loop (packages/tracefs/src/record.bench.ts prints it).
 */
import { loadLibc, systemError } from './libc.ts';

/** errno values after which a read/write copy still works: no such call, or not between these two files. */
const FALLBACK_ERRNOS = new Set([
  38, // ENOSYS
  18, // EXDEV
  22, // EINVAL
  95, // EOPNOTSUPP
  1, // EPERM (some seccomp profiles)
]);

/** Where {@link copyFileRange} reads and writes: byte offsets, or the descriptors' own positions when absent. */
export interface CopyPositions {
  readonly from?: number;
  readonly to?: number;
}

/**
 * Copies `length` bytes from `fdIn` to `fdOut` in the kernel: between the given offsets, or from and to the
 * descriptors' positions (advancing them) where none is given. Returns false, having copied nothing, when this
 * system cannot (no FFI, no such call, files on different or unsupporting file systems): the caller then copies
 * through user space.
 *
 * @throws an fs-style error (`code` ENOSPC, ...) when the copy fails after it started, or `ERR_SHORT_INPUT` when the
 *   input ends before `length` bytes.
 */
export function copyFileRange(fdIn: number, fdOut: number, length: number, at: CopyPositions = {}): boolean {
  const c = loadLibc();
  if (c === null) return false;
  const from = at.from === undefined ? null : [at.from];
  const to = at.to === undefined ? null : [at.to];
  let done = 0;
  while (done < length) {
    // At most 1 GiB per call keeps the count inside a 32-bit ssize_t everywhere.
    const n = Number(c.copyFileRange(fdIn, from, fdOut, to, Math.min(length - done, 1 << 30), 0));
    if (n < 0) {
      const errno = c.errno();
      if (done === 0 && FALLBACK_ERRNOS.has(errno)) return false;
      throw systemError(errno, 'copy_file_range');
    }
    if (n === 0) {
      throw Object.assign(new Error(`the input ended after ${done} of ${length} bytes`), { code: 'ERR_SHORT_INPUT' });
    }
    done += n;
  }
  return true;
}
