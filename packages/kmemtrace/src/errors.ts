import { EvtraceError, type Location } from '@evtrace/errors';

/** Error codes of @evtrace/kmemtrace. Never reuse a code for another meaning. */
export type KmemErrorCode =
  /** A kmemtrace binary declares an ABI version this decoder does not implement. */
  | 'ERR_KMEM_RELAY_ABI'
  /** A kmemtrace binary record is truncated or impossible (event size below the header, beyond the data). */
  | 'ERR_KMEM_RELAY_RECORD'
  /** A `perf script` line does not parse as a kmem tracepoint event. */
  | 'ERR_KMEM_PERF_SCRIPT'
  /** An input is missing or is none of the kinds the analysis reads. */
  | 'ERR_KMEM_INPUT'
  /** An option is out of range (an unknown sort key, a negative line count). */
  | 'ERR_KMEM_OPTION';

/** Where in an input a problem was found: file, byte offset for binary inputs, line and column for text. */
export type KmemLocation = Location;

/** Every error this package throws on bad input or options. */
export class KmemError extends EvtraceError<KmemErrorCode> {
  declare readonly location: KmemLocation;
  constructor(code: KmemErrorCode, message: string, location: KmemLocation = {}) {
    super(code, message, { location });
    this.name = 'KmemError';
  }
}

/** What every kmem input must hold, as the errors refusing one say it. */
export const EXPECTED_INPUT = 'a trace of kmem events, perf script text of kmem events or kmemtrace relay records';

/** The refusal of an input holding no kmem event, with how many problems were skipped on the way. */
export function noKmemEvents(file: string, problems: number): KmemError {
  const skipped = problems > 0 ? ` (${problems} problem${problems === 1 ? '' : 's'} skipped)` : '';
  return new KmemError('ERR_KMEM_INPUT', `no kmem event${skipped}: expected ${EXPECTED_INPUT}`, { file });
}
