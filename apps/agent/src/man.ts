import type { CommandSpec } from './cli-tree.ts';
import { EXIT_STATUS_HELP } from './exit-codes.ts';

/** What a page needs besides the tree: the version in its footer. */
export interface ManContext {
  readonly version: string;
}

/**
 * The manual in roff (man(7) macros), from the same tree and text as `--help`: `evtrace.1` for the program and one
 * `evtrace-VERB.1` per command, its subcommands as sections of it, as trace-cmd and perf ship theirs.
 * Keyed by file name.
 */
export function manPages(tree: CommandSpec, context: ManContext): Map<string, string> {
  const verbs = tree.commands.filter((c) => c.path.at(-1) !== 'help');
  const pages = new Map<string, string>();
  const pageName = (spec: CommandSpec) => spec.path.join('-');
  const seeAlso = (self: string) =>
    [tree, ...verbs]
      .map(pageName)
      .filter((n) => n !== self)
      .map((n) => `.BR ${n} (1)`)
      .join(',\n');
  pages.set(`${pageName(tree)}.1`, page(tree, context, verbs, seeAlso(pageName(tree))));
  for (const verb of verbs) pages.set(`${pageName(verb)}.1`, page(verb, context, [], seeAlso(pageName(verb))));
  return pages;
}

function page(spec: CommandSpec, context: ManContext, verbs: readonly CommandSpec[], seeAlso: string): string {
  const name = spec.path.join('-');
  const out = [
    `.TH ${roff(name.toUpperCase())} 1 "" "evtrace ${roff(context.version)}" "evtrace manual"`,
    '.SH NAME',
    `${roff(name)} \\- ${roff(spec.summary)}`,
  ];
  out.push(...body(spec, '.SH'));
  if (verbs.length > 0) {
    out.push('.SH COMMANDS');
    for (const v of verbs)
      out.push(
        '.TP',
        `.B ${roff(v.path.at(-1)!)}`,
        roff(v.summary),
        '.br',
        `See \\fB${roff(v.path.join('-'))}\\fR(1).`,
      );
  }
  // Subcommands (`session start`) are sections of their verb's page; the help command only repeats --help.
  for (const sub of spec.path.length > 1 ? allBelow(spec) : []) {
    out.push(`.SH ${roff(sub.path.slice(1).join(' ').toUpperCase())}`, roff(sub.summary));
    out.push(...body(sub, '.SS'));
  }
  out.push('.SH EXIT STATUS', '.TP', ...exitStatus());
  out.push('.SH SEE ALSO', seeAlso);
  return `${out.join('\n')}\n`;
}

function allBelow(spec: CommandSpec): CommandSpec[] {
  return spec.commands.filter((c) => c.path.at(-1) !== 'help').flatMap((c) => [c, ...allBelow(c)]);
}

/** SYNOPSIS, DESCRIPTION, ARGUMENTS, OPTIONS and EXAMPLES of one command, under headings of the given level. */
function body(spec: CommandSpec, heading: '.SH' | '.SS'): string[] {
  const out = [`${heading} SYNOPSIS`, '.nf', roff(spec.usage), '.fi'];
  if (spec.description) out.push(`${heading} DESCRIPTION`, ...prose(spec.description));
  if (spec.arguments.length > 0) {
    out.push(`${heading} ARGUMENTS`);
    for (const a of spec.arguments) out.push('.TP', `.B ${roff(a.term)}`, roff(a.description));
  }
  if (spec.options.length > 0) {
    out.push(`${heading} OPTIONS`);
    for (const o of spec.options) out.push('.TP', `\\fB${roff(o.term)}\\fR`, ...prose(o.description));
  }
  const examples = spec.examples;
  if (examples) out.push(`${heading} EXAMPLES`, '.nf', '.RS 2', ...examples.split('\n').map(roff), '.RE', '.fi');
  return out;
}

/** Help text as roff: its wrapped lines filled again, blank lines as paragraph breaks, indented lines kept. */
function prose(text: string): string[] {
  return text
    .split('\n')
    .map((line) => (line.trim() === '' ? '.PP' : /^\s/.test(line) ? `.br\n${roff(line)}` : roff(line)));
}

function exitStatus(): string[] {
  const out: string[] = [];
  for (const line of EXIT_STATUS_HELP.split('\n').slice(1)) {
    const m = /^\s*(\d+)\s+(.*)$/.exec(line);
    if (m) out.push(out.length > 0 ? '.TP' : '', `.B ${m[1]}`, roff(m[2]!));
  }
  return out.filter(Boolean);
}

/** Text made safe for roff: backslashes and hyphens escaped, no line read as a request. */
function roff(text: string): string {
  const escaped = text.replace(/\\/g, '\\e').replace(/-/g, '\\-');
  return /^[.']/.test(escaped) ? `\\&${escaped}` : escaped;
}
