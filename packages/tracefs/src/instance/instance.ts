/**
 * Private tracefs instances (`instances/evtrace-<pid>-<n>`, or `evtrace-<owner>-<pid>-<n>` for a long-lived owner
 * such as an agent): one per recording, so evtrace never touches the top-level buffer or anyone else's tracing. Every
 * instance created is removed when its owner is done, when the process exits (also after an uncaught exception) or is
 * stopped by SIGINT, SIGTERM, SIGHUP or SIGQUIT; instances left by a one-shot process that was killed outright (SIGKILL) are removed by
 * {@link cleanStaleInstances} at the next start. An owner's instances are left to that owner, which re-adopts them.
 */
import { existsSync, mkdirSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ioError, TracefsError } from '../errors.ts';

/** Names of instances evtrace owns: `evtrace-<pid>-<n>` (one-shot) or `evtrace-<owner>-<pid>-<n>` (owner: 8 hex digits). */
export const OWN_INSTANCE = /^evtrace-(?:([0-9a-f]{8})-)?(\d+)-(\d+)$/;

/** Who made an evtrace instance: its process and, for a long-lived owner (an agent's state directory), its tag. */
export interface InstanceOwner {
  readonly pid: number;
  readonly owner: string | undefined;
}

/** The owner of an evtrace instance name, or undefined for a name evtrace did not make. */
export function instanceOwner(name: string): InstanceOwner | undefined {
  const m = OWN_INSTANCE.exec(name);
  return m === null ? undefined : { pid: Number(m[2]), owner: m[1] };
}

/** A private tracefs instance. */
export interface Instance {
  readonly name: string;
  /** The instance directory, `TRACEFS/instances/NAME`. */
  readonly path: string;
  /** Stops tracing in the instance and removes it. Idempotent. */
  remove(): void;
}

const live = new Set<Instance>();
let counter = 0;
let hooked = false;

const sleeper = new Int32Array(new SharedArrayBuffer(4));
const sleepSync = (ms: number) => Atomics.wait(sleeper, 0, 0, ms);

/** Disables tracing and events in an instance directory and removes it (retrying while the kernel is busy). */
export function removeInstanceDir(dir: string): void {
  if (!existsSync(dir)) return;
  // The kernel refuses to remove an instance whose events are still enabled or whose files are open.
  for (const [file, value] of [
    ['tracing_on', '0'],
    ['events/enable', '0'],
  ] as const) {
    try {
      writeFileSync(join(dir, file), value);
    } catch {}
  }
  let last: unknown;
  for (let i = 0; i < 100; i++) {
    try {
      rmdirSync(dir);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      last = error;
      sleepSync(10);
    }
  }
  throw ioError(dir, last, 'cannot remove the tracefs instance');
}

function removeAllLive(): void {
  for (const inst of live) {
    try {
      inst.remove();
    } catch {}
  }
}

function onSignal(signal: NodeJS.Signals): void {
  // Another handler (a recorder stopping cleanly) owns the signal and removes its instance itself.
  if (process.listenerCount(signal) > 1) return;
  removeAllLive();
  // Nobody else handles the signal: die of it as the default action would.
  process.removeListener(signal, onSignal);
  process.kill(process.pid, signal);
}

function installHooks(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', removeAllLive);
  // First in line: a handler that stops cleanly may remove itself when it runs, and must still be seen as there.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const) process.prependListener(signal, onSignal);
}

/**
 * Creates `instances/evtrace-<pid>-<n>` (or `evtrace-<owner>-<pid>-<n>`) under `tracefs`. The instance starts with tracing on and nothing enabled
 * (the kernel's default for new instances), so the caller turns `tracing_on` off before configuring.
 *
 * @throws TracefsError `ERR_TRACEFS_PERMISSION` or `ERR_TRACEFS_IO` when the kernel refuses, `ERR_TRACEFS_SETTING`
 *   for an owner tag that is not 8 hex digits.
 */
export function createInstance(tracefs: string, owner?: string): Instance {
  if (owner !== undefined && !/^[0-9a-f]{8}$/.test(owner))
    throw new TracefsError(
      'ERR_TRACEFS_SETTING',
      `instance owner tag must be 8 hex digits, got ${JSON.stringify(owner)}`,
    );
  installHooks();
  const name = `evtrace-${owner !== undefined ? `${owner}-` : ''}${process.pid}-${counter++}`;
  const path = join(tracefs, 'instances', name);
  try {
    mkdirSync(path);
  } catch (error) {
    throw ioError(path, error, 'cannot create a tracefs instance');
  }
  let removed = false;
  const inst: Instance = {
    name,
    path,
    remove() {
      if (removed) return;
      removeInstanceDir(path);
      removed = true;
      live.delete(inst);
    },
  };
  live.add(inst);
  return inst;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes one-shot instances evtrace created in processes that no longer exist; returns their names. Instances with an
 * owner tag are left alone: their owner (an agent) re-adopts or removes them when it starts again.
 */
export function cleanStaleInstances(tracefs: string): string[] {
  const dir = join(tracefs, 'instances');
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const o = instanceOwner(name);
    if (o === undefined || o.owner !== undefined || o.pid === process.pid || isAlive(o.pid)) continue;
    try {
      removeInstanceDir(join(dir, name));
      removed.push(name);
    } catch {}
  }
  return removed;
}

/** Names of the instances of a tracefs mount. */
export function listInstances(tracefs: string): string[] {
  try {
    return readdirSync(join(tracefs, 'instances')).sort();
  } catch {
    return [];
  }
}
