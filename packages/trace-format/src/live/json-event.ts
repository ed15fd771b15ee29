/**
 * The JSON event codec: events as the lines of `schemas/event.json` (`evtrace cat --json`, the agent's live stream)
 * and back. Encoding is the JSON writer's; decoding is its inverse, typed by the event classes (their format files)
 * rather than guessed from values, so a 64-bit integer comes back a bigint, an address an integer of its class, and
 * `pid`, `comm` and `flags` land where the file readers keep them (ftrace's common fields in `event.context`).
 */
import { TraceFormatError } from '../errors.ts';
import { hexFields } from '../ftrace/hex-fields.ts';
import type {
  EventClass,
  FieldClass,
  FieldValue,
  IntegerClass,
  StructClass,
  StructMember,
  TraceEvent,
} from '../model/types.ts';
import { createJsonFormatter, type JsonFormatterOptions } from '../output/json.ts';
import { type JsonPath, pathText, scanJson } from './json-scan.ts';

/** The scope a decoded event keeps its task's name in: `{ comm }`, as the line named it. */
export const TASK_SCOPE = 'task';

/** The name of the task an event belongs to, as a decoded line carried it. */
export function eventComm(event: TraceEvent): string | undefined {
  const comm = event.scopes?.[TASK_SCOPE]?.comm;
  return typeof comm === 'string' ? comm : undefined;
}

/**
 * An encoder of events as JSON lines (each with its newline): {@link createJsonFormatter}'s, where a task `comm`
 * does not name is named by the event's own {@link TASK_SCOPE} (a decoded event), so decoding then encoding gives
 * the line back.
 */
export function createJsonEventEncoder(options: JsonFormatterOptions = {}): (event: TraceEvent) => string {
  const comm = options.comm;
  return createJsonFormatter({ comm: (pid, e) => comm?.(pid, e) ?? eventComm(e) });
}

/** One event as a JSON line: the inverse of {@link JsonEventDecoder.decodeLine}. */
export const encodeJsonEvent: (event: TraceEvent) => string = createJsonEventEncoder();

/** Options of {@link JsonEventDecoder}. */
export interface JsonEventDecoderOptions {
  /**
   * Events of a class the decoder was not given get one inferred from their first line (integers from numbers and
   * decimal strings, addresses from `0x` strings, text otherwise), for streams that do not describe their classes
   * (an agent older than protocol 3). Default false: such an event is an error.
   */
  readonly infer?: boolean;
}

/** Where a line came from, for errors. */
export interface JsonLineLocation {
  readonly file?: string;
  /** 1-based line number. Default 1. */
  readonly line?: number;
}

/** A value that does not fit: where (a path in the line) and why. */
class Mismatch {
  readonly path: JsonPath;
  readonly message: string;
  constructor(path: JsonPath, message: string) {
    this.path = path;
    this.message = message;
  }
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads one JSON value of a field class. A value that does not fit throws a {@link Mismatch} whose path is relative
 * to it: each enclosing reader puts its key in front (the happy path builds no paths).
 */
type ValueReader = (v: unknown) => FieldValue;

interface ClassReader {
  readonly cls: EventClass;
  readonly fields: (v: unknown) => Record<string, FieldValue>;
}

/** Rethrows a mismatch found inside `key`, with `key` in front of its path. */
function within(error: unknown, key: string | number): never {
  if (error instanceof Mismatch) throw new Mismatch([key, ...error.path], error.message);
  throw error;
}

// ftrace's trace_entry flags (include/linux/trace_events.h), as the JSON writer decodes them.
const FLAG_BITS: readonly (readonly [string, number])[] = [
  ['irqs_off', 0x01],
  ['need_resched', 0x04],
  ['hardirq', 0x08],
  ['softirq', 0x10],
  ['preempt_resched', 0x20],
  ['nmi', 0x40],
];
const TOP_MEMBERS = new Set(['ts_ns', 'cpu', 'buffer', 'event', 'pid', 'comm', 'flags', 'fields']);
const U64 = /^\d{1,20}$/;
const MAX_U64 = (1n << 64n) - 1n;

/**
 * Decodes JSON event lines into typed events, given the classes they are events of (matched by name, `system:event`).
 * Each class's fields read as the JSON writer writes them: a field the format prints in hex or as an address from a
 * `"0x..."` string, a wider-than-32-bit integer from a decimal string, a narrower one from a number; the value must
 * fit the class. `pid` becomes `event.context`'s `common_pid`, `flags` `common_flags` and `common_preempt_count`,
 * `comm` the {@link TASK_SCOPE} scope, `buffer` the `buffer` scope.
 */
export class JsonEventDecoder {
  readonly #readers = new Map<string, ClassReader>();
  readonly #infer: boolean;
  #inferred = 0;

  constructor(classes: Iterable<EventClass>, options: JsonEventDecoderOptions = {}) {
    for (const cls of classes) this.#readers.set(cls.name, classReader(cls));
    this.#infer = options.infer === true;
  }

  /** The classes events are decoded by: those given, then those inferred. */
  get eventClasses(): EventClass[] {
    return [...this.#readers.values()].map((r) => r.cls);
  }

  /**
   * Decodes one line (its newline optional).
   *
   * @throws TraceFormatError `ERR_TRACE_JSON_EVENT` naming the line and byte column of the problem and what was expected.
   */
  decodeLine(text: string, where: JsonLineLocation = {}): TraceEvent {
    const line = text.endsWith('\n') ? text.slice(0, -1) : text;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      const scan = scanJson(line);
      const at = scan.ok ? 0 : scan.at;
      const what = scan.ok ? 'not JSON' : `not JSON: expected ${scan.expected}`;
      throw this.#error(what, line, at, where);
    }
    try {
      return this.#event(value);
    } catch (error) {
      if (!(error instanceof Mismatch)) throw error;
      const scan = scanJson(line, error.path);
      throw this.#error(`${pathText(error.path)}: ${error.message}`, line, scan.ok ? (scan.at ?? 0) : 0, where);
    }
  }

  /**
   * Decodes one event already parsed from JSON (a member of a larger message).
   *
   * @throws TraceFormatError `ERR_TRACE_JSON_EVENT` naming the member (`path` is prefixed: `events[3]`) and what was expected.
   */
  decode(value: unknown, path = ''): TraceEvent {
    try {
      return this.#event(value);
    } catch (error) {
      if (!(error instanceof Mismatch)) throw error;
      const at = error.path.length === 0 ? path : `${path}${path === '' ? '' : '.'}${pathText(error.path)}`;
      throw new TraceFormatError('ERR_TRACE_JSON_EVENT', `${at === '' ? 'the event' : at}: ${error.message}`);
    }
  }

  #error(message: string, line: string, at: number, where: JsonLineLocation): TraceFormatError {
    const column = Buffer.byteLength(line.slice(0, at)) + 1;
    return new TraceFormatError('ERR_TRACE_JSON_EVENT', message, {
      ...(where.file !== undefined ? { file: where.file } : {}),
      line: where.line ?? 1,
      column,
    });
  }

  #event(v: unknown): TraceEvent {
    if (!isObj(v)) throw new Mismatch([], 'an event must be a JSON object');
    for (const k of Object.keys(v)) if (!TOP_MEMBERS.has(k)) throw new Mismatch([k], 'not a member of an event');
    const ts = v.ts_ns;
    if (typeof ts !== 'string' || !U64.test(ts) || BigInt(ts) > MAX_U64)
      throw new Mismatch(['ts_ns'], 'expected nanoseconds as a decimal string (0 to 2^64-1)');
    const cpu = v.cpu;
    if (cpu !== null && !(Number.isSafeInteger(cpu) && (cpu as number) >= 0))
      throw new Mismatch(['cpu'], 'expected a CPU number or null');
    const name = v.event;
    if (typeof name !== 'string' || name === '') throw new Mismatch(['event'], 'expected the event name');
    let reader = this.#readers.get(name);
    if (reader === undefined) {
      if (!this.#infer) throw new Mismatch(['event'], `no event class ${JSON.stringify(name)} is known here`);
      reader = inferredReader(name, v.fields, ++this.#inferred);
      this.#readers.set(name, reader);
    }
    const pid = v.pid;
    if (pid !== null && !Number.isSafeInteger(pid)) throw new Mismatch(['pid'], 'expected an integer or null');
    const comm = v.comm;
    if (comm !== null && typeof comm !== 'string') throw new Mismatch(['comm'], 'expected a string or null');
    const context: Record<string, FieldValue> = {};
    if (pid !== null) context.common_pid = pid as number;
    if (v.flags !== null) Object.assign(context, flagFields(v.flags));
    const buffer = v.buffer;
    if (buffer !== undefined && typeof buffer !== 'string') throw new Mismatch(['buffer'], 'expected a string');
    let fields: Record<string, FieldValue>;
    try {
      fields = reader.fields(v.fields);
    } catch (error) {
      within(error, 'fields');
    }
    const scopes: Record<string, Record<string, FieldValue>> = {};
    if (Object.keys(context).length > 0) scopes['event.context'] = context;
    if (comm !== null) scopes[TASK_SCOPE] = { comm: comm as string };
    if (buffer !== undefined) scopes.buffer = { name: buffer };
    return {
      tsNs: BigInt(ts),
      cpu: cpu as number | null,
      eventClass: reader.cls,
      fields,
      ...(Object.keys(scopes).length > 0 ? { scopes } : {}),
    };
  }
}

/** The `flags` object as ftrace's `common_flags` and `common_preempt_count`. */
function flagFields(v: unknown): Record<string, number> {
  if (!isObj(v)) throw new Mismatch(['flags'], 'expected an object or null');
  let flags = 0;
  for (const [k, bit] of FLAG_BITS) {
    if (typeof v[k] !== 'boolean') throw new Mismatch(['flags', k], 'expected true or false');
    if (v[k]) flags |= bit;
  }
  const nibble = (k: string) => {
    const n = v[k];
    if (!Number.isInteger(n) || (n as number) < 0 || (n as number) > 15)
      throw new Mismatch(['flags', k], 'expected an integer 0..15');
    return n as number;
  };
  const count = nibble('preempt_depth') | (nibble('migrate_disable') << 4);
  for (const k of Object.keys(v))
    if (k !== 'preempt_depth' && k !== 'migrate_disable' && !FLAG_BITS.some(([f]) => f === k))
      throw new Mismatch(['flags', k], 'not a flag');
  return { common_flags: flags, common_preempt_count: count };
}

const readers = new WeakMap<EventClass, ClassReader>();

function classReader(cls: EventClass): ClassReader {
  let r = readers.get(cls);
  if (r === undefined) {
    r = { cls, fields: structReader(cls.payload, hexFields(cls.printFormat)) };
    readers.set(cls, r);
  }
  return r;
}

/** The fields of a struct class: every member, no other. */
function structReader(struct: StructClass, hex: ReadonlySet<string>): (v: unknown) => Record<string, FieldValue> {
  const members = struct.members.map((m) => ({ name: m.name, read: valueReader(m.type, hex.has(m.name)) }));
  const known = new Set(members.map((m) => m.name));
  return (v) => {
    if (!isObj(v)) throw new Mismatch([], 'expected an object of the fields');
    const out: Record<string, FieldValue> = {};
    for (const m of members) {
      if (!Object.hasOwn(v, m.name)) throw new Mismatch([m.name], 'missing');
      try {
        out[m.name] = m.read(v[m.name]);
      } catch (error) {
        within(error, m.name);
      }
    }
    let count = 0;
    for (const _ in v) count++;
    if (count !== members.length)
      for (const k in v) if (!known.has(k)) throw new Mismatch([k], 'not a field of the class');
    return out;
  };
}

/** The reader of one field class, the inverse of the JSON writer's `valueWriter`. */
function valueReader(type: FieldClass, hex: boolean): ValueReader {
  switch (type.kind) {
    case 'int':
      return intReader(type, hex || type.base === 16);
    case 'enum':
      return intReader(type.container, hex || type.container.base === 16);
    case 'float':
      return (v) => {
        if (v === null || typeof v === 'number') return v;
        throw new Mismatch([], 'expected a number or null');
      };
    case 'string':
      return (v) => {
        if (v === null || typeof v === 'string') return v;
        throw new Mismatch([], 'expected a string or null');
      };
    case 'array':
    case 'sequence':
    case 'dynamic': {
      const element = valueReader(type.element, hex);
      const text =
        type.kind === 'dynamic' ? type.isString : type.element.kind === 'int' && type.element.encoding !== 'none';
      return (v) => {
        if (v === null) return null;
        if (typeof v === 'string' && text) return v;
        if (!Array.isArray(v))
          throw new Mismatch([], text ? 'expected text, an array or null' : 'expected an array or null');
        if (type.kind === 'array' && !text && v.length !== type.length)
          throw new Mismatch([], `expected ${type.length} elements, not ${v.length}`);
        const out: FieldValue[] = [];
        for (let i = 0; i < v.length; i++) {
          try {
            out.push(element(v[i]));
          } catch (error) {
            within(error, i);
          }
        }
        return out;
      };
    }
    case 'struct': {
      const read = structReader(type, new Set());
      return (v) => (v === null ? null : read(v));
    }
    case 'variant':
      // The writer types a variant by its value: read back as the JSON says.
      return (v) => plainValue(v);
  }
}

/**
 * Integers: a `"0x..."` string when shown in hex (two's complement of the class's width for a negative signed value),
 * a decimal string when wider than 32 bits, a number otherwise; null where a record lacked the field. Values wider
 * than 53 bits are bigints, as the readers decode them.
 */
function intReader(int: IntegerClass, hex: boolean): ValueReader {
  const size = int.size;
  const min = int.signed ? -(1n << BigInt(size - 1)) : 0n;
  const max = int.signed ? (1n << BigInt(size - 1)) - 1n : (1n << BigInt(size)) - 1n;
  const range = `${int.signed ? 'signed' : 'unsigned'} ${size}-bit`;
  const result = (n: bigint): number | bigint => (size > 53 ? n : Number(n));
  if (hex)
    return (v) => {
      if (v === null) return null;
      if (typeof v !== 'string' || !HEX_TEXT.test(v))
        throw new Mismatch([], `expected a "0x..." string (a ${range} integer the format shows in hex) or null`);
      const u = BigInt(v);
      if (u >> BigInt(size) !== 0n) throw new Mismatch([], `${v} does not fit ${size} bits`);
      return result(int.signed ? BigInt.asIntN(size, u) : u);
    };
  if (size > 32)
    return (v) => {
      if (v === null) return null;
      if (typeof v !== 'string' || !DECIMAL_TEXT.test(v))
        throw new Mismatch([], `expected a decimal string (a ${range} integer) or null`);
      const n = BigInt(v);
      if (n < min || n > max) throw new Mismatch([], `${n} does not fit a ${range} integer`);
      return result(n);
    };
  // Numbers: compared as numbers (every bound of 32 bits or fewer is exact).
  const low = Number(min);
  const high = Number(max);
  return (v) => {
    if (v === null) return null;
    if (!Number.isInteger(v)) throw new Mismatch([], `expected an integer (${range}) or null`);
    if ((v as number) < low || (v as number) > high) throw new Mismatch([], `${v} does not fit a ${range} integer`);
    return v as number;
  };
}

const HEX_TEXT = /^0x[0-9a-f]{1,16}$/;
const DECIMAL_TEXT = /^-?\d{1,20}$/;

/** A JSON value as a field value, typed by itself (variants, inferred text). */
function plainValue(v: unknown): FieldValue {
  if (v === undefined) return null;
  if (Array.isArray(v)) return v.map(plainValue);
  if (isObj(v)) {
    const out: Record<string, FieldValue> = {};
    for (const [k, x] of Object.entries(v)) out[k] = plainValue(x);
    return out;
  }
  return v as FieldValue;
}

const INT64: IntegerClass = {
  kind: 'int',
  size: 64,
  signed: true,
  align: 8,
  byteOrder: 'le',
  base: 10,
  encoding: 'none',
};
const ADDRESS: IntegerClass = { ...INT64, signed: false, base: 16 };
const TEXT: FieldClass = { kind: 'string', encoding: 'utf8' };
const INTEGER_TEXT = /^(?:-?\d{1,20}|0x[0-9a-f]{1,16})$/;

/**
 * A class for events no format describes, from their first event's fields: numbers and decimal strings as integers,
 * `0x` strings as addresses shown in hex, anything else as text. Its events are read leniently (a value of another
 * type is kept as it is, a missing field is null): the class is a guess.
 */
function inferredReader(name: string, fields: unknown, id: number): ClassReader {
  const members: StructMember[] = [];
  if (isObj(fields)) {
    for (const [k, v] of Object.entries(fields)) {
      const type =
        typeof v === 'string' && v.startsWith('0x') && INTEGER_TEXT.test(v)
          ? ADDRESS
          : typeof v === 'number' || (typeof v === 'string' && INTEGER_TEXT.test(v))
            ? INT64
            : TEXT;
      members.push({ name: k, type });
    }
  }
  const cls: EventClass = { id, name, streamId: 0, payload: { kind: 'struct', members, minAlign: 8 } };
  return {
    cls,
    fields: (v) => {
      const out: Record<string, FieldValue> = {};
      const given = isObj(v) ? v : {};
      for (const m of members) {
        const x = given[m.name];
        out[m.name] =
          m.type.kind === 'int' && typeof x === 'string' && INTEGER_TEXT.test(x) ? BigInt(x) : plainValue(x);
      }
      return out;
    },
  };
}
