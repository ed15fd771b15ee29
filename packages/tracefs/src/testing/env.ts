/** Test support: whether the real tracefs (as root) and peer tools are here, and why not. */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { findTracefs } from '../instance/mount.ts';

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

/** A thread's scheduling as /proc shows it: fields 19 (nice), 40 (real-time priority) and 41 (policy) of `stat`. */
export interface Scheduling {
  readonly nice: number;
  readonly rtPriority: number;
  readonly policy: number;
}

/** The scheduling in a `/proc/.../stat` text (the command name may hold spaces and parentheses). */
export function schedulingOf(stat: string): Scheduling {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { nice: Number(fields[19 - 3]), rtPriority: Number(fields[40 - 3]), policy: Number(fields[41 - 3]) };
}

/** Every thread of this process by id (threads that end while being read are left out). */
export function threadsScheduling(): Map<number, Scheduling> {
  const all = new Map<number, Scheduling>();
  for (const tid of readdirSync('/proc/self/task').map(Number)) {
    try {
      all.set(tid, schedulingOf(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')));
    } catch {}
  }
  return all;
}
