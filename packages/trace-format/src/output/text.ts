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

/** A line formatter (without the final newline; a lost-events line comes first, with its own). */
export function createFtraceTextFormatter(options: FtraceTextOptions = {}): (event: TraceEvent) => string {
  const printers = new Map<EventClass, ClassPrinter>();
  const usePlugins = options.plugins !== false && !options.raw;
  // Saved cmdlines, then the names the sched plugins learn as they print (trace-cmd's table of task names).
  let learnt: Map<number, string> | undefined;
  const tasks: TaskNames = {
    get: (pid) => learnt?.get(pid) ?? options.cmdlines?.get(pid),
    learn: (pid, comm) => {
      learnt ??= new Map();
      learnt.set(pid, comm);
    },
  };
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
    const pid = event.scopes?.['event.context']?.common_pid;
    const comm = typeof pid !== 'number' ? '<...>' : pid === 0 ? '<idle>' : (tasks.get(pid) ?? '<...>');
    const cpu = event.cpu === null ? '???' : String(event.cpu).padStart(3, '0');
    // Microseconds are rounded to nearest, as trace-cmd does.
    const ts = options.nanoseconds ? event.tsNs : ((event.tsNs + 500n) / 1000n) * 1000n;
    const frac = options.nanoseconds ? String(ts % NS).padStart(9, '0') : String((ts % NS) / 1000n).padStart(6, '0');
    const cls = event.eventClass;
    const name = cls.ftrace?.event ?? cls.name;
    let body: string | undefined;
    if (!options.raw) {
      let printer = printers.get(cls);
      if (printer === undefined) {
        printer = { format: compilePrintFormat(cls), plugin: usePlugins ? compileEventPlugin(cls) : undefined };
        printers.set(cls, printer);
      }
      const plugin = printer.plugin;
      const { printk } = options;
      if (plugin === undefined) body = printer.format?.(event, kallsyms(), 'trace-cmd', printk);
      else if (plugin.prefix) {
        const before = plugin.print(event, kallsyms(), tasks) ?? '';
        const after = printer.format?.(event, kallsyms(), 'trace-cmd', printk) ?? fieldsText(event, kallsyms());
        body = before + after;
      } else body = plugin.print(event, kallsyms(), tasks) ?? printer.format?.(event, kallsyms(), 'trace-cmd', printk);
    }
    body ??= fieldsText(event, kallsyms());
    const who = `${comm.padStart(16)}-${String(typeof pid === 'number' ? pid : '?').padEnd(5)}`;
    // The kernel lost events before this one's page: trace-cmd says so on a line of its own, before the event.
    const lost = event.scopes?.lost;
    const dropped =
      lost === undefined
        ? ''
        : `CPU:${event.cpu} [${typeof lost.events === 'number' ? `${lost.events} ` : ''}EVENTS DROPPED]\n`;
    return `${dropped}${who} [${cpu}] ${String(ts / NS).padStart(5)}.${frac}: ${`${name}:`.padEnd(21)} ${body}`;
  };
}

/** `name=value` for every payload field, integers in their class's base, addresses as symbols when known. */
export function fieldsText(event: TraceEvent, kallsyms?: Kallsyms): string {
  const types = new Map(event.eventClass.payload.members.map((m) => [m.name, m.type]));
  return Object.entries(event.fields)
    .map(([k, v]) => `${k}=${valueText(v, types.get(k), kallsyms)}`)
    .join(' ');
}

function valueText(v: FieldValue, type: FieldClass | undefined, kallsyms: Kallsyms | undefined): string {
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
    return `[${v.map((x) => valueText(x, element, kallsyms)).join(',')}]`;
  }
  return `{${Object.entries(v)
    .map(([k, x]) => `${k}=${valueText(x as FieldValue, undefined, kallsyms)}`)
    .join(' ')}}`;
}
