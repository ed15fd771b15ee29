/**
 * Every package as a user gets it: packed by pnpm, installed from the tarballs into a project of its own (its
 * third-party dependencies from the store or the registry), and loaded with import and with require() on Node 24
 * and on the floor, Node 22.18.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionNode } from './node.ts';
import { type Publishable, publishable, ROOT } from './workspace.ts';

const FLOOR = '22.18.0';
const packages = publishable();
const floor = provisionNode(FLOOR);
let project = '';
const tarballs = new Map<string, string>();

function run(command: string, args: readonly string[], cwd: string) {
  const r = spawnSync(command, args, { cwd, encoding: 'utf8', timeout: 300_000 });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} in ${cwd} failed:\n${r.stdout}\n${r.stderr}`);
  return r;
}

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), 'evtrace-packed-'));
  const out = join(project, 'tarballs');
  mkdirSync(out);
  for (const p of packages) {
    const before = new Set(readdirSync(out));
    run('pnpm', ['pack', '--pack-destination', out], join(ROOT, p.dir));
    const added = readdirSync(out).filter((f) => !before.has(f));
    expect(added).toHaveLength(1);
    tarballs.set(p.name, join(out, added[0] as string));
  }
  const local = Object.fromEntries([...tarballs].map(([name, file]) => [name, `file:${file}`]));
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'evtrace-packed-check', private: true, dependencies: local }, null, 2),
  );
  // The packages depend on each other by version range; overrides point those at the tarballs too.
  const overrides = Object.entries(local).map(([name, spec]) => `  "${name}": "${spec}"`);
  writeFileSync(
    join(project, 'pnpm-workspace.yaml'),
    ['overrides:', ...overrides, 'allowBuilds:', '  koffi: true', ''].join('\n'),
  );
  run('pnpm', ['install', '--prefer-offline', '--config.update-notifier=false'], project);
});

afterAll(() => {
  if (project !== '') rmSync(project, { recursive: true, force: true });
});

/**
 * Packages whose dependencies load with top-level await, which require() refuses (ERR_REQUIRE_ASYNC_MODULE): ink
 * and its yoga-layout.
 */
const IMPORT_ONLY = new Set(['@evtrace/tui']);

/** Loads the package both ways in one process: the names each gives, and whether they are one module. */
function load(node: string, name: string) {
  const script = [
    'let viaRequire;',
    'let requireError;',
    `try { viaRequire = require(${JSON.stringify(name)}); } catch (e) { requireError = e.code; }`,
    `import(${JSON.stringify(name)}).then((viaImport) => console.log(JSON.stringify({`,
    '  requireError,',
    '  same: viaRequire === viaImport,',
    '  required: viaRequire && Object.keys(viaRequire).sort(),',
    '  imported: Object.keys(viaImport).sort(),',
    '})));',
  ].join('\n');
  const r = spawnSync(node, ['-e', script], { cwd: project, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stderr: r.stderr, result: r.status === 0 ? JSON.parse(r.stdout) : undefined };
}

function checkLoads(node: string, p: Publishable) {
  const { status, stderr, result } = load(node, p.name);
  expect({ status, stderr }).toEqual({ status: 0, stderr: '' });
  expect(result.imported.length).toBeGreaterThan(0);
  if (IMPORT_ONLY.has(p.name)) {
    expect(result.requireError).toBe('ERR_REQUIRE_ASYNC_MODULE');
    return;
  }
  expect(result.requireError).toBeUndefined();
  expect(result.same).toBe(true);
  expect(result.required).toEqual(result.imported);
}

describe('packed packages', () => {
  it.each(packages)('$name ships its LICENSE, README and a manifest with no workspace links', (p) => {
    const listing = run('tar', ['tzf', tarballs.get(p.name) as string], project).stdout.split('\n');
    expect(listing).toEqual(expect.arrayContaining(['package/LICENSE', 'package/README.md', 'package/package.json']));
    expect(listing.some((f) => f.startsWith('package/dist/') && f.endsWith('.d.ts'))).toBe(true);
    const manifest = readFileSync(join(project, 'node_modules', p.name, 'package.json'), 'utf8');
    expect(manifest).not.toContain('workspace:');
    expect(JSON.parse(manifest).repository.directory).toBe(p.dir);
    expect(readFileSync(join(project, 'node_modules', p.name, 'LICENSE'), 'utf8')).toContain(
      'Copyright (c) 2026 the evtrace authors',
    );
  });

  it.each(packages)(`$name loads with import and require() on Node ${process.versions.node}`, (p) => {
    checkLoads(process.execPath, p);
  });

  it('installs the evtrace command, which runs', () => {
    const r = spawnSync(join(project, 'node_modules', '.bin', 'evtrace'), ['--version'], { encoding: 'utf8' });
    expect(r.stdout.trim()).toBe(packages.find((p) => p.name === '@evtrace/agent')?.version);
  });
});

describe.skipIf('why' in floor)(
  `packed packages on Node ${FLOOR}${'why' in floor ? ` (cannot provision it: ${floor.why})` : ''}`,
  () => {
    it.each(packages)(`$name loads with import and require() on Node ${FLOOR}`, (p) => {
      checkLoads((floor as { node: string }).node, p);
    });
  },
);
