/**
 * The filter bar's logic: validating an ftrace filter expression as the kernel would (its message and the column of
 * the caret) against every event type of the source, and applying it to a store without blocking the screen.
 */
import { CommTracker, compileFilter, type EventPredicate, FilterError } from '@evtrace/filters';
import type { EventClass, TraceEvent } from '@evtrace/trace-format';
import type { EventStore } from './store.ts';

/** A valid expression: per event type, its predicate or why the type is left out. */
export interface CompiledFilter {
  readonly ok: true;
  readonly expression: string;
  /** Types the expression applies to (others are left out, as the kernel refuses the filter on them). */
  readonly applies: readonly string[];
  /** By event type name. */
  readonly predicates: ReadonlyMap<string, EventPredicate | undefined>;
}

/** An expression no event type accepts: the kernel's message and where it points. */
export interface FilterProblem {
  readonly ok: false;
  readonly expression: string;
  readonly message: string;
  /** 0-based column of the caret. */
  readonly column: number;
}

/**
 * Compiles `expression` for every class. Valid when at least one class accepts it; otherwise the problem is the first
 * error that is not a missing field (the kernel's message and caret for that event), else the first one. An empty expression is valid and keeps everything.
 */
export function validateFilter(
  expression: string,
  classes: readonly EventClass[],
  comm: (e: TraceEvent) => string | undefined,
): CompiledFilter | FilterProblem {
  const predicates = new Map<string, EventPredicate | undefined>();
  const applies: string[] = [];
  let first: FilterError | undefined;
  for (const c of classes) {
    try {
      predicates.set(c.name, compileFilter(expression, c, { comm }));
      applies.push(c.name);
    } catch (error) {
      if (!(error instanceof FilterError)) throw error;
      // An error in the expression itself says more than a field that one event type lacks.
      if (first === undefined || (first.kind === 'FIELD_NOT_FOUND' && error.kind !== 'FIELD_NOT_FOUND')) first = error;
      predicates.set(c.name, undefined);
    }
  }
  if (applies.length === 0 && first !== undefined) {
    return {
      ok: false,
      expression,
      message: `${first.message}${first.detail ? ` (${first.detail})` : ''}`,
      column: first.column,
    };
  }
  return { ok: true, expression, applies, predicates };
}

/** A task-name resolver for COMM: names replayed from the events in order, seeded with the recording's cmdlines. */
export function commResolver(taskName: (pid: number) => string | undefined): {
  comm: (e: TraceEvent) => string | undefined;
  observe: (e: TraceEvent) => void;
} {
  const tracker = new CommTracker();
  const seeded = new Set<number>();
  return {
    comm(e) {
      const got = tracker.resolve(e);
      if (got !== undefined) return got;
      const pid = e.scopes?.['event.context']?.common_pid;
      if (typeof pid !== 'number' || seeded.has(pid)) return undefined;
      seeded.add(pid);
      const name = taskName(pid);
      if (name !== undefined) tracker.seed(pid, name);
      return name;
    },
    observe: (e) => tracker.observe(e),
  };
}

/** Progress of {@link scanFilter}. */
export interface FilterScan {
  /** Positions in the base store that match, so far. */
  readonly matches: Uint32Array;
  readonly count: number;
  /** Positions examined so far. */
  readonly scanned: number;
  readonly done: boolean;
}

/**
 * Applies `filter` to every event of `store` in slices of `sliceMs`, yielding to the event loop between slices so
 * keys and frames keep flowing; `onProgress` gets the matches found so far. Returns a function that cancels the scan.
 */
export function scanFilter(
  store: EventStore,
  filter: CompiledFilter,
  resolver: ReturnType<typeof commResolver>,
  onProgress: (scan: FilterScan) => void,
  sliceMs = 30,
): () => void {
  let matches = new Uint32Array(1024);
  let count = 0;
  let i = 0;
  let cancelled = false;
  const step = () => {
    if (cancelled) return;
    const until = performance.now() + sliceMs;
    while (i < store.length) {
      const e = store.event(i);
      const p = filter.predicates.get(e.eventClass.name);
      if (p?.(e) === true) {
        if (count === matches.length) {
          const bigger = new Uint32Array(matches.length * 2);
          bigger.set(matches);
          matches = bigger;
        }
        matches[count++] = i;
      }
      resolver.observe(e);
      i++;
      if ((i & 1023) === 0 && performance.now() >= until) break;
    }
    const done = i >= store.length;
    onProgress({ matches, count, scanned: i, done });
    if (!done) setImmediate(step);
  };
  step();
  return () => {
    cancelled = true;
  };
}
