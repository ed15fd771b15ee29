/** Finding tracefs: through /proc/mounts, or by mounting it when root. */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { TracefsError } from '../errors.ts';

/** The conventional mount point, used when evtrace mounts tracefs itself. */
export const TRACEFS_MOUNT_POINT = '/sys/kernel/tracing';

/** Options of {@link findTracefs}. */
export interface FindTracefsOptions {
  /** Mount tracefs at {@link TRACEFS_MOUNT_POINT} when it is not mounted and we are root. Default true. */
  readonly mount?: boolean;
  /** The mounts table to read. Default `/proc/mounts`. */
  readonly mountsFile?: string;
}

/** The mount point of tracefs in a `/proc/mounts` text, or undefined. Octal escapes (`\040`) are decoded. */
export function tracefsInMounts(mountsText: string): string | undefined {
  for (const line of mountsText.split('\n')) {
    const f = line.split(' ');
    if (f[2] === 'tracefs' && f[1] !== undefined) {
      return f[1].replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
    }
  }
  return undefined;
}

/**
 * Returns the tracefs mount point, mounting tracefs first when it is not mounted and we are root.
 *
 * @throws TracefsError `ERR_TRACEFS_NOT_FOUND` with the reason and the command to run.
 */
export function findTracefs(options: FindTracefsOptions = {}): string {
  const mountsFile = options.mountsFile ?? '/proc/mounts';
  let mounted: string | undefined;
  try {
    mounted = tracefsInMounts(readFileSync(mountsFile, 'utf8'));
  } catch (error) {
    throw new TracefsError('ERR_TRACEFS_NOT_FOUND', `cannot read ${mountsFile}: ${(error as Error).message}`, {
      path: mountsFile,
    });
  }
  if (mounted !== undefined) return mounted;
  const hint = `mount it with: mount -t tracefs nodev ${TRACEFS_MOUNT_POINT}`;
  if (options.mount === false) {
    throw new TracefsError('ERR_TRACEFS_NOT_FOUND', `tracefs is not mounted; ${hint}`);
  }
  if (process.getuid?.() !== 0) {
    throw new TracefsError('ERR_TRACEFS_NOT_FOUND', `tracefs is not mounted and only root can mount it; ${hint}`);
  }
  if (!existsSync(TRACEFS_MOUNT_POINT)) {
    throw new TracefsError('ERR_TRACEFS_NOT_FOUND', `tracefs is not mounted and ${TRACEFS_MOUNT_POINT} does not exist`);
  }
  try {
    execFileSync('mount', ['-t', 'tracefs', 'nodev', TRACEFS_MOUNT_POINT], { stdio: 'pipe' });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    throw new TracefsError('ERR_TRACEFS_NOT_FOUND', `mounting tracefs failed: ${stderr || (error as Error).message}`);
  }
  return TRACEFS_MOUNT_POINT;
}
