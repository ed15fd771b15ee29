/**
 * How every `evtrace` command ends: its exit status, and the one line that says why (`evtrace: CODE: message`).
 * A leaf module: commands, the configuration and the program all import it, it imports none of them.
 */
import { errorText } from '@evtrace/errors';

/**
 * Exit status of every `evtrace` command. Scripts rely on these numbers: never renumber, only add.
 */
export const ExitCode = {
  /** The command did what was asked. */
  Ok: 0,
  /** The command ran and failed: bad input data, an unreadable file, a kernel interface that refused. */
  Failure: 1,
  /** The command line itself is wrong: unknown command or option, missing or malformed argument. */
  Usage: 2,
  /** A checked item was rejected (for example a filter expression the kernel would refuse). */
  Rejected: 3,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export const EXIT_STATUS_HELP = `EXIT STATUS
  0  success
  1  the command failed (bad input data, unreadable file, kernel refusal); the message says what and where
  2  usage error: unknown command or option, missing or malformed argument
  3  a checked item was rejected (for example a filter the kernel would refuse)`;

/** Codes the CLI gives its own errors (the packages' errors keep theirs). */
export const CliCode = {
  /** The command line is wrong: an unknown command or option (commander's), a missing or malformed argument. */
  Usage: 'ERR_CLI_USAGE',
  /** A file or descriptor the command reads or writes failed; the message names it and the errno. */
  Io: 'ERR_CLI_IO',
  /** The input holds nothing the command can use (no machine-check record, no branch, no task ids). */
  NoData: 'ERR_CLI_NO_DATA',
  /** A program the command runs (perf, the traced program) failed. */
  Child: 'ERR_CLI_CHILD',
  /** An error that carried no code of its own: a bug, the message says what. */
  Internal: 'ERR_CLI_INTERNAL',
  /** Node.js is older than the floor, checked by cli.ts before anything loads. */
  NodeVersion: 'ERR_CLI_NODE_VERSION',
} as const;

/**
 * The exit status of every error code that does not end with {@link ExitCode.Failure}: the one place that decides
 * which errors are the command line's fault. Keyed on the code strings alone, whichever package raised them.
 */
const EXIT_BY_CODE: Readonly<Record<string, ExitCode>> = {
  [CliCode.Usage]: ExitCode.Usage,
  // The configuration: file, environment and flags are all the command line's.
  ERR_CONFIG_READ: ExitCode.Usage,
  ERR_CONFIG_SYNTAX: ExitCode.Usage,
  ERR_CONFIG_UNKNOWN_KEY: ExitCode.Usage,
  ERR_CONFIG_VALUE: ExitCode.Usage,
  // tracefs: an event or a filter the kernel does not have or refuses.
  ERR_TRACEFS_EVENT: ExitCode.Usage,
  ERR_TRACEFS_FILTER: ExitCode.Usage,
  // The agent's replies: an event pattern, a filter or a request the command line gave.
  ERR_AGENT_EVENT: ExitCode.Usage,
  ERR_AGENT_FILTER: ExitCode.Usage,
  ERR_AGENT_BAD_MESSAGE: ExitCode.Usage,
  // persistent-events and ringbuf (and the protocol client's refusal to send): a bad name or argument.
  ERR_PERSISTENT_NAME: ExitCode.Usage,
  ERR_PERSISTENT_ARGUMENT: ExitCode.Usage,
  ERR_RINGBUF_ARGUMENT: ExitCode.Usage,
  ERR_AGENT_ARGUMENT: ExitCode.Usage,
  // fleet: a host, session or time the command line gave that cannot be used.
  ERR_FLEET_ARGUMENT: ExitCode.Usage,
};

/** Thrown by command actions to end with a given code, message and exit status. */
export class CliExit extends Error {
  /** The code printed before the message; empty for an exit that prints nothing. */
  readonly code: string;
  readonly exitCode: ExitCode;
  /** The exit status defaults to the one {@link exitCodeOf} gives `code`. */
  constructor(code: string, message: string, exitCode: ExitCode = exitStatusOfCode(code)) {
    super(message);
    this.name = 'CliExit';
    this.code = code;
    this.exitCode = exitCode;
  }

  /** An exit with `exitCode` that prints nothing (the command already said why, or a child did). */
  static quiet(exitCode: ExitCode): CliExit {
    return new CliExit('', '', exitCode);
  }

  /** `error`'s code and message with `prefix` before the message and `suffix` after it, and the status of its code. */
  static around(error: unknown, prefix: string, suffix = ''): CliExit {
    return new CliExit(errorCodeOf(error), `${prefix}${messageOf(error)}${suffix}`);
  }
}

/** A usage error (exit status 2): `evtrace: ERR_CLI_USAGE: message`. */
export function usageError(message: string): CliExit {
  return new CliExit(CliCode.Usage, message);
}

function exitStatusOfCode(code: string): ExitCode {
  return Object.hasOwn(EXIT_BY_CODE, code) ? EXIT_BY_CODE[code]! : ExitCode.Failure;
}

/** A system call's failure (`ENOENT` from open): its errno code and the call that failed. */
function isSystemError(error: unknown): error is NodeJS.ErrnoException {
  const e = error as NodeJS.ErrnoException | undefined;
  return typeof e?.syscall === 'string' && typeof e.code === 'string' && /^E[A-Z0-9]+$/.test(e.code);
}

/** The code `evtrace: CODE: message` prints for `error`. */
export function errorCodeOf(error: unknown): string {
  if (error instanceof CliExit) return error.code;
  if (isSystemError(error)) return CliCode.Io;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && /^ERR_[A-Z0-9_]+$/.test(code)) return code;
  return CliCode.Internal;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The exit status an error ends the command with. */
export function exitCodeOf(error: unknown): ExitCode {
  if (error instanceof CliExit) return error.exitCode;
  // Commander's: help and --version end with 0, every parse error is a usage error.
  const e = error as { code?: unknown; exitCode?: unknown } | undefined;
  if (typeof e?.code === 'string' && e.code.startsWith('commander.'))
    return e.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage;
  return exitStatusOfCode(errorCodeOf(error));
}

/**
 * The line printed for an error, without the `evtrace: ` in front; empty for an exit that prints nothing. A system
 * call's failure names the call, the path and the errno (`ERR_CLI_IO: cannot open x: ENOENT (no such file or directory)`).
 */
export function errorLine(error: unknown): string {
  if (error instanceof CliExit && error.message === '') return '';
  if (isSystemError(error)) return `${CliCode.Io}: ${errorText(error)}`;
  return `${errorCodeOf(error)}: ${messageOf(error)}`;
}
