/**
 * `-q` and `-v`, as perf and trace-cmd users expect them: -q leaves only error lines on stderr, -v ends with the
 * command's times and peak memory (checked against GNU time's measure of the same process).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI } from './testing/agent-daemon.ts';

const dir = mkdtempSync(join(tmpdir(), 'evtrace-quiet-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function evtrace(...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('-q and -v', () => {
  const dat = join(dir, 'demo.dat');
  const record = () => evtrace('record', '--source', 'demo', '-e', 'kmem:*', '--duration', '1s', '-o', dat);

  it('-q: a recording says nothing on stderr, where it otherwise says what it recorded; the file is the same kind', () => {
    const loud = record();
    expect(loud.code, loud.stderr).toBe(0);
    expect(loud.stderr).toMatch(/^evtrace: recorded \d+ events/m);
    rmSync(dat);
    // Before the verb, as a program option, and after it.
    const demo = ['--source', 'demo', '-e', 'kmem:*', '--duration', '1s', '-o', dat];
    for (const argv of [
      ['-q', 'record', ...demo],
      ['record', ...demo, '--quiet'],
    ]) {
      const quiet = evtrace(...argv);
      expect(quiet.code, quiet.stderr).toBe(0);
      expect(quiet.stderr).toBe('');
      expect(evtrace('cat', dat).stdout).toMatch(/ kmalloc: /);
      rmSync(dat);
    }
  });

  it('-q keeps error lines, with their code, and the exit status', () => {
    const r = evtrace('-q', 'cat', join(dir, 'missing.dat'));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^evtrace: ERR_[A-Z_]+: .*missing\.dat.*\n$/);
    expect(evtrace('-q', 'cat', '--no-such').stderr).toMatch(/^evtrace: ERR_CLI_USAGE: unknown option '--no-such'/);
  });

  it("-v ends with the command's wall and CPU times and its peak RSS, as GNU time measures the same process", () => {
    expect(record().code).toBe(0);
    const report = join(dir, 'time');
    const r = spawnSync('/usr/bin/time', ['-f', '%M', '-o', report, process.execPath, CLI, 'cat', '-v', dat], {
      encoding: 'utf8',
      maxBuffer: 1 << 26,
    });
    expect(r.status, r.stderr).toBe(0);
    const m = /^evtrace: (\d+\.\d\d) s wall, (\d+\.\d\d) s user, (\d+\.\d\d) s sys, (\d+) MB peak RSS\n$/.exec(
      r.stderr,
    );
    expect(m, r.stderr).not.toBeNull();
    const timeKb = Number(spawnSync('tail', ['-1', report], { encoding: 'utf8' }).stdout.trim());
    // The same getrusage maximum, read a moment before exit: within a few MB of what time(1) reads after it.
    expect(Math.abs(Number(m![4]) - timeKb / 1024)).toBeLessThan(8);
    expect(Number(m![2]) + Number(m![3])).toBeGreaterThan(0);
  });
});
