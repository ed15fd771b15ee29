import { CommTracker, compileFilter, type EventPredicate, FilterError, parseKallsyms } from '@evtrace/filters';
import {
  createFtraceBodyFormatter,
  createJsonFormatter,
  createTextFormatter,
  type EventClass,
  eventComm,
  type FtraceMetadata,
  ftraceTimestamp,
  openTrace,
  type TraceEvent,
  TraceFormatError,
  type TraceReader,
} from '@evtrace/trace-format';
import type { Command } from 'commander';
import { ExitCode } from '../exit-codes.ts';
import { setExamples } from '../help.ts';
import { addCommand, CliExit, type CliIO } from '../program.ts';

/** A trace opened for a command: the reader and its events after `--filter`. */
export interface OpenedInput {
  readonly reader: TraceReader & { metadata?: FtraceMetadata };
  readonly events: () => Iterable<TraceEvent>;
  /**
   * Each task's name when the event being handled fired: it learns from every event read (filtered out or not) once
   * the event has been handled, as the kernel names a task_rename's task by its old name.
   */
  readonly tasks: CommTracker;
  /** Problems met while reading or filtering, for stderr. */
  readonly notes: string[];
}

/** Opens INPUT (CTF directory, trace.dat, raw-pages directory), turning format errors into exit status 1. */
export function openInput(
  input: string,
  options: { filter?: string; lenient?: boolean; buffer?: string; allBuffers?: boolean },
): OpenedInput {
  const open = () => {
    try {
      return openTrace(input, {
        lenient: options.lenient === true,
        ...(options.buffer !== undefined ? { buffer: options.buffer } : {}),
        ...(options.allBuffers === true ? { allBuffers: true } : {}),
      }) as OpenedInput['reader'];
    } catch (error) {
      throw asCliExit(error);
    }
  };
  const reader = open();
  const notes: string[] = [];
  // COMM is the name a task had when the event fired, as the kernel evaluates it: names are replayed over the
  // recording (switches, forks, execs, renames); saved_cmdlines, which holds each task's last name, only seeds tasks
  // the recording has not named yet.
  const tasks = new CommTracker();
  for (const [pid, name] of reader.metadata?.cmdlines ?? []) tasks.seed(pid, name);
  const filter = options.filter;
  // The read-ahead for COMM goes through a reader of its own, so that the input's warnings are reported once.
  const readAgain = function* () {
    try {
      yield* open().events();
    } catch (error) {
      throw asCliExit(error);
    }
  };
  const predicate = filter === undefined ? undefined : eventFilter(filter, reader, tasks, notes, readAgain);
  return {
    reader,
    events: function* () {
      try {
        for (const e of reader.events()) {
          if (predicate === undefined || predicate(e)) yield e;
          // After the event was handled: a task_rename fires while the old name is still current.
          tasks.observe(e);
        }
      } catch (error) {
        throw asCliExit(error);
      }
      predicate?.finish();
    },
    tasks,
    notes,
  };
}

function asCliExit(error: unknown): unknown {
  if (error instanceof TraceFormatError) return new CliExit(ExitCode.Failure, `${error.code}: ${error.message}`);
  return error;
}

/**
 * `--filter` over every event class: compiled per class on first use. A class the expression does not fit (a field
 * it lacks) is left out with a note, as the kernel refuses such a filter on that event; an expression that fits no
 * class at all is a usage error.
 */
function eventFilter(
  expr: string,
  reader: OpenedInput['reader'],
  tasks: CommTracker,
  notes: string[],
  readAgain: () => Iterable<TraceEvent>,
): ((e: TraceEvent) => boolean) & { finish(): void } {
  const meta = reader.metadata;
  const symbols = meta?.kallsymsText !== undefined ? parseKallsyms(meta.kallsymsText) : undefined;
  // A task's events before anything named it take the first name the recording shows it had (a rename's oldcomm),
  // read ahead in a second pass over the input once COMM is first needed.
  let readAhead = false;
  const comm = (e: TraceEvent) => {
    if (!readAhead) {
      readAhead = true;
      tasks.seedFirstNames(readAgain());
    }
    return tasks.resolve(e);
  };
  const compiled = new Map<EventClass, EventPredicate | undefined>();
  let firstError: FilterError | undefined;
  let accepted = 0;
  const predicate = (e: TraceEvent) => {
    let p = compiled.get(e.eventClass);
    if (p === undefined && !compiled.has(e.eventClass)) {
      try {
        p = compileFilter(expr, e.eventClass, { ...(symbols ? { symbols } : {}), comm });
        accepted++;
      } catch (error) {
        if (!(error instanceof FilterError)) throw error;
        firstError ??= error;
        notes.push(`filter does not apply to ${e.eventClass.name} (its events are left out): ${error.message}`);
      }
      compiled.set(e.eventClass, p);
    }
    return p?.(e) === true;
  };
  return Object.assign(predicate, {
    finish() {
      if (accepted === 0 && firstError !== undefined) {
        throw new CliExit(ExitCode.Usage, `--filter: ${firstError.format(expr)}`);
      }
    },
  });
}

/**
 * Collects output text into large writes. Appended to one string (V8 links the pieces and copies them once, when the
 * write encodes it), which costs less than collecting them in an array and joining it.
 */
export function bufferedWriter(write: (text: string) => void): { put(text: string): void; flush(): void } {
  let pending = '';
  return {
    put(text) {
      pending += text;
      if (pending.length >= 1 << 16) this.flush();
    },
    flush() {
      if (pending.length > 0) write(pending);
      pending = '';
    },
  };
}

/** Writes warnings and notes to stderr. */
export function reportNotes(io: CliIO, opened: OpenedInput, allBuffersFlag?: string): void {
  for (const w of opened.reader.warnings) {
    // The reader names its options; the command line has flags for them.
    const hint = allBuffersFlag !== undefined ? `--buffer NAME, or all with ${allBuffersFlag}` : '--buffer NAME';
    io.stderr(`evtrace: warning: ${w.replace(/the buffer option, or read them all with allBuffers/, hint)}\n`);
  }
  for (const n of opened.notes) io.stderr(`evtrace: ${n}\n`);
}

interface CatOptions {
  json?: boolean;
  filter?: string;
  lenient?: boolean;
  buffer?: string;
  allBuffers?: boolean;
  limit?: string;
  live?: string;
  socket?: string;
}

/** `evtrace cat INPUT`: prints the events of a trace. */
export function registerCat(program: Command, io: CliIO): void {
  const cmd = addCommand(program, 'cat')
    .summary('print the events of a trace (CTF directory, trace.dat, or raw per-CPU pages)')
    .description(
      `Prints every event of INPUT in timestamp order: as trace-cmd report prints ftrace data (trace.dat or a directory
of cpuN.raw pages beside an events/ tree copied from tracefs), its plugins' text (kmem call sites, sched_switch,
sched_wakeup, hrtimer, futex, tlb_flush) and its "CPU:N [N EVENTS DROPPED]" lines where the kernel lost events
included; as babeltrace2 prints CTF. With --json, one object per line, valid against @evtrace/trace-format/schemas/event.json: {"ts_ns": "<decimal>", "cpu": N|null,
"event": "system:name", "pid": N|null, "comm": NAME|null, "flags": {irqs_off, need_resched, preempt_resched,
hardirq, softirq, nmi, preempt_depth, migrate_disable}|null, "fields": {...}}. Each field has one JSON type for
every event of its class, taken from the event's format: 64-bit integers are decimal strings, addresses and
integers the format prints as %p or hex are "0x..." strings, narrower integers are numbers. comm is the name the
task had when the event fired (pid 0 is swapper/CPU, as the kernel names it); the events of a trace.dat instance
buffer (--buffer, --all-buffers) carry "buffer": "NAME".
In --filter, COMM is the name a task had when the event fired, replayed from the recording's sched_switch,
sched_process_fork, sched_process_exec and task_rename events; a task's events before any of these name it take the
first name the recording shows it had (a task_rename's oldcomm), read ahead in a second pass over INPUT, and
saved_cmdlines names the tasks the recording never does.
Warnings go to stderr, never to stdout. A trace is read at offsets: a FIFO or device is refused, naming it.
A damaged input (a trace.dat or cpuN.raw cut short, a corrupt page or chunk) fails naming the file and byte offset;
with --lenient every whole page before the damage is printed, per CPU, and the damage is named on stderr.`,
    )
    .argument('[input]', 'CTF trace directory, trace.dat file, or raw-pages directory')
    .option('--json', 'one JSON object per event per line')
    .option('--filter <expr>', 'keep events matching an ftrace filter expression (e.g. "bytes_req > 64")')
    .option('--lenient', 'report corrupt pages or packets on stderr and continue (a cut file: its whole pages)')
    .option('--buffer <name>', 'trace.dat: read the instance buffer NAME (trace-cmd record -B) instead of the top one')
    .option(
      '--all-buffers',
      'trace.dat: every buffer, merged by time, each line after its buffer name (as trace-cmd report)',
    )
    .option('-n, --limit <n>', 'print only the first N events (after --filter)')
    .option('--live <session>', "a running agent session's events as they arrive, after its recent window (no INPUT)")
    .option('--socket <path>', "with --live: the agent's control socket")
    .action(async (input: string | undefined, options: CatOptions) => {
      const limit = options.limit === undefined ? Number.POSITIVE_INFINITY : Number(options.limit);
      if (options.limit !== undefined && !/^\d+$/.test(options.limit))
        throw new CliExit(ExitCode.Usage, `--limit must be a non-negative integer, not '${options.limit}'`);
      if (options.live !== undefined) {
        if (input !== undefined || options.filter !== undefined)
          throw new CliExit(ExitCode.Usage, '--live takes no INPUT and no --filter (the session has its own)');
        const { catLive } = await import('./session.ts');
        return catLive(
          options.live,
          { json: options.json === true, limit, ...(options.socket ? { socket: options.socket } : {}) },
          io,
        );
      }
      if (input === undefined) throw new CliExit(ExitCode.Usage, 'cat needs INPUT (or --live SESSION)');
      if (options.allBuffers && options.buffer !== undefined)
        throw new CliExit(ExitCode.Usage, '--buffer and --all-buffers contradict each other');
      const opened = openInput(input, options);
      const format = options.json ? jsonLines(opened) : textLines(opened.reader);
      const out = bufferedWriter(io.stdout);
      try {
        let printed = 0;
        // Stops reading at the limit: the rest of a large trace is never decoded.
        for (const e of opened.events()) {
          if (printed++ >= limit) break;
          out.put(format(e));
        }
      } finally {
        out.flush();
        reportNotes(io, opened, '--all-buffers');
      }
    });
  setExamples(
    cmd,
    `evtrace cat trace.dat                           the text trace-cmd report prints
evtrace cat trace.dat --json --filter 'bytes_req > 1024'
evtrace cat trace.dat -n 20                      the first 20 events
evtrace cat ./raw                                raw pages: raw/cpu0.raw, raw/events/header_page, raw/events/kmem/kmalloc/format
evtrace cat ./ctf-trace                          babeltrace2 style text
evtrace cat --live flight                        a running agent session's events (losses of this viewer on stderr)`,
  );
}

/**
 * Events of `cat --live` as text: the task (`comm-pid`, as trace-cmd prints it, named as the agent sent it), CPU,
 * time in nanoseconds, `system:event` (a session mixes systems), then the body `evtrace cat` prints for a file's
 * event (its `print fmt` evaluated, or libtraceevent's plugin text), from the events decoded by the session's classes.
 */
export function liveTextFormatter(): (e: TraceEvent) => string {
  const names = new Map<number, string>();
  const body = createFtraceBodyFormatter({
    tasks: { get: (pid) => names.get(pid), learn: (pid, comm) => names.set(pid, comm) },
  });
  return (e) => {
    const pid = e.scopes?.['event.context']?.common_pid;
    const comm = eventComm(e);
    if (typeof pid === 'number' && comm !== undefined) names.set(pid, comm);
    const task = typeof pid === 'number' ? `${(comm ?? '<...>').padStart(16)}-${String(pid).padEnd(7)} ` : '';
    const cpu = e.cpu === null ? '---' : String(e.cpu).padStart(3, '0');
    return `${task}[${cpu}] ${ftraceTimestamp(e.tsNs, true)}: ${e.eventClass.name}: ${body(e)}\n`;
  };
}

/** `--json` lines: each event with its task's name when it fired (`pid` 0 is `swapper/CPU`, as the kernel names it). */
export function jsonLines(opened: OpenedInput): (e: TraceEvent) => string {
  return createJsonFormatter({ comm: (pid, e) => opened.tasks.commOf(pid, e.cpu ?? undefined) });
}

function textLines(reader: OpenedInput['reader']): (e: TraceEvent) => string {
  const line = createTextFormatter(reader);
  return (e) => `${line(e)}\n`;
}
