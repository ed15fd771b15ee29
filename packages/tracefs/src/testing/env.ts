/** Test support: whether the real tracefs (as root) and peer tools are here, and why not. */
import { execFileSync } from 'node:child_process';
import { findTracefs } from '../mount.ts';

/** The tracefs mount point, or why tests that need it skip. */
export function tracefsForTests(): { path: string; why?: undefined } | { path?: undefined; why: string } {
  if (process.getuid?.() !== 0) return { why: 'not root: recording needs root' };
  try {
    return { path: findTracefs() };
  } catch (error) {
    return { why: (error as Error).message };
  }
}

/** Whether a program is on PATH. */
export function hasTool(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A short burst of kmalloc/kfree and context switches. */
export function smallWorkload(): void {
  for (let i = 0; i < 5; i++) execFileSync('ls', ['/proc/self'], { stdio: 'ignore' });
}
