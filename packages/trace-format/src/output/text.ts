/**
 * Text in the style of `trace-cmd report` for ftrace events: `COMM-PID [CPU] SECS.USECS: EVENT: BODY`, where BODY is
 * the event's `print fmt` evaluated (symbols through kallsyms) or what libtraceevent's plugins print for it, or its
 * fields as `name=value` when the format is beyond the evaluator or the event did not come from ftrace. An event the
 * kernel lost others before (`scopes.lost`) is preceded by trace-cmd's `CPU:N [N EVENTS DROPPED]` line.
 */

import { ByteOut, IntKey, utf8 } from '../codec/byte-out.ts';
import { compileEventPlugin, type TaskNames } from '../ftrace/plugins.ts';
import { compilePrintWriter, type PrintkStrings } from '../ftrace/print-fmt.ts';
import type { Kallsyms } from '../ftrace/symbols.ts';
import type { EventClass, FieldClass, FieldValue, TraceEvent } from '../model/types.ts';

/** Options of {@link createFtraceTextFormatter}. */
export interface FtraceTextOptions {
  /** pid → command name (saved cmdlines); unknown tasks print as `<...>`, pid 0 as `<idle>`. */
  readonly cmdlines?: ReadonlyMap<number, string>;
  /** Symbols for `%pS`/`%ps`, resolved on first use. */
  readonly kallsyms?: () => Kallsyms | undefined;
  /**
   * The kernel's printk strings (a trace.dat's printk section, a recording's `printk_formats`): a `%s` of a pointer
   * field (`rcu_utilization`'s `s`) prints the string at that address, as trace-cmd does, or the address in hex.
   */
  readonly printk?: PrintkStrings;
  /** Print nanoseconds (`trace-cmd report -t`) instead of microseconds. Default false. */
  readonly nanoseconds?: boolean;
  /** Print `name=value` fields instead of evaluating `print fmt` (`trace-cmd report -R`). Default false. */
  readonly raw?: boolean;
  /**
   * Apply what libtraceevent's plugins print (kmem call sites, trace-cmd's sched_switch and sched_wakeup, hrtimer,
   * futex), as `trace-cmd report` does; false prints the kernel's formats only (`trace-cmd report -N`). Default true.
   */
  readonly plugins?: boolean;
}

/** Writes an event's line, without the final newline, after what `out` holds. */
export type FtraceLineWriter = (event: TraceEvent, out: ByteOut) => void;

const NS = 1_000_000_000n;
const SAFE_NS = BigInt(Number.MAX_SAFE_INTEGER - 1000);

/** The `[CPU]` column, zero-padded to three digits. */
const cpuColumn = (cpu: number | null): string =>
  cpu === null ? '???' : cpu >= 0 && cpu < 4096 ? String(cpu).padStart(3, '0') : String(cpu);

/**
 * Timestamps as `SECS.FRAC` text (microseconds rounded to nearest, as trace-cmd prints them, or nanoseconds), as C's
 * truncating division gives them before the clock's origin. The general form, in bigints.
 */
function timeText(tsNs: bigint, nanoseconds: boolean): string {
  const t = nanoseconds ? tsNs : tsNs + 500n;
  const ts = nanoseconds || t >= 0n ? t : (t / 1000n) * 1000n;
  const frac = nanoseconds ? String(ts % NS).padStart(9, '0') : String((ts % NS) / 1000n).padStart(6, '0');
  return `${String(ts / NS).padStart(5)}.${frac}`;
}

/**
 * Writes timestamps as {@link timeText} gives them: for the times a number holds exactly (every clock short of
 * months of uptime), in number arithmetic with the seconds' text kept while times stay in the same second.
 */
function timeWriter(nanoseconds: boolean): (out: ByteOut, tsNs: bigint) => void {
  let second = -1;
  let secs: Uint8Array = new Uint8Array(0);
  // The time's halves, read through a typed array: cheaper than converting the bigint to a number.
  const halves = new IntKey();
  return (out, tsNs) => {
    if (tsNs < 0n || tsNs > SAFE_NS || !halves.of(tsNs)) {
      out.text(timeText(tsNs, nanoseconds));
      return;
    }
    const ns = halves.high * 4294967296 + halves.low;
    const t = nanoseconds ? ns : ns + 500;
    let s = Math.floor(t / 1e9);
    let within = t - s * 1e9;
    // The quotient rounded: one step corrects it.
    if (within < 0) {
      s--;
      within += 1e9;
    } else if (within >= 1e9) {
      s++;
      within -= 1e9;
    }
    if (s !== second) {
      second = s;
      secs = utf8(`${String(s).padStart(5)}.`);
    }
    out.raw(secs);
    if (nanoseconds) out.nine(within);
    else out.padded(Math.floor(within / 1000), 6);
  };
}

/** A line writer (without the final newline; a lost-events line comes first, with its own). */
export function createFtraceLineWriter(options: FtraceTextOptions = {}): FtraceLineWriter {
  // Saved cmdlines, then the names the sched plugins learn as they print (trace-cmd's table of task names).
  let learnt: Map<number, string> | undefined;
  /** How many names were learnt: a task column made before the last one may name its task by an older name. */
  let learnings = 0;
  const tasks: TaskNames = {
    get: (pid) => learnt?.get(pid) ?? options.cmdlines?.get(pid),
    learn: (pid, comm) => {
      learnt ??= new Map();
      learnt.set(pid, comm);
      learnings++;
    },
  };
  const bodyOf = classBodyWriters({ ...options, tasks });
  const time = timeWriter(options.nanoseconds === true);
  /** Per class: the event's name column (`name:` padded, between spaces) and the writer of its body. */
  const classes = new Map<EventClass, { readonly column: Uint8Array; readonly body: BodyWriter }>();
  /** The ` [CPU] ` column per CPU. */
  const cpus = new Map<number | null, Uint8Array>();
  const unknownTask = utf8(`${'<...>'.padStart(16)}-${'?'.padEnd(5)}`);
  // The `comm-pid` column per pid, kept while the task's name stays what it was.
  const whoColumns = new Map<number, { readonly comm: string; readonly bytes: Uint8Array }>();
  // The last task's column, while no name was learnt since: a task's events come in runs.
  let lastPid: number | undefined;
  let lastLearnings = -1;
  let lastColumn = unknownTask;
  const who = (pid: FieldValue | undefined): Uint8Array => {
    if (typeof pid !== 'number') return unknownTask;
    if (pid === lastPid && learnings === lastLearnings) return lastColumn;
    const comm = pid === 0 ? '<idle>' : (tasks.get(pid) ?? '<...>');
    const known = whoColumns.get(pid);
    let bytes: Uint8Array;
    if (known !== undefined && known.comm === comm) bytes = known.bytes;
    else {
      bytes = utf8(`${comm.padStart(16)}-${String(pid).padEnd(5)}`);
      if (whoColumns.size < 1 << 16) whoColumns.set(pid, { comm, bytes });
    }
    lastPid = pid;
    lastLearnings = learnings;
    lastColumn = bytes;
    return bytes;
  };
  return (event, out) => {
    // The kernel lost events before this one's page: trace-cmd says so on a line of its own, before the event.
    const lost = event.scopes?.lost;
    if (lost !== undefined)
      out.text(`CPU:${event.cpu} [${typeof lost.events === 'number' ? `${lost.events} ` : ''}EVENTS DROPPED]\n`);
    const cls = event.eventClass;
    let printer = classes.get(cls);
    if (printer === undefined) {
      printer = { column: utf8(`: ${`${cls.ftrace?.event ?? cls.name}:`.padEnd(21)} `), body: bodyOf(cls) };
      classes.set(cls, printer);
    }
    let cpu = cpus.get(event.cpu);
    if (cpu === undefined) {
      cpu = utf8(` [${cpuColumn(event.cpu)}] `);
      if (cpus.size < 4096) cpus.set(event.cpu, cpu);
    }
    // Before the body: a sched plugin may learn this task's name while printing, for later lines.
    out.raw(who(event.scopes?.['event.context']?.common_pid));
    out.raw(cpu);
    time(out, event.tsNs);
    out.raw(printer.column);
    printer.body(event, out);
  };
}

/** A line formatter (without the final newline; a lost-events line comes first, with its own). */
export function createFtraceTextFormatter(options: FtraceTextOptions = {}): (event: TraceEvent) => string {
  return textOf(createFtraceLineWriter(options));
}

/** The text a writer writes, one call at a time. */
function textOf(write: (event: TraceEvent, out: ByteOut) => void): (event: TraceEvent) => string {
  const out = new ByteOut(512);
  return (event) => {
    out.length = 0;
    write(event, out);
    return out.toString();
  };
}

/**
 * A time stamp as `trace-cmd report` prints it: `SECS.USECS`, microseconds rounded to nearest, or `SECS.NSECS`
 * with `nanoseconds` (the text formatter's own rule, for a viewer that prints times one at a time).
 */
export function ftraceTimestamp(tsNs: bigint, nanoseconds = false): string {
  return timeText(tsNs, nanoseconds).trimStart();
}

/** Options of {@link createFtraceBodyFormatter}. */
export interface FtraceBodyOptions extends Pick<FtraceTextOptions, 'kallsyms' | 'printk' | 'raw' | 'plugins'> {
  /** Task names for the plugins that print them (sched_switch...), which also learn names as they print. */
  readonly tasks?: TaskNames;
}

/**
 * The body of an event's line as {@link createFtraceTextFormatter} prints it after `EVENT:` (its `print fmt`
 * evaluated, a plugin's text, or its fields): for viewers that lay out the task, CPU and time themselves.
 */
export function createFtraceBodyFormatter(options: FtraceBodyOptions = {}): (event: TraceEvent) => string {
  return textOf(createFtraceBodyWriter(options));
}

/** Writes an event's body after what `out` holds. */
type BodyWriter = (event: TraceEvent, out: ByteOut) => void;

/** Writes the body {@link createFtraceBodyFormatter} gives, after what `out` holds. */
export function createFtraceBodyWriter(options: FtraceBodyOptions = {}): BodyWriter {
  const bodyOf = classBodyWriters(options);
  const writers = new Map<EventClass, BodyWriter>();
  return (event, out) => {
    const cls = event.eventClass;
    let write = writers.get(cls);
    if (write === undefined) {
      write = bodyOf(cls);
      writers.set(cls, write);
    }
    write(event, out);
  };
}

/**
 * The body writer of each event class, compiled when asked for: its print format's writer and its plugin, if any,
 * else its fields.
 */
function classBodyWriters(options: FtraceBodyOptions): (eventClass: EventClass) => BodyWriter {
  const usePlugins = options.plugins !== false && !options.raw;
  const tasks: TaskNames = options.tasks ?? { get: () => undefined, learn: () => {} };
  const { printk } = options;
  let symbols: Kallsyms | undefined;
  let symbolsLoaded = false;
  const kallsyms = () => {
    if (!symbolsLoaded) {
      symbols = options.kallsyms?.();
      symbolsLoaded = true;
    }
    return symbols;
  };
  const fields: BodyWriter = (event, out) => out.text(fieldsText(event, kallsyms()));
  return (cls) => {
    if (options.raw) return fields;
    const format = compilePrintWriter(cls);
    const plugin = usePlugins ? compileEventPlugin(cls) : undefined;
    if (plugin === undefined) {
      if (format === undefined) return fields;
      return (event, out) => {
        if (!format(event, out, kallsyms(), printk)) fields(event, out);
      };
    }
    if (plugin.prefix)
      return (event, out) => {
        const syms = kallsyms();
        plugin.write(event, out, syms, tasks);
        if (format === undefined || !format(event, out, syms, printk)) fields(event, out);
      };
    return (event, out) => {
      const syms = kallsyms();
      if (plugin.write(event, out, syms, tasks)) return;
      if (format === undefined || !format(event, out, syms, printk)) fields(event, out);
    };
  };
}

/** `name=value` for every payload field, integers in their class's base, addresses as symbols when known. */
export function fieldsText(event: TraceEvent, kallsyms?: Kallsyms): string {
  const types = new Map(event.eventClass.payload.members.map((m) => [m.name, m.type]));
  return Object.entries(event.fields)
    .map(([k, v]) => `${k}=${fieldValueText(v, types.get(k), kallsyms)}`)
    .join(' ');
}

/** One field's value as {@link fieldsText} prints it: integers in their class's base, addresses as symbols when known. */
export function fieldValueText(v: FieldValue, type: FieldClass | undefined, kallsyms?: Kallsyms): string {
  if (typeof v === 'bigint' || typeof v === 'number') {
    if (type?.kind === 'int' && type.base === 16) {
      const a = BigInt.asUintN(type.size, BigInt(v));
      return kallsyms?.format(a) ?? `0x${a.toString(16)}`;
    }
    return String(v);
  }
  if (typeof v === 'string') return v;
  if (v === null) return 'null';
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) {
    const element =
      type?.kind === 'array' || type?.kind === 'sequence' || type?.kind === 'dynamic' ? type.element : undefined;
    return `[${v.map((x) => fieldValueText(x, element, kallsyms)).join(',')}]`;
  }
  return `{${Object.entries(v)
    .map(([k, x]) => `${k}=${fieldValueText(x as FieldValue, undefined, kallsyms)}`)
    .join(' ')}}`;
}
