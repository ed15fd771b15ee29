import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const INDEX = new URL('./index.ts', import.meta.url).pathname;

describe('README', () => {
  it('runs its example and prints what it says', async () => {
    const code = /## Example\n\n```ts\n([\s\S]*?)```/.exec(README)?.[1];
    const expected = /\nprints\n\n```\n([\s\S]*?)```/.exec(README)?.[1];
    expect(code).toBeDefined();
    expect(expected).toBeDefined();
    const dir = mkdtempSync(join(tmpdir(), 'errors-readme-'));
    try {
      const file = join(dir, 'example.ts');
      writeFileSync(file, code!.replace("from '@evtrace/errors'", `from ${JSON.stringify(INDEX)}`));
      const { stdout } = await run(process.execPath, [file]);
      expect(stdout).toBe(expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
