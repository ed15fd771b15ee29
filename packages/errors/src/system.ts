/**
 * Failed system calls worded for a user: Node's own message (`ENOSPC: no space left on device, write`) repeats the
 * errno and leaves out the path, so every evtrace package writes them through these two.
 */

/** What the errno names of failed file system calls mean, for messages a user can act on. */
const ERRNO_TEXT: Readonly<Record<string, string>> = {
  ENOSPC: 'no space left on device',
  EDQUOT: 'disk quota exceeded',
  EFBIG: 'file too large',
  EROFS: 'read-only file system',
  EIO: 'input/output error',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOENT: 'no such file or directory',
  ENOTDIR: 'a component of the path is not a directory',
  EISDIR: 'is a directory',
  EEXIST: 'already exists',
  ENOTEMPTY: 'directory not empty',
  ENAMETOOLONG: 'file name too long',
  ELOOP: 'a symbolic link, which is not followed here',
  EXDEV: 'not on the same file system',
  EBUSY: 'device or resource busy',
  EMFILE: 'too many open files',
  ESPIPE: 'cannot seek: a pipe or a terminal',
};

/** The parts of Node's system errors these read (`NodeJS.ErrnoException`, which this package does not import). */
interface SystemErrorParts {
  readonly code?: unknown;
  readonly syscall?: unknown;
  readonly path?: unknown;
  readonly dest?: unknown;
  readonly message?: unknown;
}

const ERRNO = /^E[A-Z0-9]+$/;

/** `ENOSPC (no space left on device)` for a failed system call, its message for any other error. */
export function errnoText(error: unknown): string {
  const errno = (error as SystemErrorParts | null | undefined)?.code;
  if (typeof errno !== 'string' || !ERRNO.test(errno)) return (error as Error)?.message ?? String(error);
  const meaning = ERRNO_TEXT[errno];
  return meaning === undefined ? errno : `${errno} (${meaning})`;
}

/**
 * Any error as one line for a user: a failed system call as `cannot mkdir /x: EEXIST (already exists)` (Node's own
 * message repeats the errno and hides the reason), an error with a code as `CODE: message`, else its message.
 */
export function errorText(error: unknown): string {
  const e = error as SystemErrorParts | null | undefined;
  const code = e?.code;
  if (typeof e?.syscall === 'string' && typeof code === 'string' && ERRNO.test(code)) {
    const path = typeof e.path === 'string' ? ` ${e.path}${typeof e.dest === 'string' ? ` to ${e.dest}` : ''}` : '';
    return `cannot ${e.syscall}${path}: ${errnoText(error)}`;
  }
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === 'string' ? `${code}: ${message}` : message;
}
