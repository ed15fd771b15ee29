/** `/proc/kallsyms` and `saved_cmdlines`: what turns addresses and pids into names for display and filtering. */

/** Whether this machine stores a 64-bit integer's low word first. */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Kernel symbols sorted by address: `%pS`-style `name+0xoff` lookups over functions, and the kernel's
 * `kallsyms_lookup_name` / `kallsyms_lookup_size_offset` over every kept symbol. A symbol's name and module are read
 * from the parsed text when looked up: a trace names few of a kernel's functions.
 */
export class Kallsyms {
  readonly #addrs: BigUint64Array;
  readonly #text: string;
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

  private constructor(addrs: BigUint64Array, text: string, nameAt: Int32Array, textIndex: Uint32Array | undefined) {
    this.#addrs = addrs;
    this.#text = text;
    this.#nameAt = nameAt;
    this.#textIndex = textIndex;
    this.#textAddrs = textIndex === undefined ? addrs : BigUint64Array.from(textIndex, (i) => addrs[i]!);
  }

  /**
   * Parses `ADDRESS TYPE NAME [MODULE]` lines (fields apart by whitespace, a line from its first byte, a module in
   * brackets after the name); lines that do not fit (or have address 0, or one beyond 64 bits) are skipped. `types`:
   * `text` (the default) keeps functions only (types `t`, `T`, `w`, `W`), all that `%pS` needs; `all` keeps every
   * symbol, as the kernel's own name and size lookups (and so `.function` filters) see them.
   */
  static parse(text: string, options: { readonly types?: 'text' | 'all' } = {}): Kallsyms {
    const all = options.types === 'all';
    // Scanned by character codes into typed columns: a regular expression, a bigint and strings per line cost
    // several times more over a whole kernel's symbols.
    let hiOf = new Uint32Array(4096);
    let loOf = new Uint32Array(4096);
    let nameAt = new Int32Array(4096);
    let isFn = new Uint8Array(4096);
    let n = 0;
    let sorted = true;
    let lastHi = 0;
    let lastLo = 0;
    const length = text.length;
    for (let start = 0; start < length; ) {
      let end = text.indexOf('\n', start);
      if (end < 0) end = length;
      const line = start;
      start = end + 1;
      // The address: hex digits, then blanks.
      let at = line;
      let hi = 0;
      let lo = 0;
      let wide = false;
      for (; at < end; at++) {
        const d = hexDigit(text.charCodeAt(at));
        if (d < 0) break;
        if (hi >= 0x10000000) wide = true;
        hi = hi * 16 + (lo >>> 28);
        lo = ((lo << 4) | d) >>> 0;
      }
      if (at === line || !isBlank(text, at, end)) continue;
      while (isBlank(text, at, end)) at++;
      // The type: one character, then blanks.
      if (at === end || !isBlank(text, at + 1, end)) continue;
      const type = text.charCodeAt(at);
      at += 1;
      while (isBlank(text, at, end)) at++;
      // The name: a run of non-blanks (where it ends, and the module after it, found when looked up).
      if (at === end) continue;
      const nameStart = at;
      const fn = type === 0x74 || type === 0x54 || type === 0x77 || type === 0x57;
      if (!all && !fn) continue;
      if (wide || (hi === 0 && lo === 0)) continue;
      if (hi < lastHi || (hi === lastHi && lo < lastLo)) sorted = false;
      lastHi = hi;
      lastLo = lo;
      if (n === hiOf.length) {
        hiOf = grown(hiOf);
        loOf = grown(loOf);
        nameAt = grown(nameAt);
        isFn = grown(isFn);
      }
      hiOf[n] = hi;
      loOf[n] = lo;
      nameAt[n] = nameStart;
      isFn[n] = fn ? 1 : 0;
      n++;
    }
    // /proc/kallsyms is nearly sorted already; a stable sort keeps file order among equal addresses.
    let order: Uint32Array | undefined;
    if (!sorted) {
      const ids = Array.from({ length: n }, (_, i) => i);
      ids.sort((a, b) => hiOf[a]! - hiOf[b]! || loOf[a]! - loOf[b]! || a - b);
      order = Uint32Array.from(ids);
    }
    const addrs = new BigUint64Array(n);
    const words = new DataView(addrs.buffer);
    const keptNames = new Int32Array(n);
    let texts = 0;
    for (let i = 0; i < n; i++) {
      const from = order === undefined ? i : order[i]!;
      words.setUint32(8 * i, LITTLE_ENDIAN ? loOf[from]! : hiOf[from]!, LITTLE_ENDIAN);
      words.setUint32(8 * i + 4, LITTLE_ENDIAN ? hiOf[from]! : loOf[from]!, LITTLE_ENDIAN);
      keptNames[i] = nameAt[from]!;
      texts += isFn[from]!;
    }
    let textIndex: Uint32Array | undefined;
    if (texts < n) {
      textIndex = new Uint32Array(texts);
      for (let i = 0, j = 0; i < n; i++) if (isFn[order === undefined ? i : order[i]!]) textIndex[j++] = i;
    }
    return new Kallsyms(addrs, text, keptNames, textIndex);
  }

  /** How many symbols were kept. */
  get size(): number {
    return this.#addrs.length;
  }

  /** Where symbol `i`'s name ends: at the first whitespace after its start. */
  #nameEnd(i: number): number {
    const text = this.#text;
    let at = this.#nameAt[i]!;
    while (at < text.length && !isSpace(text.charCodeAt(at))) at++;
    return at;
  }

  #name(i: number): string {
    return this.#text.slice(this.#nameAt[i]!, this.#nameEnd(i));
  }

  /** Symbol `i`'s module: blanks after its name, then `[`, non-blanks, `]` (the last of the run, not the first). */
  #module(i: number): string | undefined {
    const text = this.#text;
    const nameEnd = this.#nameEnd(i);
    let at = nameEnd;
    while (isBlank(text, at, text.length)) at++;
    if (at === nameEnd || text.charCodeAt(at) !== 0x5b) return undefined;
    let close = -1;
    for (let run = at + 1; run < text.length; run++) {
      const c = text.charCodeAt(run);
      if (isSpace(c)) break;
      if (c === 0x5d) close = run;
    }
    return close > at + 1 ? text.slice(at + 1, close) : undefined;
  }

  #nameIs(i: number, name: string): boolean {
    const start = this.#nameAt[i]!;
    return name !== '' && this.#text.startsWith(name, start) && this.#nameEnd(i) === start + name.length;
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

/** The value of a hex digit's character code, -1 for any other. */
function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const lower = c | 0x20;
  return lower >= 97 && lower <= 102 ? lower - 87 : -1;
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

/** Whether `text[at]`, before `end`, is whitespace other than a newline (a line's end is never inside it). */
function isBlank(text: string, at: number, end: number): boolean {
  if (at >= end) return false;
  const c = text.charCodeAt(at);
  return c !== 10 && isSpace(c);
}

function grown<T extends Uint32Array | Int32Array | Uint8Array>(a: T): T {
  const b = new (a.constructor as new (n: number) => T)(a.length * 2);
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
