/** Test support: the kernel recorded by `evtrace record` while a shell command runs. */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findTracefs } from '@evtrace/tracefs';
import { ExitCode } from '../exit-codes.ts';
import { run } from './sample-traces.ts';

/**
 * This machine's tracefs, or why a test cannot use it: `notRoot` when not root, else the reason it was not found
 * (`why` is empty when it can).
 */
export function kernelAccess(notRoot: string): { readonly tracefs?: string; readonly why: string } {
  if (process.getuid?.() !== 0) return { why: notRoot };
  try {
    return { tracefs: findTracefs(), why: '' };
  } catch (error) {
    return { why: (error as Error).message };
  }
}

/**
 * Records every event of the `systems` this kernel has while `sh -c load` runs, into `systems.dat` in a new
 * temporary directory named from `prefix`. Needs root and tracefs.
 * @returns the file and the systems recorded.
 */
export async function recordSystems(
  systems: readonly string[],
  load: string,
  prefix: string,
): Promise<{ dat: string; systems: string[] }> {
  const tracefs = findTracefs();
  const present = systems.filter((s) => existsSync(join(tracefs, 'events', s)));
  const dat = join(mkdtempSync(join(tmpdir(), prefix)), 'systems.dat');
  const recorded = await run('record', ...present.flatMap((s) => ['-e', `${s}:*`]), '-o', dat, '--', 'sh', '-c', load);
  if (recorded.code !== ExitCode.Ok) throw new Error(`evtrace record failed (${recorded.code}): ${recorded.stderr}`);
  return { dat, systems: present };
}
