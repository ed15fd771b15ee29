/**
 * The agent's modules import one another without loops: a command never imports the program that loads it, the
 * daemon never imports a command. Every relative import counts, `import type` and `import()` included.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = dirname(new URL(import.meta.url).pathname);

/** The non-test TypeScript files under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !/\.(test|bench)\.ts$/.test(e.name))
    .map((e) => join(e.parentPath, e.name));
}

/** `from './x.ts'`, `import './x.ts'`, `import('./x.ts')`: the relative specifiers a module names. */
const IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g;

/** Each file's relative imports, as absolute paths of the files it names. */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(IMPORT)]
      .map((m) => resolve(dirname(file), m[1]!))
      .filter((t) => t.endsWith('.ts'));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** One loop of the graph as the files along it (the first again at the end), or undefined when there is none. */
export function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string): string[] | undefined => {
    state.set(file, 'open');
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === 'open') return [...path.slice(path.indexOf(next)), next];
      if (state.get(next) === undefined) {
        const cycle = visit(next);
        if (cycle !== undefined) return cycle;
      }
    }
    path.pop();
    state.set(file, 'done');
    return undefined;
  };
  for (const file of [...graph.keys()].sort()) {
    if (state.get(file) !== undefined) continue;
    const cycle = visit(file);
    if (cycle !== undefined) return cycle;
  }
  return undefined;
}

describe('apps/agent/src layout', () => {
  it('has no import loop', () => {
    const cycle = findCycle(importGraph(sources(SRC)));
    expect(cycle?.map((f) => relative(SRC, f)).join(' -> ')).toBeUndefined();
  });

  it('finds a loop when there is one, naming its files', () => {
    const graph = new Map([
      ['/a.ts', ['/b.ts']],
      ['/b.ts', ['/c.ts', '/d.ts']],
      ['/c.ts', ['/a.ts']],
      ['/d.ts', []],
    ]);
    expect(findCycle(graph)).toEqual(['/a.ts', '/b.ts', '/c.ts', '/a.ts']);
    graph.set('/c.ts', []);
    expect(findCycle(graph)).toBeUndefined();
  });

  it('reads static, type-only and dynamic imports and re-exports', () => {
    const text = `import { a } from './a.ts';\nimport type { B } from '../b.ts';\nexport { c } from './c/c.ts';\nconst d = await import('./d.ts');\nimport 'node:fs';`;
    expect([...text.matchAll(IMPORT)].map((m) => m[1])).toEqual(['./a.ts', '../b.ts', './c/c.ts', './d.ts']);
  });
});
