/**
 * @evtrace/filters, loaded on first use: most recordings have no filter, and loading the filter language is start-up
 * CPU every `evtrace record` would pay (apps/agent/src/commands/end-to-end.bench.ts prints a command's CPU, start
 * included). require(esm) loads it synchronously, so the functions that take a filter stay synchronous.
 */
import { createRequire } from 'node:module';
import type * as Filters from '@evtrace/filters';

let loaded: typeof Filters | undefined;

/** The @evtrace/filters module, loaded on the first call. */
export function filtersModule(): typeof Filters {
  loaded ??= createRequire(import.meta.url)('@evtrace/filters') as typeof Filters;
  return loaded;
}
