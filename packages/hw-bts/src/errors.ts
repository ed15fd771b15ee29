import { EvtraceError, type Location } from '@evtrace/errors';

/**
 * Errors of @evtrace/hw-bts. Every failure is a {@link BtsError} whose `code` says what kind it is and which names
 * where: a byte offset in binary input, a line and column in text input.
 */

/** Error codes of @evtrace/hw-bts. Never reuse a code for another meaning. */
export type BtsErrorCode =
  /** A binary branch record cut short (raw BTS data whose length is not a whole number of records). */
  | 'ERR_BTS_TRUNCATED'
  /** A text line that looks like branch data but does not parse (perf script, gdb, QEMU log). */
  | 'ERR_BTS_SYNTAX'
  /** Input whose format is not recognised, or an option that does not fit it. */
  | 'ERR_BTS_FORMAT'
  /** An ELF file that cannot be read as ELF64 (or ELF32) with symbol tables. */
  | 'ERR_BTS_ELF'
  /** No branch-tracing hardware, or the kernel refused to use it. */
  | 'ERR_BTS_UNSUPPORTED'
  /** A capture (QEMU, perf) that failed to run or produced nothing. */
  | 'ERR_BTS_CAPTURE'
  /** A bad argument (negative count, empty budget...). */
  | 'ERR_BTS_ARGUMENT';

/** Where a problem is: the file, and a byte offset in binary input or a 1-based line and column in text input. */
export type BtsLocation = Location;

export class BtsError extends EvtraceError<BtsErrorCode> {
  declare readonly location: BtsLocation;
  /** The file or source, when known (`location.file`). */
  readonly source: string | undefined;
  /** Byte offset in binary input. */
  readonly offset: number | undefined;
  /** 1-based line in text input. */
  readonly line: number | undefined;
  /** 1-based column in text input. */
  readonly column: number | undefined;
  constructor(code: BtsErrorCode, message: string, where: BtsLocation = {}, cause?: unknown) {
    super(code, message, { location: where, cause });
    this.name = 'BtsError';
    this.source = where.file;
    this.offset = where.offset;
    this.line = where.line;
    this.column = where.column;
  }
}
