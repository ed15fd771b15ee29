import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { qemuMissing } from './testing/programs.ts';

const run = promisify(execFile);
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const why = qemuMissing();

describe.skipIf(why !== '')(`README example${why ? ` (skipped: ${why})` : ''}`, () => {
  it('runs on the fib program it describes and prints the nesting it claims', async () => {
    const code = /```ts\n([\s\S]*?)```/.exec(README)?.[1];
    const claimed = /prints, for `fib.c` = `([^`]+)`/.exec(README)?.[1];
    expect(code).toBeDefined();
    expect(claimed).toBeDefined();
    const cwd = mkdtempSync(join(tmpdir(), 'hw-bts-readme-'));
    writeFileSync(join(cwd, 'fib.c'), claimed!);
    execFileSync('cc', ['-O0', '-static', '-fno-inline', '-o', join(cwd, 'fib'), join(cwd, 'fib.c')]);
    // Inside the package, so '@evtrace/hw-bts' resolves as it would for a user (to the built package).
    const file = new URL('../readme-example.tmp.ts', import.meta.url).pathname;
    writeFileSync(file, code!);
    try {
      const { stdout } = await run(process.execPath, [file], { cwd });
      const lines = stdout.trimEnd().split('\n');
      expect(lines[0]).toBe('fib nesting below main: 5');
      expect(lines[1]).toMatch(/^\d+\t *main$/);
      expect(lines.slice(2, 5).every((l) => /^\d+\t *fib$/.test(l))).toBe(true);
      expect(lines[5]).toMatch(/^hottest edge taken \d+ times$/);
    } finally {
      rmSync(file, { force: true });
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 60_000);
});
