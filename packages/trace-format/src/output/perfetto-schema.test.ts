import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const index = fileURLToPath(new URL('../index.ts', import.meta.url));

/** Imports the package's entry in a fresh Node, calls `then` on it, and says which protobufjs files were loaded. */
function protobufModulesAfter(then: string): string[] {
  const script = `
    const m = await import(${JSON.stringify(index)});
    ${then}
    const { createRequire } = await import('node:module');
    const cache = createRequire(import.meta.url).cache;
    console.log(JSON.stringify(Object.keys(cache).filter((k) => k.includes('/protobufjs/'))));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  expect(r.stderr).not.toMatch(/Error/);
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout) as string[];
}

describe('protobufjs, loaded with the first Perfetto schema', () => {
  it('is not loaded by importing the package', () => {
    expect(protobufModulesAfter('')).toEqual([]);
  });

  it('is loaded once the schema is asked for, which then names its message types', () => {
    const loaded = protobufModulesAfter(
      "if (m.perfettoSchema().Trace.fullName !== '.perfetto.protos.Trace') throw new Error('no Trace type');",
    );
    expect(loaded.length).toBeGreaterThan(0);
  });
});
