/**
 * What a command is given and how it joins the program: a leaf module, so that commands never import the program
 * that loads them.
 */
import type { Command } from 'commander';
import { manPageHelp } from './help.ts';

/** Where a command writes; tests pass their own. */
export interface CliIO {
  stdout: (text: string) => void;
  /** UTF-8 bytes for stdout, written as they are (text a worker thread encoded, `fleet tail --json`'s records). */
  stdoutBytes?: (bytes: Uint8Array) => void;
  stderr: (text: string) => void;
  /** stderr is a terminal a command may draw progress on (never a pipe or a file; never with -q). */
  readonly progress?: boolean;
}

/** How a verb's module adds its command (and subcommands) to the program. */
export type Register = (program: Command, io: CliIO) => void;

/** Registers a subcommand inheriting the program's help and output settings. */
export function addCommand(program: Command, name: string): Command {
  const cmd = program.command(name);
  cmd.configureHelp({ formatHelp: manPageHelp }).exitOverride();
  return cmd;
}
