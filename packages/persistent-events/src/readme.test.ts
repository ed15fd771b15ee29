import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it('runs its example and prints what it says', async () => {
    const code = /## Example\n\n```ts\n([\s\S]*?)```/.exec(README)?.[1];
    const expected = /\nprints\n\n```\n([\s\S]*?)```/.exec(README)?.[1];
    expect(code).toBeDefined();
    expect(expected).toBeDefined();
    const dir = mkdtempSync(join(tmpdir(), 'persistent-readme-'));
    // Inside the package, so '@evtrace/persistent-events' resolves as a user's import would (the built package).
    const file = new URL('../readme-example.tmp.ts', import.meta.url).pathname;
    writeFileSync(file, code!);
    try {
      const { stdout } = await run(process.execPath, [file], { env: { ...process.env, EVTRACE_PERSISTENT_DIR: dir } });
      expect(stdout).toBe(expected);
    } finally {
      rmSync(file, { force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
