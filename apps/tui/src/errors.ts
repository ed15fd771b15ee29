import { EvtraceError } from '@evtrace/errors';

/** Codes of {@link ViewerError}. */
export type ViewerErrorCode =
  /** The command line is wrong (exit status 2). */
  | 'ERR_VIEW_USAGE'
  /** The input cannot be opened or read (exit status 1). */
  | 'ERR_VIEW_INPUT'
  /** The agent could not be reached or refused a request (exit status 1). */
  | 'ERR_VIEW_AGENT';

/** Every error evtrace-view reports on purpose: a code and a message that says what and where. */
export class ViewerError extends EvtraceError<ViewerErrorCode> {
  constructor(code: ViewerErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'ViewerError';
  }
}
