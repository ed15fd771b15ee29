import { Command, CommanderError } from 'commander';
import pkg from '../package.json' with { type: 'json' };
import { ExitCode } from './exit-codes.ts';
import { manPageHelp, setExamples } from './help.ts';
import { descriptorWriter } from './stdio.ts';

/** Where a command writes; tests pass their own. */
export interface CliIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

const processIO: CliIO = {
  // A reader that goes away ends the output, not the program with a stack trace; nobody is left to tell on stderr.
  stdout: descriptorWriter(
    1,
    () => process.stdout,
    () => process.exit(0),
  ),
  stderr: descriptorWriter(
    2,
    () => process.stderr,
    () => {},
  ),
};

/** Thrown by command actions to end with a given exit status and message. */
export class CliExit extends Error {
  readonly exitCode: ExitCode;
  constructor(exitCode: ExitCode, message: string) {
    super(message);
    this.name = 'CliExit';
    this.exitCode = exitCode;
  }
}

/** Builds the `evtrace` command tree. Each verb registers itself here. */
export function createProgram(io: CliIO = processIO): Command {
  const program = new Command('evtrace');
  program
    .summary('record, convert, filter and inspect Linux trace events')
    .description(
      `evtrace unifies event tracing on Linux: one ring buffer, one trace format (CTF), one filter language
(ftrace's), decoders for hardware errors, branch traces and kernel memory allocations, and a collector agent.`,
    )
    .version(pkg.version, '-V, --version', 'print the version and exit')
    .helpOption('-h, --help', 'show this help')
    .helpCommand('help [command]', 'show the help of a command')
    .configureHelp({ formatHelp: manPageHelp, sortSubcommands: true })
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showSuggestionAfterError(true)
    .exitOverride();
  setExamples(
    program,
    `evtrace demo                       write events from worker threads into a ring buffer and read them back
evtrace demo --json                same, one JSON object per line
evtrace help demo                  the manual of one command`,
  );
  return program;
}

/** Registers a subcommand inheriting the program's help and output settings. */
export function addCommand(program: Command, name: string): Command {
  const cmd = program.command(name);
  cmd.configureHelp({ formatHelp: manPageHelp }).exitOverride();
  return cmd;
}

/** Runs the CLI and resolves to its exit status; never throws and never calls process.exit. */
export async function runCli(argv: readonly string[], io: CliIO = processIO): Promise<ExitCode> {
  const program = createProgram(io);
  const { registerCommands } = await import('./commands/index.ts');
  await registerCommands(program, io, argv);
  try {
    await program.parseAsync(argv as string[], { from: 'user' });
    return ExitCode.Ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander already printed help or its message; every parse error is a usage error.
      return error.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage;
    }
    if (error instanceof CliExit) {
      if (error.message) io.stderr(`evtrace: ${error.message}\n`);
      return error.exitCode;
    }
    // Loaded here: the program's start does not wait for trace-format.
    const { errorText } = await import('@evtrace/trace-format');
    io.stderr(`evtrace: ${errorText(error)}\n`);
    return ExitCode.Failure;
  }
}
