import { TraceFormatError } from '../errors.ts';
import type {
  ArrayClass,
  EnumClass,
  FieldClass,
  FieldValue,
  FloatClass,
  IntegerClass,
  SequenceClass,
  StructClass,
  VariantClass,
} from '../model/types.ts';
import { type BitReader, textAt } from './bit-reader.ts';
import type { ByteOut } from './byte-out.ts';

/** The dynamic scopes of a CTF event, in decoding order. */
export type ScopeName =
  | 'trace.packet.header'
  | 'stream.packet.context'
  | 'stream.event.header'
  | 'stream.event.context'
  | 'event.context'
  | 'event.fields';

export const SCOPE_NAMES: readonly ScopeName[] = [
  'trace.packet.header',
  'stream.packet.context',
  'stream.event.header',
  'stream.event.context',
  'event.context',
  'event.fields',
];

type Struct = Record<string, FieldValue>;

/** Mutable state shared by the decoders of one packet: the cursor and the values sequences and variants refer to. */
export interface DecodeContext {
  r: BitReader;
  /** Structures being decoded, innermost last. */
  readonly stack: Struct[];
  /** The scopes decoded so far for the current event. */
  roots: Partial<Record<ScopeName, Struct>>;
}

export type FieldDecoder = (ctx: DecodeContext) => FieldValue;

/** Runs after an integer or enum member of a given name is decoded (event `id`, `timestamp`, `packet_size`...). */
export type IntegerHook = (ctx: DecodeContext, value: number | bigint) => void;

export interface CompileOptions {
  /** The scope this structure is the root of. */
  readonly scope: ScopeName;
  /** Classes of the other scopes, for absolute paths (`event.fields.len`) and lookups that leave this scope. */
  readonly rootClasses: Partial<Record<ScopeName, StructClass>>;
  /** Returns a hook for an integer member, by member name. */
  readonly hook?: (name: string, type: IntegerClass) => IntegerHook | undefined;
}

interface Lexical {
  readonly names: string[];
  readonly types: FieldClass[];
  readonly parent?: Lexical;
}

/** Where a sequence length or variant tag lives, resolved at compile time. */
type Location =
  | { readonly kind: 'stack'; readonly up: number; readonly path: readonly string[]; readonly type: FieldClass }
  | { readonly kind: 'root'; readonly scope: ScopeName; readonly path: readonly string[]; readonly type: FieldClass };

/** Sets a property without letting a hostile field name (`__proto__`) change the object's prototype. */
function setField(o: Struct, name: string, value: FieldValue): void {
  if (name === '__proto__') Object.defineProperty(o, name, { value, enumerable: true, writable: true });
  else o[name] = value;
}

/** Alignment in bits of a field class (CTF 1.8 rules: a struct aligns to its most aligned member). */
export function alignmentOf(type: FieldClass): number {
  switch (type.kind) {
    case 'int':
    case 'float':
      return type.align;
    case 'enum':
      return type.container.align;
    case 'string':
      return 8;
    case 'array':
    case 'sequence':
      return alignmentOf(type.element);
    case 'struct':
      return type.members.reduce((a, m) => Math.max(a, alignmentOf(m.type)), type.minAlign);
    case 'variant':
    case 'dynamic':
      return 1;
  }
}

/** Fewest bits a field of this class can take, to reject sequence lengths a packet cannot hold. */
export function minimumBits(type: FieldClass): number {
  switch (type.kind) {
    case 'int':
      return type.varint ? 8 : type.size;
    case 'float':
      return type.mantDig + type.expDig;
    case 'enum':
      return type.container.size;
    case 'string':
      return 8;
    case 'array':
      return type.length * minimumBits(type.element);
    case 'struct':
      return type.members.reduce((a, m) => a + minimumBits(m.type), 0);
    case 'variant':
      return type.options.length === 0 ? 0 : Math.min(...type.options.map((o) => minimumBits(o.type)));
    default:
      return 0;
  }
}

function memberType(type: FieldClass, name: string): FieldClass | undefined {
  if (type.kind !== 'struct') return undefined;
  return type.members.find((m) => m.name === name)?.type;
}

function strip(name: string): string {
  return name.startsWith('_') ? name.slice(1) : name;
}

/** Compiles a scope's structure into a decoder that also publishes the scope's value in `ctx.roots`. */
export function compileScope(type: StructClass, options: CompileOptions): FieldDecoder {
  const decode = compileStruct(type, undefined, options, options.scope);
  return decode;
}

/** Writes one member's value (a 64-bit integer as a number where exact, else a bigint). */
export type ValueSink = (out: ByteOut, value: FieldValue) => void;

/** What a scope writer writes: before each member's value, the value, and after the last. */
export interface StructSink {
  readonly before: readonly Uint8Array[];
  readonly write: readonly ValueSink[];
  readonly after: Uint8Array;
  /** False when nothing is written: integers are then only checked to fit (and passed over), never read. */
  readonly values?: boolean;
}

/** Decodes a scope and writes its members as they are read, building no object (see {@link compileScopeWriter}). */
export type ScopeWriter = (ctx: DecodeContext, out: ByteOut) => void;

/**
 * The same decoder as {@link compileScope}, generated from the same class by the same code, that hands each member's
 * value to `sink` instead of storing it: no object per event, and 64-bit integers stay numbers while exact. Only for
 * scopes no later field refers to and that refer to no other field (no sequence or variant inside,
 * {@link refersOutward}); hooks are not run.
 */
export function compileScopeWriter(type: StructClass, options: CompileOptions, sink: StructSink): ScopeWriter {
  if (refersOutward(type)) fail('a scope with sequences or variants has no writer');
  return compileStruct(type, undefined, options, undefined, sink) as unknown as ScopeWriter;
}

function fail(message: string): never {
  throw new TraceFormatError('ERR_TRACE_TSDL', message);
}

function resolve(ref: string, lex: Lexical | undefined, options: CompileOptions): Location {
  const parts = ref.split('.');
  for (const scope of SCOPE_NAMES) {
    const prefix = scope.split('.');
    if (parts.length > prefix.length && prefix.every((p, i) => parts[i] === p)) {
      // TSDL names lose one underscore; CTF 2 names do not: try both spellings.
      for (const path of [parts.slice(prefix.length).map(strip), parts.slice(prefix.length)]) {
        let type: FieldClass | undefined = options.rootClasses[scope];
        for (const p of path) type = type && memberType(type, p);
        if (type) return { kind: 'root', scope, path, type };
      }
      fail(`cannot resolve '${ref}': no such field in ${scope}`);
    }
  }
  let path = parts.map(strip);
  let up = 0;
  for (let l = lex; l; l = l.parent, up++) {
    let i = l.names.indexOf(path[0]!);
    if (i < 0) {
      // Models built in code may name the member exactly as the reference does.
      i = l.names.indexOf(parts[0]!);
      if (i >= 0) path = parts;
    }
    if (i < 0) continue;
    let type: FieldClass | undefined = l.types[i];
    for (const p of path.slice(1)) type = type && memberType(type, p);
    if (!type) fail(`cannot resolve '${ref}'`);
    return { kind: 'stack', up, path, type: type! };
  }
  // Not in the enclosing structures: look in the scopes decoded before this one, innermost first.
  for (const scope of [...SCOPE_NAMES].reverse()) {
    if (scope === options.scope) continue;
    let type: FieldClass | undefined = options.rootClasses[scope];
    for (const p of path) type = type && memberType(type, p);
    if (type) return { kind: 'root', scope, path, type };
  }
  return fail(`cannot resolve '${ref}': no field of that name precedes it`);
}

function getter(loc: Location): (ctx: DecodeContext) => FieldValue | undefined {
  const path = loc.path;
  if (loc.kind === 'stack') {
    const up = loc.up;
    if (path.length === 1) {
      const name = path[0]!;
      return (ctx) => ctx.stack[ctx.stack.length - 1 - up]![name];
    }
    return (ctx) => {
      let v: FieldValue | undefined = ctx.stack[ctx.stack.length - 1 - up];
      for (const p of path) v = (v as Struct | undefined)?.[p];
      return v;
    };
  }
  const scope = loc.scope;
  return (ctx) => {
    let v: FieldValue | undefined = ctx.roots[scope];
    for (const p of path) v = (v as Struct | undefined)?.[p];
    return v;
  };
}

function compile(type: FieldClass, lex: Lexical | undefined, options: CompileOptions): FieldDecoder {
  switch (type.kind) {
    case 'int': {
      const read = integerReader(type);
      return (ctx) => read(ctx.r);
    }
    case 'enum': {
      const read = integerReader(type.container);
      return (ctx) => read(ctx.r);
    }
    case 'float':
      return floatDecoder(type);
    case 'string':
      return (ctx) => {
        const r = ctx.r;
        return r.string(r.at(8, 8));
      };
    case 'struct':
      return compileStruct(type, lex, options, undefined);
    case 'array':
      return arrayDecoder(type, lex, options);
    case 'sequence':
      return sequenceDecoder(type, lex, options);
    case 'variant':
      return variantDecoder(type, lex, options);
    case 'dynamic':
      return fail('ftrace dynamic fields (__data_loc) have no CTF encoding');
  }
}

/** True when decoding this class may look up values of enclosing structures (it holds a sequence or variant). */
export function refersOutward(type: FieldClass): boolean {
  switch (type.kind) {
    case 'sequence':
    case 'variant':
      return true;
    case 'array':
      return refersOutward(type.element);
    case 'struct':
      return type.members.some((m) => refersOutward(m.type));
    default:
      return false;
  }
}

/** Inline read of a byte-aligned integer (the fast path), or undefined when the class needs the generic reader. */
function inlineIntRead(type: IntegerClass, exactNumbers = false): string | undefined {
  if (type.varint) return undefined;
  const le = type.byteOrder === 'le';
  const s = type.signed;
  if (exactNumbers && type.size === 64) return `${s ? 'int' : 'uint'}64(r.view, p / 8, ${le})`;
  switch (type.size) {
    case 8:
      return s ? 'r.view.getInt8(p / 8)' : 'r.bytes[p / 8]';
    case 16:
      return `r.view.get${s ? 'Int' : 'Uint'}16(p / 8, ${le})`;
    case 32:
      return `r.view.get${s ? 'Int' : 'Uint'}32(p / 8, ${le})`;
    case 64:
      return `r.view.get${s ? 'BigInt' : 'BigUint'}64(p / 8, ${le})`;
  }
  return undefined;
}

/**
 * Compiles a structure into straight-line generated code: one statement per member, byte-aligned integers read
 * inline, other members through their compiled decoders. Field names only ever appear in the generated source as
 * JSON string literals used as computed keys, so no name can inject code, and `__proto__` is stored with
 * defineProperty so it cannot replace the prototype.
 */
function compileStruct(
  type: StructClass,
  parent: Lexical | undefined,
  options: CompileOptions,
  root: ScopeName | undefined,
  sink?: StructSink,
): FieldDecoder {
  const lex: Lexical = { names: [], types: [], parent };
  const decoders: FieldDecoder[] = [];
  const readers: ((r: BitReader) => number | bigint)[] = [];
  const hooks: IntegerHook[] = [];
  const lines: string[] = [];
  const align = alignmentOf(type);
  const onStack = refersOutward(type);
  // Only numbers (coerced here), JSON string literals and fixed text go into the generated source.
  lines.push('const r = ctx.r;', `r.pos = r.at(${Number(align)}, 0);`, 'const o = {};', 'let p = 0;', 'let v;');
  if (sink) lines.splice(2, 1);
  if (root !== undefined) lines.push(`ctx.roots[${JSON.stringify(root)}] = o;`);
  if (onStack) lines.push('ctx.stack.push(o);');
  type.members.forEach((m, i) => {
    const int = m.type.kind === 'int' ? m.type : m.type.kind === 'enum' ? m.type.container : undefined;
    const inline = int && inlineIntRead(int, sink !== undefined);
    if (int && !int.varint && sink?.values === false) {
      lines.push(`r.pos = r.at(${Number(int.align)}, ${Number(int.size)}) + ${Number(int.size)};`);
      lex.names.push(m.name);
      lex.types.push(m.type);
      return;
    }
    if (int && inline) {
      readers[i] = integerReader(int);
      lines.push(
        `p = r.at(${Number(int.align)}, ${Number(int.size)});`,
        `if (p % 8 === 0) { r.pos = p + ${Number(int.size)}; v = ${inline}; } else v = rd[${i}](r);`,
      );
    } else {
      decoders[i] = compile(m.type, lex, options);
      lines.push(`v = d[${i}](ctx);`);
    }
    const hook = int && options.hook?.(m.name, int);
    if (hook) {
      hooks[i] = hook;
      lines.push(`h[${i}](ctx, v);`);
    }
    if (sink) lines.push(`out.raw(b[${i}]);`, `w[${i}](out, v);`);
    else {
      const key = JSON.stringify(m.name);
      lines.push(m.name === '__proto__' ? `setField(o, ${key}, v);` : `o[${key}] = v;`);
    }
    lex.names.push(m.name);
    lex.types.push(m.type);
  });
  if (onStack) lines.push('ctx.stack.pop();');
  lines.push(sink ? 'out.raw(after);' : 'return o;');
  const factory = new Function(
    'd',
    'rd',
    'h',
    'setField',
    'uint64',
    'int64',
    'b',
    'w',
    'after',
    `return function ${sink ? 'writeStruct(ctx, out)' : 'decodeStruct(ctx)'} {\n${lines.join('\n')}\n};`,
  );
  return factory(decoders, readers, hooks, setField, uint64, int64, sink?.before, sink?.write, sink?.after);
}

const TWO_32 = 2 ** 32;
/** The high word of the largest 64-bit value a number holds exactly (below 2^53). */
const EXACT_HIGH = 2 ** 21;

/** A 64-bit unsigned integer as a number where exact, else a bigint. */
function uint64(view: DataView, at: number, le: boolean): number | bigint {
  const high = view.getUint32(le ? at + 4 : at, le);
  if (high >= EXACT_HIGH) return view.getBigUint64(at, le);
  return high * TWO_32 + view.getUint32(le ? at : at + 4, le);
}

/** A 64-bit signed integer as a number where exact, else a bigint. */
function int64(view: DataView, at: number, le: boolean): number | bigint {
  const high = view.getInt32(le ? at + 4 : at, le);
  if (high >= EXACT_HIGH || high < -EXACT_HIGH) return view.getBigInt64(at, le);
  return high * TWO_32 + view.getUint32(le ? at : at + 4, le);
}

/** True for arrays and sequences of 8-bit integers with a text encoding: decoded as a string. */
function isText(element: FieldClass): boolean {
  const int = element.kind === 'int' ? element : undefined;
  return int !== undefined && int.size === 8 && int.encoding !== 'none';
}

function textDecoder(element: IntegerClass): (ctx: DecodeContext, length: number) => string {
  const align = Math.max(element.align, 1);
  return (ctx, length) => {
    const r = ctx.r;
    const p = r.at(align, length * 8);
    if (p % 8 !== 0) {
      // Unaligned text: gather the bytes one by one.
      const bytes = new Uint8Array(length);
      for (let i = 0; i < length; i++) bytes[i] = r.bits32(p + i * 8, 8, element.byteOrder === 'le');
      r.pos = p + length * 8;
      const nul = bytes.indexOf(0);
      return Buffer.from(bytes.subarray(0, nul < 0 ? length : nul)).toString('utf8');
    }
    r.pos = p + length * 8;
    return textAt(r.bytes, p / 8, p / 8 + length);
  };
}

function elementsDecoder(
  element: FieldClass,
  lex: Lexical | undefined,
  options: CompileOptions,
): (ctx: DecodeContext, length: number) => FieldValue {
  if (isText(element)) return textDecoder(element as IntegerClass);
  const decode = compile(element, lex, options);
  const align = alignmentOf(element);
  const minBits = minimumBits(element);
  return (ctx, length) => {
    const r = ctx.r;
    r.pos = r.at(align, 0);
    if (length * minBits > r.limit - r.pos) {
      r.fail(`array or sequence of ${length} elements does not fit in the ${r.limit - r.pos} bits left`);
    }
    // An element that takes no space cannot make a long array legitimately: cap it to keep memory bounded.
    if (minBits === 0 && length > 65536) r.fail(`array or sequence of ${length} empty elements`);
    const out: FieldValue[] = new Array(length);
    for (let i = 0; i < length; i++) out[i] = decode(ctx);
    return out;
  };
}

function arrayDecoder(type: ArrayClass, lex: Lexical | undefined, options: CompileOptions): FieldDecoder {
  const elements = elementsDecoder(type.element, lex, options);
  const length = type.length;
  return (ctx) => elements(ctx, length);
}

function sequenceDecoder(type: SequenceClass, lex: Lexical | undefined, options: CompileOptions): FieldDecoder {
  const loc = resolve(type.lengthRef, lex, options);
  const target = loc.type.kind === 'enum' ? loc.type.container : loc.type;
  if (target.kind !== 'int' || target.signed) fail(`sequence length '${type.lengthRef}' is not an unsigned integer`);
  const get = getter(loc);
  const elements = elementsDecoder(type.element, lex, options);
  return (ctx) => {
    const length = get(ctx);
    const n = typeof length === 'bigint' ? Number(length) : (length as number);
    if (typeof n !== 'number' || !Number.isSafeInteger(n)) ctx.r.fail(`sequence length ${String(length)} is invalid`);
    return elements(ctx, n);
  };
}

function variantDecoder(type: VariantClass, lex: Lexical | undefined, options: CompileOptions): FieldDecoder {
  if (type.tagRef === '') fail('variant has no tag');
  const loc = resolve(type.tagRef, lex, options);
  const get = getter(loc);
  const decoders = type.options.map((o) => compile(o.type, lex, options));
  const optionNames = type.options.map((o) => o.name);
  const ranges: { low: number | bigint; high: number | bigint; option: number }[] = [];
  if (type.optionRanges) {
    // CTF 2: each option lists the selector values that choose it.
    if (loc.type.kind !== 'enum' && loc.type.kind !== 'int')
      fail(`variant selector '${type.tagRef}' is not an integer`);
    type.optionRanges.forEach((list, option) => {
      for (const [low, high] of list) ranges.push({ low, high, option });
    });
  } else {
    if (loc.type.kind !== 'enum') fail(`variant tag '${type.tagRef}' is not an enumeration`);
    for (const m of (loc.type as EnumClass).mappings) {
      // The label names the option as TSDL spells it; stored option names lost one underscore.
      let option = optionNames.indexOf(strip(m.label));
      if (option < 0) option = optionNames.indexOf(m.label);
      for (const [low, high] of m.ranges) ranges.push({ low, high, option });
    }
  }
  return (ctx) => {
    const v = get(ctx) as number | bigint;
    let option = -1;
    for (const range of ranges) {
      if (v >= range.low && v <= range.high) {
        option = range.option;
        break;
      }
    }
    if (option < 0) ctx.r.fail(`variant tag value ${String(v)} selects no option`);
    const o: Struct = {};
    const name = optionNames[option]!;
    if (name === '__proto__') setField(o, name, decoders[option]!(ctx));
    else o[name] = decoders[option]!(ctx);
    return o;
  };
}

/** Compiles an integer class into a reader specialised for its size, alignment, byte order and signedness. */
export function integerReader(type: IntegerClass): (r: BitReader) => number | bigint {
  const { size, align, signed } = type;
  if (type.varint) return (r) => readLeb128(r, signed);
  const le = type.byteOrder === 'le';
  if (size > 53) {
    return (r) => {
      const p = r.at(align, size);
      let v = p % 8 === 0 && size === 64 ? r.view.getBigUint64(p / 8, le) : r.uintBig(p, size, le);
      if (signed) v = BigInt.asIntN(size, v);
      r.pos = p + size;
      return v;
    };
  }
  if (size === 8 || size === 16 || size === 32) {
    const get =
      size === 8
        ? signed
          ? (r: BitReader, at: number) => r.view.getInt8(at)
          : (r: BitReader, at: number) => r.bytes[at]!
        : size === 16
          ? signed
            ? (r: BitReader, at: number) => r.view.getInt16(at, le)
            : (r: BitReader, at: number) => r.view.getUint16(at, le)
          : signed
            ? (r: BitReader, at: number) => r.view.getInt32(at, le)
            : (r: BitReader, at: number) => r.view.getUint32(at, le);
    const half = 2 ** (size - 1);
    const full = 2 ** size;
    return (r) => {
      const p = r.at(align, size);
      r.pos = p + size;
      if (p % 8 === 0) return get(r, p / 8);
      const v = r.bits32(p, size, le);
      return signed && v >= half ? v - full : v;
    };
  }
  const half = 2 ** (size - 1);
  const full = 2 ** size;
  if (size <= 32) {
    return (r) => {
      const p = r.at(align, size);
      r.pos = p + size;
      const v = r.bits32(p, size, le);
      return signed && v >= half ? v - full : v;
    };
  }
  return (r) => {
    const p = r.at(align, size);
    r.pos = p + size;
    const v = r.uintNumber(p, size, le);
    return signed && v >= half ? v - full : v;
  };
}

function floatDecoder(type: FloatClass): FieldDecoder {
  const size = type.expDig + type.mantDig;
  const le = type.byteOrder === 'le';
  const scratch = new DataView(new ArrayBuffer(8));
  return (ctx) => {
    const r = ctx.r;
    const p = r.at(type.align, size);
    r.pos = p + size;
    if (p % 8 === 0) return size === 32 ? r.view.getFloat32(p / 8, le) : r.view.getFloat64(p / 8, le);
    const bits = r.uintBig(p, size, le);
    if (size === 32) {
      scratch.setUint32(0, Number(bits));
      return scratch.getFloat32(0);
    }
    scratch.setBigUint64(0, bits);
    return scratch.getFloat64(0);
  };
}

/** Reads a LEB128 variable-length integer (CTF 2): 7 bits per byte, low groups first, at most 64 bits of value. */
function readLeb128(r: BitReader, signed: boolean): bigint {
  let p = r.at(8, 8);
  let value = 0n;
  let shift = 0n;
  for (;;) {
    if (p + 8 > r.limit) r.fail('truncated variable-length integer', p);
    const byte = r.bytes[p / 8]!;
    p += 8;
    value |= BigInt(byte & 0x7f) << shift;
    shift += 7n;
    if ((byte & 0x80) === 0) break;
    if (shift >= 70n) r.fail('variable-length integer longer than 10 bytes', p);
  }
  r.pos = p;
  if (signed) {
    if (value & (1n << (shift - 1n))) value -= 1n << shift;
    if (value < -(1n << 63n) || value >= 1n << 63n) r.fail('variable-length integer does not fit in 64 bits', p);
  } else if (value >= 1n << 64n) r.fail('variable-length integer does not fit in 64 bits', p);
  return value;
}
