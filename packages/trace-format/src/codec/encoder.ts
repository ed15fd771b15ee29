import { TraceFormatError } from '../errors.ts';
import type { EnumClass, FieldClass, FieldValue, FloatClass, IntegerClass, StructClass } from '../model/types.ts';
import type { BitWriter } from './bit-writer.ts';
import { alignmentOf } from './decoder.ts';

/** Writes one value of a compiled class at the writer's position. */
export type FieldEncoder = (w: BitWriter, value: FieldValue | undefined) => void;

const encoderText = new TextEncoder();

function fail(message: string): never {
  throw new TraceFormatError('ERR_TRACE_CTF_WRITE', message);
}

function strip(name: string): string {
  return name.startsWith('_') ? name.slice(1) : name;
}

/**
 * Compiles a field class into an encoder. Values are checked against the class (integer range, array length, string
 * without NUL) and a mismatch throws `ERR_TRACE_CTF_WRITE` naming the field. A sequence's length member may be omitted: it
 * is then taken from the sequence that follows it in the same structure.
 */
export function compileEncoder(type: FieldClass, path = 'value'): FieldEncoder {
  switch (type.kind) {
    case 'int':
      return integerEncoder(type, path);
    case 'enum':
      return enumEncoder(type, path);
    case 'float':
      return floatEncoder(type, path);
    case 'string':
      return (w, value) => {
        if (typeof value !== 'string') fail(`${path}: expected a string`);
        const text = value as string;
        // Room for the worst case (3 bytes per UTF-16 unit) and the NUL.
        const p = w.at(8, (text.length * 3 + 1) * 8);
        const n = putText(w.bytes, p / 8, text, text.length * 3);
        if (n < 0) fail(`${path}: a CTF string cannot contain NUL`);
        w.bytes[p / 8 + n] = 0;
        w.pos = p + (n + 1) * 8;
      };
    case 'struct':
      return structEncoder(type, path);
    case 'array':
    case 'sequence': {
      const element = type.element;
      const fixed = type.kind === 'array' ? type.length : -1;
      if (element.kind === 'int' && element.size === 8 && element.encoding !== 'none') {
        return (w, value) => {
          if (typeof value === 'string') {
            const max = fixed >= 0 ? fixed : value.length * 3;
            const p = w.at(element.align, max * 8);
            if (p % 8 !== 0) fail(`${path}: text arrays must be byte-aligned`);
            const n = putText(w.bytes, p / 8, value, max, true);
            if (n < 0) fail(`${path}: text does not fit the array length ${max}`);
            const length = fixed >= 0 ? fixed : n;
            w.bytes.fill(0, p / 8 + n, p / 8 + length);
            w.pos = p + length * 8;
            return;
          }
          if (!Array.isArray(value)) fail(`${path}: expected text`);
          const bytes = Uint8Array.from(value as number[]);
          const length = fixed >= 0 ? fixed : bytes.length;
          if (bytes.length > length) fail(`${path}: text of ${bytes.length} bytes exceeds the array length ${length}`);
          const p = w.at(element.align, length * 8);
          if (p % 8 !== 0) fail(`${path}: text arrays must be byte-aligned`);
          w.bytes.fill(0, p / 8, p / 8 + length);
          w.raw(p, bytes);
          w.pos = p + length * 8;
        };
      }
      const encode = compileEncoder(element, `${path}[]`);
      const align = alignmentOf(element);
      return (w, value) => {
        if (!Array.isArray(value)) fail(`${path}: expected an array`);
        const items = value as FieldValue[];
        if (fixed >= 0 && items.length !== fixed) fail(`${path}: expected ${fixed} elements, got ${items.length}`);
        w.pos = w.at(align, 0);
        for (const item of items) encode(w, item);
      };
    }
    case 'variant': {
      const options = new Map(type.options.map((o) => [o.name, compileEncoder(o.type, `${path}.${o.name}`)]));
      return (w, value) => {
        const keys = value && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value) : [];
        if (keys.length !== 1) fail(`${path}: a variant value is an object with exactly one option`);
        const encode = options.get(keys[0]!);
        if (!encode) fail(`${path}: unknown variant option ${keys[0]}`);
        encode!(w, (value as Record<string, FieldValue>)[keys[0]!]);
      };
    }
    case 'dynamic':
      return fail(`${path}: ftrace dynamic fields have no CTF encoding (convert them to sequences)`);
  }
}

/**
 * Compiles a structure encoder as straight-line generated code reading each member with a constant key. Names appear
 * in the source only as JSON string literals; `__proto__` is read with Object.hasOwn so a missing member is never
 * taken from the prototype.
 */
function structEncoder(type: StructClass, path: string): FieldEncoder {
  const encoders = type.members.map((m) => compileEncoder(m.type, `${path}.${m.name}`));
  const lines = [
    'if (value === null || typeof value !== "object" || Array.isArray(value)) fail(notObject);',
    'const o = value;',
    `w.pos = w.at(${Number(alignmentOf(type))}, 0);`,
    'let v;',
  ];
  type.members.forEach((m, i) => {
    const key = JSON.stringify(m.name);
    lines.push(m.name === '__proto__' ? `v = Object.hasOwn(o, ${key}) ? o[${key}] : undefined;` : `v = o[${key}];`);
    // A sequence's length member may be left out: it is the length of that sequence.
    const seq = type.members.findIndex((s, k) => {
      if (k <= i || s.type.kind !== 'sequence') return false;
      const ref = s.type.lengthRef;
      return ref === m.name || strip(ref) === m.name;
    });
    if (seq >= 0) lines.push(`if (v === undefined) v = lengthOf(o[${JSON.stringify(type.members[seq]!.name)}]);`);
    lines.push(`e[${i}](w, v);`);
  });
  const factory = new Function(
    'e',
    'fail',
    'notObject',
    'lengthOf',
    `return function encodeStruct(w, value) {\n${lines.join('\n')}\n};`,
  );
  return factory(encoders, fail, `${path}: expected an object`, lengthOf) as FieldEncoder;
}

function lengthOf(v: FieldValue | undefined): number | undefined {
  return typeof v === 'string' ? encoderText.encode(v).length : Array.isArray(v) ? v.length : undefined;
}

/**
 * Writes `text` as UTF-8 at `at`, at most `max` bytes; returns the byte count, or -1 when it does not fit or (unless
 * `allowNul`) contains a NUL. ASCII is copied directly; other text goes through TextEncoder.encodeInto.
 */
function putText(bytes: Uint8Array, at: number, text: string, max: number, allowNul = false): number {
  const n = text.length;
  let i = 0;
  if (n <= max) {
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c >= 0x80 || c === 0) break;
      bytes[at + i] = c;
    }
    if (i === n) return n;
    if (text.charCodeAt(i) === 0 && !allowNul) return -1;
  }
  const r = encoderText.encodeInto(text, bytes.subarray(at, at + max));
  if (r.read !== n) return -1;
  if (!allowNul && text.includes('\0')) return -1;
  return r.written;
}

/** Integer encoder specialised for size, alignment and byte order; rejects values outside the class's range. */
export function integerEncoder(type: IntegerClass, path: string): FieldEncoder {
  const { size, align, signed } = type;
  const le = type.byteOrder === 'le';
  const min = signed ? -(2 ** (size - 1)) : 0;
  const max = signed ? 2 ** (size - 1) - 1 : 2 ** size - 1;
  const bigMin = signed ? -(1n << BigInt(size - 1)) : 0n;
  const bigMax = signed ? (1n << BigInt(size - 1)) - 1n : (1n << BigInt(size)) - 1n;
  const full = 2 ** size;
  return (w, value) => {
    const p = w.at(align, size);
    if (typeof value === 'number') {
      if (!Number.isInteger(value) || value < min || value > max)
        fail(`${path}: ${value} is not a ${size}-bit integer`);
      if (size <= 53) {
        const u = value < 0 ? value + full : value;
        if (p % 8 === 0 && size === 32) w.view.setUint32(p / 8, u, le);
        else if (p % 8 === 0 && size === 8) w.bytes[p / 8] = u;
        else if (p % 8 === 0 && size === 16) w.view.setUint16(p / 8, u, le);
        else w.uintNumber(p, size, u, le);
        w.pos = p + size;
        return;
      }
      value = BigInt(value);
    }
    if (typeof value !== 'bigint') fail(`${path}: expected an integer`);
    const v = value as bigint;
    if (v < bigMin || v > bigMax) fail(`${path}: ${v} is not a ${size}-bit integer`);
    if (p % 8 === 0 && size === 64) {
      if (signed) w.view.setBigInt64(p / 8, v, le);
      else w.view.setBigUint64(p / 8, v, le);
    } else w.uintBig(p, size, BigInt.asUintN(size, v), le);
    w.pos = p + size;
  };
}

function enumEncoder(type: EnumClass, path: string): FieldEncoder {
  const encode = integerEncoder(type.container, path);
  return (w, value) => {
    if (typeof value === 'string') {
      const mapping = type.mappings.find((m) => m.label === value);
      if (!mapping) fail(`${path}: unknown enumeration label ${value}`);
      value = mapping!.ranges[0]![0];
    }
    encode(w, value);
  };
}

function floatEncoder(type: FloatClass, path: string): FieldEncoder {
  const size = type.expDig + type.mantDig;
  const le = type.byteOrder === 'le';
  const scratch = new DataView(new ArrayBuffer(8));
  return (w, value) => {
    if (typeof value !== 'number') fail(`${path}: expected a number`);
    const p = w.at(type.align, size);
    if (p % 8 === 0) {
      if (size === 32) w.view.setFloat32(p / 8, value as number, le);
      else w.view.setFloat64(p / 8, value as number, le);
    } else if (size === 32) {
      scratch.setFloat32(0, value as number);
      w.bits32(p, 32, scratch.getUint32(0), le);
    } else {
      scratch.setFloat64(0, value as number);
      w.uintBig(p, 64, scratch.getBigUint64(0), le);
    }
    w.pos = p + size;
  };
}
