/**
 * The branch model: a growable, column-per-field list of taken branches. Addresses are kept exactly as two u32
 * halves; analyses compare them through {@link addressKey}, a signed 64-bit value as a double (exact for every
 * canonical x86-64 address with 4-level paging: user space below 2^47, kernel space from -2^47).
 */
import type { BtsError } from './errors.ts';

/** What a branch did, when the source says (perf's TYPE column, the instruction in a QEMU log or gdb history). */
export type BranchKind =
  | 'unknown'
  | 'call'
  | 'return'
  | 'jump'
  | 'cond'
  | 'ind_jump'
  | 'ind_call'
  | 'syscall'
  | 'sysret'
  | 'irq'
  | 'eret'
  | 'other';

/** Kinds by their stored number (the index). */
export const BRANCH_KINDS: readonly BranchKind[] = [
  'unknown',
  'call',
  'return',
  'jump',
  'cond',
  'ind_jump',
  'ind_call',
  'syscall',
  'sysret',
  'irq',
  'eret',
  'other',
];
const KIND_NUMBER = new Map(BRANCH_KINDS.map((k, i) => [k, i]));

/** The stored number of a kind (its index in {@link BRANCH_KINDS}). */
export function kindNumber(kind: BranchKind): number {
  return KIND_NUMBER.get(kind) ?? 0;
}

/** Branch flag bits as stored in {@link BranchList.flags}. */
export const BranchFlag = {
  /** The hardware says the branch was predicted (BTS bit 4, perf `P`). */
  predicted: 1,
  /** The branch was mispredicted (perf `M`). */
  mispredicted: 2,
  /** Inside a hardware transaction (perf `X`). */
  inTx: 4,
  /** A transaction abort (perf `A`). */
  abort: 8,
} as const;

/** One branch as a plain object (for output and tests; the list itself stores columns). */
export interface Branch {
  readonly from: bigint;
  readonly to: bigint;
  /** Names of the set {@link BranchFlag} bits. */
  readonly flags: readonly (keyof typeof BranchFlag)[];
  readonly kind: BranchKind;
  /** Cycles since the previous branch (LBR), when the source gives them. */
  readonly cycles?: number;
  /** Thread id, when known. */
  readonly tid?: number;
  /** CPU, when known. */
  readonly cpu?: number;
  /** Time in ns, when known. */
  readonly time?: number;
  /** The source's own name for `from` / `to` (see {@link BranchList.fromName}). */
  readonly fromName?: string;
  readonly toName?: string;
}

/** Fields of one appended branch besides its addresses; `-1` (or NaN for time) means unknown. */
export interface BranchExtra {
  flags?: number;
  kind?: BranchKind;
  cycles?: number;
  tid?: number;
  cpu?: number;
  time?: number;
}

const TWO32 = 4294967296;

/** The signed 64-bit value of an address given as two u32 halves, as a double (see the module comment). */
export function addressKey(hi: number, lo: number): number {
  return (hi | 0) * TWO32 + lo;
}

/** `0x`-prefixed lower-case hex of an address given as halves. */
export function hexAddress(hi: number, lo: number): string {
  return hi === 0 ? `0x${lo.toString(16)}` : `0x${hi.toString(16)}${lo.toString(16).padStart(8, '0')}`;
}

/** Splits a bigint address into halves (wrapping to 64 bits). */
export function splitAddress(addr: bigint): [hi: number, lo: number] {
  const a = BigInt.asUintN(64, addr);
  return [Number(a >> 32n), Number(a & 0xffffffffn)];
}

/** Parses a hex address (`0x` optional) into halves without allocating a bigint; undefined beyond 64 bits. */
export function parseHexAddress(text: string, start = 0, end = text.length): [hi: number, lo: number] | undefined {
  if (end - start > 2 && text.charCodeAt(start) === 48 && (text.charCodeAt(start + 1) | 32) === 120) start += 2;
  if (start >= end) return undefined;
  while (start < end - 1 && text.charCodeAt(start) === 48) start++;
  if (end - start > 16) return undefined;
  let hi = 0;
  let lo = 0;
  const split = Math.max(start, end - 8);
  for (let i = start; i < end; i++) {
    const d = hexDigit(text.charCodeAt(i));
    if (d < 0) return undefined;
    if (i < split) hi = hi * 16 + d;
    else lo = lo * 16 + d;
  }
  return [hi, lo];
}

function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const l = c | 32;
  if (l >= 97 && l <= 102) return l - 87;
  return -1;
}

/** A growable list of branches, oldest first, one typed array per field. */
export class BranchList {
  fromHi: Uint32Array;
  fromLo: Uint32Array;
  toHi: Uint32Array;
  toLo: Uint32Array;
  flags: Uint8Array;
  /** Index into {@link BRANCH_KINDS}. */
  kind: Uint8Array;
  /** Cycles, or -1. */
  cycles: Int32Array;
  /** Thread id, or -1. */
  tid: Int32Array;
  /** CPU, or -1. */
  cpu: Int32Array;
  /** Time in ns, or NaN. */
  time: Float64Array;
  /**
   * Names the source itself gave for the source and target locations (perf's brstacksym `func+0xoff`, brstackoff's
   * `(dso)`, the function QEMU names), sparse; a symbolizer, when given, takes precedence.
   */
  readonly fromName: (string | undefined)[] = [];
  readonly toName: (string | undefined)[] = [];
  #length = 0;

  constructor(capacity = 1024) {
    const n = Math.max(16, capacity);
    this.fromHi = new Uint32Array(n);
    this.fromLo = new Uint32Array(n);
    this.toHi = new Uint32Array(n);
    this.toLo = new Uint32Array(n);
    this.flags = new Uint8Array(n);
    this.kind = new Uint8Array(n);
    this.cycles = new Int32Array(n);
    this.tid = new Int32Array(n);
    this.cpu = new Int32Array(n);
    this.time = new Float64Array(n);
  }

  /** Number of branches. */
  get length(): number {
    return this.#length;
  }

  /** Appends a branch given as address halves; returns its index. */
  push(fromHi: number, fromLo: number, toHi: number, toLo: number, extra?: BranchExtra): number {
    const i = this.#length;
    if (i === this.fromHi.length) this.#grow(i * 2);
    this.fromHi[i] = fromHi;
    this.fromLo[i] = fromLo;
    this.toHi[i] = toHi;
    this.toLo[i] = toLo;
    if (extra === undefined) {
      this.flags[i] = 0;
      this.kind[i] = 0;
      this.cycles[i] = -1;
      this.tid[i] = -1;
      this.cpu[i] = -1;
      this.time[i] = Number.NaN;
    } else {
      this.flags[i] = extra.flags ?? 0;
      this.kind[i] = KIND_NUMBER.get(extra.kind ?? 'unknown') ?? 0;
      this.cycles[i] = extra.cycles ?? -1;
      this.tid[i] = extra.tid ?? -1;
      this.cpu[i] = extra.cpu ?? -1;
      this.time[i] = extra.time ?? Number.NaN;
    }
    this.#length = i + 1;
    return i;
  }

  /**
   * Makes room for `n` more branches with unknown extras (no flags, kind unknown, no cycles, tid, cpu or time) and
   * returns the index of the first; the caller fills the address columns (and flags) of indices [first, first + n).
   */
  appendBlank(n: number): number {
    const first = this.#length;
    if (first + n > this.fromHi.length) this.#grow(Math.max(first + n, first * 2));
    const end = first + n;
    this.flags.fill(0, first, end);
    this.kind.fill(0, first, end);
    this.cycles.fill(-1, first, end);
    this.tid.fill(-1, first, end);
    this.cpu.fill(-1, first, end);
    this.time.fill(Number.NaN, first, end);
    this.#length = end;
    return first;
  }

  /** Drops branches beyond the first `n` (after {@link appendBlank} reserved more than were filled). */
  truncate(n: number): void {
    if (n < this.#length) this.#length = Math.max(0, n);
  }

  /** Appends a branch given as bigints. */
  add(from: bigint, to: bigint, extra?: BranchExtra): number {
    const [fh, fl] = splitAddress(from);
    const [th, tl] = splitAddress(to);
    return this.push(fh, fl, th, tl, extra);
  }

  /** Sets the source-given names of branch `i` (see {@link fromName}). */
  setNames(i: number, from: string | undefined, to: string | undefined): void {
    if (from !== undefined) this.fromName[i] = from;
    if (to !== undefined) this.toName[i] = to;
  }

  /** Appends branch `i` of another list, every field. */
  copyFrom(other: BranchList, i: number): number {
    const j = this.push(other.fromHi[i]!, other.fromLo[i]!, other.toHi[i]!, other.toLo[i]!);
    this.flags[j] = other.flags[i]!;
    this.kind[j] = other.kind[i]!;
    this.cycles[j] = other.cycles[i]!;
    this.tid[j] = other.tid[i]!;
    this.cpu[j] = other.cpu[i]!;
    this.time[j] = other.time[i]!;
    const fn = other.fromName[i];
    const tn = other.toName[i];
    if (fn !== undefined || tn !== undefined) this.setNames(j, fn, tn);
    return j;
  }

  /** The signed key of branch `i`'s source address (see {@link addressKey}). */
  fromKey(i: number): number {
    return addressKey(this.fromHi[i]!, this.fromLo[i]!);
  }

  /** The signed key of branch `i`'s target address. */
  toKey(i: number): number {
    return addressKey(this.toHi[i]!, this.toLo[i]!);
  }

  /** The kind of branch `i`. */
  kindOf(i: number): BranchKind {
    return BRANCH_KINDS[this.kind[i]!] ?? 'unknown';
  }

  /** Branch `i` as a plain object. */
  at(i: number): Branch {
    if (i < 0 || i >= this.#length) throw new RangeError(`branch ${i} out of range 0..${this.#length - 1}`);
    const f = this.flags[i]!;
    const flags = (Object.keys(BranchFlag) as (keyof typeof BranchFlag)[]).filter((k) => (f & BranchFlag[k]) !== 0);
    const b: Branch = {
      from: (BigInt(this.fromHi[i]!) << 32n) | BigInt(this.fromLo[i]!),
      to: (BigInt(this.toHi[i]!) << 32n) | BigInt(this.toLo[i]!),
      flags,
      kind: this.kindOf(i),
      ...(this.cycles[i]! >= 0 ? { cycles: this.cycles[i]! } : {}),
      ...(this.tid[i]! >= 0 ? { tid: this.tid[i]! } : {}),
      ...(this.cpu[i]! >= 0 ? { cpu: this.cpu[i]! } : {}),
      ...(Number.isNaN(this.time[i]!) ? {} : { time: this.time[i]! }),
      ...(this.fromName[i] !== undefined ? { fromName: this.fromName[i] } : {}),
      ...(this.toName[i] !== undefined ? { toName: this.toName[i] } : {}),
    };
    return b;
  }

  /** Every branch as plain objects (allocates; for small lists). */
  toArray(): Branch[] {
    return Array.from({ length: this.#length }, (_, i) => this.at(i));
  }

  /** A new list of the branches for which `keep(i)` is true. */
  filter(keep: (i: number) => boolean): BranchList {
    const out = new BranchList(this.#length);
    for (let i = 0; i < this.#length; i++) if (keep(i)) out.copyFrom(this, i);
    return out;
  }

  #grow(n: number): void {
    const grow = <T extends Uint32Array | Uint8Array | Int32Array | Float64Array>(a: T): T => {
      const b = new (a.constructor as new (n: number) => T)(n);
      b.set(a);
      return b;
    };
    this.fromHi = grow(this.fromHi);
    this.fromLo = grow(this.fromLo);
    this.toHi = grow(this.toHi);
    this.toLo = grow(this.toLo);
    this.flags = grow(this.flags);
    this.kind = grow(this.kind);
    this.cycles = grow(this.cycles);
    this.tid = grow(this.tid);
    this.cpu = grow(this.cpu);
    this.time = grow(this.time);
  }
}

/** What a decoder returns: the branches it could read and the problems met around them. */
export interface Decoded {
  readonly branches: BranchList;
  /** Problems (truncated records, malformed lines) with where they are; the branches around them are kept. */
  readonly problems: BtsError[];
  /** Lines or records that carry no branch and were skipped on purpose (perf error lines, padding), with why. */
  readonly notes: string[];
}
