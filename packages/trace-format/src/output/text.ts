/**
 * Text in the style of `trace-cmd report` for ftrace events: `COMM-PID [CPU] SECS.USECS: EVENT: BODY`, where BODY is
 * the event's `print fmt` evaluated (symbols through kallsyms) or what libtraceevent's plugins print for it, or its
 * fields as `name=value` when the format is beyond the evaluator or the event did not come from ftrace. An event the
 * kernel lost others before (`scopes.lost`) is preceded by trace-cmd's `CPU:N [N EVENTS DROPPED]` line.
 */

import { compileEventPlugin, type EventPlugin, type TaskNames } from '../ftrace/plugins.ts';
import { compilePrintFormat, type PrintFormatter } from '../ftrace/print-fmt.ts';
import type { Kallsyms } from '../ftrace/symbols.ts';
import type { EventClass, FieldClass, FieldValue, TraceEvent } from '../model/types.ts';

/** Options of {@link createFtraceTextFormatter}. */
export interface FtraceTextOptions {
  /** pid → command name (saved cmdlines); unknown tasks print as `<...>`, pid 0 as `<idle>`. */
  readonly cmdlines?: ReadonlyMap<number, string>;
  /** Symbols for `%pS`/`%ps`, resolved on first use. */
  readonly kallsyms?: () => Kallsyms | undefined;
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
  return (event) => {
    const pid = event.scopes?.['event.context']?.common_pid;
    const comm = typeof pid !== 'number' ? '<...>' : pid === 0 ? '<idle>' : (tasks.get(pid) ?? '<...>');
    const cpu = event.cpu === null ? '???' : String(event.cpu).padStart(3, '0');
    const [secs, frac] = ftraceTimestamp(event.tsNs, options.nanoseconds).split('.');
    const cls = event.eventClass;
    const name = cls.ftrace?.event ?? cls.name;
    const body = bodyOf(event);
    const who = `${comm.padStart(16)}-${String(typeof pid === 'number' ? pid : '?').padEnd(5)}`;
    // The kernel lost events before this one's page: trace-cmd says so on a line of its own, before the event.
    const lost = event.scopes?.lost;
    const dropped =
      lost === undefined
        ? ''
        : `CPU:${event.cpu} [${typeof lost.events === 'number' ? `${lost.events} ` : ''}EVENTS DROPPED]\n`;
    return `${dropped}${who} [${cpu}] ${secs!.padStart(5)}.${frac}: ${`${name}:`.padEnd(21)} ${body}`;
  };
}

/**
 * A time stamp as `trace-cmd report` prints it: `SECS.USECS`, microseconds rounded to nearest, or `SECS.NSECS`
 * with `nanoseconds`.
 */
export function ftraceTimestamp(tsNs: bigint, nanoseconds = false): string {
  if (nanoseconds) return `${tsNs / NS}.${String(tsNs % NS).padStart(9, '0')}`;
  const us = (tsNs + 500n) / 1000n;
  return `${us / 1_000_000n}.${String(us % 1_000_000n).padStart(6, '0')}`;
}

/** Options of {@link createFtraceBodyFormatter}. */
export interface FtraceBodyOptions extends Pick<FtraceTextOptions, 'kallsyms' | 'raw' | 'plugins'> {
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
    let body: string | undefined;
    if (!options.raw) {
      let printer = printers.get(cls);
      if (printer === undefined) {
        printer = { format: compilePrintFormat(cls), plugin: usePlugins ? compileEventPlugin(cls) : undefined };
        printers.set(cls, printer);
      }
      const plugin = printer.plugin;
      if (plugin === undefined) body = printer.format?.(event, kallsyms());
      else if (plugin.prefix) {
        const before = plugin.print(event, kallsyms(), tasks) ?? '';
        const after = printer.format?.(event, kallsyms()) ?? fieldsText(event, kallsyms());
        body = before + after;
      } else body = plugin.print(event, kallsyms(), tasks) ?? printer.format?.(event, kallsyms());
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
