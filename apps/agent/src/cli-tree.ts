import type { Command, Help } from 'commander';
import { examplesOf } from './help.ts';

/** One option as `--help` shows it. */
export interface OptionSpec {
  /** As help prints it: `-o, --output <file>`. */
  readonly term: string;
  readonly short: string | undefined;
  readonly long: string | undefined;
  /** Takes a value (`<x>` or `[x]`): the next word is not a command. */
  readonly takesValue: boolean;
  readonly choices: readonly string[] | undefined;
  readonly description: string;
}

/** One positional argument as `--help` shows it. */
export interface ArgumentSpec {
  readonly term: string;
  readonly choices: readonly string[] | undefined;
  readonly description: string;
}

/** A command of the tree with what its `--help` shows: the source of man pages and shell completion. */
export interface CommandSpec {
  /** From the program down: `['evtrace', 'session', 'start']`. */
  readonly path: readonly string[];
  readonly summary: string;
  readonly description: string;
  readonly usage: string;
  readonly arguments: readonly ArgumentSpec[];
  readonly options: readonly OptionSpec[];
  /** The EXAMPLES section of its help. */
  readonly examples: string | undefined;
  /** Visible subcommands, `help` included where commander adds it. */
  readonly commands: readonly CommandSpec[];
}

/** The visible tree below `cmd`, read through commander's own help so that it never disagrees with `--help`. */
export function commandTree(cmd: Command, path: readonly string[] = [cmd.name()]): CommandSpec {
  const help: Help = cmd.createHelp();
  const options = [...help.visibleOptions(cmd), ...help.visibleGlobalOptions(cmd)].map(
    (o): OptionSpec => ({
      term: help.optionTerm(o),
      short: o.short,
      long: o.long,
      takesValue: o.required || o.optional,
      choices: o.argChoices,
      description: help.optionDescription(o),
    }),
  );
  const args = help.visibleArguments(cmd).map(
    (a): ArgumentSpec => ({
      term: help.argumentTerm(a),
      choices: a.argChoices,
      description: help.argumentDescription(a),
    }),
  );
  return {
    path,
    summary: cmd.summary() || cmd.description().split('\n')[0] || '',
    description: cmd.description(),
    usage: help.commandUsage(cmd),
    arguments: args,
    options,
    examples: examplesOf(cmd),
    commands: help.visibleCommands(cmd).map((c) => commandTree(c, [...path, c.name()])),
  };
}

/** Every command of the tree, the root first, parents before their children. */
export function allCommands(root: CommandSpec): CommandSpec[] {
  return [root, ...root.commands.flatMap(allCommands)];
}
