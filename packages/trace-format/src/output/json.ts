/**
 * JSON lines: one object per event, in the shape `schemas/event.json` publishes. Every field's JSON type follows from
 * its event class, never from its value, so all events of a class agree: 64-bit integers are decimal strings,
 * addresses and integers the format shows in hex (pointer types, `%p`, `%x` in ftrace's `print fmt`, base 16 in CTF)
 * are `"0x..."` strings, narrower integers are numbers. The writer is compiled once per event class.
 */

import { ByteOut, utf8 } from '../codec/byte-out.ts';
import { hexFields } from '../ftrace/hex-fields.ts';
import type { EventClass, FieldClass, FieldValue, StructClass, TraceEvent } from '../model/types.ts';

/** Options of {@link createJsonFormatter}. */
export interface JsonFormatterOptions {
  /**
   * The name task `pid` had when `event` fired (trace-cmd's COMM column); `comm` is null when this is absent or
   * returns undefined, except for CTF events that carry LTTng's `procname` context.
   */
  readonly comm?: (pid: number, event: TraceEvent) => string | undefined;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * A value typed by itself rather than by its class (Perfetto's `args`, which have no contract): integers beyond 2^53
 * become decimal strings.
 */
export function jsonValue(value: FieldValue): unknown {
  if (typeof value === 'bigint') return value > MAX_SAFE || value < -MAX_SAFE ? value.toString() : Number(value);
  if (Array.isArray(value)) return value.map(jsonValue);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = jsonValue(v as FieldValue);
    return out;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return value;
}

/** Writes one value of a field class as JSON bytes (`null` for a value the record lacks). */
export type ValueWriter = (out: ByteOut, value: FieldValue | undefined) => void;

/** Writes one event as a JSON line, newline included, into `out`. */
export type JsonLineWriter = (event: TraceEvent, out: ByteOut) => void;

/** What a class's events share: the `"event"` member and the fields' writer. */
interface ClassWriter {
  /** `,"event":NAME,"pid":`. */
  readonly event: Uint8Array;
  /** The payload's object and the line's end. */
  readonly fields: (out: ByteOut, fields: TraceEvent['fields']) => void;
}

const writers = new WeakMap<EventClass, ClassWriter>();

// The fixed text between values, each run of it one copy.
const NULL = utf8('null');
const TS_NS = utf8('{"ts_ns":"');
const CPU = utf8('","cpu":');
const BUFFER = utf8(',"buffer":');
const NO_TASK = utf8('null,"comm":null,"flags":');
const NO_COMM = utf8(',"comm":null,"flags":');
const NO_FLAGS = utf8('null,"fields":');

/**
 * A writer of events as JSON lines (each with its newline) into an output buffer: `{"ts_ns", "cpu", ["buffer",]
 * "event", "pid", "comm", "flags", "fields"}`. `ts_ns` is a decimal string; `pid` is ftrace's `common_pid` (LTTng's
 * `tid` context in CTF) or null; `flags` decodes ftrace's `common_flags` and `common_preempt_count` as the kernel's
 * latency format does, null where the source records none; `buffer` names the trace.dat instance buffer, absent for
 * the top one.
 */
export function createJsonWriter(options: JsonFormatterOptions = {}): JsonLineWriter {
  const commOf = options.comm;
  let lastClass: EventClass | undefined;
  let last: ClassWriter | undefined;
  // `,"comm":NAME,"flags":` of the last comm written per pid: a task's name is written many times.
  const comms = new Map<number, { readonly comm: string; readonly json: Uint8Array }>();
  return (event, out) => {
    const cls = event.eventClass;
    if (cls !== lastClass) {
      lastClass = cls;
      last = writers.get(cls);
      if (last === undefined) writers.set(cls, (last = compileClass(cls)));
    }
    const w = last!;
    const scopes = event.scopes;
    const common = scopes?.['event.context'];
    const stream = scopes?.['stream.event.context'];
    const buffer = scopes?.buffer?.name;
    let pid = common?.common_pid;
    if (typeof pid !== 'number') pid = stream?.tid ?? stream?.vtid;
    out.raw(TS_NS);
    out.bigint(event.tsNs);
    out.raw(CPU);
    if (event.cpu === null) out.raw(NULL);
    else out.int(event.cpu);
    if (typeof buffer === 'string') {
      out.raw(BUFFER);
      out.jsonString(buffer);
    }
    out.raw(w.event);
    if (typeof pid === 'number') {
      out.int(pid);
      const comm = commOf?.(pid, event) ?? stream?.procname;
      if (typeof comm !== 'string') out.raw(NO_COMM);
      else {
        let known = comms.get(pid);
        if (known === undefined || known.comm !== comm) {
          known = { comm, json: utf8(`,"comm":${JSON.stringify(comm)},"flags":`) };
          if (comms.size < 1 << 16) comms.set(pid, known);
        }
        out.raw(known.json);
      }
    } else out.raw(NO_TASK);
    const flags = common?.common_flags;
    out.raw(typeof flags === 'number' ? flagsJson(flags, common?.common_preempt_count) : NO_FLAGS);
    w.fields(out, event.fields);
  };
}

/**
 * A formatter of events as JSON lines (each with its newline), as strings: {@link createJsonWriter}'s text.
 */
export function createJsonFormatter(options: JsonFormatterOptions = {}): (event: TraceEvent) => string {
  const write = createJsonWriter(options);
  const out = new ByteOut(1024);
  return (event) => {
    out.length = 0;
    write(event, out);
    return out.toString();
  };
}

/** One event as a JSON line, with `comm` null (see {@link createJsonFormatter} to name tasks). */
export const eventToJsonLine: (event: TraceEvent) => string = createJsonFormatter();

// ftrace's trace_entry flags (include/linux/trace_events.h).
const IRQS_OFF = 0x01;
const NEED_RESCHED = 0x04;
const HARDIRQ = 0x08;
const SOFTIRQ = 0x10;
const PREEMPT_RESCHED = 0x20;
const NMI = 0x40;

/**
 * The `flags` objects met so far and the `,"fields":` after them, by flags and preempt count byte: a trace uses few,
 * each written many times.
 */
const flagTexts: (Uint8Array | undefined)[] = [];

function flagsJson(flags: number, preemptCount: FieldValue | undefined): Uint8Array {
  const pc = typeof preemptCount === 'number' ? preemptCount & 0xff : 0;
  const key = ((flags & 0xff) << 8) | pc;
  return (flagTexts[key] ??= utf8(`${flagsText(flags, pc)},"fields":`));
}

function flagsText(flags: number, pc: number): string {
  // The low nibble of the preempt count byte is the preemption depth, the high one migrate-disable's.
  return `{"irqs_off":${(flags & IRQS_OFF) !== 0},"need_resched":${(flags & NEED_RESCHED) !== 0},"preempt_resched":${(flags & PREEMPT_RESCHED) !== 0},"hardirq":${(flags & HARDIRQ) !== 0},"softirq":${(flags & SOFTIRQ) !== 0},"nmi":${(flags & NMI) !== 0},"preempt_depth":${pc & 0xf},"migrate_disable":${(pc >> 4) & 0xf}}`;
}

function compileClass(cls: EventClass): ClassWriter {
  return {
    event: utf8(`,"event":${JSON.stringify(cls.name)},"pid":`),
    fields: structWriter(cls.payload, hexFields(cls.printFormat), '}\n'),
  };
}

/** The writer of a struct's object, and of `end` after it. */
function structWriter(
  struct: StructClass,
  hex: ReadonlySet<string>,
  end = '',
): (out: ByteOut, fields: TraceEvent['fields']) => void {
  const members = struct.members.map((m, i) => ({
    name: m.name,
    key: utf8(`${i === 0 ? '{' : ','}${JSON.stringify(m.name)}:`),
    write: valueWriter(m.type, hex.has(m.name)),
  }));
  // Generated per structure, so that each member's load sees one shape of object (its class decoder's) rather than
  // every class's. Names are JSON-quoted and every other token is generated here: the source holds no input text.
  const body = members.map((m, i) => `o.raw(k[${i}]); w[${i}](o, f[${JSON.stringify(m.name)}]);`).join(' ');
  return new Function('k', 'w', 'e', `return (o, f) => { ${body} o.raw(e); };`)(
    members.map((m) => m.key),
    members.map((m) => m.write),
    utf8(`${members.length === 0 ? '{}' : '}'}${end}`),
  ) as (out: ByteOut, fields: TraceEvent['fields']) => void;
}

/** The writer of one field class as JSON bytes; `hex`: the format shows it as an address or in hex. */
export function valueWriter(type: FieldClass, hex: boolean): ValueWriter {
  switch (type.kind) {
    case 'int':
      return intWriter(type.size, hex || type.base === 16);
    case 'enum':
      return intWriter(type.container.size, hex || type.container.base === 16);
    case 'float':
      return (out, v) => {
        if (typeof v === 'number' && Number.isFinite(v)) out.text(String(v));
        else out.raw(NULL);
      };
    case 'string':
      return (out, v) => {
        if (typeof v === 'string') out.jsonString(v);
        else out.raw(NULL);
      };
    case 'array':
    case 'sequence':
    case 'dynamic': {
      const element = valueWriter(type.element, hex);
      // Character arrays decode to text.
      return (out, v) => {
        if (typeof v === 'string') out.jsonString(v);
        else if (!Array.isArray(v)) out.raw(NULL);
        else {
          out.byte(91);
          for (let i = 0; i < v.length; i++) {
            if (i !== 0) out.byte(44);
            element(out, v[i]);
          }
          out.byte(93);
        }
      };
    }
    case 'struct': {
      const write = structWriter(type, new Set());
      return (out, v) => {
        if (v !== null && typeof v === 'object' && !Array.isArray(v)) write(out, v as TraceEvent['fields']);
        else out.raw(NULL);
      };
    }
    case 'variant':
      // The chosen option is known per event only: typed by the decoded value.
      return (out, v) => {
        if (v === undefined) out.raw(NULL);
        else out.text(JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? String(x) : x)));
      };
  }
}

/**
 * The JSON Schema (draft 2020-12) of the events of one class as {@link createJsonFormatter} writes them: the shape of
 * `schemas/event.json` with each field's own type (a decimal string for a 64-bit integer, a `0x` string for an
 * address, a number for a narrower integer...), so a validator can hold every event of the class to one type per field.
 */
export function eventClassSchema(cls: EventClass): Record<string, unknown> {
  const fields = structSchema(cls.payload, hexFields(cls.printFormat));
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: cls.name,
    type: 'object',
    allOf: [{ $ref: 'https://evtrace.dev/schemas/trace-format/event.json' }],
    properties: { event: { const: cls.name }, fields },
  };
}

const DECIMAL_SCHEMA = { type: 'string', pattern: '^-?[0-9]+$' };
const HEX_SCHEMA = { type: 'string', pattern: '^0x[0-9a-f]+$' };

function structSchema(struct: StructClass, hex: ReadonlySet<string>): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const m of struct.members) properties[m.name] = valueSchema(m.type, hex.has(m.name));
  return { type: 'object', additionalProperties: false, required: Object.keys(properties), properties };
}

/** The schema of one field class's values, as {@link valueWriter} writes them (null where a record lacks one). */
function valueSchema(type: FieldClass, hex: boolean): Record<string, unknown> {
  const orNull = (s: Record<string, unknown>) => ({ anyOf: [s, { type: 'null' }] });
  switch (type.kind) {
    case 'int':
    case 'enum': {
      const int = type.kind === 'int' ? type : type.container;
      if (hex || int.base === 16) return orNull(HEX_SCHEMA);
      return orNull(int.size > 32 ? DECIMAL_SCHEMA : { type: 'integer' });
    }
    case 'float':
      return { type: ['number', 'null'] };
    case 'string':
      return { type: ['string', 'null'] };
    case 'array':
    case 'sequence':
    case 'dynamic': {
      const text =
        type.kind === 'dynamic' ? type.isString : type.element.kind === 'int' && type.element.encoding !== 'none';
      if (text) return { type: ['string', 'null'] };
      return orNull({ type: 'array', items: valueSchema(type.element, hex) });
    }
    case 'struct':
      return orNull(structSchema(type, new Set()));
    case 'variant':
      return {};
  }
}

/**
 * Integers: `"0x..."` (the two's complement of the class's width for negative values) when shown in hex, decimal
 * strings when wider than 32 bits, numbers otherwise.
 */
function intWriter(size: number, hex: boolean): ValueWriter {
  if (hex) {
    const modulus = 2 ** size;
    return (out, v) => {
      if (typeof v === 'bigint') {
        out.raw(HEX_OPEN);
        out.hexBigint(v < 0n ? BigInt.asUintN(size, v) : v);
        out.byte(34);
      } else if (typeof v === 'number') {
        out.raw(HEX_OPEN);
        const n = v < 0 ? v + modulus : v;
        if (n >= 0 && Number.isSafeInteger(n)) out.hex(n);
        else out.text(n.toString(16));
        out.byte(34);
      } else out.raw(NULL);
    };
  }
  if (size > 32)
    return (out, v) => {
      if (typeof v === 'bigint' || typeof v === 'number' || typeof v === 'boolean') {
        out.byte(34);
        out.int(typeof v === 'boolean' ? +v : v);
        out.byte(34);
      } else out.raw(NULL);
    };
  return (out, v) => {
    if (typeof v === 'number' || typeof v === 'bigint') out.int(v);
    else if (typeof v === 'boolean') out.int(+v);
    else out.raw(NULL);
  };
}

const HEX_OPEN = utf8('"0x');
