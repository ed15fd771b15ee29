/**
 * Errors of @evtrace/agent-protocol. Local failures (framing, parsing, the connection) and the agent's error replies
 * are both a {@link ProtocolError}; `remote` says which side decided.
 */
import { EvtraceError } from '@evtrace/errors';

/** Codes the agent sends in error replies (see PROTOCOL.md). Never reuse a code for another meaning. */
export type AgentErrorCode =
  /** The line is not JSON, or not a request of the shape PROTOCOL.md gives. */
  | 'ERR_BAD_MESSAGE'
  /** The line is longer than the agent accepts ({@link MAX_REQUEST_BYTES}). */
  | 'ERR_TOO_LARGE'
  /** A request other than `hello` came first. */
  | 'ERR_HELLO_REQUIRED'
  /** The client speaks a protocol version the agent does not. */
  | 'ERR_VERSION'
  /** An `op` the agent does not know. */
  | 'ERR_UNKNOWN_OP'
  /** No session of that name. */
  | 'ERR_NO_SESSION'
  /** A session of that name exists already. */
  | 'ERR_SESSION_EXISTS'
  /** The session cannot do that in its current state (start a running session, snapshot a failed one...). */
  | 'ERR_SESSION_STATE'
  /** An event pattern that matches no event of the source. */
  | 'ERR_EVENT'
  /** A filter expression that does not parse or does not fit the events. */
  | 'ERR_FILTER'
  /** The event source failed (tracefs refused, not root; a persistent buffer the agent may not open or is damaged). */
  | 'ERR_SOURCE'
  /** No persistent buffer of that name (`attach`). */
  | 'ERR_NO_BUFFER'
  /** An output or trace-shot could not be written (a full disk...). */
  | 'ERR_OUTPUT'
  /** A limit of the agent: too many sessions, viewers or requests in flight. */
  | 'ERR_LIMIT'
  /** The peer is not root, the agent's own user, or a member of its group (sent once, then the agent hangs up). */
  | 'ERR_PERMISSION'
  /** Anything else; the message says what. */
  | 'ERR_INTERNAL';

/** Codes of failures the client detects itself. */
export type LocalErrorCode =
  /** A line from the agent is longer than {@link MAX_SERVER_MESSAGE_BYTES}. */
  | 'ERR_PROTOCOL_TOO_LARGE'
  /** A line from the agent is not JSON or not a message PROTOCOL.md describes. */
  | 'ERR_PROTOCOL_MESSAGE'
  /** The socket cannot be reached (no agent, no permission). */
  | 'ERR_AGENT_CONNECT'
  /** The connection closed before the reply came. */
  | 'ERR_AGENT_CLOSED'
  /** A request the client refuses to send (a bad argument). */
  | 'ERR_ARGUMENT';

export type ProtocolErrorCode = AgentErrorCode | LocalErrorCode;

/** Every error of this package. */
export class ProtocolError extends EvtraceError<ProtocolErrorCode> {
  /** True when the agent sent this error in a reply; false when the client detected it. */
  readonly remote: boolean;
  constructor(code: ProtocolErrorCode, message: string, options: { remote?: boolean; cause?: unknown } = {}) {
    super(code, message, { cause: options.cause });
    this.name = 'ProtocolError';
    this.remote = options.remote ?? false;
  }
}

/** Every code the agent may send, for validating replies. */
export const AGENT_ERROR_CODES: readonly AgentErrorCode[] = [
  'ERR_BAD_MESSAGE',
  'ERR_TOO_LARGE',
  'ERR_HELLO_REQUIRED',
  'ERR_VERSION',
  'ERR_UNKNOWN_OP',
  'ERR_NO_SESSION',
  'ERR_SESSION_EXISTS',
  'ERR_SESSION_STATE',
  'ERR_EVENT',
  'ERR_FILTER',
  'ERR_SOURCE',
  'ERR_NO_BUFFER',
  'ERR_OUTPUT',
  'ERR_LIMIT',
  'ERR_PERMISSION',
  'ERR_INTERNAL',
];
