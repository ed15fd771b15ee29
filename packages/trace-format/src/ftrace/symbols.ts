/** `/proc/kallsyms` and `saved_cmdlines`: what turns addresses and pids into names for display and filtering. */

/** Whether this machine stores a 64-bit integer's low word first. */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** A character's class in the scan: a hex digit's value, or one of these. */
const BLANK = 16;
const NEWLINE = 17;
const OTHER = 18;

/** The class of each character code below 256. */
const CLASS = Uint8Array.from({ length: 256 }, (_, c) => {
  if (c === 10) return NEWLINE;
  if (isSpace(c)) return BLANK;
  const lower = c | 0x20;
  if (c >= 48 && c <= 57) return c - 48;
  return lower >= 97 && lower <= 102 ? lower - 87 : OTHER;
});

/** 1 for the type letters of functions: `t`, `T` and their weak forms `w`, `W`. */
const FUNCTION_TYPE = Uint8Array.from({ length: 256 }, (_, c) => ('tTwW'.includes(String.fromCharCode(c)) ? 1 : 0));

/** Symbols text: a string's code units, or bytes as latin1 characters. */
type Units = Uint8Array | Uint16Array;

/**
 * Kernel symbols sorted by address: `%pS`-style `name+0xoff` lookups over functions, and the kernel's
 * `kallsyms_lookup_name` / `kallsyms_lookup_size_offset` over every kept symbol. A symbol's name and module are read
 * from the parsed text when looked up: a trace names few of a kernel's functions.
 */
export class Kallsyms {
  readonly #addrs: BigUint64Array;
  /** The parsed text: a string, or bytes read as latin1. */
  readonly #text: string | Uint8Array;
  /** Where each kept symbol's name starts in `#text`. */
  readonly #nameAt: Int32Array;
  /** Indices of the text symbols, or undefined when every kept symbol is text. */
  readonly #textIndex: Uint32Array | undefined;
  readonly #textAddrs: BigUint64Array;
  #nameScans = 0;
  #byName: Map<string, bigint> | undefined;
  readonly #found = new Map<
    bigint,
    Readonly<{ name: string; offset: bigint; size?: bigint; module?: string }> | undefined
  >();

  private constructor(
    addrs: BigUint64Array,
    text: string | Uint8Array,
    nameAt: Int32Array,
    textIndex: Uint32Array | undefined,
  ) {
    this.#addrs = addrs;
    this.#text = text;
    this.#nameAt = nameAt;
    this.#textIndex = textIndex;
    this.#textAddrs = textIndex === undefined ? addrs : BigUint64Array.from(textIndex, (i) => addrs[i]!);
  }

  /**
   * Parses `ADDRESS TYPE NAME [MODULE]` lines (fields apart by whitespace, a line from its first byte, a module in
   * brackets after the name); lines that do not fit (or have address 0, or one beyond 64 bits) are skipped. `text` is
   * a string or the file's bytes, each byte one character as `readFileSync(path, 'latin1')` reads it (bytes spare
   * decoding a whole kernel's symbols to name the few looked up; they are kept, not copied, so must not change). `types`: `text` (the default) keeps functions only
   * (types `t`, `T`, `w`, `W`), all that `%pS` needs; `all` keeps every symbol, as the kernel's own name and size
   * lookups (and so `.function` filters) see them.
   */
  static parse(text: string | Uint8Array, options: { readonly types?: 'text' | 'all' } = {}): Kallsyms {
    const units = typeof text === 'string' ? codeUnits(text) : text;
    const { count: n, words, nameAt, isFn, texts, sorted } = scan(units, options.types === 'all');
    const inFile = new BigUint64Array(words.buffer, 0, n);
    let order: number[] | undefined;
    if (!sorted) {
      // /proc/kallsyms is nearly sorted already; a stable sort keeps file order among equal addresses.
      const hi = LITTLE_ENDIAN ? 1 : 0;
      const lo = 1 - hi;
      order = Array.from({ length: n }, (_, i) => i);
      order.sort((a, b) => words[2 * a + hi]! - words[2 * b + hi]! || words[2 * a + lo]! - words[2 * b + lo]! || a - b);
    }
    // Sorted already, the columns are kept as scanned, spare room and all: copying them costs more than the room.
    const addrs = order === undefined ? inFile : BigUint64Array.from(order, (i) => inFile[i]!);
    const names = order === undefined ? nameAt : Int32Array.from(order, (i) => nameAt[i]!);
    const fns = order === undefined ? isFn : Uint8Array.from(order, (i) => isFn[i]!);
    let textIndex: Uint32Array | undefined;
    if (texts < n) {
      textIndex = new Uint32Array(texts);
      for (let i = 0, j = 0; i < n; i++) if (fns[i]) textIndex[j++] = i;
    }
    return new Kallsyms(addrs, text, names, textIndex);
  }

  /** How many symbols were kept. */
  get size(): number {
    return this.#addrs.length;
  }

  /** The character code at `at` of the parsed text, -1 past its end. */
  #code(at: number): number {
    const text = this.#text;
    return at >= text.length ? -1 : typeof text === 'string' ? text.charCodeAt(at) : text[at]!;
  }

  #slice(from: number, to: number): string {
    const text = this.#text;
    return typeof text === 'string'
      ? text.slice(from, to)
      : Buffer.from(text.buffer, text.byteOffset + from, to - from).toString('latin1');
  }

  /** Where symbol `i`'s name ends: at the first whitespace after its start. */
  #nameEnd(i: number): number {
    let at = this.#nameAt[i]!;
    for (let c = this.#code(at); c >= 0 && !isSpace(c); c = this.#code(++at));
    return at;
  }

  #name(i: number): string {
    return this.#slice(this.#nameAt[i]!, this.#nameEnd(i));
  }

  /** Symbol `i`'s module: blanks after its name, then `[`, non-blanks, `]` (the last of the run, not the first). */
  #module(i: number): string | undefined {
    const nameEnd = this.#nameEnd(i);
    let at = nameEnd;
    while (isBlank(this.#code(at))) at++;
    if (at === nameEnd || this.#code(at) !== 0x5b) return undefined;
    let close = -1;
    for (let run = at + 1, c = this.#code(run); c >= 0 && !isSpace(c); c = this.#code(++run)) {
      if (c === 0x5d) close = run;
    }
    return close > at + 1 ? this.#slice(at + 1, close) : undefined;
  }

  #nameIs(i: number, name: string): boolean {
    const start = this.#nameAt[i]!;
    if (name === '') return false;
    // A name ends at a blank: a query with one in it is no name, whatever text follows the name on its line.
    for (let k = 0; k < name.length; k++) {
      const c = this.#code(start + k);
      if (c !== name.charCodeAt(k) || isSpace(c)) return false;
    }
    const after = this.#code(start + name.length);
    return after < 0 || isSpace(after);
  }

  /**
   * The function containing `addr`: its name, the offset into it, its size (up to the next function, as the kernel
   * reckons it; undefined for the last one) and module. Undefined below the first function.
   */
  lookup(addr: bigint): Readonly<{ name: string; offset: bigint; size?: bigint; module?: string }> | undefined {
    // Traces name the same call sites over and over: each address is searched once.
    const known = this.#found.get(addr);
    if (known !== undefined || this.#found.has(addr)) return known;
    const a = this.#textAddrs;
    const at = floor(a, addr);
    let sym: { name: string; offset: bigint; size?: bigint; module?: string } | undefined;
    if (at >= 0) {
      const i = this.#textIndex === undefined ? at : this.#textIndex[at]!;
      const next = a[at + 1];
      const module = this.#module(i);
      sym = {
        name: this.#name(i),
        offset: addr - a[at]!,
        ...(next !== undefined ? { size: next - a[at]! } : {}),
        ...(module !== undefined ? { module } : {}),
      };
    }
    if (this.#found.size >= 1 << 16) this.#found.clear();
    this.#found.set(addr, sym);
    return sym;
  }

  /** `name+0xoff` as `%pS` prints it, `name` when exact, or undefined when unknown. */
  format(addr: bigint): string | undefined {
    const s = this.lookup(addr);
    if (s === undefined) return undefined;
    return s.offset === 0n ? s.name : `${s.name}+0x${s.offset.toString(16)}`;
  }

  /**
   * The address of `name` as `kallsyms_lookup_name` finds it: the lowest among duplicates, a core kernel symbol
   * before a module's. Undefined when no kept symbol has that name.
   */
  lookupName(name: string): bigint | undefined {
    // A print format names a symbol or two (`vmemmap_base`): scanned for, until enough names are asked for that a
    // map of every name costs less.
    const n = this.#addrs.length;
    if (this.#byName === undefined && this.#nameScans < 8) {
      this.#nameScans++;
      let module: bigint | undefined;
      for (let i = 0; i < n; i++) {
        if (!this.#nameIs(i, name)) continue;
        if (this.#module(i) === undefined) return this.#addrs[i]!;
        module ??= this.#addrs[i]!;
      }
      return module;
    }
    if (this.#byName === undefined) {
      // Addresses ascend, so the first one recorded for a name is its lowest; module symbols go in second.
      const map = new Map<string, bigint>();
      for (const core of [true, false]) {
        for (let i = 0; i < n; i++) {
          if ((this.#module(i) === undefined) !== core) continue;
          const name = this.#name(i);
          if (!map.has(name)) map.set(name, this.#addrs[i]!);
        }
      }
      this.#byName = map;
    }
    return this.#byName.get(name);
  }

  /**
   * The extent of the symbol containing `addr` as `kallsyms_lookup_size_offset` reckons it: from its address to the
   * next higher address of any kept symbol. Undefined below the first symbol and within the last, whose end is unknown.
   */
  lookupRange(addr: bigint): { start: bigint; end: bigint } | undefined {
    const a = this.#addrs;
    const at = floor(a, addr);
    // `floor` lands on the last of equal addresses, so the next one is higher.
    const end = at < 0 ? undefined : a[at + 1];
    return end === undefined ? undefined : { start: a[at]!, end };
  }
}

/** Whether a character code is whitespace, as `\s` matches it. */
function isSpace(c: number): boolean {
  if (c > 32 && c < 160) return false;
  return (
    c === 32 ||
    (c >= 9 && c <= 13) ||
    c === 160 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/** Whether a character code is whitespace other than a newline (a line's end is never inside it); -1 is not. */
function isBlank(c: number): boolean {
  return c >= 0 && c !== 10 && isSpace(c);
}

/** The class of `units[at]`: {@link NEWLINE} past the end, as the text's last line ends there. */
function classAt(units: Units, at: number): number {
  if (at >= units.length) return NEWLINE;
  const c = units[at]!;
  return c < 256 ? CLASS[c]! : wideClass(c);
}

/** The class of a character code above 255. */
function wideClass(c: number): number {
  return isSpace(c) ? BLANK : OTHER;
}

/** A string's UTF-16 code units, copied at once rather than a character at a time. */
function codeUnits(text: string): Uint16Array {
  // A buffer of its own (never the pool's, at an odd offset), the units in this machine's order.
  const bytes = Buffer.allocUnsafeSlow(2 * text.length);
  bytes.write(text, 'utf16le');
  if (!LITTLE_ENDIAN) bytes.swap16();
  return new Uint16Array(bytes.buffer, bytes.byteOffset, text.length);
}

/** The symbols a scan keeps, in the text's order; an address as a pair of words in the machine's order. */
interface Scanned {
  readonly count: number;
  readonly words: Uint32Array;
  readonly nameAt: Int32Array;
  /** 1 for a function. */
  readonly isFn: Uint8Array;
  readonly texts: number;
  readonly sorted: boolean;
}

/**
 * The symbol lines of `units` (see {@link Kallsyms.parse}), scanned by code units into typed columns: a regular
 * expression, a bigint and strings per line cost several times more over a whole kernel's symbols, and a string's
 * characters cost more to read than an array's. A function of its own, so that the loop compiled while it runs is not
 * thrown away when the code after it first runs.
 */
function scan(units: Units, all: boolean): Scanned {
  const length = units.length;
  // A kernel's symbol lines are longer than 32 characters: the columns seldom grow.
  let capacity = Math.max(64, length >>> 5);
  let words = new Uint32Array(2 * capacity);
  let nameAt = new Int32Array(capacity);
  let isFn = new Uint8Array(capacity);
  const low = LITTLE_ENDIAN ? 0 : 1;
  let n = 0;
  let texts = 0;
  let sorted = true;
  let at = 0;
  for (let line = 0; line < length; line = at + 1) {
    at = line;
    // The address: hex digits, then blanks.
    let hi = 0;
    let lo = 0;
    let wide = false;
    let k = NEWLINE;
    for (; at < length; at++) {
      const c = units[at]!;
      k = c < 256 ? CLASS[c]! : wideClass(c);
      if (k >= BLANK) break;
      if (hi >>> 28 !== 0) wide = true;
      hi = (hi << 4) | (lo >>> 28);
      lo = (lo << 4) | k;
    }
    if (at === length) k = NEWLINE;
    if (at > line && k === BLANK) {
      while (k === BLANK) k = classAt(units, ++at);
      // The type: one character, then blanks.
      if (k !== NEWLINE && classAt(units, at + 1) === BLANK) {
        const type = units[at]!;
        at += 1;
        do k = classAt(units, ++at);
        while (k === BLANK);
        // The name: a run of non-blanks (where it ends, and the module after it, found when looked up). A table
        // rather than comparisons for the type: a rare letter met late would cost the compiled loop.
        const fn = type < 256 && FUNCTION_TYPE[type] === 1;
        if (k !== NEWLINE && (all || fn) && !wide && (hi | lo) !== 0) {
          // Compared with the previous address as stored: words held in variables across lines would be boxed, an
          // allocation per line, while the loop is not yet compiled.
          if (n > 0 && sorted) {
            const lastHi = words[2 * n - 1 - low]!;
            if (hi >>> 0 < lastHi || (hi >>> 0 === lastHi && lo >>> 0 < words[2 * n - 2 + low]!)) sorted = false;
          }
          if (n === capacity) {
            capacity *= 2;
            words = grown(words, 2 * capacity);
            nameAt = grown(nameAt, capacity);
            isFn = grown(isFn, capacity);
          }
          words[2 * n + low] = lo;
          words[2 * n + 1 - low] = hi;
          nameAt[n] = at;
          isFn[n] = fn ? 1 : 0;
          texts += fn ? 1 : 0;
          n++;
        }
      }
    }
    while (at < length && units[at] !== 10) at++;
  }
  return { count: n, words, nameAt, isFn, texts, sorted };
}

/** `a` copied into a new array of `length` elements. */
function grown<T extends Uint32Array | Int32Array | Uint8Array>(a: T, length: number): T {
  const b = new (a.constructor as new (n: number) => T)(length);
  b.set(a);
  return b;
}

/** Index of the last element `<= x` in ascending `a`, or -1. */
function floor(a: BigUint64Array, x: bigint): number {
  let lo = 0;
  let hi = a.length - 1;
  if (hi < 0 || x < a[0]!) return -1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (a[mid]! <= x) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Parses `saved_cmdlines` (`PID COMM` per line). */
/**
 * The kernel's printk formats (tracefs `printk_formats`, trace.dat's printk section): `0xADDR : "text"` lines, as
 * libtraceevent registers them (quotes and a trailing `\n` escape taken off). An event field that points into them
 * (`rcu_utilization`'s `const char *s`) prints as their text.
 */
export function parsePrintkFormats(text: string): Map<bigint, string> {
  const map = new Map<bigint, string>();
  for (const line of text.split('\n')) {
    const m = /^\s*(?:0x)?([0-9a-fA-F]+)\s*:\s?(.*)$/.exec(line);
    if (m === null) continue;
    let fmt = m[2]!;
    if (fmt.startsWith('"')) fmt = fmt.slice(1);
    if (fmt.endsWith('"')) fmt = fmt.slice(0, -1);
    if (fmt.endsWith('\\n')) fmt = fmt.slice(0, -2);
    map.set(BigInt(`0x${m[1]}`), fmt);
  }
  return map;
}

export function parseCmdlines(text: string): Map<number, string> {
  const map = new Map<number, string>();
  for (const line of text.split('\n')) {
    const m = /^\s*(\d+) (.*)$/.exec(line);
    if (m !== null) map.set(Number(m[1]), m[2]!);
  }
  return map;
}
