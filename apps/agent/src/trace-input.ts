/**
 * A trace file opened for a command (`cat`, `convert`): its reader, its events after `--filter`, the name
 * each task had when an event fired, and the notes to print on stderr.
 */
import {
  CommTracker,
  compileFilter,
  compileRecordFilter,
  type EventPredicate,
  FilterError,
  parseFilter,
  parseKallsyms,
  type SymbolTable,
} from '@evtrace/filters';
import {
  type ByteOut,
  createJsonWriter,
  createTextLineWriter,
  type EventClass,
  type EventReadOptions,
  type FtraceMetadata,
  type JsonLineWriter,
  openTrace,
  type RecordTest,
  sliceTest,
  type TimeSlices,
  type TraceEvent,
  type TraceReader,
} from '@evtrace/trace-format';
import type { CliIO } from './command.ts';
import { usageError } from './exit-codes.ts';

/** One thread's share of a recording read by several: the slices `k` with `k % count === index`. */
export interface SliceShare {
  readonly slices: TimeSlices;
  readonly index: number;
  readonly count: number;
}

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
  /**
   * `--filter`'s test of one event, for a reader that writes events without `events()`; `finish()` once every event
   * was read (a usage error when the expression fits no class).
   */
  readonly filter?: ((e: TraceEvent) => boolean) & { finish(): void };
}

/** Opens INPUT (CTF directory, trace.dat, raw-pages directory); a damaged one throws its TraceFormatError. */
export function openInput(
  input: string,
  options: {
    filter?: string;
    lenient?: boolean;
    buffer?: string;
    allBuffers?: boolean;
    part?: SliceShare;
  },
): OpenedInput {
  const readOptions = {
    lenient: options.lenient === true,
    ...(options.buffer !== undefined ? { buffer: options.buffer } : {}),
    ...(options.allBuffers === true ? { allBuffers: true } : {}),
  };
  const open = () => openTrace(input, readOptions) as OpenedInput['reader'];
  const reader = open();
  const notes: string[] = [];
  // COMM is the name a task had when the event fired, as the kernel evaluates it: names are replayed over the
  // recording (switches, forks, execs, renames); saved_cmdlines, which holds each task's last name, only seeds tasks
  // the recording has not named yet.
  const tasks = new CommTracker();
  for (const [pid, name] of reader.metadata?.cmdlines ?? []) tasks.seed(pid, name);
  const filter = options.filter;
  // The read-ahead for COMM goes through a reader of its own, so that the input's warnings are reported once.
  const readAgain = () => open().events();
  const predicate = filter === undefined ? undefined : eventFilter(filter, reader, tasks, notes, readAgain);
  const part = options.part;
  // A thread's share of the time slices: records of other threads' slices are left undecoded, but for the classes
  // that name tasks, whose names every thread must learn in order.
  const select =
    part === undefined
      ? predicate?.select
      : (ec: EventClass) =>
          tasks.names(ec)
            ? predicate?.select(ec)
            : sliceTest(part.slices, part.index, part.count, predicate?.select(ec));
  return {
    reader,
    events: () =>
      new HandledEvents(
        reader.events(select === undefined ? undefined : { select })[Symbol.iterator](),
        tasks,
        predicate,
      ),
    tasks,
    notes,
    ...(predicate !== undefined ? { filter: predicate } : {}),
  };
}

/**
 * The events a filter keeps, the task names learnt from each event read once it has been handled (when the next one
 * is asked for): a task_rename fires while the old name is still current. A plain iterator rather than a generator,
 * whose `next()` a `for...of` loop inlines.
 */
class HandledEvents implements IterableIterator<TraceEvent> {
  readonly #events: Iterator<TraceEvent>;
  readonly #tasks: CommTracker;
  readonly #keep: ReturnType<typeof eventFilter> | undefined;
  #handled: TraceEvent | undefined;

  constructor(events: Iterator<TraceEvent>, tasks: CommTracker, keep: ReturnType<typeof eventFilter> | undefined) {
    this.#events = events;
    this.#tasks = tasks;
    this.#keep = keep;
  }

  [Symbol.iterator](): this {
    return this;
  }

  next(): IteratorResult<TraceEvent> {
    if (this.#handled !== undefined) this.#tasks.observe(this.#handled);
    this.#handled = undefined;
    for (;;) {
      const r = this.#events.next();
      if (r.done === true) {
        this.#keep?.finish();
        return r;
      }
      const e = r.value;
      if (this.#keep === undefined || this.#keep(e)) {
        this.#handled = e;
        return r;
      }
      this.#tasks.observe(e);
    }
  }

  return(): IteratorResult<TraceEvent> {
    this.#events.return?.();
    return { done: true, value: undefined };
  }
}

/**
 * `--filter` over every event class: compiled per class on first use. A class the expression does not fit (a field
 * it lacks) is left out with a note, as the kernel refuses such a filter on that event; an expression that fits no
 * class at all is a usage error. Its `select` spares ftrace readers the decoding of records the filter rejects: a
 * left-out class is not decoded, and where the expression reads only what a record holds, it is tested on the
 * record first (the decoded event is judged again, so the answer is the event predicate's).
 */
function eventFilter(
  expr: string,
  reader: OpenedInput['reader'],
  tasks: CommTracker,
  notes: string[],
  readAgain: () => Iterable<TraceEvent>,
): ((e: TraceEvent) => boolean) & { finish(): void; select: NonNullable<EventReadOptions['select']> } {
  const meta = reader.metadata;
  const symbols = meta?.kallsymsText !== undefined ? lazySymbols(meta.kallsymsText) : undefined;
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
  const compiled = new Map<EventClass, { event?: EventPredicate; record?: RecordTest }>();
  let firstError: FilterError | undefined;
  let accepted = 0;
  const compile = (ec: EventClass) => {
    let c = compiled.get(ec);
    if (c !== undefined) return c;
    c = {};
    try {
      const parsed = parseFilter(expr, ec, symbols ? { symbols } : {});
      c.event = compileFilter(parsed, ec, { ...(symbols ? { symbols } : {}), comm });
      accepted++;
      // COMM needs the task names as replayed up to the event; other expressions read only the record and its CPU.
      if (meta !== undefined && !parsed.predicates.some((p) => p.field.kind === 'comm')) {
        const onRecord = compileRecordFilter(parsed, ec, { byteOrder: meta.byteOrder });
        c.record = (view, start, length, cpu) => {
          try {
            return onRecord(view, start, length, cpu);
          } catch (error) {
            // A record the filter cannot read is decoded, so that the decoder names its damage.
            if (error instanceof FilterError) return true;
            throw error;
          }
        };
      }
    } catch (error) {
      if (!(error instanceof FilterError)) throw error;
      if (c.event === undefined) {
        firstError ??= error;
        notes.push(`filter does not apply to ${ec.name} (its events are left out): ${error.message}`);
      }
    }
    compiled.set(ec, c);
    return c;
  };
  const predicate = (e: TraceEvent) => compile(e.eventClass).event?.(e) === true;
  // Classes that name tasks are decoded whatever the filter says: the task names are learnt from them.
  const select = (ec: EventClass): RecordTest | undefined => {
    if (tasks.names(ec)) return undefined;
    const c = compile(ec);
    return c.event === undefined ? () => false : c.record;
  };
  return Object.assign(predicate, {
    select,
    finish() {
      // Nothing read (`-n 0`, an empty trace): the expression is judged on every class the trace declares.
      if (compiled.size === 0) for (const ec of reader.eventClasses) compile(ec);
      if (accepted === 0 && firstError !== undefined) {
        throw usageError(`--filter: ${firstError.format(expr)}`);
      }
    },
  });
}

/** The symbol table of `text`, parsed when a `.function` predicate first looks a symbol up (few filters do). */
function lazySymbols(text: string): SymbolTable {
  let table: SymbolTable | undefined;
  const get = () => (table ??= parseKallsyms(text));
  return { lookupName: (name) => get().lookupName(name), lookupRange: (address) => get().lookupRange(address) };
}

/** Writes warnings and notes to stderr. */
export function reportNotes(io: CliIO, opened: OpenedInput, allBuffersFlag?: string): void {
  printNotes(io, opened.reader.warnings, opened.notes, allBuffersFlag);
}

/** Writes a read's warnings and notes to stderr. */
export function printNotes(
  io: CliIO,
  warnings: readonly string[],
  notes: readonly string[],
  allBuffersFlag?: string,
): void {
  for (const w of warnings) {
    // The reader names its options; the command line has flags for them.
    const hint = allBuffersFlag !== undefined ? `--buffer NAME, or all with ${allBuffersFlag}` : '--buffer NAME';
    io.stderr(`evtrace: warning: ${w.replace(/the buffer option, or read them all with allBuffers/, hint)}\n`);
  }
  for (const n of notes) io.stderr(`evtrace: ${n}\n`);
}

/**
 * `--json` lines, written as bytes into an output buffer: each event with its task's name when it fired (`pid` 0 is
 * `swapper/CPU`, as the kernel names it).
 */
export function jsonLineWriter(opened: OpenedInput): JsonLineWriter {
  return createJsonWriter({ comm: (pid, e) => opened.tasks.commOf(pid, e.cpu ?? undefined) });
}

/** Writes text lines, as trace-cmd report (ftrace data) or babeltrace2 (CTF) prints them, each with its newline. */
export function textLines(reader: OpenedInput['reader']): (e: TraceEvent, out: ByteOut) => void {
  return createTextLineWriter(reader);
}
