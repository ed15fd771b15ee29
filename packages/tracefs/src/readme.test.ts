import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { hasTool, tracefsForTests } from './testing/env.ts';

const run = promisify(execFile);
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const why =
  tracefsForTests().why ?? (hasTool('trace-cmd') ? '' : 'trace-cmd is not installed (apt-get install trace-cmd)');

describe.skipIf(why !== '')(`README example${why ? ` (skipped: ${why})` : ''}`, () => {
  it('records a trace.dat that trace-cmd report reads, with the counts the example prints', async () => {
    const code = /```ts\n([\s\S]*?)```/.exec(README)?.[1];
    expect(code).toBeDefined();
    const cwd = mkdtempSync(join(tmpdir(), 'tracefs-readme-'));
    // Inside the package, so its imports resolve exactly as a user's would (to the built package); one second, not ten.
    const file = new URL('../readme-example.tmp.ts', import.meta.url).pathname;
    writeFileSync(file, code!.replace('durationMs: 10_000', 'durationMs: 1_000'));
    try {
      const example = run(process.execPath, [file], { cwd });
      // Something for it to see while it records: reading kallsyms and listing directories allocate >= 256 bytes.
      await new Promise((r) => setTimeout(r, 300));
      for (let i = 0; i < 3; i++)
        execFileSync('/bin/sh', ['-c', 'cat /proc/kallsyms >/dev/null; ls -R /usr/lib >/dev/null']);
      const { stdout } = await example;
      const report = execFileSync('trace-cmd', ['report', join(cwd, 'trace.dat')], { maxBuffer: 1 << 28 }).toString();
      const total = report.split('\n').filter((line) => /\[\d+\]\s+[\d.]+: kmalloc:/.test(line)).length;
      expect(total).toBeGreaterThan(0);
      expect(stdout).toMatch(/kmem:kmalloc/);
      expect(stdout).toContain(`'kmem:kmalloc' => ${total}`);
    } finally {
      rmSync(file, { force: true });
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 60_000);
});
