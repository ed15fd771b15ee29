/**
 * Errors of the agent's configuration. Every problem raises a {@link ConfigError} whose `code` says what kind it is
 * and which names where it is: the config file with line and column, an environment variable, or a flag.
 */
import { EvtraceError, formatLocation } from '@evtrace/errors';

/** Error codes of the configuration. Never reuse a code for another meaning. */
export type ConfigErrorCode =
  /** The config file cannot be read (missing when named explicitly, a directory, no permission). */
  | 'ERR_CONFIG_READ'
  /** The config file is not valid TOML. */
  | 'ERR_CONFIG_SYNTAX'
  /** A key the configuration does not have (a typo, or a key of a newer version). */
  | 'ERR_CONFIG_UNKNOWN_KEY'
  /** A value of the wrong type or out of range: a bad size, duration, listen address, mode or name. */
  | 'ERR_CONFIG_VALUE';

/** Where a setting came from. */
export type ConfigOrigin =
  | { readonly kind: 'file'; readonly file: string; readonly line?: number; readonly column?: number }
  | { readonly kind: 'env'; readonly variable: string }
  | { readonly kind: 'flag'; readonly flag: string }
  | { readonly kind: 'default' };

/** Renders an origin the way messages and `--check-config` name it: `agent.toml:12:3`, `EVTRACE_METRICS`, `--metrics`. */
export function describeOrigin(origin: ConfigOrigin): string {
  switch (origin.kind) {
    case 'file':
      return formatLocation(origin);
    case 'env':
      return `environment variable ${origin.variable}`;
    case 'flag':
      return origin.flag;
    case 'default':
      return 'default';
  }
}

export class ConfigError extends EvtraceError<ConfigErrorCode> {
  /** Where the offending setting is. */
  readonly origin: ConfigOrigin;
  /** The dotted key (`sessions.flight.buffer_size`), when the problem is one key's. */
  readonly key: string | undefined;
  constructor(
    code: ConfigErrorCode,
    message: string,
    options: { origin: ConfigOrigin; key?: string; cause?: unknown },
  ) {
    const { origin } = options;
    const what = options.key !== undefined && origin.kind === 'file' ? `${options.key}: ` : '';
    // A file is a location; an environment variable or a flag is named in front of the message instead.
    super(code, origin.kind === 'file' ? `${what}${message}` : `${describeOrigin(origin)}: ${message}`, {
      location: origin.kind === 'file' ? { file: origin.file, line: origin.line, column: origin.column } : undefined,
      cause: options.cause,
    });
    this.name = 'ConfigError';
    this.origin = options.origin;
    this.key = options.key;
  }
}
