/**
 * `evtrace completion bash|zsh|fish`, run by the real shells: what each completes at a command line is judged by
 * what `evtrace --help` of that command lists.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI } from './testing/agent-daemon.ts';

const outputs = new Map<string, string>();
/** The CLI's standard output for these arguments, run once. */
function evtrace(...args: string[]): string {
  const key = args.join('\0');
  if (!outputs.has(key)) outputs.set(key, execFileSync(process.execPath, [CLI, ...args], { encoding: 'utf8' }));
  return outputs.get(key)!;
}
const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;

/** The terms of one section (COMMANDS, OPTIONS) of a command's --help. */
function helpTerms(section: string, ...command: string[]): string[] {
  const text = evtrace(...command, '--help');
  const body = new RegExp(`^${section}\\n((?:  .*\\n?)*)`, 'm').exec(text)?.[1] ?? '';
  return [...body.matchAll(/^ {2}(\S.*?)(?: {2,}|$)/gm)].map((m) => m[1]!);
}
const verbsOf = (...command: string[]) => helpTerms('COMMANDS', ...command).map((t) => t.split(/[ |]/)[0]!);
const longOptionsOf = (...command: string[]) =>
  helpTerms('OPTIONS', ...command).flatMap((t) => [...t.matchAll(/--[\w-]+/g)].map((m) => m[0]));

const dir = mkdtempSync(join(tmpdir(), 'evtrace-completion-'));
const scripts = mkdtempSync(join(tmpdir(), 'evtrace-completion-scripts-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(scripts, { recursive: true, force: true });
});
// A file whose name starts like a command: after an option that takes a value, it is the file that completes.
writeFileSync(join(dir, 'session.dat'), '');

/** What a bash-style completion function (bash, or zsh through bashcompinit) offers for `words`, the last one being completed. */
function bashLike(shell: 'bash' | 'zsh', words: string[]): string[] {
  const script = join(scripts, `evtrace.${shell}`);
  writeFileSync(script, evtrace('completion', shell));
  const array = words.map((w) => `'${w}'`).join(' ');
  const body =
    shell === 'bash'
      ? `source '${script}'; COMP_WORDS=(${array}); COMP_CWORD=${words.length - 1}; _evtrace; printf '%s\\n' "\${COMPREPLY[@]}"`
      : `autoload -U compinit && compinit -u -D; source '${script}'; setopt ksharrays; COMP_WORDS=(${array}); COMP_CWORD=${words.length - 1}; _evtrace; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = spawnSync(shell, ['-c', body], { cwd: dir, encoding: 'utf8', env: { ...process.env, HOME: dir } });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  const offered = r.stdout.split('\n').filter(Boolean);
  // zsh hands COMPREPLY to compadd, which keeps the words that start with what is typed; bash's compgen already did.
  return shell === 'zsh' ? offered.filter((w) => w.startsWith(words.at(-1)!)) : offered;
}

for (const shell of ['bash', 'zsh'] as const) {
  describe.skipIf(!has(shell))(
    `evtrace completion ${shell}${has(shell) ? '' : ` (skipped: ${shell} is not installed (apt-get install ${shell}))`}`,
    () => {
      it('offers every command the help lists, at the top and below', () => {
        expect(bashLike(shell, ['evtrace', '']).sort()).toEqual(verbsOf().sort());
        expect(bashLike(shell, ['evtrace', 'session', '']).sort()).toEqual(verbsOf('session').sort());
        expect(bashLike(shell, ['evtrace', 'session', 'st'])).toEqual(
          verbsOf('session').filter((v) => v.startsWith('st')),
        );
      });

      it("offers a command's options, and a fixed set's values", () => {
        const record = longOptionsOf('record');
        expect(record.length).toBeGreaterThan(5);
        expect(
          bashLike(shell, ['evtrace', 'record', '--'])
            .filter((o) => o.startsWith('--'))
            .sort(),
        ).toEqual([...new Set(record)].sort());
        expect(bashLike(shell, ['evtrace', 'completion', ''])).toEqual(['bash', 'zsh', 'fish']);
      });

      it("completes an option's value as a file, not as a command", () => {
        expect(bashLike(shell, ['evtrace', 'record', '-o', 'ses'])).toEqual(['session.dat']);
        // Past the option and its value, the command is still `record`: its options again.
        expect(bashLike(shell, ['evtrace', 'record', '-o', 'x.dat', '--dur'])).toEqual(['--duration']);
      });
    },
  );
}

describe.skipIf(!has('fish'))(
  `evtrace completion fish${has('fish') ? '' : ' (skipped: fish is not installed (apt-get install fish))'}`,
  () => {
    /** fish's own answer for a command line (`complete -C`): candidate and description. */
    function fish(line: string): Map<string, string> {
      const script = join(scripts, 'evtrace.fish');
      writeFileSync(script, evtrace('completion', 'fish'));
      const r = spawnSync('fish', ['--no-config', '-c', `source '${script}'; complete -C '${line}'`], {
        cwd: dir,
        encoding: 'utf8',
      });
      expect(r.stderr).toBe('');
      return new Map(
        r.stdout
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split('\t') as [string, string]),
      );
    }

    it('offers the commands with their summaries, and nothing else at the top', () => {
      const top = fish('evtrace ');
      expect([...top.keys()].sort()).toEqual(verbsOf().sort());
      // Each as the help's COMMANDS lists it: the verb, its arguments, then its summary (filled to the width).
      const commands = /^COMMANDS\n((?: .*\n)*)/m.exec(evtrace('--help'))![1]!.replace(/\s+/g, ' ');
      const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      for (const [verb, summary] of top)
        expect(commands).toMatch(new RegExp(` ${verb}(?: [[<]\\S+)* ${literal(summary.replace(/\s+/g, ' '))}(?: |$)`));
      expect([...fish('evtrace session ').keys()].sort()).toEqual(verbsOf('session').sort());
    });

    it("offers a command's options and a fixed set's values; an option's value is a file", () => {
      expect([...fish('evtrace record --').keys()].sort()).toEqual([...new Set(longOptionsOf('record'))].sort());
      expect([...fish('evtrace completion ').keys()].sort()).toEqual(['bash', 'fish', 'zsh']);
      expect([...fish('evtrace record -o ses').keys()]).toEqual(['session.dat']);
    });
  },
);
