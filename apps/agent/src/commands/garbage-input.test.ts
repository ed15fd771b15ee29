/**
 * The reproductions of garbage accepted: random bytes and empty files given to mce decode, bts report and kmem
 * report end with exit status 1 and a message naming the file, where and what was expected; nothing on stdout.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { runCli } from '../program.ts';

const dir = mkdtempSync(join(tmpdir(), 'evtrace-garbage-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function run(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

function file(name: string, bytes: Uint8Array | string): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

describe('garbage is refused by the CLI', () => {
  it('mce decode on 64 KiB of random bytes: no record, the file and byte offset named', async () => {
    const path = file('random.mce', randomBytes(65536));
    const r = await run('mce', 'decode', path);
    expect(r.code).toBe(ExitCode.Failure);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      new RegExp(`^evtrace: ERR_MCE_INPUT: ${path} at byte \\d+: .*expected struct mce records`),
    );
  });

  it('bts report on 4 KiB of random bytes: no branch, the file and byte offset named; --lenient counts', async () => {
    const path = file('random.bts', randomBytes(4096));
    const r = await run('bts', 'report', path);
    expect(r.code).toBe(ExitCode.Failure);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(new RegExp(`^evtrace: ERR_BTS_FORMAT: ${path}, byte \\d+: not a BTS record`));
    const lenient = await run('bts', 'report', path, '--lenient');
    expect(lenient.code).toBe(ExitCode.Failure);
    expect(lenient.stdout).toBe('');
    expect(lenient.stderr).toContain('170 records with non-canonical addresses skipped (not BTS records)');
    expect(lenient.stderr).toContain(`no branches could be read from ${path}`);
  });

  it('kmem report on an empty file: refused, not an empty report', async () => {
    const path = file('empty', '');
    const r = await run('kmem', 'report', path);
    expect(r.code).toBe(ExitCode.Failure);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `evtrace: ERR_KMEM_INPUT: ${path}: byte 0: empty: expected a trace of kmem events, perf script text of kmem events or kmemtrace relay records\n`,
    );
  });

  it('any random input to any of the three: exit 1, nothing reported, the file named', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.noBias(fc.uint8Array({ maxLength: 4096 })),
        fc.constantFrom(['mce', 'decode'], ['bts', 'report'], ['kmem', 'report']),
        async (bytes, command) => {
          const path = file('any', bytes);
          const r = await run(...command, path);
          expect(r.code).toBe(ExitCode.Failure);
          expect(r.stdout).toBe('');
          expect(r.stderr).toContain(path);
        },
      ),
      { numRuns: 40 },
    );
  });
});
