/**
 * @evtrace/filters, loaded on first use: most recordings have no filter, and loading the filter language cost every
 * `evtrace record` a median 1.6 ms of start-up CPU (ten interleaved runs of a record that fails after loading).
 * require(esm) loads it synchronously, so the functions that take a filter stay synchronous.
 */
import { createRequire } from 'node:module';
import type * as Filters from '@evtrace/filters';

let loaded: typeof Filters | undefined;

/** The @evtrace/filters module, loaded on the first call. */
export function filtersModule(): typeof Filters {
  loaded ??= createRequire(import.meta.url)('@evtrace/filters') as typeof Filters;
  return loaded;
}
