import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The path a program name resolves to through PATH (as exec would), or the name itself when it has a slash. */
export function resolveProgram(name: string): string {
  if (name.includes('/')) return name;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const path = join(dir || '.', name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {}
  }
  return name;
}
