/**
 * Address-to-function lookups over ELF symbol tables and kallsyms, tuned for millions of lookups: starts and ends
 * sorted in a Float64Array of signed keys ({@link addressKey}), a binary search, and a one-entry cache (branch
 * streams revisit the same function over and over).
 */
import { type Kallsyms, readInput } from '@evtrace/trace-format';
import { addressKey, type BranchList, splitAddress } from './branch.ts';
import { type ElfSymbols, readElfSymbols } from './elf.ts';
import { BtsError } from './errors.ts';

/** A located address: the function, the offset into it, and which table said so. */
export interface SymbolHit {
  readonly name: string;
  readonly offset: number;
  /** The ELF file or `kallsyms`. */
  readonly source: string;
}

interface Entry {
  start: number;
  end: number;
  name: string;
  source: string;
  /** STB_LOCAL 0, STB_GLOBAL 1, STB_WEAK 2. */
  bind: number;
}

const BIND_RANK = [1, 3, 2];

/**
 * Of two symbols at one address, the one to show, as perf picks it (so our names match perf script's): a sized one,
 * then global before weak before local, then fewer leading underscores, then the longer name.
 */
function better(a: Entry, b: Entry): boolean {
  const sa = !Number.isNaN(a.end);
  const sb = !Number.isNaN(b.end);
  if (sa !== sb) return sa;
  const ra = BIND_RANK[a.bind] ?? 0;
  const rb = BIND_RANK[b.bind] ?? 0;
  if (ra !== rb) return ra > rb;
  const ua = /^_*/.exec(a.name)![0].length;
  const ub = /^_*/.exec(b.name)![0].length;
  if (ua !== ub) return ua < ub;
  return a.name.length > b.name.length;
}

/** Function symbols from any number of ELF files and kallsyms; `lookup` finds the one containing an address. */
export class Symbolizer {
  #starts = new Float64Array(0);
  #ends = new Float64Array(0);
  #names: string[] = [];
  #sources: string[] = [];
  #binds: number[] = [];
  #pending: Entry[] = [];
  #kallsyms: Kallsyms | undefined;
  #lastStart = 1;
  #lastEnd = 0;
  #lastIndex = -1;

  /**
   * Adds an ELF file's function symbols. `bias` is added to every address (the load address of a PIE or shared
   * object; 0 for a fixed-address executable). A symbol of size 0 extends to the next symbol.
   */
  addElf(path: string, bias = 0n): this {
    const bytes = readInput(path, {
      error: (message, at) => new BtsError('ERR_BTS_ELF', message, at),
    });
    return this.addElfBytes(bytes, path, bias);
  }

  /** {@link addElf} over bytes already read. */
  addElfBytes(bytes: Uint8Array, source: string, bias = 0n): this {
    const { symbols } = readElfSymbols(bytes, source);
    const seen = new Set<string>();
    for (const s of symbols) {
      // .symtab and .dynsym repeat each other's exported functions: keep one.
      const id = `${s.value}:${s.name}`;
      if (seen.has(id)) continue;
      seen.add(id);
      const [hi, lo] = splitAddress(s.value + bias);
      const start = addressKey(hi, lo);
      this.#pending.push({
        start,
        end: s.size > 0n ? start + Number(s.size) : Number.NaN,
        name: s.name,
        source,
        bind: s.bind,
      });
    }
    return this;
  }

  /** Adds one symbol by hand (tests, JIT maps). */
  addSymbol(name: string, start: bigint, size: bigint, source = 'manual'): this {
    const [hi, lo] = splitAddress(start);
    const key = addressKey(hi, lo);
    this.#pending.push({ start: key, end: size > 0n ? key + Number(size) : Number.NaN, name, source, bind: 1 });
    return this;
  }

  /** Kernel addresses not covered by an ELF table are looked up in kallsyms. */
  setKallsyms(k: Kallsyms): this {
    this.#kallsyms = k;
    return this;
  }

  /** Number of table symbols (kallsyms not counted). */
  get size(): number {
    this.#seal();
    return this.#names.length;
  }

  /**
   * The index of the symbol containing the signed address key, or -1 (outside every symbol). Use {@link nameAt} and
   * {@link startAt} on the index; kallsyms is not consulted here (see {@link lookup}).
   */
  indexOf(key: number): number {
    if (this.#pending.length > 0) this.#seal();
    if (key >= this.#lastStart && key < this.#lastEnd) return this.#lastIndex;
    const a = this.#starts;
    let lo = 0;
    let hi = a.length - 1;
    if (hi < 0 || key < a[0]!) return -1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (a[mid]! <= key) lo = mid;
      else hi = mid - 1;
    }
    if (key >= this.#ends[lo]!) return -1;
    this.#lastStart = a[lo]!;
    this.#lastEnd = this.#ends[lo]!;
    this.#lastIndex = lo;
    return lo;
  }

  /**
   * Symbolizes a whole list: the symbol index of every branch's source and target (-1 outside every symbol). Each
   * column keeps its own last hit, since sources and targets sit in different functions.
   */
  resolve(list: BranchList): { from: Int32Array; to: Int32Array } {
    if (this.#pending.length > 0) this.#seal();
    const n = list.length;
    const from = new Int32Array(n);
    const to = new Int32Array(n);
    this.#column(list.fromHi, list.fromLo, n, from);
    this.#column(list.toHi, list.toLo, n, to);
    return { from, to };
  }

  #column(his: Uint32Array, los: Uint32Array, n: number, out: Int32Array): void {
    const a = this.#starts;
    const ends = this.#ends;
    const last = a.length - 1;
    let cs = 1;
    let ce = 0;
    let ci = -1;
    for (let i = 0; i < n; i++) {
      const key = (his[i]! | 0) * 4294967296 + los[i]!;
      if (key >= cs && key < ce) {
        out[i] = ci;
        continue;
      }
      if (last < 0 || key < a[0]!) {
        out[i] = -1;
        continue;
      }
      let lo = 0;
      let hi = last;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (a[mid]! <= key) lo = mid;
        else hi = mid - 1;
      }
      if (key >= ends[lo]!) {
        out[i] = -1;
        continue;
      }
      cs = a[lo]!;
      ce = ends[lo]!;
      ci = lo;
      out[i] = lo;
    }
  }

  /** The name of symbol `index`. */
  nameAt(index: number): string {
    return this.#names[index]!;
  }

  /** The start key of symbol `index`. */
  startAt(index: number): number {
    return this.#starts[index]!;
  }

  /** The function containing an address given as halves: ELF tables first, then kallsyms; undefined outside all. */
  lookup(hi: number, lo: number): SymbolHit | undefined {
    const key = addressKey(hi, lo);
    const i = this.indexOf(key);
    if (i >= 0) return { name: this.#names[i]!, offset: key - this.#starts[i]!, source: this.#sources[i]! };
    if (this.#kallsyms !== undefined && hi >= 0x80000000) {
      const hit = this.#kallsyms.lookup((BigInt(hi) << 32n) | BigInt(lo));
      if (hit !== undefined && (hit.size === undefined || hit.offset < hit.size))
        return { name: hit.name, offset: Number(hit.offset), source: 'kallsyms' };
    }
    return undefined;
  }

  /** `name+0xoff` (or `name` at offset 0), or undefined outside every symbol. */
  format(hi: number, lo: number): string | undefined {
    const hit = this.lookup(hi, lo);
    if (hit === undefined) return undefined;
    return hit.offset === 0 ? hit.name : `${hit.name}+0x${hit.offset.toString(16)}`;
  }

  #seal(): void {
    if (this.#pending.length === 0) return;
    const all: Entry[] = this.#pending;
    for (let i = 0; i < this.#names.length; i++)
      all.push({
        start: this.#starts[i]!,
        end: this.#ends[i]!,
        name: this.#names[i]!,
        source: this.#sources[i]!,
        bind: this.#binds[i]!,
      });
    this.#pending = [];
    all.sort((a, b) => a.start - b.start);
    // One entry per start address (aliases share it); a sized symbol ends where it says, an unsized one at the next.
    const kept: Entry[] = [];
    for (const e of all) {
      const top = kept[kept.length - 1];
      if (top === undefined || top.start !== e.start) kept.push({ ...e });
      else if (better(e, top)) kept[kept.length - 1] = { ...e };
    }
    for (let i = 0; i < kept.length; i++) {
      const next = kept[i + 1]?.start ?? Number.POSITIVE_INFINITY;
      const e = kept[i]!;
      if (Number.isNaN(e.end) || e.end > next) e.end = Number.isNaN(e.end) ? next : Math.min(e.end, next);
    }
    this.#starts = Float64Array.from(kept, (e) => e.start);
    this.#ends = Float64Array.from(kept, (e) => e.end);
    this.#names = kept.map((e) => e.name);
    this.#sources = kept.map((e) => e.source);
    this.#binds = kept.map((e) => e.bind);
    this.#lastStart = 1;
    this.#lastEnd = 0;
    this.#lastIndex = -1;
  }
}

/**
 * The load bias of a position-independent ELF (PIE or shared object) in a branch trace, from the names the source
 * gave: a call lands on its function's first byte, so `target - symbol value` is the bias; the most frequent
 * page-aligned answer wins. Undefined when no named call matches a symbol of `elf`.
 */
export function inferLoadBias(list: BranchList, elf: ElfSymbols): bigint | undefined {
  const byName = new Map<string, bigint>();
  for (const s of elf.symbols) if (!byName.has(s.name)) byName.set(s.name, s.value);
  const votes = new Map<bigint, number>();
  for (let i = 0; i < list.length; i++) {
    const name = list.toName[i];
    if (name === undefined || (list.kindOf(i) !== 'call' && list.kindOf(i) !== 'ind_call')) continue;
    const plus = name.indexOf('+');
    if (plus > 0 && !/\+(0x)?0+$/.test(name)) continue;
    const value = byName.get(plus > 0 ? name.slice(0, plus) : name);
    if (value === undefined) continue;
    const to = (BigInt(list.toHi[i]!) << 32n) | BigInt(list.toLo[i]!);
    const bias = to - value;
    if (bias < 0n || (bias & 0xfffn) !== 0n) continue;
    votes.set(bias, (votes.get(bias) ?? 0) + 1);
  }
  let best: bigint | undefined;
  let most = 0;
  for (const [bias, n] of votes)
    if (n > most) {
      best = bias;
      most = n;
    }
  return best;
}
