/**
 * The recorder's scheduling priority while it reads. Loss under load is mostly the reader not getting a CPU in time
 * after the kernel woke it, so every thread of the process is raised once tracing is on (not only the reader: it
 * waits on V8's helper threads, garbage collection and compilation, which a helper left at nice 0 delays under load).
 * Raised only where allowed (root or CAP_SYS_NICE), and put back afterwards.
 *
 * By default the threads become SCHED_FIFO at priority 1, the lowest real-time one: a woken real-time thread takes
 * the CPU from ordinary tasks at once, where nice -20 still waits behind them, so buffers are drained emptier for the
 * same CPU (packages/tracefs/src/record.bench.ts prints a recording's loss and CPU under load). The kernel keeps a
 * share of every second for ordinary tasks (`sched_rt_runtime_us`), and the reader sleeps in poll(2) between passes.
 * Where real-time scheduling is refused or cannot be asked for (no FFI), nice -20 is used as before.
 */
import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { loadLibc } from './libc.ts';

/** The real-time priority the recorder's threads get by default. */
export const REALTIME_PRIORITY = 1;
/** The nice value used where real-time scheduling is refused, or the one asked for. */
export const DEFAULT_NICE = -20;

const SCHED_OTHER = 0;
const SCHED_FIFO = 1;
/** Children (and threads started later) get ordinary scheduling: a command spawned meanwhile never runs real-time. */
const SCHED_RESET_ON_FORK = 0x40000000;
/** The thread ended between listing and raising it. */
const ESRCH = 3;

/** How the threads were raised, and what each had before. */
export type Raised =
  | { readonly kind: 'realtime'; readonly priority: number; readonly before: ReadonlyMap<number, ThreadPolicy> }
  | { readonly kind: 'nice'; readonly nice: number; readonly before: ReadonlyMap<number, number> };

/** A thread's scheduling policy and real-time priority. */
export interface ThreadPolicy {
  readonly policy: number;
  readonly priority: number;
}

function threadIds(): number[] {
  try {
    return readdirSync('/proc/self/task').map(Number);
  } catch {
    return [0];
  }
}

/**
 * Raises every thread of this process: `undefined` asks for SCHED_FIFO at {@link REALTIME_PRIORITY} (nice
 * {@link DEFAULT_NICE} where that is refused), a number for that nice value, false for nothing. Returns what to
 * hand to {@link restorePriority}, or undefined when nothing changed.
 */
export function raisePriority(wanted: number | false | undefined): Raised | undefined {
  if (wanted === false) return undefined;
  if (wanted === undefined) {
    const realtime = raiseRealtime();
    if (realtime !== undefined) return realtime;
  }
  const target = wanted ?? DEFAULT_NICE;
  const before = new Map<number, number>();
  for (const tid of threadIds()) {
    try {
      const was = getPriority(tid);
      if (was <= target) continue;
      setPriority(tid, target);
      before.set(tid, was);
    } catch {}
  }
  return before.size === 0 ? undefined : { kind: 'nice', nice: target, before };
}

/** Every thread to SCHED_FIFO; undefined (with nothing changed) when one is refused. */
function raiseRealtime(): Raised | undefined {
  const libc = loadLibc();
  if (libc === null) return undefined;
  const param = new Int32Array(1);
  const before = new Map<number, ThreadPolicy>();
  for (const tid of threadIds()) {
    const policy = libc.schedGetscheduler(tid);
    // A thread that ended meanwhile is skipped; one with a policy of its own (real-time, batch, idle) keeps it.
    if (policy < 0 || libc.schedGetparam(tid, param) !== 0) continue;
    if ((policy & ~SCHED_RESET_ON_FORK) !== SCHED_OTHER) continue;
    const was = { policy, priority: param[0]! };
    param[0] = REALTIME_PRIORITY;
    if (libc.schedSetscheduler(tid, SCHED_FIFO | SCHED_RESET_ON_FORK, param) !== 0) {
      if (libc.errno() === ESRCH) continue;
      // Refused (EPERM: not allowed, or no real-time budget in this cgroup): all or none, so undo the others.
      restorePriority({ kind: 'realtime', priority: REALTIME_PRIORITY, before });
      return undefined;
    }
    before.set(tid, was);
  }
  return before.size === 0 ? undefined : { kind: 'realtime', priority: REALTIME_PRIORITY, before };
}

/** Puts back what {@link raisePriority} changed (threads that ended meanwhile are skipped). */
export function restorePriority(raised: Raised): void {
  if (raised.kind === 'nice') {
    for (const [tid, was] of raised.before) {
      try {
        setPriority(tid, was);
      } catch {}
    }
    return;
  }
  const libc = loadLibc();
  if (libc === null) return;
  const param = new Int32Array(1);
  for (const [tid, was] of raised.before) {
    param[0] = was.priority;
    libc.schedSetscheduler(tid, was.policy, param);
  }
}
