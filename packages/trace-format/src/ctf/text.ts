import type {
  EnumClass,
  EventClass,
  FieldClass,
  FieldValue,
  IntegerClass,
  StreamClass,
  StructClass,
  StructMember,
  TraceClass,
  TraceEvent,
} from '../model/types.ts';
import { CtfEvent } from './event.ts';
import { isPacketContextSpecial } from './stream-class.ts';

/** Options of {@link createBabeltraceTextFormatter}. */
export interface BabeltraceTextOptions {
  /** The trace the events come from: its `env` names the host and process, its stream classes type the scopes. */
  readonly trace?: TraceClass;
  /** Print `[time] (+delta)`; false for traces without timestamps. Default true. */
  readonly timestamps?: boolean;
  /** Time of day in the local time zone, as plain `babeltrace2` prints it; default UTC (`babeltrace2 --clock-gmt`). */
  readonly localTime?: boolean;
}

const NS_PER_S = 1_000_000_000n;
const NS_PER_DAY = 86_400n * NS_PER_S;

/** Escapes a string the way babeltrace2's text sink does (C escapes; other control bytes as `\xNN`). */
export function escapeString(s: string): string {
  let out = '"';
  for (const ch of s) {
    switch (ch) {
      case '\\':
        out += '\\\\';
        continue;
      case "'":
        out += "\\'";
        continue;
      case '"':
        out += '\\"';
        continue;
      case '?':
        out += '\\?';
        continue;
    }
    const c = ch.codePointAt(0)!;
    if (c >= 0x20 && c !== 0x7f) {
      out += ch;
      continue;
    }
    switch (c) {
      case 0x07:
        out += '\\a';
        break;
      case 0x08:
        out += '\\b';
        break;
      case 0x1b:
        out += '\\e';
        break;
      case 0x0c:
        out += '\\f';
        break;
      case 0x0a:
        out += '\\n';
        break;
      case 0x0d:
        out += '\\r';
        break;
      case 0x09:
        out += '\\t';
        break;
      case 0x0b:
        out += '\\v';
        break;
      default:
        out += `\\x${c.toString(16).padStart(2, '0')}`;
    }
  }
  return `${out}"`;
}

function formatInteger(value: number | bigint, type: IntegerClass): string {
  switch (type.base) {
    case 10:
      return String(value);
    case 16:
    case 8:
    case 2: {
      let v = BigInt(value);
      // Negative values show their two's complement, widened to whole hex or octal digits as babeltrace2 does.
      if (v < 0n) {
        const digit = type.base === 16 ? 4 : type.base === 8 ? 3 : 1;
        v = BigInt.asUintN(Math.min(64, Math.ceil(type.size / digit) * digit), v);
      }
      if (type.base === 16) return `0x${v.toString(16).toUpperCase()}`;
      if (type.base === 8) return `0${v.toString(8)}`;
      return `0b${v.toString(2).padStart(type.size, '0')}`;
    }
  }
}

/** `%g` of C's printf: 6 significant digits, exponent form outside 1e-4..1e6, trailing zeros dropped. */
export function formatG(x: number): string {
  if (Number.isNaN(x)) return x < 0 ? '-nan' : 'nan';
  if (!Number.isFinite(x)) return x < 0 ? '-inf' : 'inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const exp = Math.floor(Math.log10(Math.abs(Number(x.toPrecision(6)))));
  if (exp < -4 || exp >= 6) {
    const [mant, e] = x.toExponential(5).split('e');
    const m = mant!.includes('.') ? mant!.replace(/\.?0+$/, '') : mant!;
    const n = Number(e);
    return `${m}e${n < 0 ? '-' : '+'}${String(Math.abs(n)).padStart(2, '0')}`;
  }
  const fixed = x.toFixed(Math.max(0, 5 - exp));
  return fixed.includes('.') ? fixed.replace(/\.?0+$/, '') : fixed;
}

function enumLabels(type: EnumClass, value: number | bigint): string[] {
  const labels: string[] = [];
  for (const m of type.mappings) {
    if (m.ranges.some(([low, high]) => value >= low && value <= high)) labels.push(m.label);
  }
  return labels;
}

function isText(element: FieldClass): boolean {
  return element.kind === 'int' && element.size === 8 && element.encoding !== 'none';
}

/** Formats one field value of the given class in babeltrace2's text style. */
export function formatValue(value: FieldValue, type: FieldClass): string {
  switch (type.kind) {
    case 'int':
      return formatInteger(value as number | bigint, type);
    case 'enum': {
      const v = value as number | bigint;
      const labels = enumLabels(type, v);
      const shown = labels.length === 0 ? '<unknown>' : labels.map((l) => `"${l}"`).join(', ');
      return `( ${shown} : container = ${formatInteger(v, type.container)} )`;
    }
    case 'float':
      return formatG(value as number);
    case 'string':
      return escapeString(value as string);
    case 'array':
    case 'sequence':
    case 'dynamic': {
      if (typeof value === 'string') return escapeString(value);
      const items = value as readonly FieldValue[];
      if (type.kind !== 'dynamic' && isText(type.element)) return escapeString(String(value));
      const element = type.element;
      if (items.length === 0) return '[ ]';
      return `[ ${items.map((v, i) => `[${i}] = ${formatValue(v, element)}`).join(', ')} ]`;
    }
    case 'struct':
      return formatStruct(value as { readonly [k: string]: FieldValue }, type, undefined);
    case 'variant': {
      const o = value as { readonly [k: string]: FieldValue };
      const name = Object.keys(o)[0]!;
      const option = type.options.find((opt) => opt.name === name);
      return `{ ${option ? formatValue(o[name]!, option.type) : '<unknown>'} }`;
    }
  }
}

function formatStruct(
  value: { readonly [k: string]: FieldValue },
  type: StructClass,
  skip: ((member: StructMember) => boolean) | undefined,
): string {
  const parts: string[] = [];
  for (const m of type.members) {
    if (skip?.(m)) continue;
    const v = Object.hasOwn(value, m.name) ? value[m.name] : undefined;
    if (v === undefined) continue;
    parts.push(`${m.name} = ${formatValue(v, m.type)}`);
  }
  return parts.length === 0 ? '{ }' : `{ ${parts.join(', ')} }`;
}

/** The text of a stream's packet context (the members babeltrace2 shows), or undefined when it shows none. */
export function packetContextText(
  stream: StreamClass | undefined,
): ((value: { readonly [k: string]: FieldValue }) => string) | undefined {
  const packet = stream?.packetContext;
  return packet?.members.some((m) => !isPacketContextSpecial(m))
    ? compileStruct(packet, isPacketContextSpecial)
    : undefined;
}

/** A struct's members as `{ name = value, ... }`, compiled once per struct class (members left out by `skip`). */
function compileStruct(
  type: StructClass,
  skip: ((member: StructMember) => boolean) | undefined,
): (value: { readonly [k: string]: FieldValue }) => string {
  const members = type.members
    .filter((m) => !skip?.(m))
    .map((m) => {
      const t = m.type;
      const text: (v: FieldValue) => string = t.kind === 'int' && t.base === 10 ? String : (v) => formatValue(v, t);
      return { name: m.name, label: `${m.name} = `, text };
    });
  return (value) => {
    let out = '';
    for (const m of members) {
      const v = Object.hasOwn(value, m.name) ? value[m.name] : undefined;
      if (v === undefined) continue;
      out += out === '' ? `{ ${m.label}${m.text(v)}` : `, ${m.label}${m.text(v)}`;
    }
    return out === '' ? '{ }' : `${out} }`;
  };
}

/** What babeltrace2 prints before an event's name: `host:proc:(vpid) ` from the trace's env, or nothing. */
export function tracePrefix(trace: TraceClass | undefined): string {
  const env = trace?.env;
  let prefix = '';
  const hostname = env?.get('hostname');
  const procname = env?.get('procname');
  const vpid = env?.get('vpid');
  if (typeof hostname === 'string') prefix = hostname;
  if (typeof procname === 'string') prefix += prefix ? `:${procname}` : procname;
  if (typeof vpid === 'number' || typeof vpid === 'bigint') prefix += `${prefix ? ':' : ''}(${vpid})`;
  return prefix ? `${prefix} ` : '';
}

/** `hh:mm:ss.nnnnnnnnn`: the time of day of a time in nanoseconds, in UTC or the local zone. */
export function clockTime(ns: bigint, localTime: boolean): string {
  if (localTime) {
    // The zone's offset at that instant (whole minutes in practice), applied before taking the time of day.
    const ms = Number(ns / 1_000_000n);
    ns += BigInt(-new Date(ms).getTimezoneOffset()) * 60n * NS_PER_S;
  }
  let day = ns % NS_PER_DAY;
  if (day < 0n) day += NS_PER_DAY;
  const s = day / NS_PER_S;
  const frac = day % NS_PER_S;
  const hh = String(s / 3600n).padStart(2, '0');
  const mm = String((s / 60n) % 60n).padStart(2, '0');
  const ss = String(s % 60n).padStart(2, '0');
  return `${hh}:${mm}:${ss}.${String(frac).padStart(9, '0')}`;
}

/**
 * Returns a function that formats events as one line each, like `babeltrace2 TRACE` (its `sink.text.pretty` with
 * default options; times in UTC unless `localTime`): `[time] (+delta) host name: { packet context }, { stream event context },
 * { event context }, { payload }`. The formatter remembers the previous event's time for the delta.
 */
export function createBabeltraceTextFormatter(options: BabeltraceTextOptions = {}): (event: TraceEvent) => string {
  const timestamps = options.timestamps ?? true;
  const localTime = options.localTime ?? false;
  const prefix = tracePrefix(options.trace);
  // Per event class: its `name: ` and the scopes it prints, compiled on its first event.
  const classes = new Map<EventClass, ClassText>();
  const classText = (cls: EventClass): ClassText => {
    const stream = options.trace?.streams.get(cls.streamId);
    const text: ClassText = {
      name: `${prefix}${cls.name}: `,
      packetContext: packetContextText(stream),
      streamContext: stream?.eventContext && compileStruct(stream.eventContext, undefined),
      eventContext: cls.context && compileStruct(cls.context, undefined),
      payload: cls.payload.members.length > 0 ? compileStruct(cls.payload, undefined) : undefined,
    };
    classes.set(cls, text);
    return text;
  };
  // The time of day of the second the last event fell in: within it, only the nanoseconds change, counted as a
  // number from one event's step to the next.
  let second = -1n;
  let secondText = '';
  let within = 0;
  let previous: TraceEvent | undefined;
  // Steps repeat (periodic events): the last one's text is kept.
  let lastStep = -1;
  let lastStepText = '';
  return (event) => {
    let line = '';
    if (timestamps) {
      let delta = '+?.?????????';
      let step = -1;
      if (previous !== undefined) {
        // Events of one clock counted in numbers differ by a number; others by their bigint times.
        let d = event instanceof CtfEvent ? event.nsSince(previous) : undefined;
        let big = 0n;
        if (d === undefined || !(Math.abs(d) < 9e15)) {
          big = event.tsNs - previous.tsNs;
          d = big > -9_000_000_000_000_000n && big < 9_000_000_000_000_000n ? Number(big) : undefined;
        }
        if (d !== undefined) {
          const n = Math.abs(d);
          if (d >= 0) step = n;
          if (n === lastStep && d >= 0) delta = lastStepText;
          else {
            const frac = n % 1e9;
            delta = `${d < 0 ? '-' : '+'}${(n - frac) / 1e9}.${String(frac).padStart(9, '0')}`;
            if (d >= 0) {
              lastStep = n;
              lastStepText = delta;
            }
          }
        } else {
          const abs = big < 0n ? -big : big;
          delta = `${big < 0n ? '-' : '+'}${abs / NS_PER_S}.${String(abs % NS_PER_S).padStart(9, '0')}`;
        }
      }
      previous = event;
      // Within the last event's second only the nanoseconds change: no bigint is needed.
      const at = step >= 0 && second >= 0n ? within + step : -1;
      if (at >= 0 && at < 1e9) {
        within = at;
        line = `[${secondText}${String(at).padStart(9, '0')}] (${delta}) `;
      } else {
        const ts = event.tsNs;
        const w = ts - second;
        if (second >= 0n && w >= 0n && w < NS_PER_S) {
          within = Number(w);
          line = `[${secondText}${String(within).padStart(9, '0')}] (${delta}) `;
        } else {
          const text = clockTime(ts, localTime);
          // Whole seconds only from the epoch on; earlier times are formatted one by one.
          if (ts >= 0n) {
            second = ts - (ts % NS_PER_S);
            secondText = text.slice(0, -9);
            within = Number(ts - second);
          } else second = -1n;
          line = `[${text}] (${delta}) `;
        }
      }
    }
    const cls = event.eventClass;
    const text = classes.get(cls) ?? classText(cls);
    line += text.name;
    // The scopes present, separated by `, `.
    let sep = '';
    const scopes = event.scopes;
    const packetContext = scopes?.['stream.packet.context'];
    if (packetContext && text.packetContext) {
      line += text.packetContext(packetContext);
      sep = ', ';
    }
    const streamContext = scopes?.['stream.event.context'];
    if (streamContext && text.streamContext) {
      line += sep + text.streamContext(streamContext);
      sep = ', ';
    }
    const eventContext = scopes?.['event.context'];
    if (eventContext && text.eventContext) {
      line += sep + text.eventContext(eventContext);
      sep = ', ';
    }
    if (text.payload) line += sep + text.payload(event.fields);
    return line;
  };
}

/** What one event class prints besides its fields' values. */
interface ClassText {
  /** `host:proc:(vpid) name: `. */
  readonly name: string;
  readonly packetContext: ((value: { readonly [k: string]: FieldValue }) => string) | undefined;
  readonly streamContext: ((value: { readonly [k: string]: FieldValue }) => string) | undefined;
  readonly eventContext: ((value: { readonly [k: string]: FieldValue }) => string) | undefined;
  readonly payload: ((value: { readonly [k: string]: FieldValue }) => string) | undefined;
}
