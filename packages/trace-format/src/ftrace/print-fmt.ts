/**
 * Evaluation of ftrace `print fmt` lines (`"fmt", ARG, ARG...`) over decoded events, as `trace-cmd report` and the
 * kernel's `trace` file display them. The arguments are C expressions over `REC->field` with the helpers trace events
 * use (`__print_flags`, `__print_symbolic`, `__get_str`, `__print_hex`, `__print_array`...). A format this evaluator
 * cannot handle compiles to undefined, and callers fall back to `name=value` fields.
 */
import { ByteOut, IntKey, KeptTexts, utf8 } from '../codec/byte-out.ts';
import type { EventClass, FieldValue, TraceEvent } from '../model/types.ts';
import type { Kallsyms } from './symbols.ts';

type Value = bigint | string | Value[] | { readonly flags: readonly (readonly [bigint, string])[] };

type Expr = (ctx: Ctx) => Value;

interface Ctx {
  readonly event: TraceEvent;
  readonly kallsyms: Kallsyms | undefined;
  readonly style: PrintStyle;
}

/** The kernel's printk strings by address: what a `%s` of a pointer field (not a string) prints. */
export type PrintkStrings = ReadonlyMap<bigint, string>;

/**
 * Names libtraceevent knows in `{ value, "name" }` tables when the kernel left them unexpanded; any other bare name
 * there matches nothing but a zero value.
 */
const KNOWN_TABLE_NAMES: ReadonlyMap<string, bigint> = new Map([
  ...['HI', 'TIMER', 'NET_TX', 'NET_RX', 'BLOCK', 'IRQ_POLL', 'TASKLET', 'SCHED', 'HRTIMER', 'RCU'].map(
    (n, i) => [`${n}_SOFTIRQ`, BigInt(i)] as const,
  ),
  ['HRTIMER_NORESTART', 0n],
  ['HRTIMER_RESTART', 1n],
]);

/**
 * How pointers print: `trace-cmd` (`%p` as `0x…`, `%pS` as `name+0xoff`) or `kernel`, as tracefs's `trace` file shows
 * them with the `hash-ptr` option off (`%p` as bare hex, `%pS` as `name+0xoff/0xsize [module]`).
 */
export type PrintStyle = 'trace-cmd' | 'kernel';

/**
 * Renders one event's print format; undefined when the event has none or the format is not understood. `printk`
 * resolves `%s` of a pointer field as libtraceevent does: the printk string at that address, else the address in hex.
 */
export type PrintFormatter = (
  event: TraceEvent,
  kallsyms?: Kallsyms,
  style?: PrintStyle,
  printk?: PrintkStrings,
) => string | undefined;

class Unsupported extends Error {}

// ---- tokens ----

type Tok = { t: 'id' | 'num' | 'str' | 'op'; v: string };

const OPS = ['->', '<<', '>>', '<=', '>=', '==', '!=', '&&', '||', ...'+-*/%<>&|^!~?:,()[]{}.'];

function tokenize(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (/[A-Za-z_$]/.test(c)) {
      const m = /^[A-Za-z_$][\w$]*/.exec(src.slice(i))!;
      out.push({ t: 'id', v: m[0] });
      i += m[0].length;
    } else if (/\d/.test(c)) {
      const m = /^(0[xX][0-9a-fA-F]+|\d+)[uUlL]*/.exec(src.slice(i))!;
      out.push({ t: 'num', v: m[1]! });
      i += m[0].length;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      let s = '';
      while (j < src.length && src[j] !== c) {
        if (src[j] === '\\') {
          const e = src[j + 1];
          s += e === 'n' ? '\n' : e === 't' ? '\t' : e === '0' ? '\0' : (e ?? '');
          j += 2;
        } else {
          s += src[j++];
        }
      }
      if (j >= src.length) throw new Unsupported('unterminated literal');
      out.push(c === '"' ? { t: 'str', v: s } : { t: 'num', v: String(s.charCodeAt(0) || 0) });
      i = j + 1;
    } else {
      const op = OPS.find((o) => src.startsWith(o, i));
      if (op === undefined) throw new Unsupported(`character ${c}`);
      out.push({ t: 'op', v: op });
      i += op.length;
    }
  }
  return out;
}

// ---- values ----

const num = (v: Value): bigint => {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'string') throw new Unsupported('string used as a number');
  throw new Unsupported('array used as a number');
};

function fromField(v: FieldValue | undefined): Value {
  if (typeof v === 'bigint' || typeof v === 'string') return v;
  if (typeof v === 'number') return BigInt(Math.trunc(v));
  if (typeof v === 'boolean') return v ? 1n : 0n;
  if (Array.isArray(v)) return v.map(fromField);
  throw new Unsupported('unknown field');
}

function field(ctx: Ctx, name: string): Value {
  const v = ctx.event.fields[name] ?? ctx.event.scopes?.['event.context']?.[name];
  if (v === undefined) throw new Unsupported(`no field ${name}`);
  return fromField(v);
}

// ---- expressions ----

const TYPE_WORDS = new Set([
  'unsigned',
  'signed',
  'int',
  'long',
  'short',
  'char',
  'void',
  'const',
  'struct',
  'enum',
  'union',
  'bool',
  '_Bool',
  'u8',
  'u16',
  'u32',
  'u64',
  's8',
  's16',
  's32',
  's64',
  'size_t',
  'ssize_t',
  'gfp_t',
  'pid_t',
  'dev_t',
  'uint',
  'ulong',
  'ushort',
]);
const isTypeWord = (w: string) => TYPE_WORDS.has(w) || /^__?[us]\d+$|_t$/.test(w);

const BINARY: Record<string, number> = {
  '||': 1,
  '&&': 2,
  '|': 3,
  '^': 4,
  '&': 5,
  '==': 6,
  '!=': 6,
  '<': 7,
  '>': 7,
  '<=': 7,
  '>=': 7,
  '<<': 8,
  '>>': 8,
  '+': 9,
  '-': 9,
  '*': 10,
  '/': 10,
  '%': 10,
};

class Parser {
  readonly toks: Tok[];
  i = 0;
  /** Inside the `{ value, "name" }` entries of a table. */
  tableDepth = 0;
  /** How many reads of the event or the symbols were parsed so far: an expression without any is a constant. */
  reads = 0;
  /** Table entries that are constants, whose tables are evaluated once. */
  readonly constants = new WeakSet<Expr>();
  /**
   * Expressions that only read a field (`REC->f`, `__get_str(f)`, or `(void *)REC->f`, marked `pointer`), by field
   * name: a conversion of one of these compiles to a direct read of the event (see {@link fieldPart}).
   */
  readonly fieldReads = new WeakMap<Expr, { readonly name: string; readonly pointer: boolean }>();
  /** The fields each argument reads, by argument, as {@link args} parsed them. */
  readonly argFields: Set<string>[] = [];
  /** Every field read so far, in parsing order. */
  private readonly names: string[] = [];
  constructor(toks: Tok[]) {
    this.toks = toks;
  }
  peek(o = 0): Tok | undefined {
    return this.toks[this.i + o];
  }
  isOp(v: string, o = 0): boolean {
    const t = this.peek(o);
    return t?.t === 'op' && t.v === v;
  }
  eat(v: string): void {
    if (!this.isOp(v)) throw new Unsupported(`expected ${v}`);
    this.i++;
  }
  args(): Expr[] {
    const out: Expr[] = [];
    while (this.i < this.toks.length) {
      const first = this.names.length;
      out.push(this.expr());
      this.argFields.push(new Set(this.names.slice(first)));
      if (this.i < this.toks.length) this.eat(',');
    }
    return out;
  }
  expr(): Expr {
    const cond = this.binary(1);
    if (!this.isOp('?')) return cond;
    this.i++;
    const a = this.expr();
    this.eat(':');
    const b = this.expr();
    return (c) => (truthy(cond(c)) ? a(c) : b(c));
  }
  binary(min: number): Expr {
    let left = this.unary();
    for (;;) {
      const t = this.peek();
      const prec = t?.t === 'op' ? BINARY[t.v] : undefined;
      if (prec === undefined || prec < min) return left;
      this.i++;
      const right = this.binary(prec + 1);
      const l = left;
      left = binaryOp(t!.v, l, right);
    }
  }
  /** A parenthesised type list followed by an operand: a cast. */
  castAhead(): number {
    if (!this.isOp('(')) return 0;
    let j = 1;
    let sawType = false;
    for (;;) {
      const t = this.peek(j);
      if (t === undefined) return 0;
      if (t.t === 'op' && t.v === ')') break;
      if (t.t === 'id' && (isTypeWord(t.v) || sawType)) sawType = true;
      else if (!(t.t === 'op' && t.v === '*' && sawType)) return 0;
      j++;
    }
    if (!sawType) return 0;
    const next = this.peek(j + 1);
    if (next === undefined || (next.t === 'op' && !['(', '!', '~', '-'].includes(next.v))) return 0;
    return j + 1;
  }
  unary(): Expr {
    const cast = this.castAhead();
    if (cast > 0) {
      const words = this.toks.slice(this.i + 1, this.i + cast - 1).map((t) => t.v);
      this.i += cast;
      const operand = this.unary();
      const bits = castBits(words);
      if (bits === undefined) return operand;
      const signed = !words.includes('unsigned') && !/^u\d|^__u|^u(int|long|short)$|size_t|gfp_t/.test(words.join(' '));
      const converted: Expr = (c) => {
        const v = operand(c);
        return typeof v === 'bigint' ? (signed ? BigInt.asIntN(bits, v) : BigInt.asUintN(bits, v)) : v;
      };
      const read = this.fieldReads.get(operand);
      if (read !== undefined && words.includes('*')) this.fieldReads.set(converted, { name: read.name, pointer: true });
      return converted;
    }
    const t = this.peek();
    if (t?.t === 'op' && ['!', '~', '-', '+'].includes(t.v)) {
      this.i++;
      const operand = this.unary();
      if (t.v === '!') return (c) => (truthy(operand(c)) ? 0n : 1n);
      if (t.v === '~') return (c) => ~num(operand(c));
      if (t.v === '-') return (c) => -num(operand(c));
      return operand;
    }
    return this.postfix();
  }
  postfix(): Expr {
    let e = this.primary();
    for (;;) {
      if (this.isOp('[')) {
        this.i++;
        const index = this.expr();
        this.eat(']');
        const base = e;
        e = (c) => {
          const arr = base(c);
          const k = Number(num(index(c)));
          if (!Array.isArray(arr) || k < 0 || k >= arr.length) throw new Unsupported('index');
          return arr[k]!;
        };
      } else {
        return e;
      }
    }
  }
  primary(): Expr {
    const t = this.peek();
    if (t === undefined) throw new Unsupported('unexpected end');
    this.i++;
    if (t.t === 'num') {
      const v = BigInt(t.v);
      return () => v;
    }
    if (t.t === 'str') {
      let s = t.v;
      while (this.peek()?.t === 'str') s += this.toks[this.i++]!.v;
      return () => s;
    }
    if (t.t === 'op' && t.v === '(') {
      const e = this.expr();
      this.eat(')');
      return e;
    }
    if (t.t === 'op' && t.v === '{') {
      // `{ value, "name" }` pairs of __print_flags/__print_symbolic.
      const bare = this.peek();
      const isBare = bare?.t === 'id' && this.isOp(',', 1);
      const reads = this.reads;
      this.tableDepth++;
      const v = this.expr();
      this.tableDepth--;
      this.eat(',');
      const s = this.expr();
      this.eat('}');
      let entry: Expr = (c) => [v(c), s(c)];
      if (isBare) {
        // trace-cmd gives a bare name a known value or -1 (which only a zero value matches, in flags).
        const known = KNOWN_TABLE_NAMES.get(bare.v) ?? -1n;
        entry = (c) => [c.style === 'kernel' ? v(c) : known, s(c)];
      }
      if (this.reads === reads) this.constants.add(entry);
      return entry;
    }
    if (t.t !== 'id') throw new Unsupported(`unexpected ${t.v}`);
    if (t.v === 'REC') {
      this.eat('->');
      const name = this.peek();
      if (name?.t !== 'id') throw new Unsupported('field name');
      this.i++;
      this.reads++;
      const read: Expr = (c) => field(c, name.v);
      this.fieldReads.set(read, { name: name.v, pointer: false });
      this.names.push(name.v);
      return read;
    }
    if (this.isOp('(')) return this.call(t.v);
    return this.identifier(t.v);
  }
  /**
   * A name the kernel left unexpanded (an enum constant, a variable such as `vmemmap_base`). The kernel knew its
   * value; trace-cmd takes it as the address of the kernel symbol of that name, 0 when there is none, and 0 inside
   * a flag or symbol table's values (where a bare name is looked up among {@link KNOWN_TABLE_NAMES} instead).
   */
  identifier(name: string): Expr {
    const inTable = this.tableDepth > 0;
    if (!inTable) this.reads++;
    // The address is the same for every event read with the same symbols.
    let symbols: Kallsyms | undefined;
    let address = 0n;
    return (c) => {
      if (c.style === 'kernel') throw new Unsupported(`identifier ${name}`);
      if (inTable) return 0n;
      if (c.kallsyms !== symbols) {
        symbols = c.kallsyms;
        address = symbols?.lookupName(name) ?? 0n;
      }
      return address;
    };
  }
  call(name: string): Expr {
    this.eat('(');
    const args: Expr[] = [];
    while (!this.isOp(')')) {
      if (name === 'sizeof') {
        // sizeof(type) only appears inside array helpers; its value is taken from the type name.
        const words: string[] = [];
        while (!this.isOp(')') && this.peek() !== undefined) words.push(this.toks[this.i++]!.v);
        const bytes = (castBits(words) ?? 64) / 8;
        args.push(() => BigInt(bytes));
        break;
      }
      const t = this.peek();
      const next = this.peek(1);
      if (/^__get_/.test(name) && t?.t === 'id' && next?.t === 'op' && (next.v === ')' || next.v === ',')) {
        // `__get_str(field)` and friends name the field bare.
        this.i++;
        this.reads++;
        const read: Expr = (c) => field(c, t.v);
        this.fieldReads.set(read, { name: t.v, pointer: false });
        this.names.push(t.v);
        args.push(read);
      } else {
        args.push(this.expr());
      }
      if (!this.isOp(')')) this.eat(',');
    }
    this.eat(')');
    return helper(name, args, this.constants);
  }
}

function castBits(words: readonly string[]): number | undefined {
  const w = words.filter((x) => x !== 'const' && x !== 'volatile');
  if (w.includes('*')) return 64;
  const s = w.join(' ');
  if (/\bchar\b|^[us]8$|^__[us]8$|bool/.test(s)) return 8;
  if (/\bshort\b|^[us]16$|^__[us]16$|^ushort$/.test(s)) return 16;
  if (/\blong\b|^[us]64$|^__[us]64$|size_t|gfp_t|^ulong$/.test(s)) return 64;
  if (/\bint\b|^unsigned$|^signed$|^[us]32$|^__[us]32$|pid_t|^uint$/.test(s)) return 32;
  return undefined;
}

function truthy(v: Value): boolean {
  if (typeof v === 'bigint') return v !== 0n;
  if (typeof v === 'string') return true;
  return true;
}

function binaryOp(op: string, l: Expr, r: Expr): Expr {
  switch (op) {
    case '&&':
      return (c) => (truthy(l(c)) && truthy(r(c)) ? 1n : 0n);
    case '||':
      return (c) => (truthy(l(c)) || truthy(r(c)) ? 1n : 0n);
    case '|':
      return (c) => num(l(c)) | num(r(c));
    case '^':
      return (c) => num(l(c)) ^ num(r(c));
    case '&':
      return (c) => num(l(c)) & num(r(c));
    case '==':
      return (c) => (num(l(c)) === num(r(c)) ? 1n : 0n);
    case '!=':
      return (c) => (num(l(c)) !== num(r(c)) ? 1n : 0n);
    case '<':
      return (c) => (num(l(c)) < num(r(c)) ? 1n : 0n);
    case '>':
      return (c) => (num(l(c)) > num(r(c)) ? 1n : 0n);
    case '<=':
      return (c) => (num(l(c)) <= num(r(c)) ? 1n : 0n);
    case '>=':
      return (c) => (num(l(c)) >= num(r(c)) ? 1n : 0n);
    // Shift counts as x86-64 takes them (the low 6 bits), as libtraceevent's C shifts do: a record's field may hold
    // any count, which as a BigInt shift would be a number too large to represent.
    case '<<':
      return (c) => BigInt.asUintN(64, num(l(c)) << (num(r(c)) & 63n));
    case '>>':
      return (c) => num(l(c)) >> (num(r(c)) & 63n);
    case '+':
      return (c) => num(l(c)) + num(r(c));
    case '-':
      return (c) => num(l(c)) - num(r(c));
    case '*':
      return (c) => num(l(c)) * num(r(c));
    default:
      return (c) => {
        const d = num(r(c));
        if (d === 0n) throw new Unsupported('division by zero');
        return op === '/' ? num(l(c)) / d : num(l(c)) % d;
      };
  }
}

/** The `{ value, "name" }` table of a flag or symbol helper; the `{ 0, NULL }` terminator some tables end with is dropped. */
function pairs(args: Expr[], c: Ctx): [bigint, string][] {
  const out: [bigint, string][] = [];
  for (const a of args) {
    const p = a(c);
    if (!Array.isArray(p)) throw new Unsupported('flag table');
    if (typeof p[1] === 'string') out.push([num(p[0]!), p[1]]);
    // trace-cmd keeps the `{ 0, NULL }` terminator, named by its number.
    else if (c.style === 'trace-cmd' && typeof p[1] === 'bigint') out.push([num(p[0]!), p[1].toString()]);
  }
  return out;
}

/**
 * `__print_flags` as trace-cmd prints it: table values are signed 64-bit; a positive one prints when all its bits are
 * set, a negative one (an unknown name) only for a zero value, and a zero one never; leftover bits follow in hex.
 */
function traceCmdFlags(value: bigint, delim: string, table: readonly (readonly [bigint, string])[]): string {
  let rest = BigInt.asUintN(64, value);
  let out = '';
  for (const [raw, label] of table) {
    const bits = BigInt.asIntN(64, raw);
    if (rest === 0n && bits < 0n) {
      out += label;
      break;
    }
    if (bits > 0n && (rest & bits) === bits) {
      out += out === '' ? label : `${delim}${label}`;
      rest &= ~bits;
    }
  }
  if (rest !== 0n) out += `${out === '' ? '' : delim}0x${rest.toString(16)}`;
  return out;
}

function hexBytes(v: Value, len: number | undefined): string[] {
  const arr = Array.isArray(v) ? v : typeof v === 'string' ? [...Buffer.from(v)].map(BigInt) : [];
  return arr.slice(0, len ?? arr.length).map((b) => (num(b) & 0xffn).toString(16).padStart(2, '0'));
}

/**
 * The `{ value, "name" }` table of a flag or symbol helper, for a context: evaluated once per print style when every
 * entry is a constant (as they nearly always are: the kernel expands its flag macros into long constant expressions).
 */
function table(entries: Expr[], constants: WeakSet<Expr>): (c: Ctx) => [bigint, string][] {
  if (!entries.every((e) => constants.has(e))) return (c) => pairs(entries, c);
  let kernel: [bigint, string][] | undefined;
  let traceCmd: [bigint, string][] | undefined;
  return (c) => (c.style === 'kernel' ? (kernel ??= pairs(entries, c)) : (traceCmd ??= pairs(entries, c)));
}

function helper(name: string, args: Expr[], constants: WeakSet<Expr>): Expr {
  switch (name) {
    case '__get_str':
    case '__get_rel_str':
    case '__get_dynamic_array':
    case '__get_rel_dynamic_array':
      return args[0]!;
    case '__get_dynamic_array_len':
    case '__get_rel_dynamic_array_len':
      return (c) => {
        const v = args[0]!(c);
        return BigInt(typeof v === 'string' ? Buffer.byteLength(v) + 1 : Array.isArray(v) ? v.length : 0);
      };
    case '__print_flags': {
      const flags = table(args.slice(2), constants);
      // With a constant table, a value's text is the same for every event with that delimiter (the kernel writes a
      // literal one): kept per value, as flag words repeat.
      const memo = args.slice(2).every((e) => constants.has(e)) ? new Map<bigint, string>() : undefined;
      let memoDelim: string | undefined;
      return (c) => {
        const value = num(args[0]!(c));
        const delim = args[1]!(c);
        if (typeof delim !== 'string') throw new Unsupported('delimiter');
        if (memo !== undefined && c.style === 'trace-cmd') {
          if (delim !== memoDelim) {
            memo.clear();
            memoDelim = delim;
          }
          const known = memo.get(value);
          if (known !== undefined) return known;
        }
        const entries = flags(c);
        if (c.style === 'trace-cmd') {
          const text = traceCmdFlags(value, delim, entries);
          if (memo !== undefined && memo.size < 1 << 12) memo.set(value, text);
          return text;
        }
        const out: string[] = [];
        let rest = value;
        for (const [bits, label] of entries) {
          if (bits === 0n ? value === 0n : (rest & bits) === bits) {
            out.push(label);
            rest &= ~bits;
            if (bits === 0n) break;
          }
        }
        if (rest !== 0n) out.push(`0x${rest.toString(16)}`);
        return out.join(delim);
      };
    }
    case '__print_symbolic': {
      const symbols = table(args.slice(1), constants);
      return (c) => {
        const value = num(args[0]!(c));
        // trace-cmd compares as signed 64-bit numbers and prints a miss as unsigned hex.
        const key = c.style === 'trace-cmd' ? BigInt.asIntN(64, value) : value;
        const hit = symbols(c).find(([v]) => (c.style === 'trace-cmd' ? BigInt.asIntN(64, v) : v) === key);
        return hit !== undefined
          ? hit[1]
          : `0x${(c.style === 'trace-cmd' ? BigInt.asUintN(64, value) : value).toString(16)}`;
      };
    }
    case '__print_hex':
      return (c) => hexBytes(args[0]!(c), Number(num(args[1]!(c)))).join(' ');
    case '__print_hex_str':
      return (c) => hexBytes(args[0]!(c), Number(num(args[1]!(c)))).join('');
    case '__print_array':
      return (c) => {
        const arr = args[0]!(c);
        const count = Number(num(args[1]!(c)));
        if (!Array.isArray(arr)) throw new Unsupported('array');
        return `{${arr
          .slice(0, count)
          .map((x) => `0x${BigInt.asUintN(64, num(x)).toString(16)}`)
          .join(',')}}`;
      };
    case 'is_signed_type':
      return () => 0n;
    case '__builtin_expect':
      // A branch hint (IS_ERR_VALUE in mmap's events): the value is its first argument.
      if (args.length !== 2) throw new Unsupported('__builtin_expect takes two arguments');
      return args[0]!;
    default:
      throw new Unsupported(`helper ${name}`);
  }
}

// ---- the format string ----

interface Spec {
  readonly literal?: string;
  readonly flags: string;
  readonly width?: number;
  readonly precision?: number;
  /** `*` width or precision: taken from the argument before the value. */
  readonly starWidth?: boolean;
  readonly starPrecision?: boolean;
  readonly length: string;
  readonly conv: string;
  /** %p extension (`S`, `s`, `F`, `f`, `B`, `U`, `Ub`, `M`, `I4`...). */
  readonly ext: string;
}

function parseSpecs(fmt: string): Spec[] {
  const out: Spec[] = [];
  let lit = '';
  const re = /%([-+ #0]*)(\d+|\*)?(?:\.(\d+|\*))?(hh|h|ll|l|z|j|t|L)?([diouxXcspfeEgGn%])/y;
  for (let i = 0; i < fmt.length; ) {
    if (fmt[i] !== '%') {
      lit += fmt[i++];
      continue;
    }
    re.lastIndex = i;
    const m = re.exec(fmt);
    if (m === null) throw new Unsupported(`conversion at ${i}`);
    i = re.lastIndex;
    if (m[5] === '%') {
      lit += '%';
      continue;
    }
    let ext = '';
    if (m[5] === 'p') {
      // Symbols (%pS %ps %pF %pf %pB), UUIDs (%pU with its b/B/l/L variant), MACs (%pM, %pm) and IPv4 (%pI4, %pi4).
      const e = /^(?:[SsFfB]|U[bBlL]?|[Mm]|[Ii]4)/.exec(fmt.slice(i));
      if (e !== null) {
        ext = e[0];
        i += e[0].length;
      }
    }
    if (lit !== '') out.push({ literal: lit, flags: '', length: '', conv: '', ext: '' });
    lit = '';
    out.push({
      flags: m[1]!,
      ...(m[2] === '*' ? { starWidth: true } : m[2] !== undefined ? { width: Number(m[2]) } : {}),
      ...(m[3] === '*' ? { starPrecision: true } : m[3] !== undefined ? { precision: Number(m[3]) } : {}),
      length: m[4] ?? '',
      conv: m[5]!,
      ext,
    });
  }
  if (lit !== '') out.push({ literal: lit, flags: '', length: '', conv: '', ext: '' });
  return out;
}

function pad(s: string, spec: Spec, numeric: boolean): string {
  if (spec.width === undefined || s.length >= spec.width) return s;
  if (spec.flags.includes('-')) return s.padEnd(spec.width);
  if (numeric && spec.flags.includes('0')) {
    const neg = s.startsWith('-');
    return (neg ? '-' : '') + (neg ? s.slice(1) : s).padStart(spec.width - (neg ? 1 : 0), '0');
  }
  return s.padStart(spec.width);
}

function bitsOf(spec: Spec): number {
  // The kernel's vsnprintf reads `L` as `ll` (mce_record prints status and addr with %Lx).
  return spec.length === 'll' ||
    spec.length === 'L' ||
    spec.length === 'l' ||
    spec.length === 'z' ||
    spec.length === 'j' ||
    spec.length === 't'
    ? 64
    : spec.length === 'h'
      ? 16
      : spec.length === 'hh'
        ? 8
        : 32;
}

/** The byte-array forms of %p: UUIDs, MAC and IPv4 addresses. */
function bytesText(ext: string, b: number[]): string {
  const hex = (x: number) => x.toString(16).padStart(2, '0');
  switch (ext[0]) {
    case 'U': {
      if (b.length < 16) throw new Unsupported('UUID of fewer than 16 bytes');
      // %pUl/%pUL store the first three groups little-endian.
      const order = ext[1] === 'l' || ext[1] === 'L' ? [3, 2, 1, 0, 5, 4, 7, 6] : [0, 1, 2, 3, 4, 5, 6, 7];
      const h = [...order, 8, 9, 10, 11, 12, 13, 14, 15].map((k) => hex(b[k]!));
      const text = `${h.slice(0, 4).join('')}-${h.slice(4, 6).join('')}-${h.slice(6, 8).join('')}-${h.slice(8, 10).join('')}-${h.slice(10).join('')}`;
      return ext[1] === 'B' || ext[1] === 'L' ? text.toUpperCase() : text;
    }
    case 'M':
    case 'm':
      if (b.length < 6) throw new Unsupported('MAC of fewer than 6 bytes');
      return b
        .slice(0, 6)
        .map(hex)
        .join(ext === 'm' ? '' : ':');
    case 'I':
    case 'i':
      if (b.length < 4) throw new Unsupported('IPv4 of fewer than 4 bytes');
      return b.slice(0, 4).join('.');
    default:
      throw new Unsupported(`%p${ext} on an array`);
  }
}

function render(
  spec: Spec,
  v: Value,
  kallsyms: Kallsyms | undefined,
  style: PrintStyle,
  printk: PrintkStrings | undefined,
): string {
  switch (spec.conv) {
    case 's': {
      // A number here is a pointer field (a `const char *` into the kernel's printk strings).
      const s =
        typeof v === 'string'
          ? v
          : Array.isArray(v)
            ? ''
            : typeof v === 'bigint'
              ? (printk?.get(BigInt.asUintN(64, v)) ?? BigInt.asUintN(64, v).toString(16))
              : String(v);
      return pad(spec.precision !== undefined ? s.slice(0, spec.precision) : s, spec, false);
    }
    case 'c':
      return pad(String.fromCharCode(Number(BigInt.asUintN(8, num(v)))), spec, false);
    case 'p': {
      if (Array.isArray(v) && spec.ext !== '')
        return pad(
          bytesText(
            spec.ext,
            v.map((b) => Number(num(b) & 0xffn)),
          ),
          spec,
          false,
        );
      const a = BigInt.asUintN(64, num(v));
      const withOffset = spec.ext === 'S' || spec.ext === 'F' || spec.ext === 'B';
      // trace-cmd prints plain pointers with C's %p (NULL as `(nil)`, no width), and `%pS` with `+0x0` at a
      // function's start.
      if (style === 'trace-cmd' && spec.ext === '') return a === 0n ? '(nil)' : `0x${a.toString(16)}`;
      if (spec.ext !== '' && kallsyms !== undefined) {
        const sym = kallsyms.lookup(a);
        if (sym !== undefined) {
          if (style === 'kernel') {
            const where = withOffset ? `+0x${sym.offset.toString(16)}/0x${(sym.size ?? 0n).toString(16)}` : '';
            return pad(`${sym.name}${where}${sym.module !== undefined ? ` [${sym.module}]` : ''}`, spec, false);
          }
          return pad(withOffset ? `${sym.name}+0x${sym.offset.toString(16)}` : sym.name, spec, false);
        }
      }
      // The kernel prints plain pointers zero-padded to the pointer width (64-bit here) and without 0x.
      if (style === 'kernel')
        return pad(spec.ext !== '' ? `0x${a.toString(16)}` : a.toString(16).padStart(16, '0'), spec, false);
      return pad(`0x${a.toString(16)}`, spec, false);
    }
    case 'd':
    case 'i':
      return pad(BigInt.asIntN(bitsOf(spec), num(v)).toString(), spec, true);
    case 'u':
      return pad(BigInt.asUintN(bitsOf(spec), num(v)).toString(), spec, true);
    case 'x':
    case 'X':
    case 'o': {
      const n = BigInt.asUintN(bitsOf(spec), num(v));
      let s = n.toString(spec.conv === 'o' ? 8 : 16);
      if (spec.conv === 'X') s = s.toUpperCase();
      if (spec.precision !== undefined) s = s.padStart(spec.precision, '0');
      if (spec.flags.includes('#') && n !== 0n) s = `${spec.conv === 'o' ? '0' : spec.conv === 'X' ? '0X' : '0x'}${s}`;
      return pad(s, spec, true);
    }
    default:
      throw new Unsupported(`%${spec.conv}`);
  }
}

/**
 * One conversion of a print format in trace-cmd's style, compiled for its event class: writes its text.
 * @throws Unsupported when the event's values are beyond the evaluator.
 */
type Part = (
  event: TraceEvent,
  out: ByteOut,
  kallsyms: Kallsyms | undefined,
  printk: PrintkStrings | undefined,
) => void;

/** A conversion's text as the step-by-step evaluator gives it, for trace-cmd's style. */
type PartText = (event: TraceEvent, kallsyms: Kallsyms | undefined, printk: PrintkStrings | undefined) => string;

/**
 * A print format as literal bytes and compiled conversions, for trace-cmd's style; undefined when a `*` width or
 * precision takes its value from an argument (the general evaluator handles those).
 */
function traceCmdParts(
  specs: readonly Spec[],
  args: readonly Expr[],
  parser: Parser,
): (Uint8Array | Part)[] | undefined {
  if (specs.some((s) => s.starWidth || s.starPrecision)) return undefined;
  let a = 0;
  return specs.map((spec) => {
    if (spec.literal !== undefined) return utf8(spec.literal);
    const fields = parser.argFields[a]!;
    const arg = args[a++]!;
    const text: PartText = (event, kallsyms, printk) =>
      render(spec, arg({ event, kallsyms, style: 'trace-cmd' }), kallsyms, 'trace-cmd', printk);
    const general: Part = (event, out, kallsyms, printk) => out.text(text(event, kallsyms, printk));
    const read = parser.fieldReads.get(arg);
    const direct = read !== undefined && (!read.pointer || spec.conv === 'p');
    const part = direct ? fieldPart(spec, fieldGetter(read.name), general) : undefined;
    if (part !== undefined) return part;
    // An argument of one field (`REC->flags ? __print_flags(REC->flags, ...) : "none"`, `%pS` of a call site) prints
    // the same text for the same value: kept per value, as bytes.
    const [only, ...others] = fields;
    return only !== undefined && others.length === 0 ? perValue(fieldGetter(only), text, general) : general;
  });
}

/**
 * A part whose text depends only on one field's value (and the symbols and printk strings, the same for a whole
 * reading): its bytes are kept per integer value, for as many values as {@link PER_VALUE_TEXTS}.
 */
function perValue(get: (event: TraceEvent) => FieldValue | undefined, text: PartText, general: Part): Part {
  let symbols: Kallsyms | undefined;
  let strings: PrintkStrings | undefined;
  const kept = new KeptTexts(PER_VALUE_TEXTS);
  const key = new IntKey();
  return (event, out, kallsyms, printk) => {
    if (!key.of(get(event))) return general(event, out, kallsyms, printk);
    if (kallsyms !== symbols || printk !== strings) {
      symbols = kallsyms;
      strings = printk;
      kept.clear();
    }
    if (!kept.write(key, out)) kept.keep(key, text(event, kallsyms, printk), out);
  };
}

/** How many values' texts {@link perValue} keeps per part. */
const PER_VALUE_TEXTS = 1 << 16;

/**
 * Reads one field of an event, as {@link field} does. Compiled per field of each class, so that the property load
 * sees one shape of object (the class decoder's) rather than every class's.
 */
function fieldGetter(name: string): (event: TraceEvent) => FieldValue | undefined {
  const key = JSON.stringify(name);
  return new Function(
    'e',
    `const v = e.fields[${key}]; return v !== undefined ? v : e.scopes?.["event.context"]?.[${key}];`,
  ) as (event: TraceEvent) => FieldValue | undefined;
}

const I64_MAX = (1n << 63n) - 1n;
const U64_MAX = (1n << 64n) - 1n;
const NIL = utf8('(nil)');
const HEX_PREFIX = utf8('0x');

/**
 * A conversion of a field value written as {@link render} writes it in trace-cmd's style, without its general
 * steps (a BigInt per number, the expression's closures, a string per value) for the values that allow it: integers
 * that fit their conversion, and strings. Other values take `general`. Undefined for conversions this does not cover.
 */
function fieldPart(spec: Spec, get: (event: TraceEvent) => FieldValue | undefined, general: Part): Part | undefined {
  const bits = bitsOf(spec);
  const plain = spec.width === undefined && spec.precision === undefined;
  switch (spec.conv) {
    case 'd':
    case 'i':
      if (!plain || spec.flags !== '' || bits < 32) return undefined;
      return (event, out, kallsyms, printk) => {
        const v = get(event);
        if (typeof v === 'number' && Number.isSafeInteger(v)) out.int(bits === 32 ? v | 0 : v);
        else if (typeof v === 'bigint' && bits === 64 && v <= I64_MAX && v >= -I64_MAX) out.bigint(v);
        else general(event, out, kallsyms, printk);
      };
    case 'u':
      if (!plain || spec.flags !== '' || bits < 32) return undefined;
      return (event, out, kallsyms, printk) => {
        const v = get(event);
        if (typeof v === 'number' && Number.isSafeInteger(v) && (bits === 32 || v >= 0))
          out.uint(bits === 32 ? v >>> 0 : v);
        else if (typeof v === 'bigint' && bits === 64 && v >= 0n && v <= U64_MAX) out.bigint(v);
        else general(event, out, kallsyms, printk);
      };
    case 'x': {
      if (!plain || (spec.flags !== '' && spec.flags !== '#') || bits < 32) return undefined;
      const prefix = spec.flags === '#';
      return (event, out, kallsyms, printk) => {
        const v = get(event);
        if (typeof v === 'number' && Number.isSafeInteger(v) && (bits === 32 || v >= 0)) {
          const n = bits === 32 ? v >>> 0 : v;
          if (prefix && n !== 0) out.raw(HEX_PREFIX);
          out.hex(n);
        } else if (typeof v === 'bigint' && bits === 64 && v > 0n && v <= U64_MAX) {
          if (prefix) out.raw(HEX_PREFIX);
          out.hexBigint(v);
        } else general(event, out, kallsyms, printk);
      };
    }
    case 's':
      if (!plain) return undefined;
      return (event, out, kallsyms, printk) => {
        const v = get(event);
        if (typeof v === 'string') out.text(v);
        else general(event, out, kallsyms, printk);
      };
    case 'p': {
      if (spec.ext === '')
        return (event, out, kallsyms, printk) => {
          const v = get(event);
          if (v === 0 || v === 0n) out.raw(NIL);
          else if (typeof v === 'number' && Number.isSafeInteger(v) && v > 0) {
            out.raw(HEX_PREFIX);
            out.hex(v);
          } else if (typeof v === 'bigint' && v > 0n) {
            out.raw(HEX_PREFIX);
            out.hexBigint(v);
          } else general(event, out, kallsyms, printk);
        };
      // Symbols (%pS) are kept per address by the caller.
      return undefined;
    }
    default:
      return undefined;
  }
}

/**
 * Writes an event's print format in trace-cmd's style after what `out` holds; false, having written nothing, when
 * the event's arguments cannot be evaluated (callers then print its fields).
 */
export type PrintWriter = (event: TraceEvent, out: ByteOut, kallsyms?: Kallsyms, printk?: PrintkStrings) => boolean;

/**
 * Compiles an event class's `print fmt` into a {@link PrintWriter}: literal text as bytes, conversions of one field
 * written from its value, texts that depend on one field's value kept per value. Undefined when the class has no
 * format or one outside this evaluator.
 */
export function compilePrintWriter(eventClass: EventClass): PrintWriter | undefined {
  const compiled = compile(eventClass);
  return compiled === undefined ? undefined : writerOf(compiled);
}

function writerOf({ general, parts }: Compiled): PrintWriter {
  if (parts === undefined) {
    return (event, out, kallsyms, printk) => {
      const text = general(event, kallsyms, 'trace-cmd', printk);
      if (text === undefined) return false;
      out.text(text);
      return true;
    };
  }
  // Generated per class, as the record decoders are: each part is called from a site of its own (which the
  // compiler can inline), and short literals are stored byte by byte. The source holds indices and byte values only.
  const names: string[] = [];
  const values: unknown[] = [];
  let body = '';
  for (const part of parts) {
    const name = `p${names.length}`;
    if (!(part instanceof Uint8Array)) body += `${name}(event, out, kallsyms, printk);\n`;
    else if (part.length > SHORT_LITERAL) body += `out.raw(${name});\n`;
    else {
      const stores = [...part].map((b, k) => `b[a + ${k}] = ${b};`).join(' ');
      body += `out.reserve(${part.length}); b = out.bytes; a = out.length; ${stores} out.length = a + ${part.length};\n`;
    }
    names.push(name);
    values.push(part);
  }
  const source = `return function writePrintFormat(event, out, kallsyms, printk) {
    const mark = out.length;
    let b, a;
    try {
      ${body}
    } catch (e) {
      if (e instanceof Unsupported) {
        out.length = mark;
        return false;
      }
      throw e;
    }
    return true;
  };`;
  return new Function('Unsupported', ...names, source)(Unsupported, ...values) as PrintWriter;
}

/** Literals of at most this many bytes are stored byte by byte in a format's writer. */
const SHORT_LITERAL = 16;

/**
 * Compiles an event class's `print fmt`. Returns undefined when the class has none or uses constructs outside this
 * evaluator; the formatter itself returns undefined for an event whose arguments cannot be evaluated. trace-cmd's
 * style is the text {@link compilePrintWriter} writes.
 */
export function compilePrintFormat(eventClass: EventClass): PrintFormatter | undefined {
  const compiled = compile(eventClass);
  if (compiled === undefined) return undefined;
  const write = writerOf(compiled);
  const out = new ByteOut(256);
  return (event, kallsyms, style = 'trace-cmd', printk) => {
    if (style !== 'trace-cmd') return compiled.general(event, kallsyms, style, printk);
    out.length = 0;
    return write(event, out, kallsyms, printk) ? out.toString() : undefined;
  };
}

/**
 * The same format evaluated step by step for every style, without trace-cmd's compiled conversions: what those are
 * tested against.
 */
export function interpretPrintFormat(eventClass: EventClass): PrintFormatter | undefined {
  return compile(eventClass)?.general;
}

/** A class's format: its step-by-step evaluator, and its parts compiled for trace-cmd's style where they can be. */
interface Compiled {
  readonly general: PrintFormatter;
  readonly parts: (Uint8Array | Part)[] | undefined;
}

function compile(eventClass: EventClass): Compiled | undefined {
  const text = eventClass.printFormat;
  if (text === undefined) return undefined;
  try {
    const toks = tokenize(text);
    let k = 0;
    let fmt = '';
    while (toks[k]?.t === 'str') fmt += toks[k++]!.v;
    if (k === 0) return undefined;
    if (k < toks.length && !(toks[k]!.t === 'op' && toks[k]!.v === ',')) return undefined;
    const parser = new Parser(toks.slice(k + 1));
    const args = k < toks.length ? parser.args() : [];
    const specs = parseSpecs(fmt);
    const needed = specs.reduce(
      (n, s) => n + (s.literal !== undefined ? 0 : 1 + (s.starWidth ? 1 : 0) + (s.starPrecision ? 1 : 0)),
      0,
    );
    if (needed !== args.length) return undefined;
    const general: PrintFormatter = (event, kallsyms, style = 'trace-cmd', printk) => {
      const ctx: Ctx = { event, kallsyms, style };
      let out = '';
      let a = 0;
      try {
        for (const s of specs) {
          if (s.literal !== undefined) {
            out += s.literal;
            continue;
          }
          let spec = s;
          if (s.starWidth || s.starPrecision) {
            // C takes `*` values as ints; a negative width means left-justified, a negative precision none.
            const width = s.starWidth ? Number(BigInt.asIntN(32, num(args[a++]!(ctx)))) : s.width;
            const precision = s.starPrecision ? Number(BigInt.asIntN(32, num(args[a++]!(ctx)))) : s.precision;
            spec = {
              ...s,
              flags: width !== undefined && width < 0 ? `${s.flags}-` : s.flags,
              ...(width !== undefined ? { width: Math.abs(width) } : {}),
              ...(precision !== undefined && precision >= 0 ? { precision } : {}),
            };
            if (precision !== undefined && precision < 0) delete (spec as { precision?: number }).precision;
          }
          out += render(spec, args[a++]!(ctx), kallsyms, style, printk);
        }
      } catch (e) {
        if (e instanceof Unsupported) return undefined;
        throw e;
      }
      return out;
    };
    return { general, parts: traceCmdParts(specs, args, parser) };
  } catch (e) {
    if (e instanceof Unsupported) return undefined;
    throw e;
  }
}
