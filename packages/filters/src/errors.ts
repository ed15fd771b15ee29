/**
 * Errors of @evtrace/filters. Every rejected expression raises a {@link FilterError} whose `message` and `column` are
 * exactly what Linux writes to tracefs's `error_log` for the same expression, so a check here predicts the kernel's
 * answer. `detail` adds evtrace's own explanation (which field, which type) and `span` the exact source range.
 */
import { EvtraceError, type Location } from '@evtrace/errors';

/** The kernel's parse error kinds (`FILT_ERR_*` in kernel/trace/trace_events_filter.c) and their texts. */
export const KERNEL_MESSAGES = {
  INVALID_OP: 'Invalid operator',
  TOO_MANY_OPEN: "Too many '('",
  TOO_MANY_CLOSE: "Too few '('",
  MISSING_QUOTE: 'Missing matching quote',
  MISSING_BRACE_OPEN: "Missing '{'",
  MISSING_BRACE_CLOSE: "Missing '}'",
  OPERAND_TOO_LONG: 'Operand too long',
  EXPECT_STRING: 'Expecting string field',
  EXPECT_DIGIT: 'Expecting numeric field',
  ILLEGAL_FIELD_OP: 'Illegal operation for field type',
  FIELD_NOT_FOUND: 'Field not found',
  ILLEGAL_INTVAL: 'Illegal integer value',
  TOO_MANY_PREDS: 'Too many terms in predicate expression',
  INVALID_CPULIST: 'Invalid cpulist',
  INVALID_VALUE: 'Invalid value (did you forget quotes)?',
  NO_FUNCTION: 'Function not found',
  ERRNO: 'Error',
  NO_FILTER: 'No filter found',
} as const;

export type KernelErrorKind = keyof typeof KERNEL_MESSAGES;

/** Error codes of @evtrace/filters. Never reuse a code for another meaning. */
export type FilterErrorCode =
  /** Malformed expression: operators, parentheses, quotes, stray text. */
  | 'ERR_FILTER_SYNTAX'
  /** A name that is not a field of the event class. */
  | 'ERR_FILTER_FIELD'
  /** A value or operator that does not fit the field's type (string vs number, `~` on a number...). */
  | 'ERR_FILTER_TYPE'
  /** A malformed literal: integer, CPU list, operand length. */
  | 'ERR_FILTER_VALUE'
  /** A `.function` symbol that the symbol table does not hold. */
  | 'ERR_FILTER_SYMBOL'
  /** The kernel's size limit (filters of 4096 bytes or more). */
  | 'ERR_FILTER_LIMIT'
  /** A NUL character, which the kernel would take as the end of the filter (evtrace's rule, not the kernel's). */
  | 'ERR_FILTER_NUL'
  /** The expression is valid but cannot be evaluated where asked (a `char *` field over recorded data). */
  | 'ERR_FILTER_UNSUPPORTED'
  /** An encoded record is too short for the fields the filter reads, or a data_loc points outside it. */
  | 'ERR_FILTER_RECORD';

const CODE_OF_KIND: Record<KernelErrorKind, FilterErrorCode> = {
  INVALID_OP: 'ERR_FILTER_SYNTAX',
  TOO_MANY_OPEN: 'ERR_FILTER_SYNTAX',
  TOO_MANY_CLOSE: 'ERR_FILTER_SYNTAX',
  MISSING_QUOTE: 'ERR_FILTER_SYNTAX',
  MISSING_BRACE_OPEN: 'ERR_FILTER_SYNTAX',
  MISSING_BRACE_CLOSE: 'ERR_FILTER_SYNTAX',
  OPERAND_TOO_LONG: 'ERR_FILTER_VALUE',
  EXPECT_STRING: 'ERR_FILTER_TYPE',
  EXPECT_DIGIT: 'ERR_FILTER_TYPE',
  ILLEGAL_FIELD_OP: 'ERR_FILTER_TYPE',
  FIELD_NOT_FOUND: 'ERR_FILTER_FIELD',
  ILLEGAL_INTVAL: 'ERR_FILTER_VALUE',
  TOO_MANY_PREDS: 'ERR_FILTER_SYNTAX',
  INVALID_CPULIST: 'ERR_FILTER_VALUE',
  INVALID_VALUE: 'ERR_FILTER_VALUE',
  NO_FUNCTION: 'ERR_FILTER_SYMBOL',
  ERRNO: 'ERR_FILTER_SYNTAX',
  NO_FILTER: 'ERR_FILTER_SYNTAX',
};

/** A source range in bytes of the expression's UTF-8 text, end exclusive. */
export interface Span {
  readonly start: number;
  readonly end: number;
}

export interface FilterErrorInit {
  /** Kernel error kind, when the kernel rejects the expression too. */
  readonly kind?: KernelErrorKind;
  /** Message; defaults to the kernel's text for `kind`. */
  readonly message?: string;
  /** 0-based byte column of the kernel's caret. */
  readonly column: number;
  /** evtrace's explanation, more precise than the kernel's message. */
  readonly detail?: string;
  /** The exact offending range, when known. */
  readonly span?: Span;
  /** The errno the kernel's write() returns (EINVAL, EPERM, ENOENT, ESRCH). */
  readonly errno?: string;
}

/**
 * The message is the kernel's text alone: the place is the caret {@link FilterError.format} draws under the
 * expression, as the kernel's `error_log` does, and `location.offset` (the caret's byte column).
 */
export class FilterError extends EvtraceError<FilterErrorCode> {
  declare readonly location: Location;
  /** Kernel error kind (`FIELD_NOT_FOUND`...), or undefined for evtrace-only errors. */
  readonly kind: KernelErrorKind | undefined;
  /** 0-based byte column of the caret, as in tracefs's `error_log`. */
  readonly column: number;
  readonly detail: string | undefined;
  readonly span: Span | undefined;
  readonly errno: string | undefined;
  constructor(code: FilterErrorCode, init: FilterErrorInit) {
    super(code, init.message ?? (init.kind !== undefined ? KERNEL_MESSAGES[init.kind] : 'invalid filter'));
    this.name = 'FilterError';
    // Set after the message is made: the kernel's message has no place in front.
    this.location = { offset: init.column };
    this.kind = init.kind;
    this.column = init.column;
    this.detail = init.detail;
    this.span = init.span;
    this.errno = init.errno;
  }

  /** The kernel's rendering: the expression, a caret line under `column`, and the message. */
  format(expression: string): string {
    return `${expression}\n${' '.repeat(this.column)}^\n${this.message}${this.detail ? ` (${this.detail})` : ''}`;
  }
}

/** Builds the error for a kernel error kind with the matching evtrace code. */
export function kernelError(
  kind: KernelErrorKind,
  column: number,
  extra: Omit<FilterErrorInit, 'kind' | 'column'> = {},
) {
  return new FilterError(CODE_OF_KIND[kind], { ...extra, kind, column });
}
