/**
 * Errors of @evtrace/persistent-events. Every failure raises a {@link PersistentError} whose `code` says what kind of
 * failure it is; `path` names the file or tracefs directory involved and `offset` the byte offset in that file.
 */
import { EvtraceError } from '@evtrace/errors';

/** Error codes of @evtrace/persistent-events. Never reuse a code for another meaning. */
export type PersistentErrorCode =
  /** A buffer name that is not allowed (empty segment, path traversal, bad character, too long). */
  | 'ERR_PERSISTENT_NAME'
  /** Options out of range (size, page size, mode, group, event classes). */
  | 'ERR_PERSISTENT_ARGUMENT'
  /** A buffer of that name already exists: creation never replaces one. */
  | 'ERR_PERSISTENT_EXISTS'
  /** No buffer of that name. */
  | 'ERR_PERSISTENT_NOT_FOUND'
  /** The caller may not open the buffer this way (file mode, owner, group; tracefs needs root). */
  | 'ERR_PERSISTENT_PERMISSION'
  /** The buffer file is not a persistent buffer, or is damaged or truncated (`offset` says where). */
  | 'ERR_PERSISTENT_CORRUPT'
  /** Another live process writes the buffer. */
  | 'ERR_PERSISTENT_WRITER_BUSY'
  /** The handle was opened read-only, or closed. */
  | 'ERR_PERSISTENT_READ_ONLY'
  | 'ERR_PERSISTENT_CLOSED'
  /** The kernel lacks what the operation needs (tracefs, a boot-time persistent buffer). */
  | 'ERR_PERSISTENT_UNSUPPORTED'
  /** Any other system call failure. */
  | 'ERR_PERSISTENT_IO';

export class PersistentError extends EvtraceError<PersistentErrorCode> {
  /** The file or directory involved, when there is one. */
  readonly path: string | undefined;
  /** Byte offset in `path` where the damage was found (ERR_PERSISTENT_CORRUPT); the message starts `path: byte N:` then. */
  readonly offset: number | undefined;
  /** The errno name of a failed system call (EACCES, ENOENT...). */
  readonly errno: string | undefined;
  constructor(
    code: PersistentErrorCode,
    message: string,
    options: { path?: string; offset?: number; errno?: string; cause?: unknown } = {},
  ) {
    super(code, message, {
      location: options.offset === undefined ? undefined : { file: options.path, offset: options.offset },
      cause: options.cause,
    });
    this.name = 'PersistentError';
    this.path = options.path;
    this.offset = options.offset;
    this.errno = options.errno;
  }
}

/** Wraps a failed system call on `path`: permission, existence and the rest get their own codes. */
export function fsError(path: string, error: unknown, what: string): PersistentError {
  const errno = (error as NodeJS.ErrnoException)?.code;
  const code =
    errno === 'EACCES' || errno === 'EPERM'
      ? 'ERR_PERSISTENT_PERMISSION'
      : errno === 'ENOENT'
        ? 'ERR_PERSISTENT_NOT_FOUND'
        : errno === 'EEXIST'
          ? 'ERR_PERSISTENT_EXISTS'
          : 'ERR_PERSISTENT_IO';
  return new PersistentError(code, `${what}: ${path}: ${errno ?? (error as Error)?.message ?? String(error)}`, {
    path,
    ...(errno !== undefined ? { errno } : {}),
    cause: error,
  });
}
