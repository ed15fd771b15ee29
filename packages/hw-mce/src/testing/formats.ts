/**
 * Format files for tests that build ring-buffer pages (this VM has no machine-check support: the `mce` system does not
 * exist in its tracefs, see /work/shared/KERNEL-NOTES.md).
 *
 * MCE_RECORD_FORMAT (../formats.ts) stands in for the absent `events/mce/mce_record/format`. The `ras:mc_event`
 * format is read from this machine's tracefs when it is mounted ({@link liveFormat}).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export { MCE_RECORD_FORMAT } from '../formats.ts';

/** The tracefs mount point of this machine, if any. */
export function tracefsRoot(): string | undefined {
  try {
    return readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((l) => l.split(' '))
      .find((f) => f[2] === 'tracefs')?.[1];
  } catch {
    return undefined;
  }
}

/** A format file of the running kernel (`ras/mc_event`), or undefined with the reason. */
export function liveFormat(system: string, event: string): { text?: string; why?: string } {
  const root = tracefsRoot();
  if (root === undefined) return { why: 'tracefs is not mounted' };
  const file = join(root, 'events', system, event, 'format');
  if (!existsSync(file)) return { why: `${file} does not exist on this kernel` };
  try {
    return { text: readFileSync(file, 'utf8') };
  } catch (error) {
    return { why: `${file}: ${(error as NodeJS.ErrnoException).code ?? error} (needs root)` };
  }
}

/** /work/shared/fixtures, resolved from this package (`../shared` of the repository root). */
export const FIXTURES = new URL('../../../../../shared/fixtures/', import.meta.url).pathname;

/** Fails loudly when the shared fixtures are missing (CI has them). */
export function fixture(path: string): string {
  const p = join(FIXTURES, path);
  if (!existsSync(p))
    throw new Error(`shared fixture missing: ${p} (tests need /work/shared/fixtures, as CI provides)`);
  return p;
}
