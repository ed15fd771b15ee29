/** Filters of a recording: checked by @evtrace/filters first, then written to each event's `filter` file. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ParsedFilter } from '@evtrace/filters';
import type { EventClass } from '@evtrace/trace-format';
import { TracefsError } from '../errors.ts';
import { filtersModule } from './filters-module.ts';

/** Where one event's filter goes: the kernel's string, and what user space must still evaluate. */
export interface EventFilterPlan {
  readonly eventClass: EventClass;
  readonly parsed: ParsedFilter;
  readonly kernel: string | undefined;
  readonly userSpace: string | undefined;
}

/**
 * Parses `expression` against an event class and splits it between the kernel and user space.
 *
 * @throws TracefsError `ERR_TRACEFS_FILTER` with the kernel's message and a caret under the column.
 */
export function planEventFilter(expression: string, eventClass: EventClass): EventFilterPlan {
  const { FilterError, parseFilter, planPushDown } = filtersModule();
  let parsed: ParsedFilter;
  try {
    parsed = parseFilter(expression, eventClass);
  } catch (error) {
    if (!(error instanceof FilterError)) throw error;
    throw new TracefsError(
      'ERR_TRACEFS_FILTER',
      `invalid filter for ${eventClass.name} at column ${error.column + 1}:\n${error.format(expression)}`,
      { cause: error },
    );
  }
  const plan = planPushDown(parsed);
  return { eventClass, parsed, kernel: plan.kernel, userSpace: plan.userSpace };
}

/** The newest entry of an `error_log` text (its last lines starting at the last `[timestamp]`). */
export function lastErrorLogEntry(text: string): string | undefined {
  const lines = text.trimEnd().split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    if (/^\[\s*\d+\.\d+\]/.test(lines[i]!)) return lines.slice(i).join('\n');
  }
  return undefined;
}

/**
 * Writes a kernel filter to `EVENT_DIR/filter`. The write's errno is unreliable (parser codes leak out), so a
 * failure is explained by the instance's `error_log`.
 *
 * @throws TracefsError `ERR_TRACEFS_FILTER` with the kernel's log entry.
 */
export function writeKernelFilter(instanceDir: string, eventDir: string, filter: string): void {
  const file = join(eventDir, 'filter');
  try {
    writeFileSync(file, filter);
  } catch (error) {
    let log: string | undefined;
    try {
      log = lastErrorLogEntry(readFileSync(join(instanceDir, 'error_log'), 'utf8'));
    } catch {}
    throw new TracefsError(
      'ERR_TRACEFS_FILTER',
      `the kernel refused the filter '${filter}' for ${file}${log ? `:\n${log}` : ` (${(error as NodeJS.ErrnoException).code})`}`,
      { path: file, cause: error },
    );
  }
}
