import type { Span } from './errors.ts';
import type { FilterField } from './fields.ts';
import type { StringPattern } from './glob.ts';

/** Comparison operators, in the order the kernel tries them (`<=` before `<`). */
export const COMPARE_OPS = ['~', '!=', '==', '<=', '<', '>=', '>', '&'] as const;
export type CompareOp = (typeof COMPARE_OPS)[number];

/** What a predicate tests, as the kernel compiles it (its `filter_pred_fn`). */
export type PredicateTest =
  /** Integer compare at the field's size; `value` is the u64 the kernel stores, cast to the field's type on use. */
  | { readonly type: 'number'; readonly value: bigint }
  /** A comparison the kernel accepts but compiles to "never matches" (odd sizes, `stacktrace`, `CPU & n`). */
  | { readonly type: 'never' }
  /** The current CPU against an int. */
  | { readonly type: 'cpu'; readonly value: number }
  /** A scalar (the current CPU, or an integer field) against a CPU mask of two or more CPUs. */
  | { readonly type: 'cpu-in-mask'; readonly mask: ReadonlySet<number> }
  /** A `__data_loc cpumask_t` field against a mask; `single` when the list names one CPU. */
  | { readonly type: 'cpumask'; readonly mask: ReadonlySet<number>; readonly single: boolean }
  /** A string compare; `pattern` says how (full, prefix, glob...). */
  | { readonly type: 'string'; readonly pattern: StringPattern }
  /** `field.function == name`: the address lies in [start, end). */
  | { readonly type: 'function'; readonly start: bigint; readonly end: bigint; readonly symbol: string };

export interface Predicate {
  readonly field: FilterField;
  /** Operator after the kernel's rewrites (`& CPUS{n}` of one CPU becomes `==`). */
  readonly op: CompareOp;
  /** The kernel's `not` flag: `!=`, or a `~ "!pattern"`. */
  readonly not: boolean;
  readonly test: PredicateTest;
  /** `.ustring` was given (reads a user-space pointer). */
  readonly ustring: boolean;
  /** Source range and text, as written. */
  readonly span: Span;
  readonly text: string;
}

/** The expression tree. And/Or are n-ary; `!` applies to the next comparison or parenthesised group. */
export type FilterNode =
  | { readonly kind: 'pred'; readonly index: number }
  | { readonly kind: 'not'; readonly child: FilterNode }
  | { readonly kind: 'and' | 'or'; readonly children: readonly FilterNode[] };

/**
 * The kernel's compiled form: a branch program. Entry i evaluates predicate `pred`; when the result equals
 * `whenToBranch`, execution continues at `target + 1`, else at i + 1. Reaching index N (the number of entries) means
 * match, N + 1 means no match.
 */
export interface ProgramEntry {
  readonly pred: number;
  readonly whenToBranch: boolean;
  readonly target: number;
}

export interface ParsedFilter {
  /** The expression as given. */
  readonly expression: string;
  /** The event class name it was checked against (`system:event`). */
  readonly event: string;
  readonly predicates: readonly Predicate[];
  readonly program: readonly ProgramEntry[];
  /** The tree; undefined for the expression `0`, which clears a kernel filter (everything matches). */
  readonly root: FilterNode | undefined;
}
