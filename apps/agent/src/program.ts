import { Command, CommanderError } from 'commander';
import pkg from '../package.json' with { type: 'json' };
import type { CliIO } from './command.ts';
import { CliCode, ExitCode, errorLine, exitCodeOf } from './exit-codes.ts';
import { manPageHelp, setExamples } from './help.ts';
import { descriptorWriter } from './stdio.ts';

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

/** Commander's own errors (`error: unknown option '--x'`) in the form of every other: `evtrace: ERR_USAGE: ...`. */
function usageText(text: string): string {
  return text.replace(/^error: /, `evtrace: ${CliCode.Usage}: `);
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
    .configureOutput({
      writeOut: io.stdout,
      writeErr: io.stderr,
      outputError: (text, write) => write(usageText(text)),
    })
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

/** Runs the CLI and resolves to its exit status; never throws and never calls process.exit. */
export async function runCli(argv: readonly string[], io: CliIO = processIO): Promise<ExitCode> {
  const program = createProgram(io);
  const { registerCommands } = await import('./commands/index.ts');
  await registerCommands(program, io, argv);
  try {
    await program.parseAsync(argv as string[], { from: 'user' });
    return ExitCode.Ok;
  } catch (error) {
    // Commander already printed help or its message.
    if (error instanceof CommanderError) return exitCodeOf(error);
    const line = await errorLine(error);
    if (line !== '') io.stderr(`evtrace: ${line}\n`);
    return exitCodeOf(error);
  }
}
