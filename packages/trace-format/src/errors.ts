import { EvtraceError, type Location } from '@evtrace/errors';

/** Error codes of @evtrace/trace-format. Add codes as decoders need them; never reuse one for another meaning. */
export type TraceFormatErrorCode =
  | 'ERR_TRACE_FORMAT'
  /** CTF metadata (TSDL text or metadata packets) does not parse or describes an impossible trace. */
  | 'ERR_TRACE_TSDL'
  /** A CTF data stream is corrupt: bad magic, impossible packet size, truncated field, unknown event id. */
  | 'ERR_TRACE_CTF_PACKET'
  /** A CTF writer was given an event that does not match its class, or used after close. */
  | 'ERR_TRACE_CTF_WRITE'
  /** An ftrace `format`, `header_page` or `header_event` file does not parse. */
  | 'ERR_TRACE_FTRACE_FORMAT'
  /** A raw ring-buffer page (from `trace_pipe_raw` or a trace.dat CPU section) is corrupt. */
  | 'ERR_TRACE_FTRACE_PAGE'
  /** A trace.dat file is malformed, truncated or of an unsupported version or compression. */
  | 'ERR_TRACE_DAT'
  /** A JSON event line (`cat --json`, the agent's live stream) is not JSON or does not fit its event class. */
  | 'ERR_TRACE_JSON_EVENT'
  /** A perf.data file is malformed or truncated (header, attributes, feature sections, records, samples). */
  | 'ERR_TRACE_PERF_DATA'
  /** An input is missing or not a trace evtrace recognises. */
  | 'ERR_TRACE_INPUT'
  /** An output file or directory cannot be written (the message names it and says why). */
  | 'ERR_TRACE_OUTPUT';

/** Where in an input a problem was found: file, byte offset, 1-based line and column (@evtrace/errors' Location). */
export type InputLocation = Location;

export class TraceFormatError extends EvtraceError<TraceFormatErrorCode> {
  declare readonly location: InputLocation;
  /** The output file or directory an `ERR_TRACE_OUTPUT` is about (its message names it too). */
  readonly path: string | undefined;
  constructor(
    code: TraceFormatErrorCode,
    message: string,
    location: InputLocation = {},
    options: { readonly path?: string; readonly cause?: unknown } = {},
  ) {
    super(code, message, { location, cause: options.cause });
    this.name = 'TraceFormatError';
    this.path = options.path;
  }
}
