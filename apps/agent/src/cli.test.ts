import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const CLI = new URL('../dist/cli.js', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

async function evtrace(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('evtrace (built CLI)', () => {
  it('prints its version', async () => {
    const r = await evtrace('--version');
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  it('prints man-page style help with exit statuses', async () => {
    const r = await evtrace('--help');
    expect(r.code).toBe(0);
    for (const section of ['NAME', 'SYNOPSIS', 'DESCRIPTION', 'OPTIONS', 'EXIT STATUS', 'EXAMPLES']) {
      expect(r.stdout).toMatch(new RegExp(`^${section}$`, 'm'));
    }
    expect(r.stdout).toContain('evtrace - record, convert, filter and inspect Linux trace events');
  });

  it("shows a subcommand's own synopsis, arguments and options", async () => {
    const r = await evtrace('help', 'convert');
    expect(r.code).toBe(0);
    const synopsis = r.stdout.split('\n')[r.stdout.split('\n').indexOf('SYNOPSIS') + 1]!.trim();
    expect(synopsis).toMatch(/^evtrace convert \[options\] <input>/);
    expect(r.stdout).toMatch(/^NAME\n {2}evtrace convert - /m);
    expect(r.stdout).toContain('--to <kind>');
  });

  it('refuses a Node.js older than 22.18 with a message instead of an import error', async () => {
    const pretend =
      'data:text/javascript,Object.defineProperty(process.versions,"node",{value:"22.17.0"});' +
      'Object.defineProperty(process,"version",{value:"v22.17.0"})';
    const r = await run(process.execPath, ['--import', pretend, CLI, '--version']).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('evtrace: ERR_CLI_NODE_VERSION: needs Node.js >= 22.18 (this is v22.17.0)');
  });

  it('ends quietly when the reader of its output goes away', async () => {
    const { stdout, stderr } = await run('/bin/bash', [
      '-c',
      `"${process.execPath}" "${CLI}" demo --events 200000 2>/dev/null | head -n 1; echo "status \${PIPESTATUS[0]}" >&2`,
    ]);
    expect(stdout.split('\n')).toHaveLength(2);
    expect(stderr.trim()).toBe('status 0');
  });

  it('exits 2 on an unknown option and names it', async () => {
    const r = await evtrace('--no-such-flag');
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("evtrace: ERR_CLI_USAGE: unknown option '--no-such-flag'\n");
  });

  it('exits 2 on an unknown command', async () => {
    const r = await evtrace('frobnicate');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^evtrace: ERR_CLI_USAGE: unknown command 'frobnicate'\n/);
  });
});
