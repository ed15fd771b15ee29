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
