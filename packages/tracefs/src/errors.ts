/**
 * Errors of @evtrace/tracefs. Every failure raises a {@link TracefsError} whose `code` says what kind of failure it
 * is and whose `path` names the tracefs file (or output path) involved.
 */
import { EvtraceError, errnoText } from '@evtrace/errors';
import { TraceFormatError } from '@evtrace/trace-format';

/** Error codes of @evtrace/tracefs. Never reuse a code for another meaning. */
export type TracefsErrorCode =
  /** tracefs is not mounted and cannot be mounted (not root, or mount failed). */
  | 'ERR_TRACEFS_NOT_FOUND'
  /** The kernel refused an operation for lack of privilege (EACCES, EPERM). */
  | 'ERR_TRACEFS_PERMISSION'
  /** An event name or glob that matches no event of the catalogue. */
  | 'ERR_TRACEFS_EVENT'
  /** A filter that evtrace or the kernel rejected. */
  | 'ERR_TRACEFS_FILTER'
  /** A setting the kernel refused (buffer size, sub-buffer size, clock). */
  | 'ERR_TRACEFS_SETTING'
  /** The output cannot be written (missing directory, not writable, no space left). */
  | 'ERR_TRACEFS_OUTPUT'
  /** Any other I/O failure on a tracefs file. */
  | 'ERR_TRACEFS_IO';

export class TracefsError extends EvtraceError<TracefsErrorCode> {
  /** The file involved, when there is one. */
  readonly path: string | undefined;
  /** The errno name of the failed system call, when there is one (EACCES, ENOENT...). */
  readonly errno: string | undefined;
  constructor(
    code: TracefsErrorCode,
    message: string,
    options: { path?: string; errno?: string; cause?: unknown } = {},
  ) {
    super(code, message, { cause: options.cause });
    this.name = 'TracefsError';
    this.path = options.path;
    this.errno = options.errno;
  }
}

/** Wraps a failed system call on `path` in a TracefsError, classifying permission failures. */
export function ioError(path: string, error: unknown, what: string): TracefsError {
  const errno = (error as NodeJS.ErrnoException)?.code;
  const permission = errno === 'EACCES' || errno === 'EPERM';
  return new TracefsError(
    permission ? 'ERR_TRACEFS_PERMISSION' : 'ERR_TRACEFS_IO',
    `${what}: ${path}: ${errno ?? (error as Error)?.message ?? String(error)}${permission ? ' (tracing needs root or CAP_SYS_ADMIN/CAP_PERFMON)' : ''}`,
    { path, ...(errno !== undefined ? { errno } : {}), cause: error },
  );
}

/**
 * Wraps a failed write of an output file in a TracefsError `ERR_TRACEFS_OUTPUT` naming the file and the errno
 * (`cannot write /x/out.part/cpu1.raw: ENOSPC (no space left on device)`); trace-format's `ERR_TRACE_OUTPUT` keeps the
 * path and message it has.
 */
export function outputError(path: string, error: unknown, what = 'cannot write'): TracefsError {
  if (error instanceof TraceFormatError && error.code === 'ERR_TRACE_OUTPUT') {
    const errno = (error.cause as NodeJS.ErrnoException | undefined)?.code;
    return new TracefsError('ERR_TRACEFS_OUTPUT', error.message, {
      path: error.path ?? path,
      ...(typeof errno === 'string' ? { errno } : {}),
      cause: error,
    });
  }
  const errno = (error as NodeJS.ErrnoException)?.code;
  return new TracefsError('ERR_TRACEFS_OUTPUT', `${what} ${path}: ${errnoText(error)}`, {
    path,
    ...(errno !== undefined ? { errno } : {}),
    cause: error,
  });
}
