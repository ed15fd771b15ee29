/** `/proc/kallsyms` and `saved_cmdlines`: what turns addresses and pids into names for display. */

/** Kernel symbols sorted by address, for `%pS`-style `name+0xoff` lookups. */
export class Kallsyms {
  readonly #addrs: BigUint64Array;
  readonly #names: string[];
  readonly #modules: (string | undefined)[];

  private constructor(addrs: BigUint64Array, names: string[], modules: (string | undefined)[]) {
    this.#addrs = addrs;
    this.#names = names;
    this.#modules = modules;
  }

  /** Parses `ADDRESS TYPE NAME [MODULE]` lines; lines that do not fit are skipped. Only text symbols are kept. */
  static parse(text: string): Kallsyms {
    const entries: [bigint, string, string | undefined][] = [];
    for (const line of text.split('\n')) {
      const m = /^([0-9a-fA-F]+) ([a-zA-Z]) (\S+)(?:\s+\[(\S+)\])?/.exec(line);
      if (m === null || !'tTwW'.includes(m[2]!)) continue;
      const addr = BigInt(`0x${m[1]}`);
      if (addr === 0n) continue;
      entries.push([addr, m[3]!, m[4]]);
    }
    entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return new Kallsyms(
      BigUint64Array.from(entries, (e) => e[0]),
      entries.map((e) => e[1]),
      entries.map((e) => e[2]),
    );
  }

  get size(): number {
    return this.#names.length;
  }

  /**
   * The symbol containing `addr`: its name, the offset into it, its size (up to the next symbol, as the kernel
   * reckons it; undefined for the last one) and module. Undefined below the first symbol.
   */
  lookup(addr: bigint): { name: string; offset: bigint; size?: bigint; module?: string } | undefined {
    const a = this.#addrs;
    let lo = 0;
    let hi = a.length - 1;
    if (hi < 0 || addr < a[0]!) return undefined;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (a[mid]! <= addr) lo = mid;
      else hi = mid - 1;
    }
    const next = a[lo + 1];
    const module = this.#modules[lo];
    return {
      name: this.#names[lo]!,
      offset: addr - a[lo]!,
      ...(next !== undefined ? { size: next - a[lo]! } : {}),
      ...(module !== undefined ? { module } : {}),
    };
  }

  /** `name+0xoff` as `%pS` prints it, `name` when exact, or undefined when unknown. */
  format(addr: bigint): string | undefined {
    const s = this.lookup(addr);
    if (s === undefined) return undefined;
    return s.offset === 0n ? s.name : `${s.name}+0x${s.offset.toString(16)}`;
  }
}

/** Parses `saved_cmdlines` (`PID COMM` per line). */
export function parseCmdlines(text: string): Map<number, string> {
  const map = new Map<number, string>();
  for (const line of text.split('\n')) {
    const m = /^\s*(\d+) (.*)$/.exec(line);
    if (m !== null) map.set(Number(m[1]), m[2]!);
  }
  return map;
}
