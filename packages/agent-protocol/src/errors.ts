/**
 * Errors of @evtrace/agent-protocol. Local failures (framing, parsing, the connection) and the agent's error replies
 * are both a {@link ProtocolError}; `remote` says which side decided.
 */
import { EvtraceError } from '@evtrace/errors';

/** Codes the agent sends in error replies (see PROTOCOL.md). Never reuse a code for another meaning. */
export type AgentErrorCode =
  /** The line is not JSON, or not a request of the shape PROTOCOL.md gives. */
  | 'ERR_AGENT_BAD_MESSAGE'
  /** The line is longer than the agent accepts ({@link MAX_REQUEST_BYTES}). */
  | 'ERR_AGENT_TOO_LARGE'
  /** A request other than `hello` came first. */
  | 'ERR_AGENT_HELLO_REQUIRED'
  /** The client speaks a protocol version the agent does not. */
  | 'ERR_AGENT_VERSION'
  /** An `op` the agent does not know. */
  | 'ERR_AGENT_UNKNOWN_OP'
  /** No session of that name. */
  | 'ERR_AGENT_NO_SESSION'
  /** A session of that name exists already. */
  | 'ERR_AGENT_SESSION_EXISTS'
  /** The session cannot do that in its current state (start a running session, snapshot a failed one...). */
  | 'ERR_AGENT_SESSION_STATE'
  /** An event pattern that matches no event of the source. */
  | 'ERR_AGENT_EVENT'
  /** A filter expression that does not parse or does not fit the events. */
  | 'ERR_AGENT_FILTER'
  /** The event source failed (tracefs refused, not root; a persistent buffer the agent may not open or is damaged). */
  | 'ERR_AGENT_SOURCE'
  /** No persistent buffer of that name (`attach`). */
  | 'ERR_AGENT_NO_BUFFER'
  /** An output or trace-shot could not be written (a full disk...). */
  | 'ERR_AGENT_OUTPUT'
  /** A limit of the agent: too many sessions, viewers or requests in flight. */
  | 'ERR_AGENT_LIMIT'
  /** The peer is not root, the agent's own user, or a member of its group (sent once, then the agent hangs up). */
  | 'ERR_AGENT_PERMISSION'
  /** Anything else; the message says what. */
  | 'ERR_AGENT_INTERNAL';

/** Codes of failures the client detects itself. */
export type LocalErrorCode =
  /** A line from the agent is longer than {@link MAX_SERVER_MESSAGE_BYTES}. */
  | 'ERR_AGENT_REPLY_TOO_LARGE'
  /** A line from the agent is not JSON or not a message PROTOCOL.md describes. */
  | 'ERR_AGENT_BAD_REPLY'
  /** The socket cannot be reached (no agent, no permission). */
  | 'ERR_AGENT_CONNECT'
  /** The connection closed before the reply came. */
  | 'ERR_AGENT_CLOSED'
  /** A request the client refuses to send (a bad argument). */
  | 'ERR_AGENT_ARGUMENT';

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
  'ERR_AGENT_BAD_MESSAGE',
  'ERR_AGENT_TOO_LARGE',
  'ERR_AGENT_HELLO_REQUIRED',
  'ERR_AGENT_VERSION',
  'ERR_AGENT_UNKNOWN_OP',
  'ERR_AGENT_NO_SESSION',
  'ERR_AGENT_SESSION_EXISTS',
  'ERR_AGENT_SESSION_STATE',
  'ERR_AGENT_EVENT',
  'ERR_AGENT_FILTER',
  'ERR_AGENT_SOURCE',
  'ERR_AGENT_NO_BUFFER',
  'ERR_AGENT_OUTPUT',
  'ERR_AGENT_LIMIT',
  'ERR_AGENT_PERMISSION',
  'ERR_AGENT_INTERNAL',
];

/**
 * The code of an error reply as this client knows it. Agents before the `ERR_AGENT_` tag sent the same names without
 * it (the client's fallback to version 1 needs an old agent's refusal of version 2); any other is `ERR_AGENT_INTERNAL`.
 */
export function agentErrorCode(sent: string): AgentErrorCode {
  const codes = AGENT_ERROR_CODES as readonly string[];
  if (codes.includes(sent)) return sent as AgentErrorCode;
  const tagged = sent.replace(/^ERR_/, 'ERR_AGENT_');
  return codes.includes(tagged) ? (tagged as AgentErrorCode) : 'ERR_AGENT_INTERNAL';
}
