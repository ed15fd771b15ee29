import { codeOf, EvtraceError, errorText } from '@evtrace/errors';

/** Codes of {@link ViewerError}. */
export type ViewerErrorCode =
  /** The command line is wrong (exit status 2). */
  | 'ERR_VIEW_USAGE'
  /** The input cannot be opened or read (exit status 1). */
  | 'ERR_VIEW_INPUT'
  /** The agent could not be reached or refused a request (exit status 1). */
  | 'ERR_VIEW_AGENT'
  /** An error that carried no code of its own: a bug, the message says what (exit status 1). */
  | 'ERR_VIEW_INTERNAL'
  /** Node.js is older than the floor, checked before anything loads (cli.ts; exit status 1). */
  | 'ERR_VIEW_NODE_VERSION';

/**
 * Every error evtrace-view reports on purpose: a code and a message that says what and where. One that explains
 * another package's error has it as `cause`.
 */
export class ViewerError extends EvtraceError<ViewerErrorCode> {
  constructor(code: ViewerErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'ViewerError';
  }
}

const EVTRACE_CODE = /^ERR_[A-Z0-9_]+$/;

/** A system call's failure (`ENOENT` from open): its errno code and the call that failed. */
function isSystemError(error: unknown): boolean {
  const e = error as { syscall?: unknown; code?: unknown } | null | undefined;
  return typeof e?.syscall === 'string' && typeof e.code === 'string' && /^E[A-Z0-9]+$/.test(e.code);
}

/**
 * The line evtrace-view prints for an error, after `evtrace-view: `: `CODE: message`, as `evtrace` prints its own.
 * The code is the one that says what failed: a package's error keeps its code when the viewer's explains it
 * (`ERR_TRACE_INPUT: ...`, as `evtrace cat` prints it), a failed system call is the input's, and an error with no
 * code is `ERR_VIEW_INTERNAL`.
 */
export function errorLine(error: unknown): string {
  if (error instanceof ViewerError) {
    const explained = codeOf(error.cause);
    return `${explained !== undefined && EVTRACE_CODE.test(explained) ? explained : error.code}: ${error.message}`;
  }
  if (isSystemError(error)) return `ERR_VIEW_INPUT: ${errorText(error)}`;
  const code = codeOf(error);
  const message = error instanceof Error ? error.message : String(error);
  return `${code !== undefined && EVTRACE_CODE.test(code) ? code : 'ERR_VIEW_INTERNAL'}: ${message}`;
}
