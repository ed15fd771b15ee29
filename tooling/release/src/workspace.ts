/** The workspace's publishable packages, read from their package.json files. */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../../..');

export interface Publishable {
  readonly name: string;
  readonly version: string;
  /** Relative to the workspace root: `packages/ringbuf`. */
  readonly dir: string;
  readonly manifest: Record<string, unknown>;
}

export function publishable(): Publishable[] {
  return ['packages', 'apps'].flatMap((group) =>
    readdirSync(join(ROOT, group))
      .sort()
      .map((name) => {
        const dir = `${group}/${name}`;
        const manifest = JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as Record<string, unknown>;
        return { name: manifest.name as string, version: manifest.version as string, dir, manifest };
      })
      .filter((p) => p.manifest.private !== true),
  );
}
