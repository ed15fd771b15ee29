import { Command, CommanderError } from 'commander';
import pkg from '../package.json' with { type: 'json' };
import type { CliIO } from './command.ts';
import { CliCode, ExitCode, errorLine, exitCodeOf } from './exit-codes.ts';
import { manPageHelp, setExamples } from './help.ts';
import { descriptorWriter } from './stdio.ts';

// A reader that goes away ends the output, not the program with a stack trace; nobody is left to tell on stderr.
const stdout = descriptorWriter(
  1,
  () => process.stdout,
  () => process.exit(0),
);
const processIO: CliIO = {
  stdout,
  stdoutBytes: stdout,
  stderr: descriptorWriter(
    2,
    () => process.stderr,
    () => {},
  ),
  progress: process.stderr.isTTY === true,
};

/** Commander's own errors (`error: unknown option '--x'`) in the form of every other: `evtrace: ERR_CLI_USAGE: ...`. */
function commanderErrorText(text: string): string {
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
    .option(
      '-q, --quiet',
      'print nothing on stderr but errors (evtrace: CODE: message): no notes, warnings or progress',
    )
    .option('-v, --verbose', "at the end, print the command's wall time, CPU time and peak memory on stderr")
    .helpOption('-h, --help', 'show this help')
    .helpCommand('help [command]', 'show the help of a command')
    .configureHelp({ formatHelp: manPageHelp, sortSubcommands: true })
    .configureOutput({
      writeOut: io.stdout,
      writeErr: io.stderr,
      outputError: (text, write) => write(commanderErrorText(text)),
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
  const started = performance.now();
  const program = createProgram(io);
  // -q, as perf's: commands' notes and warnings go, their error lines (the one shape every error has) stay.
  let quiet = false;
  const commandIO: CliIO = {
    stdout: io.stdout,
    stderr: (text) => {
      if (!quiet || ERROR_LINE.test(text)) io.stderr(text);
    },
    get progress() {
      return io.progress === true && !quiet;
    },
  };
  program.hook('preAction', () => {
    quiet = program.opts().quiet === true;
  });
  const { registerCommands } = await import('./commands/index.ts');
  await registerCommands(program, commandIO, argv);
  let code: ExitCode;
  try {
    await program.parseAsync(argv as string[], { from: 'user' });
    code = ExitCode.Ok;
  } catch (error) {
    // Commander already printed help or its message.
    if (error instanceof CommanderError) return exitCodeOf(error);
    const line = errorLine(error);
    if (line !== '') io.stderr(`evtrace: ${line}\n`);
    code = exitCodeOf(error);
  }
  if (program.opts().verbose === true && !quiet) io.stderr(resourceText(performance.now() - started));
  return code;
}

/** An error line as every error is printed: `evtrace: CODE: message` (a command may name itself first). */
const ERROR_LINE = /^evtrace(?: \w+)?: ERR_[A-Z0-9_]+: /;

/** What `-v` prints: this process's times and peak resident memory, as time(1) measures them. */
function resourceText(wallMs: number): string {
  const u = process.resourceUsage();
  const s = (micro: number) => (micro / 1e6).toFixed(2);
  return `evtrace: ${(wallMs / 1000).toFixed(2)} s wall, ${s(u.userCPUTime)} s user, ${s(u.systemCPUTime)} s sys, ${(u.maxRSS / 1024).toFixed(0)} MB peak RSS\n`;
}
