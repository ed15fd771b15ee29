/**
 * Test support: finds (or, as root, mounts) tracefs and creates private instances that are always removed.
 * Never touches the top-level buffer except through trace-cmd, whose state tests restore themselves.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';

/** The tracefs mount point, or a reason why there is none. */
export function findTracefs(): { path: string } | { why: string } {
  const mounted = readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' '))
    .find((f) => f[2] === 'tracefs');
  if (mounted !== undefined) {
    // Mounted is not enough: tracefs is root's alone (0700) unless the administrator opened it.
    try {
      accessSync(`${mounted[1]}/events`, constants.R_OK | constants.X_OK);
    } catch {
      return { why: `tracefs at ${mounted[1]} is not readable by this user (run the tests as root)` };
    }
    return { path: mounted[1]! };
  }
  if (process.getuid?.() !== 0) return { why: 'tracefs is not mounted and we are not root' };
  try {
    execFileSync('mount', ['-t', 'tracefs', 'nodev', '/sys/kernel/tracing'], { stdio: 'ignore' });
    return { path: '/sys/kernel/tracing' };
  } catch (e) {
    return { why: `cannot mount tracefs: ${(e as Error).message}` };
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

/**
 * Creates `instances/<unique>` and runs `fn` with its path; the instance is removed afterwards, even on failure, and
 * also when the test process is terminated or exits while `fn` runs.
 */
export async function withInstance<T>(tracefs: string, fn: (dir: string) => Promise<T> | T): Promise<T> {
  const dir = `${tracefs}/instances/evtrace-test-${process.pid}-${Date.now().toString(36)}`;
  mkdirSync(dir);
  const quiesce = () => {
    // Events must be off before the kernel lets the instance go.
    for (const [file, value] of [
      ['tracing_on', '0'],
      ['events/enable', '0'],
    ]) {
      try {
        writeFileSync(`${dir}/${file}`, value);
      } catch {}
    }
  };
  const onExit = () => {
    quiesce();
    try {
      rmdirSync(dir);
    } catch {}
  };
  const onSignal = () => {
    onExit();
    process.exit(143);
  };
  process.once('exit', onExit);
  process.once('SIGTERM', onSignal);
  try {
    return await fn(dir);
  } finally {
    process.off('exit', onExit);
    process.off('SIGTERM', onSignal);
    quiesce();
    for (let i = 0; i < 50 && existsSync(dir); i++) {
      try {
        rmdirSync(dir);
      } catch {
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }
}

/** A suite over a live recording: the recording's size, and so the suite's time, grows with what the machine does. */
export const LIVE_TIMEOUT_MS = 180_000;

/** A fuzz over a live recording runs what fits this budget: a busy machine shortens it instead of failing the test. */
export const FUZZ_BUDGET_MS = 40_000;
