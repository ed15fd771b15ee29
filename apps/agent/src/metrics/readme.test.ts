import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const EXAMPLE = readFileSync(new URL('../../examples/agent.toml', import.meta.url), 'utf8');

describe('README example', () => {
  it('loads the example config and serves one created session state per session it declares', async () => {
    const code = /```ts\n(import \{ loadAgentConfig[\s\S]*?)```/.exec(README)?.[1];
    expect(code).toBeDefined();
    // Inside the package, so '@evtrace/agent' resolves to the built package as it would for a user.
    const file = new URL('../../readme-example.tmp.ts', import.meta.url).pathname;
    writeFileSync(file, code!);
    try {
      const cwd = new URL('../..', import.meta.url).pathname;
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('EVTRACE_')));
      const { stdout } = await run(process.execPath, [file], { cwd, env });
      const declared = [...EXAMPLE.matchAll(/^\[sessions\.(\w+)\]$/gm)].map((m) => m[1]);
      expect(declared.length).toBeGreaterThan(1);
      const lines = stdout.trim().split('\n');
      expect(lines.map((l) => /session="(\w+)"/.exec(l)?.[1])).toEqual(declared);
      for (const line of lines) expect(line).toMatch(/state="created"\} 1$/);
    } finally {
      rmSync(file, { force: true });
    }
  }, 30_000);
});
