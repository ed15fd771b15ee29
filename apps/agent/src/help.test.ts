/**
 * `--help` fills the terminal it is printed on (a real pty, through util-linux's script(1)), as man does: no line
 * wider than the terminal but whole commands in EXAMPLES, the same words at every width, 80 columns on a pipe.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLI } from './testing/agent-daemon.ts';

const hasScript = spawnSync('sh', ['-c', 'command -v script']).status === 0;
const COMMANDS = [[], ['record'], ['session', 'create'], ['agent'], ['convert']];

/** The help of `command` as a terminal of `columns` columns shows it. */
function onTerminal(columns: number, command: string[]): string {
  const line = [process.execPath, CLI, ...command, '--help'].map((w) => `'${w}'`).join(' ');
  const r = spawnSync('script', ['-qec', `stty cols ${columns} rows 50; ${line}`, '/dev/null'], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.replace(/\r\n/g, '\n');
}

const words = (text: string) => text.split(/\s+/).filter(Boolean);

/** Lines wider than `columns`, but for EXAMPLES' commands, which are never broken. */
function tooWide(text: string, columns: number): string[] {
  const examples = text.indexOf('\nEXAMPLES\n');
  return text
    .split('\n')
    .filter(
      (l, i, all) =>
        l.length > columns && !(examples >= 0 && all.slice(0, i).join('\n').length > examples && /^ {2}\S/.test(l)),
    );
}

describe.skipIf(!hasScript)(
  `--help on a terminal${hasScript ? '' : ' (skipped: script(1) from util-linux is missing)'}`,
  () => {
    it.each(COMMANDS.map((c) => [c.join(' ') || 'evtrace', c]))(
      '%s fills 80 and 200 columns with the same words',
      (_, command) => {
        const narrow = onTerminal(80, command as string[]);
        const wide = onTerminal(200, command as string[]);
        expect(tooWide(narrow, 80)).toEqual([]);
        expect(tooWide(wide, 200)).toEqual([]);
        expect(wide.split('\n').some((l) => l.length > 80)).toBe(true);
        expect(words(narrow)).toEqual(words(wide));
        // On a pipe, as man does, 80 columns.
        expect(execFileSync(process.execPath, [CLI, ...(command as string[]), '--help'], { encoding: 'utf8' })).toBe(
          narrow,
        );
      },
    );
  },
);
