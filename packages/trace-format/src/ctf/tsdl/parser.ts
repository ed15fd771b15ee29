import { TraceFormatError } from '../../errors.ts';
import type {
  ByteOrder,
  ClockClass,
  EnumMapping,
  EventClass,
  FieldClass,
  IntegerBase,
  IntegerClass,
  StreamClass,
  StructClass,
  StructMember,
  TextEncoding,
  TraceClass,
  VariantClass,
} from '../../model/types.ts';
import { type Token, tokenize } from './lexer.ts';

/** Options of {@link parseTsdl}. */
export interface ParseTsdlOptions {
  /** File name used in error messages. */
  readonly file?: string;
  /** Receives notes about accepted oddities (unknown attributes), as babeltrace2 warns about them. */
  readonly warnings?: string[];
}

/** A value on the right of `key = value;`. */
type AttrValue =
  | { readonly kind: 'number'; readonly value: bigint; readonly token: Token }
  | { readonly kind: 'string'; readonly value: string; readonly token: Token }
  | { readonly kind: 'path'; readonly value: string; readonly token: Token }
  | { readonly kind: 'type'; readonly value: FieldClass; readonly token: Token };

interface Scope {
  readonly parent?: Scope;
  readonly aliases: Map<string, FieldClass>;
  readonly structs: Map<string, FieldClass>;
  readonly enums: Map<string, FieldClass>;
  readonly variants: Map<string, FieldClass>;
}

const U64_MAX = (1n << 64n) - 1n;
const MAX_DEPTH = 64;
const EMPTY_STRUCT: StructClass = { kind: 'struct', members: [], minAlign: 1 };

/** Drops the one leading underscore CTF 1.8 producers add to dodge keywords (`_msg` is the field `msg`). */
export function stripUnderscore(name: string): string {
  return name.startsWith('_') ? name.slice(1) : name;
}

function newScope(parent?: Scope): Scope {
  return { parent, aliases: new Map(), structs: new Map(), enums: new Map(), variants: new Map() };
}

function lookup(scope: Scope | undefined, table: 'aliases' | 'structs' | 'enums' | 'variants', name: string) {
  for (let s = scope; s; s = s.parent) {
    const found = s[table].get(name);
    if (found) return found;
  }
  return undefined;
}

/** The byte order the trace block declares, needed before the types that precede it can be built. */
function findTraceByteOrder(tokens: readonly Token[]): ByteOrder | undefined {
  for (let i = 0; i + 1 < tokens.length; i++) {
    if (tokens[i]!.text !== 'trace' || tokens[i + 1]!.text !== '{') continue;
    let depth = 0;
    for (let k = i + 1; k < tokens.length; k++) {
      const t = tokens[k]!.text;
      if (t === '{') depth++;
      else if (t === '}' && --depth === 0) break;
      else if (depth === 1 && t === 'byte_order' && tokens[k + 1]?.text === '=') {
        const v = tokens[k + 2]?.text;
        if (v === 'be' || v === 'network' || v === 'big') return 'be';
        if (v === 'le' || v === 'little') return 'le';
      }
    }
  }
  return undefined;
}

/**
 * Parses CTF 1.8 metadata text (TSDL) into the trace model: type aliases and typedefs at any scope, named structs,
 * enums and variants, `trace`, `env`, `clock`, `stream`, `event` and `callsite` blocks. Field names lose one leading
 * underscore, as in babeltrace2. Throws {@link TraceFormatError} `ERR_TRACE_TSDL` with file, line and column.
 */
export function parseTsdl(text: string, options: ParseTsdlOptions = {}): TraceClass {
  return new TsdlParser(tokenize(text, options.file), options).parseTrace();
}

class TsdlParser {
  private readonly tokens: readonly Token[];
  private readonly file?: string;
  private readonly warnings?: string[];
  private pos = 0;
  /** Nesting of type definitions, bounded so hostile metadata cannot exhaust the stack. */
  private depth = 0;
  private readonly nativeOrder: ByteOrder;
  private readonly defaultOrderKnown: boolean;

  constructor(tokens: readonly Token[], options: ParseTsdlOptions) {
    this.tokens = tokens;
    this.file = options.file;
    this.warnings = options.warnings;
    const order = findTraceByteOrder(tokens);
    this.nativeOrder = order ?? 'le';
    this.defaultOrderKnown = order !== undefined;
  }

  private fail(message: string, at: Token = this.peek()): never {
    throw new TraceFormatError('ERR_TRACE_TSDL', message, { file: this.file, line: at.line, column: at.column });
  }

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.pos + offset, this.tokens.length - 1)]!;
  }

  private next(): Token {
    const t = this.peek();
    if (this.pos < this.tokens.length - 1) this.pos++;
    return t;
  }

  private accept(text: string): boolean {
    if (this.peek().text === text && this.peek().kind !== 'string') {
      this.pos++;
      return true;
    }
    return false;
  }

  private expect(text: string): Token {
    const t = this.peek();
    if (t.text !== text || t.kind === 'string') this.fail(`expected '${text}' but found '${t.text}'`);
    return this.next();
  }

  private ident(): Token {
    const t = this.peek();
    if (t.kind !== 'ident') this.fail(`expected a name but found '${t.text}'`);
    return this.next();
  }

  parseTrace(): TraceClass {
    const scope = newScope();
    let trace: { major?: number; minor?: number; uuid?: string; byteOrder?: ByteOrder; packetHeader?: StructClass } =
      {};
    let sawTrace = false;
    let traceToken = this.tokens[0]!;
    const clocks = new Map<string, ClockClass>();
    const env = new Map<string, string | number | bigint>();
    const streams = new Map<number, { id: number; attrs: Map<string, AttrValue>; token: Token }>();
    const events: { attrs: Map<string, AttrValue>; token: Token }[] = [];
    while (this.peek().kind !== 'eof') {
      const t = this.peek();
      if (t.kind === 'ident' && this.peek(1).text === '{') {
        if (t.text === 'trace') {
          this.next();
          if (sawTrace) this.fail('duplicate trace block', t);
          sawTrace = true;
          traceToken = t;
          trace = this.traceBlock(this.block(scope), t);
          continue;
        }
        if (t.text === 'env') {
          this.next();
          for (const [key, v] of this.block(scope)) {
            if (v.kind === 'type') this.fail(`env entry ${key} cannot be a type`, v.token);
            env.set(key, v.kind === 'number' ? this.envNumber(v.value) : v.value);
          }
          this.accept(';');
          continue;
        }
        if (t.text === 'clock') {
          this.next();
          const clock = this.clockBlock(this.block(scope), t);
          if (clocks.has(clock.name)) this.fail(`duplicate clock ${clock.name}`, t);
          clocks.set(clock.name, clock);
          continue;
        }
        if (t.text === 'stream') {
          this.next();
          const attrs = this.block(newScope(scope));
          const id = attrs.has('id') ? this.intAttr(attrs, 'id', t) : 0;
          if (streams.has(id)) this.fail(`duplicate stream id ${id}`, t);
          streams.set(id, { id, attrs, token: t });
          continue;
        }
        if (t.text === 'event') {
          this.next();
          events.push({ attrs: this.block(newScope(scope)), token: t });
          continue;
        }
        if (t.text === 'callsite') {
          this.next();
          this.block(scope);
          continue;
        }
      }
      this.declaration(scope);
    }
    if (!sawTrace) this.fail('metadata has no trace block');
    if (trace.major !== 1 || trace.minor !== 8) {
      this.fail(`unsupported CTF version ${trace.major}.${trace.minor} (expected 1.8)`, traceToken);
    }
    const streamClasses = new Map<number, StreamClass>();
    const eventsByStream = new Map<number, Map<number, EventClass>>();
    for (const s of streams.values()) eventsByStream.set(s.id, new Map());
    if (streams.size === 0) eventsByStream.set(0, new Map());
    for (const e of events) {
      const ev = this.eventClass(e.attrs, e.token, eventsByStream);
      const list = eventsByStream.get(ev.streamId);
      if (!list) this.fail(`event ${ev.name} refers to unknown stream ${ev.streamId}`, e.token);
      if (list!.has(ev.id)) this.fail(`duplicate event id ${ev.id} in stream ${ev.streamId}`, e.token);
      list!.set(ev.id, ev);
    }
    for (const [id, eventClasses] of eventsByStream) {
      const s = streams.get(id);
      const attrs = s?.attrs ?? new Map<string, AttrValue>();
      streamClasses.set(id, {
        id,
        packetContext: this.structAttr(attrs, 'packet.context'),
        eventHeader: this.structAttr(attrs, 'event.header'),
        eventContext: this.structAttr(attrs, 'event.context'),
        eventClasses,
      });
      for (const key of attrs.keys()) {
        if (!['id', 'packet.context', 'event.header', 'event.context'].includes(key)) {
          this.warnings?.push(`unknown attribute in stream class: ${key}`);
        }
      }
    }
    return {
      major: 1,
      minor: 8,
      uuid: trace.uuid,
      byteOrder: trace.byteOrder ?? this.nativeOrder,
      packetHeader: trace.packetHeader,
      clocks,
      streams: streamClasses,
      env,
    };
  }

  private envNumber(v: bigint): number | bigint {
    return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }

  private intAttr(attrs: Map<string, AttrValue>, key: string, at: Token): number {
    const v = attrs.get(key);
    if (!v) this.fail(`missing ${key}`, at);
    if (v!.kind !== 'number') this.fail(`${key} must be an integer`, v!.token);
    if (v!.value < 0n || v!.value > BigInt(Number.MAX_SAFE_INTEGER)) this.fail(`${key} out of range`, v!.token);
    return Number(v!.value);
  }

  private structAttr(attrs: Map<string, AttrValue>, key: string): StructClass | undefined {
    const v = attrs.get(key);
    if (!v) return undefined;
    if (v.kind !== 'type' || v.value.kind !== 'struct') this.fail(`${key} must be a structure`, v.token);
    return v.value as StructClass;
  }

  private traceBlock(attrs: Map<string, AttrValue>, at: Token) {
    let byteOrder: ByteOrder | undefined;
    const bo = attrs.get('byte_order');
    if (bo) byteOrder = this.byteOrderValue(bo);
    else this.fail('trace block has no byte_order', at);
    let uuid: string | undefined;
    const u = attrs.get('uuid');
    if (u) {
      if (u.kind !== 'string' || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(u.value)) {
        this.fail('trace uuid must be a UUID string', u.token);
      }
      uuid = u.value.toLowerCase();
    }
    for (const key of attrs.keys()) {
      if (!['major', 'minor', 'uuid', 'byte_order', 'packet.header'].includes(key)) {
        this.warnings?.push(`unknown attribute in trace: ${key}`);
      }
    }
    return {
      major: this.intAttr(attrs, 'major', at),
      minor: this.intAttr(attrs, 'minor', at),
      uuid,
      byteOrder,
      packetHeader: this.structAttr(attrs, 'packet.header'),
    };
  }

  private clockBlock(attrs: Map<string, AttrValue>, at: Token): ClockClass {
    const name = attrs.get('name');
    if (!name || name.kind === 'type' || name.kind === 'number') this.fail('clock has no name', at);
    const num = (key: string, fallback: bigint): bigint => {
      const v = attrs.get(key);
      if (!v) return fallback;
      if (v.kind !== 'number') this.fail(`clock ${key} must be an integer`, v.token);
      return v.value;
    };
    const freq = num('freq', 1_000_000_000n);
    if (freq <= 0n) this.fail('clock freq must be positive', attrs.get('freq')!.token);
    const str = (key: string): string | undefined => {
      const v = attrs.get(key);
      return v && v.kind === 'string' ? v.value : undefined;
    };
    const absolute = attrs.get('absolute');
    return {
      name: name!.value as string,
      uuid: str('uuid'),
      description: str('description'),
      freq,
      precision: attrs.has('precision') ? num('precision', 0n) : undefined,
      offsetSeconds: num('offset_s', 0n),
      offsetCycles: num('offset', 0n),
      absolute:
        absolute !== undefined &&
        ((absolute.kind === 'number' && absolute.value !== 0n) ||
          (absolute.kind === 'path' && /^true$/i.test(absolute.value))),
    };
  }

  private eventClass(
    attrs: Map<string, AttrValue>,
    at: Token,
    streams: ReadonlyMap<number, ReadonlyMap<number, EventClass>>,
  ): EventClass {
    const nameAttr = attrs.get('name');
    if (!nameAttr || nameAttr.kind === 'type' || nameAttr.kind === 'number') this.fail('event has no name', at);
    let streamId = 0;
    if (attrs.has('stream_id')) streamId = this.intAttr(attrs, 'stream_id', at);
    else if (streams.size > 1) this.fail('event has no stream_id but the trace has several streams', at);
    else streamId = streams.keys().next().value ?? 0;
    let id: number;
    if (attrs.has('id')) id = this.intAttr(attrs, 'id', at);
    else if ((streams.get(streamId)?.size ?? 0) === 0) id = 0;
    else this.fail('event has no id but its stream has several events', at);
    const loglevel = attrs.get('loglevel');
    const emf = attrs.get('model.emf.uri');
    return {
      id,
      name: nameAttr!.value as string,
      streamId,
      payload: this.structAttr(attrs, 'fields') ?? EMPTY_STRUCT,
      context: this.structAttr(attrs, 'context'),
      logLevel: loglevel?.kind === 'number' ? Number(loglevel.value) : undefined,
      modelEmfUri: emf?.kind === 'string' ? emf.value : undefined,
    };
  }

  /** `{ entries } ;` of a trace, env, clock, stream, event or callsite block. */
  private block(scope: Scope): Map<string, AttrValue> {
    this.expect('{');
    const attrs = new Map<string, AttrValue>();
    while (!this.accept('}')) {
      if (this.peek().kind === 'eof') this.fail("unterminated block: expected '}'");
      if (this.peek().text === 'typealias' || this.peek().text === 'typedef') {
        this.declaration(scope);
        continue;
      }
      const keyToken = this.peek();
      if (keyToken.kind !== 'ident') this.fail(`expected an attribute name but found '${keyToken.text}'`);
      const [key, value] = this.attribute(scope);
      if (attrs.has(key)) this.fail(`duplicate attribute ${key}`, keyToken);
      attrs.set(key, value);
    }
    this.accept(';');
    return attrs;
  }

  /** `key = value;` or `key := type;` where key may be dotted (`packet.header`). */
  private attribute(scope: Scope): [string, AttrValue] {
    let key = this.ident().text;
    while (this.accept('.')) key += `.${this.ident().text}`;
    const op = this.next();
    let value: AttrValue;
    if (op.text === ':=') {
      const token = this.peek();
      value = { kind: 'type', value: this.typeSpec(scope, false), token };
    } else if (op.text === '=') {
      value = this.value(scope);
    } else {
      this.fail(`expected '=' or ':=' after ${key}`, op);
    }
    this.expect(';');
    return [key, value!];
  }

  private value(scope: Scope): AttrValue {
    const token = this.peek();
    if (token.kind === 'string') {
      this.next();
      return { kind: 'string', value: token.value!, token };
    }
    if (token.text === '-' || token.text === '+' || token.kind === 'number') {
      return { kind: 'number', value: this.signedNumber(), token };
    }
    if (token.kind === 'ident') {
      const isType = ['integer', 'floating_point', 'struct', 'enum', 'variant'].includes(token.text);
      if (isType || (token.text === 'string' && this.peek(1).text === '{')) {
        return { kind: 'type', value: this.typeSpec(scope, false), token };
      }
      this.next();
      let path = token.text;
      while (this.accept('.')) path += `.${this.ident().text}`;
      return { kind: 'path', value: path, token };
    }
    this.fail(`expected a value but found '${token.text}'`);
  }

  private signedNumber(): bigint {
    let negative = false;
    while (this.peek().text === '-' || this.peek().text === '+') {
      if (this.next().text === '-') negative = !negative;
    }
    const t = this.peek();
    if (t.kind !== 'number') this.fail(`expected a number but found '${t.text}'`);
    this.next();
    const m = /^(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)[uUlL]*$/.exec(t.text);
    if (!m) this.fail(`invalid integer literal '${t.text}'`, t);
    const digits = m![1]!;
    const v =
      digits.length > 1 && digits[0] === '0' && !/[xX]/.test(digits) ? BigInt(`0o${digits.slice(1)}`) : BigInt(digits);
    if (v > U64_MAX) this.fail(`integer literal '${t.text}' does not fit in 64 bits`, t);
    return negative ? -v : v;
  }

  /** A declaration outside an attribute: typealias, typedef, or a named struct/enum/variant definition. */
  private declaration(scope: Scope): void {
    const t = this.peek();
    if (this.accept('typealias')) {
      const type = this.typeSpec(scope, false);
      this.expect(':=');
      const { name, type: aliased } = this.aliasTarget(type);
      scope.aliases.set(name, aliased);
      this.expect(';');
      return;
    }
    if (this.accept('typedef')) {
      const type = this.typeSpec(scope, true);
      for (;;) {
        const name = this.ident();
        scope.aliases.set(name.text, this.arraySuffix(type));
        if (!this.accept(',')) break;
      }
      this.expect(';');
      return;
    }
    if (t.text === 'struct' || t.text === 'enum' || t.text === 'variant') {
      this.typeSpec(scope, false);
      this.expect(';');
      return;
    }
    this.fail(`unexpected '${t.text}' at top level`, t);
  }

  /** The name run after `:=` of a typealias (`uint32_t`, `unsigned long`, `void *`), with optional `[N]`. */
  private aliasTarget(type: FieldClass): { name: string; type: FieldClass } {
    const words: string[] = [];
    while (this.peek().kind === 'ident' || this.peek().text === '*') words.push(this.next().text);
    if (words.length === 0) this.fail('typealias needs a name after :=');
    return { name: words.join(' '), type: this.arraySuffix(type) };
  }

  /**
   * A type specifier. With `declarator` set, a run of names such as `unsigned long x` leaves its last name for the
   * declarator that follows.
   */
  private typeSpec(scope: Scope, declarator: boolean): FieldClass {
    if (++this.depth > MAX_DEPTH) this.fail(`types nested deeper than ${MAX_DEPTH} levels`);
    try {
      return this.typeSpecInner(scope, declarator);
    } finally {
      this.depth--;
    }
  }

  private typeSpecInner(scope: Scope, declarator: boolean): FieldClass {
    const t = this.peek();
    if (t.kind !== 'ident' && t.text !== '*') this.fail(`expected a type but found '${t.text}'`);
    switch (t.text) {
      case 'integer':
        this.next();
        return this.integerType(this.blockNoSemicolon(scope), t);
      case 'floating_point': {
        this.next();
        return this.floatType(this.blockNoSemicolon(scope), t);
      }
      case 'string': {
        this.next();
        let encoding: TextEncoding = 'utf8';
        if (this.peek().text === '{') {
          const attrs = this.blockNoSemicolon(scope);
          const e = attrs.get('encoding');
          if (e) encoding = this.encodingValue(e);
        }
        return { kind: 'string', encoding };
      }
      case 'struct':
        this.next();
        return this.structType(scope);
      case 'enum':
        this.next();
        return this.enumType(scope, t);
      case 'variant':
        this.next();
        return this.variantType(scope);
    }
    // A type name: the longest run of words, less the declarator's name when one must follow.
    let end = this.pos;
    while (this.tokens[end]!.kind === 'ident' || this.tokens[end]!.text === '*') end++;
    if (declarator && end - this.pos >= 2 && this.tokens[end - 1]!.kind === 'ident') end--;
    const words = this.tokens.slice(this.pos, end).map((w) => w.text);
    const name = words.join(' ');
    const found = lookup(scope, 'aliases', name);
    if (!found) this.fail(`unknown type '${name}'`, t);
    this.pos = end;
    return found!;
  }

  /** Blocks nested in a type (`integer { ... }`) end at `}`; the `;` after them belongs to the declaration. */
  private blockNoSemicolon(scope: Scope): Map<string, AttrValue> {
    this.expect('{');
    const attrs = new Map<string, AttrValue>();
    while (!this.accept('}')) {
      if (this.peek().kind === 'eof') this.fail("unterminated block: expected '}'");
      const keyToken = this.peek();
      if (keyToken.kind !== 'ident') this.fail(`expected an attribute name but found '${keyToken.text}'`);
      const [key, value] = this.attribute(scope);
      if (attrs.has(key)) this.fail(`duplicate attribute ${key}`, keyToken);
      attrs.set(key, value);
    }
    return attrs;
  }

  private byteOrderValue(v: AttrValue): ByteOrder {
    const text = v.kind === 'path' ? v.value : '';
    if (text === 'be' || text === 'network' || text === 'big') return 'be';
    if (text === 'le' || text === 'little') return 'le';
    if (text === 'native') return this.nativeOrder;
    this.fail(`invalid byte_order '${v.token.text}'`, v.token);
  }

  private encodingValue(v: AttrValue): TextEncoding {
    const text = v.kind === 'path' || v.kind === 'string' ? v.value.toLowerCase() : '';
    if (text === 'none') return 'none';
    if (text === 'utf8' || text === 'utf-8') return 'utf8';
    if (text === 'ascii') return 'ascii';
    this.fail(`invalid encoding '${v.token.text}'`, v.token);
  }

  private integerType(attrs: Map<string, AttrValue>, at: Token): IntegerClass {
    const size = attrs.get('size');
    if (size?.kind !== 'number') this.fail('integer has no size', at);
    const bits = Number(size!.value);
    if (!(bits >= 1 && bits <= 64)) this.fail(`integer size ${size!.value} is outside 1..64`, size!.token);
    let align = bits % 8 === 0 ? 8 : 1;
    const a = attrs.get('align');
    if (a) align = this.alignValue(a);
    let signed = false;
    const s = attrs.get('signed');
    if (s) {
      if (s.kind === 'number') signed = s.value !== 0n;
      else if (s.kind === 'path' && /^(true|false)$/i.test(s.value)) signed = /^true$/i.test(s.value);
      else this.fail('signed must be true or false', s.token);
    }
    const bo = attrs.get('byte_order');
    const byteOrder = bo ? this.byteOrderValue(bo) : this.nativeOrder;
    if (!bo && !this.defaultOrderKnown) this.fail('integer byte order is native but the trace declares none', at);
    let base: IntegerBase = 10;
    const b = attrs.get('base');
    if (b) base = this.baseValue(b);
    const e = attrs.get('encoding');
    const encoding = e ? this.encodingValue(e) : 'none';
    let mappedClock: string | undefined;
    const map = attrs.get('map');
    if (map) {
      const m = map.kind === 'path' ? /^clock\.([A-Za-z_][A-Za-z0-9_]*)\.value$/.exec(map.value) : null;
      if (!m) this.fail(`invalid map '${map.token.text}' (expected clock.NAME.value)`, map.token);
      mappedClock = m![1];
    }
    return { kind: 'int', size: bits, signed, align, byteOrder, base, encoding, mappedClock };
  }

  private alignValue(a: AttrValue): number {
    if (a.kind !== 'number' || a.value <= 0n || a.value > 1n << 20n || (a.value & (a.value - 1n)) !== 0n) {
      this.fail('align must be a positive power of two', a.token);
    }
    return Number(a.value);
  }

  private baseValue(b: AttrValue): IntegerBase {
    const text = b.kind === 'number' ? String(b.value) : b.kind === 'path' ? b.value : '';
    switch (text) {
      case '2':
      case 'b':
      case 'binary':
        return 2;
      case '8':
      case 'o':
      case 'oct':
      case 'octal':
        return 8;
      case '10':
      case 'd':
      case 'i':
      case 'u':
      case 'dec':
      case 'decimal':
        return 10;
      case '16':
      case 'x':
      case 'X':
      case 'p':
      case 'hex':
      case 'hexadecimal':
        return 16;
    }
    this.fail(`invalid base '${b.token.text}'`, b.token);
  }

  private floatType(attrs: Map<string, AttrValue>, at: Token): FieldClass {
    const num = (key: string): number => {
      const v = attrs.get(key);
      if (v?.kind !== 'number') this.fail(`floating_point has no ${key}`, at);
      return Number(v!.value);
    };
    const expDig = num('exp_dig');
    const mantDig = num('mant_dig');
    if (!((expDig === 8 && mantDig === 24) || (expDig === 11 && mantDig === 53))) {
      this.fail(`unsupported floating_point exp_dig=${expDig} mant_dig=${mantDig} (binary32 or binary64 only)`, at);
    }
    const bo = attrs.get('byte_order');
    const a = attrs.get('align');
    return {
      kind: 'float',
      expDig,
      mantDig,
      align: a ? this.alignValue(a) : 8,
      byteOrder: bo ? this.byteOrderValue(bo) : this.nativeOrder,
    };
  }

  private structType(scope: Scope): FieldClass {
    let name: string | undefined;
    if (this.peek().kind === 'ident' && this.peek().text !== 'align') name = this.next().text;
    if (this.peek().text !== '{') {
      if (name === undefined) this.fail("expected a structure name or '{'");
      const found = lookup(scope, 'structs', name!);
      if (!found) this.fail(`unknown struct '${name}'`);
      return this.structAlign(found!);
    }
    this.expect('{');
    const inner = newScope(scope);
    const members = this.members(inner, '}');
    let type: StructClass = { kind: 'struct', members, minAlign: 1 };
    type = this.structAlign(type) as StructClass;
    if (name !== undefined) scope.structs.set(name, type);
    return type;
  }

  private structAlign(type: FieldClass): FieldClass {
    if (this.peek().text !== 'align' || this.peek(1).text !== '(') return type;
    this.next();
    this.next();
    const token = this.peek();
    const align = this.alignValue({ kind: 'number', value: this.signedNumber(), token });
    this.expect(')');
    if (type.kind !== 'struct') return type;
    return { ...type, minAlign: Math.max(type.minAlign, align) };
  }

  /** Member declarations up to `close`: `TYPE name[, name];` plus nested typealiases and typedefs. */
  private members(scope: Scope, close: string): StructMember[] {
    const members: StructMember[] = [];
    const seen = new Set<string>();
    while (!this.accept(close)) {
      if (this.peek().kind === 'eof') this.fail(`unterminated declaration list: expected '${close}'`);
      const t = this.peek();
      if (t.text === 'typealias' || t.text === 'typedef') {
        this.declaration(scope);
        continue;
      }
      const type = this.typeSpec(scope, true);
      if (this.accept(';')) continue; // A named struct/enum/variant definition without a field.
      for (;;) {
        const nameToken = this.ident();
        const name = stripUnderscore(nameToken.text);
        if (seen.has(name)) this.fail(`duplicate field '${nameToken.text}'`, nameToken);
        seen.add(name);
        members.push({ name, type: this.arraySuffix(type) });
        if (!this.accept(',')) break;
      }
      this.expect(';');
    }
    return members;
  }

  /** `[N]` (array) or `[path]` (sequence) suffixes; `x[2][3]` is an array of 2 arrays of 3. */
  private arraySuffix(type: FieldClass): FieldClass {
    const dims: ({ length: number } | { ref: string })[] = [];
    while (this.accept('[')) {
      if (dims.length >= MAX_DEPTH) this.fail(`arrays nested deeper than ${MAX_DEPTH} levels`);
      const t = this.peek();
      if (t.kind === 'number') {
        const n = this.signedNumber();
        if (n < 0n || n > 1n << 32n) this.fail(`array length ${n} out of range`, t);
        dims.push({ length: Number(n) });
      } else {
        let ref = this.ident().text;
        while (this.accept('.')) ref += `.${this.ident().text}`;
        dims.push({ ref });
      }
      this.expect(']');
    }
    let result = type;
    for (let i = dims.length - 1; i >= 0; i--) {
      const d = dims[i]!;
      result =
        'length' in d
          ? { kind: 'array', element: result, length: d.length }
          : { kind: 'sequence', element: result, lengthRef: d.ref };
    }
    return result;
  }

  private enumType(scope: Scope, at: Token): FieldClass {
    let name: string | undefined;
    if (this.peek().kind === 'ident') name = this.next().text;
    let container: FieldClass | undefined;
    if (this.accept(':')) container = this.typeSpec(scope, false);
    if (this.peek().text !== '{') {
      if (name === undefined) this.fail("expected an enumeration name or '{'");
      const found = lookup(scope, 'enums', name!);
      if (!found) this.fail(`unknown enum '${name}'`);
      return found!;
    }
    container ??= lookup(scope, 'aliases', 'int');
    if (container?.kind !== 'int') this.fail('enumeration container must be an integer type', at);
    const int = container as IntegerClass;
    this.expect('{');
    const mappings: EnumMapping[] = [];
    let nextValue = 0n;
    while (!this.accept('}')) {
      const labelToken = this.next();
      if (labelToken.kind !== 'ident' && labelToken.kind !== 'string') {
        this.fail(`expected an enumeration label but found '${labelToken.text}'`, labelToken);
      }
      const label = labelToken.kind === 'string' ? labelToken.value! : labelToken.text;
      let low = nextValue;
      let high = nextValue;
      if (this.accept('=')) {
        low = this.signedNumber();
        high = low;
        if (this.accept('...')) high = this.signedNumber();
      }
      if (high < low) this.fail(`enumeration range ${low} ... ${high} is reversed`, labelToken);
      const min = int.signed ? -(1n << BigInt(int.size - 1)) : 0n;
      const max = int.signed ? (1n << BigInt(int.size - 1)) - 1n : (1n << BigInt(int.size)) - 1n;
      if (low < min || high > max) this.fail(`enumeration value of ${label} does not fit its container`, labelToken);
      nextValue = high + 1n;
      const narrow = (v: bigint): number | bigint => (v >= -(2n ** 53n) && v <= 2n ** 53n ? Number(v) : v);
      const existing = mappings.find((m) => m.label === label);
      if (existing) (existing.ranges as [number | bigint, number | bigint][]).push([narrow(low), narrow(high)]);
      else mappings.push({ label, ranges: [[narrow(low), narrow(high)]] });
      if (!this.accept(',')) {
        this.expect('}');
        break;
      }
    }
    const type: FieldClass = { kind: 'enum', container: int, mappings };
    if (name !== undefined) scope.enums.set(name, type);
    return type;
  }

  private variantType(scope: Scope): FieldClass {
    let name: string | undefined;
    if (this.peek().kind === 'ident') name = this.next().text;
    let tag: string | undefined;
    if (this.accept('<')) {
      tag = this.ident().text;
      while (this.accept('.')) tag += `.${this.ident().text}`;
      this.expect('>');
    }
    if (this.peek().text !== '{') {
      if (name === undefined) this.fail("expected a variant name or '{'");
      const found = lookup(scope, 'variants', name!);
      if (found?.kind !== 'variant') this.fail(`unknown variant '${name}'`);
      return tag === undefined ? found! : { ...(found as VariantClass), tagRef: tag };
    }
    this.expect('{');
    const options = this.members(newScope(scope), '}');
    const type: FieldClass = { kind: 'variant', tagRef: tag ?? '', options };
    if (name !== undefined) scope.variants.set(name, type);
    return type;
  }
}
