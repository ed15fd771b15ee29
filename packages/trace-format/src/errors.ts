/** Error codes of @evtrace/trace-format. Add codes as decoders need them; never reuse one for another meaning. */
export type TraceFormatErrorCode =
  | 'ERR_TRACE_FORMAT'
  /** CTF metadata (TSDL text or metadata packets) does not parse or describes an impossible trace. */
  | 'ERR_TSDL'
  /** A CTF data stream is corrupt: bad magic, impossible packet size, truncated field, unknown event id. */
  | 'ERR_CTF_PACKET'
  /** A CTF writer was given an event that does not match its class, or used after close. */
  | 'ERR_CTF_WRITE'
  /** An ftrace `format`, `header_page` or `header_event` file does not parse. */
  | 'ERR_FTRACE_FORMAT'
  /** A raw ring-buffer page (from `trace_pipe_raw` or a trace.dat CPU section) is corrupt. */
  | 'ERR_FTRACE_PAGE'
  /** A trace.dat file is malformed, truncated or of an unsupported version or compression. */
  | 'ERR_TRACE_DAT'
  /** A JSON event line (`cat --json`, the agent's live stream) is not JSON or does not fit its event class. */
  | 'ERR_JSON_EVENT'
  /** An input is missing or not a trace evtrace recognises. */
  | 'ERR_TRACE_INPUT'
  /** An output file or directory cannot be written (the message names it and says why). */
  | 'ERR_OUTPUT';

/** Where in an input a problem was found. */
export interface InputLocation {
  /** File path (or a label such as `<stdin>`). */
  readonly file?: string;
  /** Byte offset in that file. */
  readonly offset?: number;
  /** 1-based line and column, for text inputs such as TSDL or format files. */
  readonly line?: number;
  readonly column?: number;
}

export class TraceFormatError extends Error {
  readonly code: TraceFormatErrorCode;
  readonly location: InputLocation;
  /** The output file or directory an `ERR_OUTPUT` is about (its message names it too). */
  readonly path: string | undefined;
  constructor(
    code: TraceFormatErrorCode,
    message: string,
    location: InputLocation = {},
    options: { readonly path?: string; readonly cause?: unknown } = {},
  ) {
    super(`${formatLocation(location)}${message}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TraceFormatError';
    this.code = code;
    this.location = location;
    this.path = options.path;
  }
}

function formatLocation(at: InputLocation): string {
  const parts: string[] = [];
  if (at.file !== undefined) parts.push(at.file);
  if (at.line !== undefined) parts.push(`${at.line}:${at.column ?? 1}`);
  if (at.offset !== undefined) parts.push(`byte ${at.offset}`);
  return parts.length > 0 ? `${parts.join(': ')}: ` : '';
}
