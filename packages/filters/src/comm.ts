import type { EventClass, FieldValue, TraceEvent } from '@evtrace/trace-format';

/** What an event says of one task's name; undefined where it does not tell. */
interface NameEvidence {
  readonly pid: number;
  /** When the event fired. */
  readonly at: string | undefined;
  /** From the event on. */
  readonly after: string | undefined;
  /** Before the event: what the task's earlier events saw, when nothing named it since (none for an exec). */
  readonly earlier: string | undefined;
}

/**
 * Tracks each task's name over a recording so that user-space `COMM` filters see what the kernel saw: the name a task
 * had when the event fired. Feed it every event in time order, calling {@link CommTracker.resolve} for an event
 * before {@link CommTracker.observe} (a `task_rename` event fires while the old name is still current).
 *
 * Sources: sched_switch (prev/next), sched_wakeup/waking/wakeup_new, sched_process_fork, task_newtask,
 * task_rename (its `oldcomm` before, its `newcomm` after), sched_process_exec (the new name is the file's base name).
 * A name is looked up in this order: what the event itself says of its task (a task_rename's `oldcomm`), the name
 * last observed, the first name the recording shows the task had ({@link CommTracker.seedFirstNames}: a task renamed
 * before anything else named it had its `oldcomm` until then), and seeds such as `saved_cmdlines`, which hold each
 * task's last name.
 */
export class CommTracker {
  readonly #names = new Map<number, string>();
  readonly #first = new Map<number, string>();
  readonly #seeds = new Map<number, string>();

  /** Seeds a name used while the recording has not named the task, e.g. from tracefs `saved_cmdlines`. */
  seed(pid: number, comm: string): void {
    this.#seeds.set(pid, comm);
  }

  /** Parses tracefs `saved_cmdlines` text into seeds. */
  seedFromSavedCmdlines(text: string): void {
    for (const line of text.split('\n')) {
      const m = /^(\d+)\s+(.*)$/.exec(line);
      if (m) this.#seeds.set(Number(m[1]), m[2]!);
    }
  }

  /**
   * Reads a whole recording ahead (its events in time order, a second pass over them) for the name each task had
   * before the first event that names it: a `task_rename`'s `oldcomm`, the name any other naming event shows; none
   * for a task first seen in an exec. Those names apply to the task's earlier events, before observation names it.
   */
  seedFirstNames(events: Iterable<TraceEvent>): void {
    const seen = new Set<number>();
    for (const e of events) {
      for (const { pid, earlier } of evidence(e)) {
        if (seen.has(pid)) continue;
        seen.add(pid);
        if (earlier !== undefined) this.#first.set(pid, earlier);
      }
    }
  }

  /** The name of the event's task (common_pid) at the time of the event. */
  resolve(event: TraceEvent): string | undefined {
    const pid = num(field(event, 'common_pid'));
    if (pid === undefined) return undefined;
    for (const x of evidence(event)) if (x.pid === pid && x.at !== undefined) return x.at;
    return this.commOf(pid, event.cpu ?? undefined);
  }

  /** The name of task `pid` as last known; pid 0 is each CPU's idle task, `swapper/CPU`. */
  commOf(pid: number, cpu?: number): string | undefined {
    if (pid === 0 && cpu !== undefined) return `swapper/${cpu}`;
    return this.#names.get(pid) ?? this.#first.get(pid) ?? this.#seeds.get(pid);
  }

  /** Whether events of `eventClass` name tasks: {@link CommTracker.observe} learns only from those. */
  names(eventClass: EventClass): boolean {
    return kindOf(eventClass) !== null;
  }

  /** Learns from one event; call after evaluating it. */
  observe(event: TraceEvent): void {
    for (const { pid, after } of evidence(event)) if (after !== undefined) this.#names.set(pid, after);
  }
}

const NONE: readonly NameEvidence[] = [];

/** The events that name tasks, by their name without the system. */
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

/** Per event class: the naming event it is, or null. */
const kinds = new WeakMap<EventClass, string | null>();

function kindOf(cls: EventClass): string | null {
  let kind = kinds.get(cls);
  if (kind === undefined) {
    const name = cls.name.slice(cls.name.indexOf(':') + 1);
    kind = NAMING.has(name) ? name : null;
    kinds.set(cls, kind);
  }
  return kind;
}

/** The names an event shows, by the task they belong to. */
function evidence(event: TraceEvent): readonly NameEvidence[] {
  // Most events name no task: their class is looked up once, so they cost one map read.
  const kind = kindOf(event.eventClass);
  if (kind === null) return NONE;
  const f = (name: string) => field(event, name);
  const at = (pid: FieldValue | undefined, comm: FieldValue | undefined): NameEvidence[] => {
    const p = num(pid);
    const c = typeof comm === 'string' ? comm : undefined;
    return p === undefined ? [] : [{ pid: p, at: c, after: c, earlier: c }];
  };
  switch (kind) {
    case 'sched_switch':
      return [...at(f('prev_pid'), f('prev_comm')), ...at(f('next_pid'), f('next_comm'))];
    case 'sched_wakeup':
    case 'sched_waking':
    case 'sched_wakeup_new':
    case 'task_newtask':
      return at(f('pid'), f('comm'));
    case 'sched_process_fork':
      return [...at(f('parent_pid'), f('parent_comm')), ...at(f('child_pid'), f('child_comm'))];
    case 'task_rename': {
      // Kernels since 6.13 leave out the pid: the renamed task is the one recording the event.
      const p = num(f('pid') ?? f('common_pid'));
      const [old, now] = [f('oldcomm'), f('newcomm')];
      const before = typeof old === 'string' ? old : undefined;
      return p === undefined
        ? NONE
        : [{ pid: p, at: before, after: typeof now === 'string' ? now : undefined, earlier: before }];
    }
    case 'sched_process_exec': {
      const file = f('filename');
      const p = num(f('pid'));
      if (typeof file !== 'string' || p === undefined) return NONE;
      // The exec renamed the task (its own task_rename) before this event fired; its name before is not told.
      const name = (file.slice(file.lastIndexOf('/') + 1) || file).slice(0, 15);
      return [{ pid: p, at: name, after: name, earlier: undefined }];
    }
    default:
      return NONE;
  }
}

function field(event: TraceEvent, name: string): FieldValue | undefined {
  const v = event.fields[name];
  if (v !== undefined) return v;
  if (event.scopes) for (const scope of Object.values(event.scopes)) if (name in scope) return scope[name];
  return undefined;
}

function num(v: FieldValue | undefined): number | undefined {
  return typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : undefined;
}
