/**
 * Every error of the built evtrace-view is one line, `evtrace-view: CODE: message`, as evtrace prints its own: its
 * own usage errors, a package's error with the package's code, an agent that does not answer.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI } from './testing/pty.ts';
import { tempDir } from './testing/traces.ts';

const dir = tempDir();
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the built viewer without a terminal and no agent at the default socket. */
function view(...args: string[]) {
  const run = spawnSync(process.execPath, [CLI, ...args], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, EVTRACE_AGENT_SOCKET: join(dir, 'no-agent.sock') },
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('evtrace-view errors, through the built CLI', () => {
  it('prints its own usage errors with their code, then where to look, and exits 2', () => {
    const cases: [string[], string][] = [
      [['--frobnicate'], "Unknown option '--frobnicate'"],
      [['a.dat', 'b.dat'], 'one TRACE at most, got 2: a.dat b.dat'],
      [['-n', 'x'], "--limit must be a non-negative integer, not 'x'"],
      [['a.dat', '--session', 's'], 'TRACE and --session/--agent exclude each other'],
    ];
    for (const [args, message] of cases) {
      const run = view(...args);
      expect(run.status, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      const lines = run.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(/^evtrace-view: ERR_VIEW_USAGE: /);
      expect(lines[0]).toContain(message);
      expect(lines[1]).toBe('evtrace-view: see evtrace-view --help');
    }
  });

  it("prints a trace-format error with trace-format's code, the file and the byte, and exits 1", () => {
    const garbage = join(dir, 'garbage.dat');
    writeFileSync(garbage, Buffer.alloc(4096, 0x5a));
    const missing = join(dir, 'missing.dat');
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    expect(view(garbage)).toEqual({
      status: 1,
      stdout: '',
      stderr: `evtrace-view: ERR_TRACE_INPUT: ${garbage}: byte 0: not a trace.dat file, CTF trace or raw-pages directory\n`,
    });
    const gone = view(missing);
    expect(gone.status).toBe(1);
    expect(gone.stderr).toBe(`evtrace-view: ERR_TRACE_INPUT: ${missing}: cannot open: ENOENT\n`);
    const neither = view(empty);
    expect(neither.status).toBe(1);
    expect(neither.stderr).toMatch(new RegExp(`^evtrace-view: ERR_TRACE_INPUT: ${empty}: directory is neither .*\n$`));
  });

  it("prints an agent that does not answer with the agent client's code and exits 1", () => {
    const socket = join(dir, 'nobody.sock');
    const run = view('--agent', socket, '-n', '1');
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      new RegExp(
        `^evtrace-view: ERR_AGENT_CONNECT: cannot reach the agent at ${socket}: cannot connect to ${socket}: `,
      ),
    );
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});
