import { EvtraceError } from '@evtrace/errors';

/** Errors of @evtrace/fleet: one class, a code per kind of failure, a message that says what and where. */

export type FleetErrorCode =
  /** The NATS server cannot be reached (refused, timed out, bad URL, TLS handshake). */
  | 'ERR_FLEET_CONNECT'
  /** The server refused the credentials (user/password, token, credentials file) or a permission. */
  | 'ERR_FLEET_AUTH'
  /** The JetStream stream or object store cannot be created, or exists with settings that do not fit. */
  | 'ERR_FLEET_STREAM'
  /** The local spool cannot be opened or written (permissions, a full disk). */
  | 'ERR_FLEET_SPOOL'
  /** A message in the stream is not one this package writes (where: subject and stream sequence). */
  | 'ERR_FLEET_MESSAGE'
  /** A bad argument: a host or session name that cannot be a subject token, a bad time. */
  | 'ERR_FLEET_ARGUMENT'
  /** A trace-shot that is not in the object store. */
  | 'ERR_FLEET_NO_SHOT';

/** Every error of this package: evtrace's one error shape (code, message, cause). */
export class FleetError extends EvtraceError<FleetErrorCode> {
  constructor(code: FleetErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options.cause === undefined ? {} : { cause: options.cause });
    this.name = 'FleetError';
  }
}
