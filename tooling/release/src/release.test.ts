/**
 * The release flow on the workspace as it stands: `changeset version` (in a copy, so the bump is never committed)
 * turns every pending changeset into CHANGELOG entries, and `pnpm -r publish --dry-run` packs every package.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishable, ROOT } from './workspace.ts';

const packages = publishable();
const CHANGESET = join(ROOT, 'node_modules', '@changesets', 'cli', 'bin.js');

interface Changeset {
  readonly file: string;
  readonly packages: readonly string[];
  /** The summary's first line, as the CHANGELOG gives it. */
  readonly headline: string;
}

function pending(dir: string): Changeset[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.md') && f !== 'README.md')
    .map((file) => {
      const text = readFileSync(join(dir, file), 'utf8');
      const [, front = '', body = ''] = /^---\n([\s\S]*?)\n---\n([\s\S]*)$/.exec(text) ?? [];
      const names = [...front.matchAll(/^"?([^":]+)"?:\s*(patch|minor|major)$/gm)].map((m) => m[1] as string);
      return { file, packages: names, headline: body.trim().split('\n')[0] ?? '' };
    });
}

describe('changeset version, in a copy of the workspace', () => {
  let copy = '';
  const changesets = pending(join(ROOT, '.changeset'));

  beforeAll(() => {
    copy = mkdtempSync(join(tmpdir(), 'evtrace-release-'));
    const files = spawnSync('git', ['ls-files', '-co', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' })
      .stdout.split('\n')
      .filter((f) => f.startsWith('.changeset/') || f.endsWith('package.json') || f === 'pnpm-workspace.yaml');
    for (const f of files) {
      if (!existsSync(join(ROOT, f))) continue;
      cpSync(join(ROOT, f), join(copy, f), { recursive: true });
    }
    // The changelog generator named in .changeset/config.json resolves from the workspace.
    symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
    const r = spawnSync(process.execPath, [CHANGESET, 'version'], { cwd: copy, encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) throw new Error(`changeset version failed:\n${r.stdout}\n${r.stderr}`);
  });

  afterAll(() => {
    if (copy !== '') rmSync(copy, { recursive: true, force: true });
  });

  it('has changesets to release', () => {
    expect(changesets.length).toBeGreaterThan(0);
    for (const c of changesets) expect(c.packages.length, c.file).toBeGreaterThan(0);
  });

  it('consumes every changeset', () => {
    expect(pending(join(copy, '.changeset'))).toEqual([]);
  });

  it.each(packages)('$name gets a CHANGELOG with each of its changesets under a new version', (p) => {
    const changelog = readFileSync(join(copy, p.dir, 'CHANGELOG.md'), 'utf8');
    const bumped = JSON.parse(readFileSync(join(copy, p.dir, 'package.json'), 'utf8')).version as string;
    expect(bumped).not.toBe(p.version);
    expect(changelog).toContain(`## ${bumped}`);
    const own = changesets.filter((c) => c.packages.includes(p.name));
    for (const c of own) expect(changelog, c.file).toContain(c.headline);
  });

  it('leaves the private tooling packages alone', () => {
    for (const dir of ['tooling/build', 'tooling/bench', 'tooling/release']) {
      expect(existsSync(join(copy, dir, 'CHANGELOG.md')), dir).toBe(false);
    }
  });
});

describe('pnpm -r publish --dry-run', () => {
  it('packs every package for the registry', () => {
    const r = spawnSync('pnpm', ['-r', 'publish', '--dry-run', '--no-git-checks'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 300_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const output = r.stdout + r.stderr;
    for (const p of packages) expect(output).toContain(`${p.name}@${p.version}`);
  });
});
