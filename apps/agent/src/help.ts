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

/** Words of `text` in lines of at most `width` columns (a word longer than that keeps a line of its own). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

/** Prose: its paragraphs (blank-line separated; lines starting with a space kept as they are) filled to `width`. */
function fill(text: string, width: number, at: number): string {
  const out: string[] = [];
  let paragraph: string[] = [];
  const flush = () => {
    if (paragraph.length > 0) out.push(...wrap(paragraph.join(' '), width - at).map((l) => ' '.repeat(at) + l));
    paragraph = [];
  };
  for (const line of text.split('\n')) {
    if (line.trim() === '' || /^\s/.test(line)) {
      flush();
      out.push(line.trim() === '' ? '' : ' '.repeat(at) + line);
    } else paragraph.push(line);
  }
  flush();
  return out.join('\n');
}

/**
 * Term and description lists, as man lays out a tagged paragraph: descriptions in a column after the terms, filled to
 * `width`; a term too long for the column has its description on the next line, at the column.
 */
function items(list: readonly (readonly [string, string])[], width: number): string {
  const column = Math.min(Math.max(...list.map(([term]) => term.length)), Math.floor(width * 0.35));
  const at = column + 4;
  return list
    .map(([term, description]) => {
      const lines = wrap(description, Math.max(width - at, 20));
      const pad = ' '.repeat(at);
      if (term.length > column || lines.length === 0) return [`  ${term}`, ...lines.map((l) => pad + l)].join('\n');
      return [`  ${term.padEnd(column)}  ${lines[0]}`, ...lines.slice(1).map((l) => pad + l)].join('\n');
    })
    .join('\n');
}

/**
 * An EXAMPLES line that does not fit: its comment (after two spaces or more) goes to the next line, under the
 * command; a command is never broken.
 */
function example(line: string, width: number): string {
  if (line.length <= width) return line;
  const m = /^(\S.*?\S) {2,}(\S.*)$/.exec(line);
  if (m === null) return line;
  return [m[1]!, ...wrap(m[2]!, width - 4).map((l) => `    ${l}`)].join('\n');
}

/**
 * Formats `--help` like a man page: NAME, SYNOPSIS, DESCRIPTION, COMMANDS, OPTIONS, EXIT STATUS, EXAMPLES, filled to
 * the terminal's width (commander's `helpWidth`: the terminal's columns, 80 when the output is not a terminal).
 * Examples come from the command's `examples` text set with {@link setExamples}.
 */
export function manPageHelp(cmd: Command, helper: Help): string {
  const width = Math.max(helper.helpWidth ?? 80, 40);
  const path: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) path.unshift(c.name());
  const sections: string[] = [];
  const name = `${path.join(' ')} - ${cmd.summary() || cmd.description().split('\n')[0]}`;
  sections.push(`NAME\n${fill(name, width, 2)}`);
  sections.push(`SYNOPSIS\n${fill(helper.commandUsage(cmd), width, 2)}`);
  const description = cmd.description();
  if (description) sections.push(`DESCRIPTION\n${fill(description, width, 2)}`);
  const args = helper.visibleArguments(cmd);
  if (args.length > 0)
    sections.push(
      `ARGUMENTS\n${items(
        args.map((a) => [helper.argumentTerm(a), helper.argumentDescription(a)]),
        width,
      )}`,
    );
  const commands = helper.visibleCommands(cmd);
  if (commands.length > 0)
    sections.push(
      `COMMANDS\n${items(
        commands.map((c) => [helper.subcommandTerm(c), helper.subcommandDescription(c)]),
        width,
      )}`,
    );
  const options = [...helper.visibleOptions(cmd), ...helper.visibleGlobalOptions(cmd)];
  if (options.length > 0)
    sections.push(
      `OPTIONS\n${items(
        options.map((o) => [helper.optionTerm(o), helper.optionDescription(o)]),
        width,
      )}`,
    );
  const [exitHeading, ...statuses] = EXIT_STATUS_HELP.split('\n');
  sections.push(
    `${exitHeading}\n${items(
      statuses.map((l) => /^\s*(\d+)\s+(.*)$/.exec(l)!).map((m) => [m[1]!, m[2]!]),
      width,
    )}`,
  );
  const examples = examplesOf(cmd);
  if (examples)
    sections.push(
      `EXAMPLES\n${examples
        .split('\n')
        .map((l) => indent(example(l, width - 2), 2))
        .join('\n')}`,
    );
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
