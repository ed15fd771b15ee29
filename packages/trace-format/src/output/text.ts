/**
 * Text in the style of `trace-cmd report` for ftrace events: `COMM-PID [CPU] SECS.USECS: EVENT: BODY`, where BODY is
 * the event's `print fmt` evaluated (symbols through kallsyms) or what libtraceevent's plugins print for it, or its
 * fields as `name=value` when the format is beyond the evaluator or the event did not come from ftrace. An event the
 * kernel lost others before (`scopes.lost`) is preceded by trace-cmd's `CPU:N [N EVENTS DROPPED]` line.
 */

import { compileEventPlugin, type EventPlugin, type TaskNames } from '../ftrace/plugins.ts';
import { compilePrintFormat, type PrintFormatter, type PrintkStrings } from '../ftrace/print-fmt.ts';
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

/** What one event class prints: compiled on its first event. */
interface ClassPrinter {
  readonly format: PrintFormatter | undefined;
  readonly plugin: EventPlugin | undefined;
}

const NS = 1_000_000_000n;

/** The `[CPU]` column, zero-padded to three digits, kept per CPU number. */
const cpuColumns: string[] = [];
const cpuColumn = (cpu: number | null): string =>
  cpu === null ? '???' : cpu >= 0 && cpu < 4096 ? (cpuColumns[cpu] ??= String(cpu).padStart(3, '0')) : String(cpu);

/**
 * Timestamps as `SECS.FRAC` text. Times of a trace climb slowly, so the seconds are divided out (a BigInt division)
 * only when an event leaves the second the last one fell in; within it the fraction is plain number arithmetic.
 */
function timeText(nanoseconds: boolean): (tsNs: bigint) => string {
  let base = -1n;
  let secs = '';
  // The last time, and how far into its second (rounding included) it lay: the next time within that second is a
  // step from it in numbers, one bigint subtraction per event.
  let last = 0n;
  let lastWithin = -1;
  let lastText = '';
  const text = (within: number) =>
    nanoseconds
      ? `${secs}.${String(within).padStart(9, '0')}`
      : `${secs}.${String(Math.floor(within / 1000)).padStart(6, '0')}`;
  return (tsNs) => {
    if (lastWithin >= 0) {
      const step = Number(tsNs - last);
      const within = lastWithin + step;
      if (step >= 0 && within < 1e9) {
        last = tsNs;
        if (step === 0) return lastText;
        lastWithin = within;
        lastText = text(within);
        return lastText;
      }
    }
    // Microseconds are rounded to nearest, as trace-cmd does.
    const t = nanoseconds ? tsNs : tsNs + 500n;
    if (t < 0n) {
      lastWithin = -1;
      // Before the clock's origin: C's truncating division, as trace-cmd's.
      const ts = nanoseconds ? t : (t / 1000n) * 1000n;
      const frac = nanoseconds ? String(ts % NS).padStart(9, '0') : String((ts % NS) / 1000n).padStart(6, '0');
      return `${String(ts / NS).padStart(5)}.${frac}`;
    }
    let within = base < 0n ? -1 : Number(t - base);
    if (within < 0 || within >= 1e9) {
      const s = t / NS;
      base = s * NS;
      secs = String(s).padStart(5);
      within = Number(t - base);
    }
    last = tsNs;
    lastWithin = within;
    lastText = text(within);
    return lastText;
  };
}

/** A line formatter (without the final newline; a lost-events line comes first, with its own). */
export function createFtraceTextFormatter(options: FtraceTextOptions = {}): (event: TraceEvent) => string {
  // Saved cmdlines, then the names the sched plugins learn as they print (trace-cmd's table of task names).
  let learnt: Map<number, string> | undefined;
  const tasks: TaskNames = {
    get: (pid) => learnt?.get(pid) ?? options.cmdlines?.get(pid),
    learn: (pid, comm) => {
      learnt ??= new Map();
      learnt.set(pid, comm);
    },
  };
  const bodyOf = createFtraceBodyFormatter({ ...options, tasks });
  const time = timeText(options.nanoseconds === true);
  /** The event's name column (`name:` padded), the same for every event of a class. */
  const columns = new Map<EventClass, string>();
  // The `comm-pid` column per pid, kept while the task's name stays what it was.
  const whoColumns = new Map<number, { readonly comm: string; readonly text: string }>();
  const who = (pid: FieldValue | undefined): string => {
    if (typeof pid !== 'number') return `${'<...>'.padStart(16)}-${'?'.padEnd(5)}`;
    const comm = pid === 0 ? '<idle>' : (tasks.get(pid) ?? '<...>');
    const known = whoColumns.get(pid);
    if (known !== undefined && known.comm === comm) return known.text;
    const text = `${comm.padStart(16)}-${String(pid).padEnd(5)}`;
    if (whoColumns.size < 1 << 16) whoColumns.set(pid, { comm, text });
    return text;
  };
  return (event) => {
    const cls = event.eventClass;
    let column = columns.get(cls);
    if (column === undefined) {
      column = `${cls.ftrace?.event ?? cls.name}:`.padEnd(21);
      columns.set(cls, column);
    }
    // Before the body: a sched plugin may learn this task's name while printing, for later lines.
    const task = who(event.scopes?.['event.context']?.common_pid);
    const line = `${task} [${cpuColumn(event.cpu)}] ${time(event.tsNs)}: ${column} ${bodyOf(event)}`;
    // The kernel lost events before this one's page: trace-cmd says so on a line of its own, before the event.
    const lost = event.scopes?.lost;
    if (lost === undefined) return line;
    return `CPU:${event.cpu} [${typeof lost.events === 'number' ? `${lost.events} ` : ''}EVENTS DROPPED]\n${line}`;
  };
}

/**
 * A time stamp as `trace-cmd report` prints it: `SECS.USECS`, microseconds rounded to nearest, or `SECS.NSECS`
 * with `nanoseconds` (the text formatter's own rule, for a viewer that prints times one at a time).
 */
export function ftraceTimestamp(tsNs: bigint, nanoseconds = false): string {
  return timeText(nanoseconds)(tsNs).trimStart();
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
  const printers = new Map<EventClass, ClassPrinter>();
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
  return (event) => {
    const cls = event.eventClass;
    let printer = printers.get(cls);
    if (printer === undefined) {
      printer = {
        format: options.raw ? undefined : compilePrintFormat(cls),
        plugin: usePlugins ? compileEventPlugin(cls) : undefined,
      };
      printers.set(cls, printer);
    }
    let body: string | undefined;
    if (!options.raw) {
      const plugin = printer.plugin;
      if (plugin === undefined) body = printer.format?.(event, kallsyms(), 'trace-cmd', printk);
      else if (plugin.prefix) {
        const before = plugin.print(event, kallsyms(), tasks) ?? '';
        const after = printer.format?.(event, kallsyms(), 'trace-cmd', printk) ?? fieldsText(event, kallsyms());
        body = before + after;
      } else body = plugin.print(event, kallsyms(), tasks) ?? printer.format?.(event, kallsyms(), 'trace-cmd', printk);
    }
    return body ?? fieldsText(event, kallsyms());
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
