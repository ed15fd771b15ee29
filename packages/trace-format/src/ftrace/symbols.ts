/** `/proc/kallsyms` and `saved_cmdlines`: what turns addresses and pids into names for display and filtering. */

/** One line: hex address, one-character type, name, optional `[module]`; fields never run past the line's end. */
const LINE = /([0-9a-fA-F]+)[^\S\n]+(\S)[^\S\n]+(\S+)(?:[^\S\n]+\[(\S+)\])?/y;
const MAX_ADDRESS = 0xffff_ffff_ffff_ffffn;

/**
 * Kernel symbols sorted by address: `%pS`-style `name+0xoff` lookups over functions, and the kernel's
 * `kallsyms_lookup_name` / `kallsyms_lookup_size_offset` over every kept symbol.
 */
export class Kallsyms {
  readonly #addrs: BigUint64Array;
  readonly #names: string[];
  readonly #modules: (string | undefined)[];
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
    names: string[],
    modules: (string | undefined)[],
    textIndex: Uint32Array | undefined,
  ) {
    this.#addrs = addrs;
    this.#names = names;
    this.#modules = modules;
    this.#textIndex = textIndex;
    this.#textAddrs = textIndex === undefined ? addrs : BigUint64Array.from(textIndex, (i) => addrs[i]!);
  }

  /**
   * Parses `ADDRESS TYPE NAME [MODULE]` lines; lines that do not fit (or have address 0, or one beyond 64 bits) are
   * skipped. `types`: `text` (the default) keeps functions only (types `t`, `T`, `w`, `W`), all that `%pS` needs;
   * `all` keeps every symbol, as the kernel's own name and size lookups (and so `.function` filters) see them.
   */
  static parse(text: string, options: { readonly types?: 'text' | 'all' } = {}): Kallsyms {
    const all = options.types === 'all';
    const addrs: bigint[] = [];
    const names: string[] = [];
    const modules: (string | undefined)[] = [];
    const isFn: boolean[] = [];
    let sorted = true;
    let last = 0n;
    for (let start = 0; start < text.length; ) {
      let end = text.indexOf('\n', start);
      if (end < 0) end = text.length;
      LINE.lastIndex = start;
      const m = LINE.exec(text);
      start = end + 1;
      if (m === null) continue;
      const type = m[2]!;
      const fn = type === 't' || type === 'T' || type === 'w' || type === 'W';
      if (!all && !fn) continue;
      const addr = BigInt(`0x${m[1]}`);
      if (addr === 0n || addr > MAX_ADDRESS) continue;
      if (addr < last) sorted = false;
      last = addr;
      addrs.push(addr);
      names.push(m[3]!);
      modules.push(m[4]);
      isFn.push(fn);
    }
    // /proc/kallsyms is nearly sorted already; a stable sort keeps file order among equal addresses.
    const order = sorted ? undefined : addrs.map((_, i) => i).sort((a, b) => cmp(addrs[a]!, addrs[b]!) || a - b);
    const pick = <T>(xs: T[]): T[] => (order === undefined ? xs : order.map((i) => xs[i]!));
    const fns = pick(isFn);
    let textIndex: Uint32Array | undefined;
    if (all && fns.includes(false)) {
      textIndex = new Uint32Array(fns.reduce((n, t) => (t ? n + 1 : n), 0));
      for (let i = 0, j = 0; i < fns.length; i++) if (fns[i]) textIndex[j++] = i;
    }
    return new Kallsyms(BigUint64Array.from(pick(addrs)), pick(names), pick(modules), textIndex);
  }

  /** How many symbols were kept. */
  get size(): number {
    return this.#names.length;
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
      const module = this.#modules[i];
      sym = {
        name: this.#names[i]!,
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
    if (this.#byName === undefined && this.#nameScans < 8) {
      this.#nameScans++;
      let module: bigint | undefined;
      for (let i = 0; i < this.#names.length; i++) {
        if (this.#names[i] !== name) continue;
        if (this.#modules[i] === undefined) return this.#addrs[i]!;
        module ??= this.#addrs[i]!;
      }
      return module;
    }
    if (this.#byName === undefined) {
      // Addresses ascend, so the first one recorded for a name is its lowest; module symbols go in second.
      const map = new Map<string, bigint>();
      for (const core of [true, false]) {
        for (let i = 0; i < this.#names.length; i++) {
          const name = this.#names[i]!;
          if ((this.#modules[i] === undefined) === core && !map.has(name)) map.set(name, this.#addrs[i]!);
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

function cmp(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
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
