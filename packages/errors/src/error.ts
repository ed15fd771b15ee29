/**
 * The one error shape of evtrace. Every package throws its own class (TraceFormatError, RingbufError...), and every
 * one of them is an {@link EvtraceError}: a code that names the package and the kind of failure, a message that says
 * what and where, the location in the input, and the error that caused it.
 */
import { type Location, located } from './location.ts';

/** What every evtrace error carries; code is `ERR_<PACKAGE>_<WHAT>`, and a package never reuses one for another meaning. */
export interface ErrorShape<Code extends string = string> {
  readonly name: string;
  readonly code: Code;
  /** What went wrong, where first when the location names a place in an input (`k.dat: byte 4096: ...`). */
  readonly message: string;
  /** Where in an input, when the problem has a place. */
  readonly location: Location | undefined;
  /** The lower-level error this one explains (a failed system call, another package's error). */
  readonly cause?: unknown;
}

export interface EvtraceErrorOptions {
  /** Where in an input the problem lies; written in front of the message. */
  readonly location?: Location | undefined;
  readonly cause?: unknown;
}

/** The base class of every evtrace error. Packages extend it with their own code type and name. */
export class EvtraceError<Code extends string = string> extends Error implements ErrorShape<Code> {
  readonly code: Code;
  readonly location: Location | undefined;
  constructor(code: Code, message: string, options: EvtraceErrorOptions = {}) {
    super(located(message, options.location), options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'EvtraceError';
    this.code = code;
    this.location = options.location;
  }
}

/** The code of any error that has one (an evtrace error, or Node's `ENOENT`, `ERR_...`), else undefined. */
export function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}
