import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { openTrace } from '@evtrace/trace-format';
import { afterAll, describe, expect, it } from 'vitest';
import { recordDemoTrace, tempDir } from './testing/traces.ts';

const run = promisify(execFile);
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const dir = tempDir();
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('README example', () => {
  it('opens a recording and prints its length, last event and per-CPU counts', { timeout: 60_000 }, async () => {
    const code = /```ts\n([\s\S]*?)```/.exec(README)?.[1];
    expect(code).toBeDefined();
    const trace = await recordDemoTrace(dir, 300);
    // Inside the package, so '@evtrace/tui' resolves to the built package as it would for a user.
    const file = new URL('../readme-example.tmp.ts', import.meta.url).pathname;
    writeFileSync(file, code!);
    try {
      const { stdout } = await run(process.execPath, [file, trace]);
      const events = [...openTrace(trace).events()];
      const perCpu = [0, 1].map((cpu) => `cpu${cpu}: ${events.filter((e) => e.cpu === cpu).length}`).join(' ');
      expect(stdout.trim()).toBe(`${events.length} ${events.at(-1)!.eventClass.name} ${perCpu}`);
    } finally {
      rmSync(file, { force: true });
    }
  });
});
