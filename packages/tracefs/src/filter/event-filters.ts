/**
 * Which filter each recorded event gets: one for every event (`filter`) and filters scoped to some of them
 * (`filters`, trace-cmd's `-e EVENT -f FILTER`). An event named by several gets all of them, joined with `&&`.
 */
import type { EventClass } from '@evtrace/trace-format';
import { TracefsError } from '../errors.ts';
import { type EventName, matchEvents } from '../instance/catalog.ts';
import { type EventFilterPlan, planEventFilter } from './filter.ts';

/** An ftrace filter for some of the recorded events. */
export interface ScopedFilter {
  /** Event patterns as `RecordOptions.events` takes them (globs allowed); each must name a recorded event. */
  readonly events: readonly string[];
  /** The filter expression (ftrace syntax). */
  readonly filter: string;
}

/** The filters of a recording. */
export interface EventFilters {
  /** Applied to every recorded event. */
  readonly filter?: string | undefined;
  /** Applied to the events their patterns name. */
  readonly filters?: readonly ScopedFilter[] | undefined;
}

const nameOf = (c: EventClass): EventName => {
  const colon = c.name.indexOf(':');
  return { system: c.name.slice(0, colon), event: c.name.slice(colon + 1) };
};

/**
 * Plans the filter of every event of `classes` (the recorded ones) that has one. Each expression is first checked
 * alone, so an error's column refers to the text the user wrote.
 *
 * @throws TracefsError `ERR_TRACEFS_FILTER` for an invalid expression (naming the event, column and caret),
 * `ERR_TRACEFS_EVENT` for a scoped filter whose patterns name no recorded event.
 */
export function planEventFilters(classes: readonly EventClass[], filters: EventFilters): Map<string, EventFilterPlan> {
  const names = classes.map(nameOf);
  // Each event's filter texts, and the plan of the first (the whole plan when it has only one).
  const texts = new Map<string, { parts: string[]; first: EventFilterPlan }>();
  const add = (c: EventClass, text: string) => {
    const plan = planEventFilter(text, c);
    const had = texts.get(c.name);
    if (had === undefined) texts.set(c.name, { parts: [text], first: plan });
    else had.parts.push(text);
  };
  if (filters.filter !== undefined && filters.filter.trim() !== '') for (const c of classes) add(c, filters.filter);
  for (const scoped of filters.filters ?? []) {
    if (scoped.filter.trim() === '') continue;
    let named: EventName[];
    try {
      named = matchEvents(names, scoped.events);
    } catch (error) {
      throw new TracefsError(
        'ERR_TRACEFS_EVENT',
        `the filter '${scoped.filter}' is for ${scoped.events.join(', ')}, which names no recorded event (${(error as Error).message})`,
      );
    }
    for (const c of classes) if (named.some((n) => `${n.system}:${n.event}` === c.name)) add(c, scoped.filter);
  }
  const plans = new Map<string, EventFilterPlan>();
  for (const c of classes) {
    const t = texts.get(c.name);
    if (t === undefined) continue;
    plans.set(c.name, t.parts.length === 1 ? t.first : planEventFilter(t.parts.map((x) => `(${x})`).join(' && '), c));
  }
  return plans;
}
