/**
 * Text of the viewer's cells: pure functions, each cut to a width. Event values are printed by @evtrace/trace-format's
 * ftrace formatter, the one `evtrace cat` uses, so the viewer and cat show the same text for the same event.
 */
import {
  createFtraceBodyFormatter,
  type EventClass,
  type FieldClass,
  type FieldValue,
  fieldValueText,
  ftraceTimestamp,
  type Kallsyms,
  type TraceEvent,
} from '@evtrace/trace-format';

/** `seconds.microseconds` rounded to nearest, as `evtrace cat` and trace-cmd report print time stamps. */
export function timeText(tsNs: bigint): string {
  return ftraceTimestamp(tsNs);
}

/** `comm-pid`, or the pid alone when the name is unknown, `-` without one. */
export function taskText(pid: number, name: string | undefined): string {
  if (pid < 0) return '-';
  if (pid === 0) return '<idle>-0';
  return name === undefined ? String(pid) : `${name}-${pid}`;
}

/** The event's name as cat prints it: ftrace's without its system, else the full name. */
export function eventText(e: Pick<TraceEvent, 'eventClass'>): string {
  return e.eventClass.ftrace?.event ?? e.eventClass.name;
}

/** `text` cut or padded to exactly `width` columns (a cut ends in `…`). */
export function fit(text: string, width: number): string {
  if (width <= 0) return '';
  if (text.length > width) return width === 1 ? '…' : `${text.slice(0, width - 1)}…`;
  return text.padEnd(width);
}

/** Where the formatters find task names and kernel symbols. */
export interface EventContext {
  taskName(pid: number): string | undefined;
  kallsyms(): Kallsyms | undefined;
}

/** The text after `EVENT:` on cat's line for an event: its print format, a plugin's text, or its fields. */
export function bodyFormatter(context: EventContext): (e: TraceEvent) => string {
  return createFtraceBodyFormatter({
    kallsyms: () => context.kallsyms(),
    tasks: { get: (pid) => context.taskName(pid), learn: () => {} },
  });
}

/**
 * Every field of an event for the detail pane, typed: `name  type  value` per line (the C type where the trace's
 * format states it), the value as cat prints a field (hex for addresses, followed by the symbol when known); payload
 * first, then the other scopes.
 */
export function detailLines(e: TraceEvent, kallsyms: Kallsyms | undefined): string[] {
  const lines = [`event: ${e.eventClass.name}`, `time:  ${timeText(e.tsNs)} (${e.tsNs} ns)`, `cpu:   ${e.cpu ?? '-'}`];
  const hex = addressFields(e.eventClass);
  const types = new Map(
    e.eventClass.payload.members.map((m) => [
      m.name,
      hex.has(m.name) && m.type.kind === 'int' ? { ...m.type, base: 16 as const } : m.type,
    ]),
  );
  const cTypes = new Map(e.eventClass.ftrace?.fields.map((f) => [f.name, f.cType]));
  const row = (name: string, k: string, v: FieldValue) => {
    const [text, type] = [valueText(v, types.get(k), kallsyms), cTypes.get(k) ?? typeText(types.get(k), v)];
    return [name, type, text] as [string, string, string];
  };
  const rows = Object.entries(e.fields).map(([k, v]) => row(k, k, v));
  for (const [scope, fields] of Object.entries(e.scopes ?? {})) {
    rows.push([`${scope}:`, '', '']);
    for (const [k, v] of Object.entries(fields)) rows.push(row(`  ${k}`, k, v as FieldValue));
  }
  const nameWidth = Math.max(0, ...rows.filter((r) => r[1] !== '').map((r) => r[0].length));
  const typeWidth = Math.max(0, ...rows.map((r) => r[1].length));
  for (const [name, type, value] of rows)
    lines.push(type === '' && value === '' ? name : `  ${name.padEnd(nameWidth)}  ${type.padEnd(typeWidth)}  ${value}`);
  return lines;
}

const ADDRESS_FIELDS = new WeakMap<EventClass, ReadonlySet<string>>();

/**
 * The fields of a class that hold addresses, to show in hex: pointers by their C type, and the fields its print
 * format shows with `%p` or `%x` (a `call_site` declared `unsigned long` is printed `%pS`).
 */
export function addressFields(cls: EventClass): ReadonlySet<string> {
  let found = ADDRESS_FIELDS.get(cls);
  if (found !== undefined) return found;
  const set = new Set<string>();
  for (const f of cls.ftrace?.fields ?? []) if (f.cType.includes('*') && !/\bchar\b/.test(f.cType)) set.add(f.name);
  const fmt = cls.printFormat ?? '';
  const quoted = /^\s*"((?:[^"\\]|\\.)*)"/.exec(fmt);
  if (quoted !== null) {
    const conversions = [
      ...quoted[1]!.replaceAll('%%', '').matchAll(/%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[hljzt]*([a-zA-Z])/g),
    ];
    const args = splitArguments(fmt.slice(quoted[0].length));
    let arg = 0;
    for (const c of conversions) {
      // A `*` width or precision takes an argument of its own, before the value's.
      arg += c[0].split('*').length - 1;
      const field = /REC->(\w+)/.exec(args[arg++] ?? '')?.[1];
      if (field !== undefined && /[pxX]/.test(c[1]!)) set.add(field);
    }
  }
  found = set;
  ADDRESS_FIELDS.set(cls, found);
  return found;
}

/** The comma-separated arguments after a print format's string, split at the top level only. */
function splitArguments(rest: string): string[] {
  const args: string[] = [];
  let depth = 0;
  let quote = false;
  let current = '';
  for (let i = 0; i < rest.length; i++) {
    const ch = rest[i]!;
    if (quote) {
      if (ch === '\\') current += rest[i++] ?? '';
      else if (ch === '"') quote = false;
    } else if (ch === '"') quote = true;
    else if (ch === '(' || ch === '{' || ch === '[') depth++;
    else if (ch === ')' || ch === '}' || ch === ']') depth--;
    else if (ch === ',' && depth === 0) {
      args.push(current);
      current = '';
      continue;
    }
    current += ch;
  }
  args.push(current);
  // The text before the first comma is what follows the string: nothing.
  return args.slice(1);
}

/** A field's value as cat prints it, an address followed by its symbol when known (cat prints one or the other). */
function valueText(v: FieldValue, type: FieldClass | undefined, kallsyms: Kallsyms | undefined): string {
  const text = fieldValueText(v, type);
  if (type?.kind !== 'int' || type.base !== 16 || (typeof v !== 'bigint' && typeof v !== 'number')) return text;
  const symbol = kallsyms?.format(BigInt.asUintN(type.size, BigInt(v)));
  return symbol === undefined ? text : `${text} ${symbol}`;
}

/** A field's type in C's words where the trace says it (`u64 hex`, `char[16]`), else the value's JavaScript kind. */
export function typeText(type: FieldClass | undefined, v?: FieldValue): string {
  if (type === undefined)
    return v === null || v === undefined
      ? ''
      : Array.isArray(v)
        ? 'array'
        : typeof v === 'bigint'
          ? 'integer'
          : typeof v;
  switch (type.kind) {
    case 'int':
      return `${type.signed ? 's' : 'u'}${type.size}${type.base === 16 ? ' hex' : ''}`;
    case 'float':
      return type.mantDig > 24 ? 'double' : 'float';
    case 'enum':
      return `enum ${typeText(type.container)}`;
    case 'string':
      return 'string';
    case 'array':
      return type.element.kind === 'int' && type.element.size === 8 && type.element.encoding !== 'none'
        ? `char[${type.length}]`
        : `${typeText(type.element)}[${type.length}]`;
    case 'sequence':
      return `${typeText(type.element)}[]`;
    case 'dynamic':
      return type.isString ? 'string' : `${typeText(type.element)}[]`;
    default:
      return type.kind;
  }
}

/** `1234567` → `1.23M`, `12345` → `12.3k`. */
export function countText(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)}G`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
  return String(Math.round(n));
}

const BARS = '▁▂▃▄▅▆▇█';

/**
 * A sparkline of the last `width` values, scaled to their maximum or to `scale` (a fill's 1) when given (ASCII
 * digits 0-7 when `ascii`).
 */
export function sparkline(values: readonly number[], width: number, ascii = false, scale?: number): string {
  const shown = values.slice(-width);
  const max = scale ?? Math.max(0, ...shown);
  const marks = ascii ? '01234567' : BARS;
  const line = shown.map((v) => (max === 0 ? marks[0] : marks[Math.min(7, Math.floor((v / max) * 7.999))])).join('');
  return line.padStart(width, ' ');
}

/** `1536` → `1.5 KiB`: bytes in binary units. */
export function bytesText(n: number): string {
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(2)} GiB`;
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(2)} MiB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(1)} KiB`;
  return `${n} B`;
}

/** A gauge `[#####-----]` of `fraction` in `width` columns, brackets included. */
export function gauge(fraction: number, width: number): string {
  const inner = Math.max(0, width - 2);
  const full = Math.round(Math.min(1, Math.max(0, fraction)) * inner);
  return `[${'#'.repeat(full)}${'-'.repeat(inner - full)}]`;
}
