/** Errors of the agent's metrics endpoint, each with a `code` saying what failed. */
import { EvtraceError } from '@evtrace/errors';

/** Error codes of the metrics endpoint. Never reuse a code for another meaning. */
export type MetricsErrorCode =
  /** The endpoint cannot listen on its address (in use, not an address of this host, no permission). */
  | 'ERR_METRICS_LISTEN'
  /** A collector with an invalid or already registered metric name, or invalid label names. */
  | 'ERR_METRICS_COLLECTOR';

export class MetricsError extends EvtraceError<MetricsErrorCode> {
  constructor(code: MetricsErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
    this.name = 'MetricsError';
  }
}
