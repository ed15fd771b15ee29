import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'evtrace-ctf-readme-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('README CTF example', () => {
  it('runs as written and prints babeltrace2-style lines', () => {
    const readme = readFileSync(resolve(here, '../../README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## CTF 1.8'));
    const code = section.slice(section.indexOf('```ts') + 5, section.indexOf('```', section.indexOf('```ts') + 5));
    const traceDir = join(root, 'trace');
    const script = code
      .replace("from '@evtrace/trace-format'", `from ${JSON.stringify(resolve(here, '../index.ts'))}`)
      .replaceAll('/tmp/demo-trace', traceDir);
    const file = join(root, 'example.ts');
    writeFileSync(file, script);
    const run = spawnSync(process.execPath, [file], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /^\[\d\d:\d\d:\d\d\.\d{9}\] \(\+\?\.\?{9}\) demo demo:tick: \{ cpu_id = 0 \}, \{ count = 0 \}$/,
    );
    expect(lines[2]).toMatch(/\(\+0\.000000001\) demo demo:tick: \{ cpu_id = 0 \}, \{ count = 2 \}$/);
  });
});
