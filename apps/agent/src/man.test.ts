/**
 * The manual pages the build writes (dist/man), as `man` renders them: one per command that `evtrace --help` lists,
 * each with the synopsis, options and examples its `--help` prints, free of groff warnings, and listed in
 * package.json's `man` field so that npm installs them.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import pkg from '../package.json' with { type: 'json' };
import { runCli } from './program.ts';

const MAN = new URL('../dist/man/', import.meta.url).pathname;
const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
const noGroff = has('groff') ? '' : ' (skipped: groff is not installed (apt-get install groff-base))';
const noMan = has('man') ? '' : ' (skipped: man is not installed (apt-get install man-db))';
/** `evtrace ARGS`'s standard output, run in this process: the same help a spawned CLI prints on a pipe. */
async function help(...args: string[]): Promise<string> {
  let out = '';
  await runCli(args, { stdout: (t) => (out += t), stderr: () => {} });
  return out;
}

/** The terms of one section of a command's --help. */
function helpTerms(text: string, section: string): string[] {
  const body = new RegExp(`^${section}\\n((?:  .*\\n?)*)`, 'm').exec(text)?.[1] ?? '';
  return [...body.matchAll(/^ {2}(\S.*?)(?: {2,}|$)/gm)].map((m) => m[1]!);
}

const verbs = helpTerms(await help('--help'), 'COMMANDS')
  .map((t) => t.split(' ')[0]!)
  .filter((v) => v !== 'help');

/** A page as man shows it, plain text, lines long enough that nothing is hyphenated or wrapped inside a term. */
function rendered(page: string): string {
  const r = spawnSync('man', ['-l', `${MAN}${page}`], {
    encoding: 'utf8',
    env: { ...process.env, MANWIDTH: '400', MAN_KEEP_FORMATTING: '', LANG: 'C.UTF-8' },
  });
  expect(r.status, r.stderr).toBe(0);
  // Overstrike bold and underline removed; groff's hyphen and minus signs read as '-'.
  return r.stdout.replace(/.\x08/g, '').replace(/[\u2010\u2212]/g, '-');
}

describe('manual pages', () => {
  it('exist for the program and every command, and package.json installs exactly those', () => {
    const pages = ['evtrace.1', ...verbs.map((v) => `evtrace-${v}.1`)].sort();
    expect(readdirSync(MAN).sort()).toEqual(pages);
    expect([...pkg.man].sort()).toEqual(pages.map((p) => `./dist/man/${p}`));
  });

  it.skipIf(!has('groff'))(`are read by groff without a warning${noGroff}`, () => {
    for (const page of readdirSync(MAN)) {
      const r = spawnSync('groff', ['-man', '-ww', '-z', '-Tutf8', `${MAN}${page}`], { encoding: 'utf8' });
      expect(r.stderr, page).toBe('');
      expect(r.status, page).toBe(0);
    }
  });

  describe.skipIf(!has('man'))(`as man shows them${noMan}`, () => {
    it('evtrace(1) names every command and its summary', () => {
      const text = rendered('evtrace.1');
      expect(text).toMatch(/^NAME\n\s+evtrace - record, convert, filter and inspect Linux trace events$/m);
      for (const v of verbs)
        expect(text, v).toMatch(new RegExp(`^\\s+${v}\\s+\\S.*\\n\\s+See evtrace-${v}\\(1\\)\\.$`, 'm'));
    });

    it("each command's page carries its help's synopsis, options and examples, and those of its subcommands", async () => {
      for (const v of verbs) {
        const text = rendered(`evtrace-${v}.1`);
        const commands = [[v], ...helpTerms(await help(v, '--help'), 'COMMANDS').map((t) => [v, t.split(/[ |]/)[0]!])];
        for (const command of commands.filter((c) => c[1] !== 'help')) {
          const helpText = await help(...command, '--help');
          if (command.length > 1)
            expect(text, command.join(' ')).toMatch(new RegExp(`^${command.join(' ').toUpperCase()}$`, 'm'));
          const usage = /^SYNOPSIS\n\s+(.*)$/m.exec(helpText)![1]!;
          expect(text, command.join(' ')).toContain(usage);
          for (const term of helpTerms(helpText, 'OPTIONS'))
            expect(text, `${command.join(' ')} ${term}`).toContain(term);
          const example = /^EXAMPLES\n\s+(.*)$/m.exec(helpText)?.[1];
          if (example) expect(text, command.join(' ')).toContain(example);
        }
      }
    });
  });
});
