import type { EventClass, FieldValue, TraceEvent } from '@evtrace/trace-format';

/**
 * Tracks each task's name over a recording so that user-space `COMM` filters see what the kernel saw: the name a task
 * had when the event fired. Feed it every event in time order, calling {@link CommTracker.resolve} for an event
 * before {@link CommTracker.observe} (a `task_rename` event fires while the old name is still current).
 *
 * Sources: sched_switch (prev/next), sched_wakeup/waking/wakeup_new, sched_process_fork, task_newtask,
 * task_rename, sched_process_exec (the new name is the file's base name), plus names seeded from
 * `saved_cmdlines`.
 */
export class CommTracker {
  readonly #names = new Map<number, string>();
  /** Per event class: the naming event it is (its name without the system), or null. */
  readonly #kinds = new WeakMap<EventClass, string | null>();

  /** Seeds names, e.g. from tracefs `saved_cmdlines` (`pid comm` lines). */
  seed(pid: number, comm: string): void {
    this.#names.set(pid, comm);
  }

  /** Parses tracefs `saved_cmdlines` text into seeds. */
  seedFromSavedCmdlines(text: string): void {
    for (const line of text.split('\n')) {
      const m = /^(\d+)\s+(.*)$/.exec(line);
      if (m) this.#names.set(Number(m[1]), m[2]!);
    }
  }

  /** The name of the event's task (common_pid) at the time of the event. */
  resolve(event: TraceEvent): string | undefined {
    const pid = num(field(event, 'common_pid'));
    return pid === undefined ? undefined : this.commOf(pid, event.cpu ?? undefined);
  }

  /** The name of task `pid` as last observed; pid 0 is each CPU's idle task, `swapper/CPU`. */
  commOf(pid: number, cpu?: number): string | undefined {
    if (pid === 0 && cpu !== undefined) return `swapper/${cpu}`;
    return this.#names.get(pid);
  }

  /** Learns from one event; call after evaluating it. */
  observe(event: TraceEvent): void {
    // Most events name no task: their class is looked up once, so they cost one map read.
    const cls = event.eventClass;
    let kind = this.#kinds.get(cls);
    if (kind === undefined) {
      const name = cls.name.slice(cls.name.indexOf(':') + 1);
      kind = NAMING.has(name) ? name : null;
      this.#kinds.set(cls, kind);
    }
    if (kind !== null) this.#learn(event, kind);
  }

  #learn(event: TraceEvent, kind: string): void {
    const f = (name: string) => field(event, name);
    const set = (pid: FieldValue | undefined, comm: FieldValue | undefined) => {
      const p = num(pid);
      if (p !== undefined && typeof comm === 'string') this.#names.set(p, comm);
    };
    switch (kind) {
      case 'sched_switch':
        set(f('prev_pid'), f('prev_comm'));
        set(f('next_pid'), f('next_comm'));
        break;
      case 'sched_wakeup':
      case 'sched_waking':
      case 'sched_wakeup_new':
      case 'task_newtask':
        set(f('pid'), f('comm'));
        break;
      case 'sched_process_fork':
        set(f('parent_pid'), f('parent_comm'));
        set(f('child_pid'), f('child_comm'));
        break;
      case 'task_rename':
        set(f('pid') ?? f('common_pid'), f('newcomm'));
        break;
      case 'sched_process_exec': {
        const file = f('filename');
        if (typeof file === 'string') set(f('pid'), (file.slice(file.lastIndexOf('/') + 1) || file).slice(0, 15));
        break;
      }
    }
  }
}

/** The events that name tasks. */
const NAMING = new Set([
  'sched_switch',
  'sched_wakeup',
  'sched_waking',
  'sched_wakeup_new',
  'task_newtask',
  'sched_process_fork',
  'task_rename',
  'sched_process_exec',
]);

function field(event: TraceEvent, name: string): FieldValue | undefined {
  const v = event.fields[name];
  if (v !== undefined) return v;
  if (event.scopes) for (const scope of Object.values(event.scopes)) if (name in scope) return scope[name];
  return undefined;
}

function num(v: FieldValue | undefined): number | undefined {
  return typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : undefined;
}
