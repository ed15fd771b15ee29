/**
 * Outputs that are whole or absent: a file is written under a temporary name beside its target and renamed over it
 * only once complete; a directory (CTF) is built beside its target and swapped in. A failure removes the temporary
 * and leaves the target as it was. Recordings hold kernel addresses, so outputs are private to their owner (0600,
 * directories 0700) unless shared, as perf creates its perf.data.
 */
import {
  closeSync,
  constants,
  fchmodSync,
  lstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  type Stats,
  writeSync,
} from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { errnoText } from '@evtrace/errors';
import { TraceFormatError } from '../errors.ts';

/** Who may read an output. */
export interface OutputAccess {
  /**
   * Readable by everyone (0644 and 0755, less the umask) instead of by the owner only (0600 and 0700). An existing
   * output file that is replaced keeps its mode unless this or `mode` is given.
   */
  readonly share?: boolean;
  /** The mode of the file or directory, exactly (the umask does not apply); over `share`. */
  readonly mode?: number;
  /**
   * Write through a symbolic link at a file target: the file it names is replaced, a device or FIFO written in
   * place (`-o /dev/stdout`), as a shell's redirection does. Default true. A program writing where another user
   * may plant links (a root daemon) passes false: whatever is at the target, link or FIFO, is replaced by the new
   * file and nothing is written in place.
   */
  readonly followLinks?: boolean;
}

/** Options of {@link writeDirAtomically}. */
export interface OutputDirOptions extends OutputAccess {
  /** Replace an existing non-empty directory (or a file) at the target. Default false: it is refused. */
  readonly force?: boolean;
}

/** An `ERR_TRACE_OUTPUT` error naming `path` and why (`cannot write out.dat: ENOSPC (no space left on device)`). */
export function outputError(path: string, error: unknown, what = 'cannot write'): TraceFormatError {
  return new TraceFormatError('ERR_TRACE_OUTPUT', `${what} ${path}: ${errnoText(error)}`, {}, { path, cause: error });
}

/** System calls whose failure inside a writer is the output's (reads are the input's). */
const OUTPUT_CALLS = new Set([
  'open',
  'write',
  'writev',
  'close',
  'fsync',
  'ftruncate',
  'fchmod',
  'copy_file_range',
  'mkdir',
  'mkdtemp',
  'rename',
  'unlink',
  'rmdir',
]);

/** `error` as the output's when a write to `temp` (or to a file under it) failed, else unchanged. */
function blame(error: unknown, target: string, temp: string): unknown {
  if (error instanceof TraceFormatError) return error;
  const e = error as NodeJS.ErrnoException;
  if (typeof e?.code !== 'string' || !OUTPUT_CALLS.has(e.syscall ?? '')) return error;
  if (e.path === undefined) return outputError(target, error);
  const rel = relative(temp, e.path);
  if (rel.startsWith('..')) return error;
  return outputError(rel === '' ? target : join(target, rel), error);
}

function lstat(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw outputError(path, error);
  }
}

/**
 * The mode an output gets: `access.mode` when given; 0644 or 0755 less the umask when shared; else the mode of the
 * file it replaces, or 0600 or 0700. For writers that complete an output in place of {@link writeFileAtomically}.
 */
export function outputMode(access: OutputAccess, directory: boolean, existing?: Stats): number {
  if (access.mode !== undefined) return access.mode;
  if (access.share === true) return (directory ? 0o755 : 0o644) & ~process.umask();
  if (existing !== undefined) return existing.mode & 0o777;
  return directory ? 0o700 : 0o600;
}

/**
 * Writes the file `target` through `write`, given a descriptor open for writing at offset 0, and returns what it
 * returns. The bytes go to a new file beside `target` (created exclusively, never through a link), which is renamed
 * over `target` once `write` returns; if `write` throws, that file is removed and `target` is untouched. Unless
 * `followLinks` is false, a symbolic link at `target` is followed (the file it names is replaced), and a target that
 * is not a regular file (`/dev/stdout`, a FIFO) is written in place.
 *
 * @throws TraceFormatError `ERR_TRACE_OUTPUT` naming `target` and the reason when it cannot be written; what `write`
 *   throws otherwise (input errors).
 */
export function writeFileAtomically<T>(target: string, write: (fd: number) => T, access: OutputAccess = {}): T {
  let path = target;
  let existing = lstat(path);
  const follow = access.followLinks !== false;
  if (existing?.isSymbolicLink() && follow) {
    try {
      path = realpathSync(target);
      existing = lstat(path);
    } catch {
      // A dangling link: the rename replaces the link itself.
      existing = undefined;
    }
  }
  if (existing?.isDirectory()) throw outputError(target, Object.assign(new Error(), { code: 'EISDIR' }));
  if (existing !== undefined && !existing.isFile() && follow) {
    try {
      return writeAndClose(openSync(path, 'w'), write);
    } catch (error) {
      throw blame(error, target, path);
    }
  }
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${Math.random().toString(36).slice(2, 10)}.tmp`);
  const mode = outputMode(access, false, existing?.isFile() ? existing : undefined);
  let fd: number;
  try {
    fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    throw outputError(target, error);
  }
  try {
    const result = writeAndClose(fd, (fd) => {
      fchmodSync(fd, mode);
      return write(fd);
    });
    renameSync(temp, path);
    return result;
  } catch (error) {
    rmSync(temp, { force: true });
    throw blame(error, target, temp);
  }
}

/** Runs `write` on `fd` and closes it, also when `write` throws. */
function writeAndClose<T>(fd: number, write: (fd: number) => T): T {
  let result: T;
  try {
    result = write(fd);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  closeSync(fd);
  return result;
}

/** {@link writeFileAtomically} of `bytes` (text as UTF-8). Returns their length. */
export function writeBytesAtomically(target: string, bytes: Uint8Array | string, access: OutputAccess = {}): number {
  const data = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
  return writeFileAtomically(
    target,
    (fd) => {
      // Not positional: a FIFO or a terminal at the target is written in place and cannot seek.
      for (let done = 0; done < data.length; ) done += writeSync(fd, data, done, data.length - done);
      return data.length;
    },
    access,
  );
}

/**
 * Throws unless `target` may become an output directory: absent, or an empty directory, or anything with `force`.
 * Callers that produce the output late (a recording) check early with this.
 *
 * @throws TraceFormatError `ERR_TRACE_OUTPUT` naming `target`.
 */
export function checkOutputDir(target: string, options: { readonly force?: boolean } = {}): void {
  const existing = lstat(target);
  if (existing === undefined || options.force === true) return;
  if (!existing.isDirectory()) {
    throw new TraceFormatError(
      'ERR_TRACE_OUTPUT',
      `cannot write ${target}: it exists and is not a directory (--force replaces it)`,
      {},
      { path: target },
    );
  }
  if (readdirSync(target).length > 0) {
    throw new TraceFormatError(
      'ERR_TRACE_OUTPUT',
      `cannot write ${target}: the directory is not empty (--force replaces it)`,
      {},
      { path: target },
    );
  }
}

/**
 * Builds the directory `target` through `build`, given a fresh empty directory beside it, and returns what it
 * returns. The directory is renamed to `target` once `build` returns; an existing empty directory at `target` is
 * replaced, a non-empty one (or a file) only with `force`, and then only after the new one is complete. If `build`
 * throws, its directory is removed and `target` is untouched.
 *
 * @throws TraceFormatError `ERR_TRACE_OUTPUT` naming `target` (or a file under it) and the reason.
 */
export function writeDirAtomically<T>(target: string, build: (dir: string) => T, options: OutputDirOptions = {}): T {
  checkOutputDir(target, options);
  const parent = dirname(target);
  let temp: string;
  try {
    temp = mkdtempSync(join(parent, `.${basename(target)}.`));
  } catch (error) {
    throw outputError(target, error);
  }
  try {
    const result = build(temp);
    const existing = lstat(target);
    if (existing === undefined || (existing.isDirectory() && readdirSync(target).length === 0)) {
      // rename(2) replaces an empty directory in one step.
      chmodDir(temp, outputMode(options, true));
      renameSync(temp, target);
      return result;
    }
    chmodDir(temp, outputMode(options, true));
    // Forced over a non-empty directory or a file: moved aside, the new one renamed in, the old one removed.
    const aside = `${temp}.old`;
    renameSync(target, aside);
    try {
      renameSync(temp, target);
    } catch (error) {
      renameSync(aside, target);
      throw error;
    }
    rmSync(aside, { recursive: true, force: true });
    return result;
  } catch (error) {
    rmSync(temp, { recursive: true, force: true });
    throw blame(error, target, temp);
  }
}

function chmodDir(dir: string, mode: number): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    fchmodSync(fd, mode);
  } finally {
    closeSync(fd);
  }
}
