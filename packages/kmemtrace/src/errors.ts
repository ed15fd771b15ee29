/** Error codes of @evtrace/kmemtrace. Never reuse a code for another meaning. */
export type KmemErrorCode =
  /** A kmemtrace binary declares an ABI version this decoder does not implement. */
  | 'ERR_KMEMTRACE_ABI'
  /** A kmemtrace binary record is truncated or impossible (event size below the header, beyond the data). */
  | 'ERR_KMEMTRACE_RECORD'
  /** A `perf script` line does not parse as a kmem tracepoint event. */
  | 'ERR_PERF_SCRIPT'
  /** An input is missing or is none of the kinds the analysis reads. */
  | 'ERR_KMEM_INPUT'
  /** An option is out of range (an unknown sort key, a negative line count). */
  | 'ERR_KMEM_OPTION';

/** Where in an input a problem was found. */
export interface KmemLocation {
  readonly file?: string;
  /** Byte offset, for binary inputs. */
  readonly offset?: number;
  /** 1-based line and column, for text inputs. */
  readonly line?: number;
  readonly column?: number;
}

/** Every error this package throws on bad input or options. */
export class KmemError extends Error {
  readonly code: KmemErrorCode;
  readonly location: KmemLocation;
  constructor(code: KmemErrorCode, message: string, location: KmemLocation = {}) {
    super(`${formatLocation(location)}${message}`);
    this.name = 'KmemError';
    this.code = code;
    this.location = location;
  }
}

function formatLocation(at: KmemLocation): string {
  const parts: string[] = [];
  if (at.file !== undefined) parts.push(at.file);
  if (at.line !== undefined) parts.push(`${at.line}:${at.column ?? 1}`);
  if (at.offset !== undefined) parts.push(`byte ${at.offset}`);
  return parts.length > 0 ? `${parts.join(': ')}: ` : '';
}
