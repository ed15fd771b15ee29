/**
 * The tasks of a trace as Perfetto's `ProcessTree` describes them. Perfetto files a thread under the process its
 * `tgid` names, and under pid 0 when none is given, so only tasks whose thread group the trace shows are described:
 * one that exec'd leads its own group (`sched_process_exec`), and `task_newtask` tells whether a new task is a
 * thread of its creator's group (`CLONE_THREAD`) or a process of its own. Other tasks are named by Perfetto from the
 * COMMs of the ftrace events themselves.
 */
import type { FieldValue, TraceEvent } from '../model/types.ts';

const CLONE_THREAD = 0x10000n;

const pidOf = (v: FieldValue | undefined): number | undefined =>
  typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined;

/** Task names and thread groups learnt from events, in time order. */
export class PerfettoTasks {
  /** The latest COMM of each task. */
  readonly #names = new Map<number, string>();
  /** tid → tgid, where the trace shows it. */
  readonly #groups = new Map<number, number>();

  constructor(cmdlines?: ReadonlyMap<number, string>) {
    for (const [pid, comm] of cmdlines ?? []) if (pid > 0) this.#names.set(pid, comm);
  }

  /** Learns from one event of `system:event` `key`, recorded by task `task`. */
  observe(key: string, task: number | undefined, f: TraceEvent['fields']): void {
    const name = (pid: FieldValue | undefined, comm: FieldValue | undefined) => {
      const p = pidOf(pid);
      if (p !== undefined && typeof comm === 'string') this.#names.set(p, comm);
    };
    switch (key) {
      case 'sched:sched_switch':
        name(f.prev_pid, f.prev_comm);
        name(f.next_pid, f.next_comm);
        break;
      case 'sched:sched_waking':
      case 'sched:sched_wakeup':
      case 'sched:sched_wakeup_new':
        name(f.pid, f.comm);
        break;
      case 'task:task_rename':
        // Kernels since 6.13 leave out the pid: the renamed task is the one recording the event.
        name(f.pid ?? task, f.newcomm);
        break;
      case 'task:task_newtask': {
        const pid = pidOf(f.pid);
        if (pid === undefined) break;
        name(pid, f.comm);
        const raw = f.clone_flags;
        const flags =
          typeof raw === 'bigint' ? raw : typeof raw === 'number' && Number.isSafeInteger(raw) ? BigInt(raw) : 0n;
        const creator = task !== undefined ? this.#groups.get(task) : undefined;
        if ((flags & CLONE_THREAD) === 0n) this.#groups.set(pid, pid);
        else if (creator !== undefined) this.#groups.set(pid, creator);
        break;
      }
      case 'sched:sched_process_exec': {
        // An exec makes its task the leader of its group, named after the file (as the kernel's comm, 15 bytes).
        const pid = pidOf(f.pid);
        if (pid === undefined) break;
        this.#groups.set(pid, pid);
        if (typeof f.filename === 'string')
          this.#names.set(pid, (f.filename.slice(f.filename.lastIndexOf('/') + 1) || f.filename).slice(0, 15));
        break;
      }
    }
  }

  /** The `ProcessTree` message of the tasks whose group is known; undefined when there are none. */
  processTree(): object | undefined {
    const processes: object[] = [];
    const threads: object[] = [];
    for (const [tid, tgid] of this.#groups) {
      const name = this.#names.get(tid);
      if (tid === tgid) processes.push({ pid: tid, cmdline: name !== undefined ? [name] : [], cmdline_is_comm: true });
      threads.push({ tid, tgid, name });
    }
    return threads.length > 0 ? { processes, threads } : undefined;
  }
}
