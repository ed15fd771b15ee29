/**
 * Errors of @evtrace/hw-mce. Every failure raises an {@link MceError} whose `code` says what kind it is and whose
 * location names the input (file, byte offset or line and column) where that makes sense.
 */
import { EvtraceError, type Location, located } from '@evtrace/errors';

/** Error codes of @evtrace/hw-mce. Never reuse a code for another meaning. */
export type MceErrorCode =
  /** An input that is not in any format this package reads, or whose kind was forced wrongly. */
  | 'ERR_MCE_INPUT'
  /** A record that is cut short or contradicts its format (truncated struct mce, bad hex number). */
  | 'ERR_MCE_RECORD'
  /** A tracker configuration that cannot be read (unknown key, bad threshold). */
  | 'ERR_MCE_CONFIG'
  /** An unknown `--cpu` name. */
  | 'ERR_MCE_CPU'
  /** A live source that cannot be opened or read (/dev/mcelog, EDAC sysfs, tracefs). */
  | 'ERR_MCE_SOURCE'
  /** A trigger action that failed (command not found, soft-offline refused). */
  | 'ERR_MCE_ACTION';

/** Where in an input a problem lies: file, byte offset in binary inputs, line and column in text inputs. */
export type MceLocation = Location;

/** Formats a location as `file:line:column` or `file: byte N`, as every evtrace package does. */
export { formatLocation } from '@evtrace/errors';

export class MceError extends EvtraceError<MceErrorCode> {
  constructor(code: MceErrorCode, message: string, options: { location?: MceLocation; cause?: unknown } = {}) {
    super(code, message, options);
    this.name = 'MceError';
  }
}

/**
 * A problem met while reading an input that did not stop it: the record (or line) is skipped or kept partly and the
 * note says which and why. Readers return these beside the records, so nothing is dropped silently.
 */
export interface InputNote {
  readonly location: MceLocation;
  readonly message: string;
}

export function noteText(n: InputNote): string {
  return located(n.message, n.location);
}
