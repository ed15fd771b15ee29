import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkImports, ROOT, workspacePackages } from './imports.ts';
import { LAYERS } from './layers.ts';

describe('the workspace', () => {
  it('imports along the layers LAYOUT.md draws, with no import loop in any package or between packages', () => {
    // On failure the diff lists each offending file, dependency or loop, one a line.
    expect(checkImports(ROOT).join('\n')).toBe('');
  });

  it('places every package in a layer, and the layers name only packages that exist', () => {
    const names = workspacePackages(ROOT).map((p) => p.name);
    expect(names).toContain('@evtrace/trace-format');
    expect(names.sort()).toEqual(Object.keys(LAYERS).sort());
  });
});

describe('checkImports on a workspace made for the test', () => {
  const root = mkdtempSync(join(tmpdir(), 'evtrace-architecture-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  const manifest = (dir: string, name: string, dependencies: Record<string, string> = {}) =>
    write(`${dir}/package.json`, JSON.stringify({ name, dependencies }));

  manifest('packages/ringbuf', '@evtrace/ringbuf');
  manifest('packages/trace-format', '@evtrace/trace-format', { '@evtrace/ringbuf': 'workspace:^' });
  manifest('packages/tracefs', '@evtrace/tracefs');
  manifest('packages/hw-mce', '@evtrace/hw-mce');
  manifest('packages/hw-bts', '@evtrace/hw-bts', { '@evtrace/kmemtrace': 'workspace:^' });
  manifest('packages/kmemtrace', '@evtrace/kmemtrace');
  manifest('packages/newcomer', '@evtrace/newcomer');
  manifest('apps/agent', '@evtrace/agent', { '@evtrace/ringbuf': 'workspace:^', '@evtrace/hw-mce': 'workspace:^' });
  manifest('apps/tui', '@evtrace/tui');
  manifest('tooling/bench', '@evtrace/bench');
  // Three files in a loop, through a type-only import and a `.js` specifier.
  write('packages/hw-mce/src/a.ts', "import { b } from './b.ts';\nexport const a = b;\n");
  write('packages/hw-mce/src/b.ts', "import type { C } from './c.ts';\nexport const b: C = 1;\n");
  write('packages/hw-mce/src/c.ts', "import { a } from './a.js';\nexport type C = typeof a;\n");
  // Another domain package, core and shared packages, tooling, a package's own name: only the first is refused.
  write(
    'packages/hw-mce/src/uses.ts',
    [
      "import { x } from '@evtrace/hw-bts';",
      "import { t } from '@evtrace/trace-format';",
      "import { f } from '@evtrace/tracefs';",
      "import { measure } from '@evtrace/bench';",
      "import { a } from '@evtrace/hw-mce';",
      "import { join } from 'node:path';",
      "// import { no } from './c.ts' in a comment, and in a string:",
      'const text = "import \'./b.ts\'";',
      '',
    ].join('\n'),
  );
  // Core reaching up: into a shared package and into an app (which makes a loop between packages).
  write(
    'packages/trace-format/src/index.ts',
    "export * from '@evtrace/tracefs';\nexport { run } from '@evtrace/agent';\n",
  );
  write('packages/ringbuf/src/index.ts', 'export const ok = 1;\n');
  // An app reaching into a domain package's file by path, and a file importing itself.
  write(
    'apps/agent/src/cli.ts',
    "import '@evtrace/trace-format';\nimport { a } from '../../../packages/hw-mce/src/a.ts';\n",
  );
  write('apps/agent/src/self.ts', "export { x } from './self.ts';\n");
  // One app importing the other, dynamically.
  write('apps/tui/src/main.tsx', "const agent = await import('@evtrace/agent/cli');\n");

  it('reports each import against the layers, each loop with one path through it, each unplaced package', () => {
    expect(checkImports(root)).toEqual([
      'apps/agent/src/cli.ts: imports ../../../packages/hw-mce/src/a.ts, a file of packages/hw-mce: import that package by name',
      'apps/agent: import loop: src/self.ts → src/self.ts',
      'apps/tui/src/main.tsx: imports @evtrace/agent: apps never import each other',
      'package import loop: @evtrace/agent → @evtrace/trace-format → @evtrace/agent; 3 tied in all: @evtrace/agent, @evtrace/hw-mce, @evtrace/trace-format',
      'packages/hw-bts/package.json: depends on @evtrace/kmemtrace: domain packages never import each other',
      'packages/hw-mce/src/uses.ts: imports @evtrace/hw-bts: domain packages never import each other',
      'packages/hw-mce: import loop: src/a.ts → src/b.ts → src/c.ts → src/a.ts',
      'packages/newcomer: @evtrace/newcomer has no layer: give it one in tooling/architecture/src/layers.ts and LAYOUT.md',
      'packages/trace-format/src/index.ts: imports @evtrace/agent: packages never import apps',
      'packages/trace-format/src/index.ts: imports @evtrace/tracefs: core packages import only core packages',
    ]);
  });
});
