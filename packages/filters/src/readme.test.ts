import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const FORMAT = '/sys/kernel/tracing/events/kmem/kmalloc/format';
const why = existsSync(FORMAT) ? '' : `${FORMAT} is not readable (needs tracefs mounted there)`;

describe.skipIf(why !== '')(`README example${why ? ` (skipped: ${why})` : ''}`, () => {
  it('runs as written and prints the caret error it shows', async () => {
    const code = /```ts\n([\s\S]*?)```/.exec(README)?.[1];
    expect(code).toBeDefined();
    // Inside the package, so its imports resolve exactly as a user's would (to the built packages).
    const file = new URL('../readme-example.tmp.ts', import.meta.url).pathname;
    writeFileSync(file, `${code}\nconsole.log(typeof big, typeof fast);\n`);
    try {
      const { stdout } = await run(process.execPath, [file]);
      const shown = [...code!.matchAll(/^ {2}\/\/ (.*)$/gm)].map((m) => m[1]!.trimEnd());
      expect(stdout.split('\n').map((l) => l.trimEnd())).toEqual([...shown, 'function function', '']);
    } finally {
      rmSync(file, { force: true });
    }
  });
});
