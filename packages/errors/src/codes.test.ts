/**
 * The codes of every evtrace package, read from the code types of their errors.ts: each starts with its package's
 * tag, no two packages share one, and no source, test or README still uses a code from before the tags.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../../..');

/** The tag of each package's codes, as the README's table gives them; the apps have one per error type. */
const TAGS: Record<string, readonly string[]> = {
  'packages/ringbuf': ['RINGBUF'],
  'packages/trace-format': ['TRACE'],
  'packages/filters': ['FILTER'],
  'packages/tracefs': ['TRACEFS'],
  'packages/agent-protocol': ['AGENT'],
  'packages/persistent-events': ['PERSISTENT'],
  'packages/hw-bts': ['BTS'],
  'packages/hw-mce': ['MCE'],
  'packages/kmemtrace': ['KMEM'],
  'packages/fleet': ['FLEET'],
  'apps/agent': ['CONFIG', 'METRICS'],
  'apps/tui': ['VIEW'],
};

function errorFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f === 'errors.ts' || f.endsWith('/errors.ts'))
    .map((f) => join(ROOT, dir, 'src', f));
}

/** The string literals of every `export type ...ErrorCode =` union of a file. */
function codesOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const unions = text.match(/export type \w*ErrorCode =[\s\S]*?;/g) ?? [];
  return unions.flatMap((u) => [...u.matchAll(/'(ERR_[A-Z0-9_]+)'/g)].map((m) => m[1] as string));
}

describe('error codes', () => {
  const owners = new Map<string, string[]>();
  for (const dir of Object.keys(TAGS))
    for (const file of errorFiles(dir))
      for (const code of codesOf(file)) owners.set(code, [...(owners.get(code) ?? []), dir]);

  it('are found in every package that has a code type', () => {
    const found = new Set([...owners.values()].flat());
    expect([...found].sort()).toEqual(Object.keys(TAGS).sort());
    expect(owners.size).toBeGreaterThan(80);
  });

  it("start with their package's tag, and no two packages share one", () => {
    for (const [code, dirs] of owners) {
      expect(dirs, code).toHaveLength(1);
      const tags = TAGS[dirs[0] as string] as readonly string[];
      expect(
        tags.some((t) => code.startsWith(`ERR_${t}_`)),
        `${code} of ${dirs[0]}`,
      ).toBe(true);
    }
  });

  it('left no code from before the tags in source, tests or READMEs (tooling/scripts/rename-error-codes.mjs)', () => {
    const script = join(ROOT, 'tooling/scripts/rename-error-codes.mjs');
    expect(() =>
      execFileSync(process.execPath, [script, '--check'], { encoding: 'utf8', stdio: 'pipe' }),
    ).not.toThrow();
  });
});
