import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { fixture } from './testing/formats.ts';

const run = promisify(execFile);
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README example', () => {
  it('runs against the built package and decodes an mcelog input', async () => {
    const code = /```ts\n([\s\S]*?)```/.exec(README)?.[1];
    expect(code).toBeDefined();
    // Inside the package, so its import resolves as a user's would (to the built package).
    const file = new URL('../readme-example.tmp.ts', import.meta.url).pathname;
    writeFileSync(file, code!);
    try {
      const { stdout } = await run(process.execPath, [file, join(fixture('mce-mcelog-cases'), 'm-dimm0.inp')]);
      expect(stdout).toMatch(/^CORRECTED: corrected memory error/m);
      expect(stdout).toContain('corrected memory-controller socket=undefined channel=0 dimm=0');
      expect(stdout).toContain('1 record(s) read as mcelog-ascii');
    } finally {
      rmSync(file, { force: true });
    }
  });
});
