/** Test support: whether root, tracefs and perf are here, and why not. */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

/** Whether a program is on PATH. */
export function hasTool(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The tracefs mount point from /proc/mounts, if mounted. */
export function tracefsMount(): string | undefined {
  const mounts = readFileSync('/proc/mounts', 'utf8');
  return /^\S+ (\S+) tracefs /m.exec(mounts)?.[1];
}

/** Why `perf kmem record` cannot run here, or '' when it can. */
export function perfKmemUnavailable(): string {
  if (process.getuid?.() !== 0) return 'not root: perf kmem record needs root';
  if (!hasTool('perf')) return 'perf is not installed (Debian linux-perf)';
  const mount = tracefsMount();
  if (mount === undefined || !existsSync(`${mount}/events/kmem/kmalloc`)) return 'no kmem tracepoints in tracefs';
  return '';
}

/** The workload every real recording runs: hackbench-style messaging, small enough for a fast test. */
export const WORKLOAD = ['perf', 'bench', 'sched', 'messaging', '-g', '1', '-l', '20'] as const;
