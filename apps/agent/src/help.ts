import type { Command, Help } from 'commander';
import { EXIT_STATUS_HELP } from './exit-codes.ts';

/** Indents every line of `text` by `n` spaces. */
function indent(text: string, n: number): string {
  const pad = ' '.repeat(n);
  return text
    .split('\n')
    .map((line) => (line ? pad + line : line))
    .join('\n');
}

/**
 * Formats `--help` like a man page: NAME, SYNOPSIS, DESCRIPTION, COMMANDS, OPTIONS, EXIT STATUS, EXAMPLES.
 * Examples come from the command's `examples` text set with {@link setExamples}.
 */
export function manPageHelp(cmd: Command, helper: Help): string {
  const path: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) path.unshift(c.name());
  const sections: string[] = [];
  sections.push(`NAME\n  ${path.join(' ')} - ${cmd.summary() || cmd.description().split('\n')[0]}`);
  sections.push(`SYNOPSIS\n  ${helper.commandUsage(cmd)}`);
  const description = cmd.description();
  if (description) sections.push(`DESCRIPTION\n${indent(description, 2)}`);
  const args = helper.visibleArguments(cmd);
  if (args.length > 0) {
    const width = Math.max(...args.map((a) => helper.argumentTerm(a).length));
    sections.push(
      `ARGUMENTS\n${args.map((a) => `  ${helper.argumentTerm(a).padEnd(width)}  ${helper.argumentDescription(a)}`).join('\n')}`,
    );
  }
  const commands = helper.visibleCommands(cmd);
  if (commands.length > 0) {
    const width = Math.max(...commands.map((c) => helper.subcommandTerm(c).length));
    sections.push(
      `COMMANDS\n${commands.map((c) => `  ${helper.subcommandTerm(c).padEnd(width)}  ${helper.subcommandDescription(c)}`).join('\n')}`,
    );
  }
  const options = [...helper.visibleOptions(cmd), ...helper.visibleGlobalOptions(cmd)];
  if (options.length > 0) {
    const width = Math.max(...options.map((o) => helper.optionTerm(o).length));
    sections.push(
      `OPTIONS\n${options.map((o) => `  ${helper.optionTerm(o).padEnd(width)}  ${helper.optionDescription(o)}`).join('\n')}`,
    );
  }
  sections.push(EXIT_STATUS_HELP);
  const examples = examplesOf(cmd);
  if (examples) sections.push(`EXAMPLES\n${indent(examples, 2)}`);
  return `${sections.join('\n\n')}\n`;
}

const EXAMPLES = new WeakMap<Command, string>();

/** Attaches the EXAMPLES section shown by `--help`. */
export function setExamples(cmd: Command, text: string): Command {
  EXAMPLES.set(cmd, text.trim());
  return cmd;
}

/** The EXAMPLES text of a command, if it has one. */
export function examplesOf(cmd: Command): string | undefined {
  return EXAMPLES.get(cmd);
}
