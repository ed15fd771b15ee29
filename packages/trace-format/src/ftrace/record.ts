/**
 * Turns one ftrace record (the bytes after the ring-buffer event header, starting with `common_type`) into field
 * values, following the event's `format` file. Decoders are compiled once per event class.
 */
import { TraceFormatError } from '../errors.ts';
import type { ByteOrder, EventClass, FieldValue, FtraceFieldInfo, TraceEvent } from '../model/types.ts';
import { isCharType, parseDeclaration, sizeOfType } from './c-types.ts';

/** Decoded values: payload fields and the `common_*` ones. */
export interface DecodedRecord {
  readonly fields: Record<string, FieldValue>;
  readonly common: Record<string, FieldValue>;
}

/** Reads the field values of one record of a known event class. */
/** `view` must cover the same memory as `bytes`; callers keep one per buffer. */
export type RecordDecoder = (bytes: Buffer, view: DataView, start: number, length: number) => DecodedRecord;

type Reader = (bytes: Buffer, view: DataView, start: number, length: number) => FieldValue;

/** Thrown (and wrapped with a file offset by callers) when a record contradicts its format. */
export class RecordError extends Error {
  readonly at: number;
  constructor(message: string, at: number) {
    super(message);
    this.name = 'RecordError';
    this.at = at;
  }
}

function scalarReader(size: number, signed: boolean, le: boolean, offset: number): Reader {
  switch (size) {
    case 1:
      return signed ? (_b, v, s) => v.getInt8(s + offset) : (b, _v, s) => b[s + offset]!;
    case 2:
      return signed ? (_b, v, s) => v.getInt16(s + offset, le) : (_b, v, s) => v.getUint16(s + offset, le);
    case 4:
      return signed ? (_b, v, s) => v.getInt32(s + offset, le) : (_b, v, s) => v.getUint32(s + offset, le);
    default:
      return signed ? (_b, v, s) => v.getBigInt64(s + offset, le) : (_b, v, s) => v.getBigUint64(s + offset, le);
  }
}

/** A NUL-terminated (or range-bounded) string; invalid UTF-8 becomes U+FFFD rather than an error. */
function cString(bytes: Buffer, from: number, to: number): string {
  let end = from;
  let ascii = true;
  for (; end < to; end++) {
    const c = bytes[end]!;
    if (c === 0) break;
    if (c >= 0x80) ascii = false;
  }
  // Short ASCII names (comms, devices) are most strings; building them directly avoids the decoder's call cost.
  if (ascii && end - from <= 64)
    return String.fromCharCode.apply(null, bytes.subarray(from, end) as unknown as number[]);
  return bytes.toString('utf8', from, end);
}

function elementsReader(
  elem: number,
  signed: boolean,
  le: boolean,
): (b: Buffer, v: DataView, at: number, n: number) => FieldValue[] {
  const one = scalarReader(elem, signed, le, 0);
  return (b, v, at, n) => {
    const out: FieldValue[] = new Array(n);
    for (let i = 0; i < n; i++) out[i] = one(b, v, at + i * elem, 0);
    return out;
  };
}

/** Rebuilds the declaration text of a field from its name and C type. */
function declarationOf(f: FtraceFieldInfo) {
  const arr = /^(.*?)(\[[^\]]*\])$/.exec(f.cType);
  const text =
    f.cType.startsWith('__data_loc') || f.cType.startsWith('__rel_loc') || arr === null
      ? `${f.cType} ${f.name}`
      : `${arr[1]} ${f.name}${arr[2]}`;
  return parseDeclaration(text);
}

function fieldReader(f: FtraceFieldInfo, le: boolean, longSize: number): Reader {
  const decl = declarationOf(f);
  const { offset, size, signed } = f;
  const end = offset + size;
  const check = (length: number, start: number) => {
    if (end > length) throw new RecordError(`record of ${length} bytes too short for field ${f.name}`, start + offset);
  };
  const text = decl !== undefined && isCharType(decl.baseType) && !decl.pointer;
  const elemSize = decl === undefined ? 1 : (sizeOfType(decl.baseType, longSize) ?? 1);
  const shape = decl?.shape ?? { kind: 'scalar' as const };
  switch (shape.kind) {
    case 'scalar': {
      if (size === 1 || size === 2 || size === 4 || size === 8) {
        const read = scalarReader(size, signed, le, offset);
        return (b, v, s, length) => {
          check(length, s);
          return read(b, v, s, length);
        };
      }
      return (b, _v, s, length) => {
        check(length, s);
        return Array.from(b.subarray(s + offset, s + end));
      };
    }
    case 'array': {
      const n = shape.length >= 0 ? shape.length : Math.floor(size / elemSize);
      const elem = n > 0 ? size / n : elemSize;
      if (text && elem === 1) {
        return (b, _v, s, length) => {
          check(length, s);
          return cString(b, s + offset, s + end);
        };
      }
      const many = elementsReader(elem === 1 || elem === 2 || elem === 4 || elem === 8 ? elem : 1, signed, le);
      const count = elem === 1 || elem === 2 || elem === 4 || elem === 8 ? n : size;
      return (b, v, s, length) => {
        check(length, s);
        return many(b, v, s + offset, count);
      };
    }
    case 'tail': {
      const many = elementsReader(elemSize, signed, le);
      return (b, v, s, length) => {
        if (offset > length) return text ? '' : [];
        return text
          ? cString(b, s + offset, s + length)
          : many(b, v, s + offset, Math.floor((length - offset) / elemSize));
      };
    }
    case 'dynamic': {
      const many = elementsReader(elemSize, signed, le);
      const relative = shape.relative;
      return (b, v, s, length) => {
        check(length, s);
        const word = v.getUint32(s + offset, le);
        const at = (word & 0xffff) + (relative ? end : 0);
        const len = word >>> 16;
        if (at + len > length) {
          throw new RecordError(
            `${f.name}: dynamic data [${at}, +${len}) outside the ${length}-byte record`,
            s + offset,
          );
        }
        return text ? cString(b, s + at, s + at + len) : many(b, v, s + at, Math.floor(len / elemSize));
      };
    }
  }
}

/** The DataView getter reading a scalar field inline, or undefined for fields that need a helper. */
function inlineRead(f: FtraceFieldInfo, le: boolean): string | undefined {
  const decl = declarationOf(f);
  if (decl === undefined || decl.shape.kind !== 'scalar') return undefined;
  const at = `s + ${f.offset}`;
  switch (f.size) {
    case 1:
      return f.signed ? `v.getInt8(${at})` : `b[${at}]`;
    case 2:
      return `v.get${f.signed ? 'Int16' : 'Uint16'}(${at}, ${le})`;
    case 4:
      return `v.get${f.signed ? 'Int32' : 'Uint32'}(${at}, ${le})`;
    case 8:
      return `v.get${f.signed ? 'BigInt64' : 'BigUint64'}(${at}, ${le})`;
    default:
      return undefined;
  }
}

/**
 * Compiles the decoder of an event class that has ftrace field info (from {@link parseFormatFile}). Records long
 * enough for every fixed field take a generated fast path that builds both objects in one literal each (a fixed
 * shape V8 optimises); shorter records take the field-by-field path, which names the field that does not fit.
 * @throws TraceFormatError when the class has no ftrace info.
 */
export function compileRecordDecoder(event: EventClass, byteOrder: ByteOrder = 'le', longSize = 8): RecordDecoder {
  return compileDecoders(event, byteOrder, longSize).record;
}

/** Checks that a record holds what its class's decoder reads; throws {@link RecordError} (naming the class) where not. */
export type RecordCheck = (view: DataView, start: number, length: number) => void;

/**
 * Compiles a check of a record's bounds against an event class with ftrace info, as its decoder finds them but
 * reading no value: the record reaches the end of every fixed field, and every dynamic field's data lies inside it.
 * For copies of pages that must read as the decoder reads them, at a fraction of the decoding's cost.
 */
export function compileRecordCheck(event: EventClass, byteOrder: ByteOrder = 'le'): RecordCheck {
  const le = byteOrder === 'le';
  let fixedEnd = 0;
  let last: FtraceFieldInfo | undefined;
  const dynamic: { name: string; offset: number; end: number; relative: boolean }[] = [];
  for (const f of event.ftrace?.fields ?? []) {
    const shape = declarationOf(f)?.shape;
    if (shape?.kind === 'tail') continue;
    if (f.offset + f.size > fixedEnd) {
      fixedEnd = f.offset + f.size;
      last = f;
    }
    if (shape?.kind === 'dynamic') {
      dynamic.push({ name: f.name, offset: f.offset, end: f.offset + f.size, relative: shape.relative });
    }
  }
  return (view, start, length) => {
    if (fixedEnd > length) {
      throw new RecordError(
        `${event.name}: record of ${length} bytes too short for field ${last!.name}`,
        start + last!.offset,
      );
    }
    for (const d of dynamic) {
      const word = view.getUint32(start + d.offset, le);
      const at = (word & 0xffff) + (d.relative ? d.end : 0);
      const len = word >>> 16;
      if (at + len > length) {
        throw new RecordError(
          `${event.name}: ${d.name}: dynamic data [${at}, +${len}) outside the ${length}-byte record`,
          start + d.offset,
        );
      }
    }
  };
}

/** Builds a whole event from a record: the decoder readers use (one object fewer per event than a record). */
export type EventDecoder = (
  bytes: Buffer,
  view: DataView,
  start: number,
  length: number,
  tsNs: bigint,
  cpu: number,
) => TraceEvent;

/** Compiles the {@link EventDecoder} of an event class with ftrace info. */
export function compileEventDecoder(event: EventClass, byteOrder: ByteOrder = 'le', longSize = 8): EventDecoder {
  return compileDecoders(event, byteOrder, longSize).event;
}

function compileDecoders(
  event: EventClass,
  byteOrder: ByteOrder,
  longSize: number,
): { record: RecordDecoder; event: EventDecoder } {
  const info = event.ftrace;
  if (info === undefined) throw new TraceFormatError('ERR_TRACE_FORMAT', `${event.name} has no ftrace field info`);
  const le = byteOrder === 'le';
  const own = info.fields.filter((f) => !f.common).map((f) => [f.name, fieldReader(f, le, longSize)] as const);
  const common = info.fields.filter((f) => f.common).map((f) => [f.name, fieldReader(f, le, longSize)] as const);
  const slow: RecordDecoder = (bytes, view, start, length) => {
    const fields: Record<string, FieldValue> = {};
    for (const [name, read] of own) fields[name] = read(bytes, view, start, length);
    const c: Record<string, FieldValue> = {};
    for (const [name, read] of common) c[name] = read(bytes, view, start, length);
    return { fields, common: c };
  };
  const slowEvent: EventDecoder = (bytes, view, start, length, tsNs, cpu) => {
    const d = slow(bytes, view, start, length);
    return { tsNs, cpu, eventClass: event, fields: d.fields, scopes: { 'event.context': d.common } };
  };
  // A field named __proto__ would set the literal's prototype instead of a property.
  if (info.fields.some((f) => f.name === '__proto__')) return { record: slow, event: slowEvent };
  const helpers: Reader[] = [];
  const fixedEnd = Math.max(0, ...info.fields.filter((f) => !/\[\]$/.test(f.cType)).map((f) => f.offset + f.size));
  const member = (f: FtraceFieldInfo, read: Reader) => {
    const code = inlineRead(f, le) ?? `h[${helpers.push(read) - 1}](b, v, s, len)`;
    return `${JSON.stringify(f.name)}: ${code}`;
  };
  const readers = new Map([...own, ...common]);
  const list = (common: boolean) =>
    info.fields
      .filter((f) => f.common === common)
      .map((f) => member(f, readers.get(f.name)!))
      .join(', ');
  // Field names are JSON-quoted and every other token is generated here, so the source holds no input text.
  const own$ = list(false);
  const common$ = list(true);
  const body = `return [function decode(b, v, s, len) {
    if (len < ${fixedEnd}) return slow(b, v, s, len);
    return { fields: { ${own$} }, common: { ${common$} } };
  }, function decodeEvent(b, v, s, len, tsNs, cpu) {
    if (len < ${fixedEnd}) return slowEvent(b, v, s, len, tsNs, cpu);
    return { tsNs, cpu, eventClass, fields: { ${own$} }, scopes: { "event.context": { ${common$} } } };
  }];`;
  const [record, decodeEvent] = new Function('h', 'slow', 'slowEvent', 'eventClass', body)(
    helpers,
    slow,
    slowEvent,
    event,
  );
  return { record, event: decodeEvent };
}
