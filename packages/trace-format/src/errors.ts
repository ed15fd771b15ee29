/** Error codes of @evtrace/trace-format. Add codes as decoders need them; never reuse one for another meaning. */
export type TraceFormatErrorCode = 'ERR_TRACE_FORMAT';

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
  constructor(code: TraceFormatErrorCode, message: string, location: InputLocation = {}) {
    super(`${formatLocation(location)}${message}`);
    this.name = 'TraceFormatError';
    this.code = code;
    this.location = location;
  }
}

function formatLocation(at: InputLocation): string {
  const parts: string[] = [];
  if (at.file !== undefined) parts.push(at.file);
  if (at.line !== undefined) parts.push(`${at.line}:${at.column ?? 1}`);
  if (at.offset !== undefined) parts.push(`byte ${at.offset}`);
  return parts.length > 0 ? `${parts.join(': ')}: ` : '';
}
