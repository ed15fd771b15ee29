/** Which function an address of a branch belongs to, from a symbolizer or the names the source gave. */
import { type BranchList, hexAddress } from './branch.ts';
import type { Symbolizer } from './symbols.ts';

/** Functions as small integers: >= 0 a symbolizer index, <= -2 a source-given name, -1 unknown. */
export class FunctionNames {
  readonly #list: BranchList;
  readonly #symbols: Symbolizer | undefined;
  readonly #interned = new Map<string, number>();
  readonly #names: string[] = [];

  constructor(list: BranchList, symbols?: Symbolizer) {
    this.#list = list;
    this.#symbols = symbols;
  }

  /** The function id of branch `i`'s source (`side` 0) or target (`side` 1). */
  id(i: number, side: 0 | 1): number {
    const l = this.#list;
    if (this.#symbols !== undefined) {
      const s = side === 0 ? this.#symbols.indexOf(l.fromKey(i)) : this.#symbols.indexOf(l.toKey(i));
      if (s >= 0) return s;
    }
    const given = side === 0 ? l.fromName[i] : l.toName[i];
    if (given === undefined) {
      const hi = side === 0 ? l.fromHi[i]! : l.toHi[i]!;
      // Kernel addresses may still be known to kallsyms, which has no indices: intern its name.
      if (this.#symbols !== undefined && hi >= 0x80000000) {
        const lo = side === 0 ? l.fromLo[i]! : l.toLo[i]!;
        const hit = this.#symbols.lookup(hi, lo);
        if (hit !== undefined) return this.#intern(hit.name);
      }
      return -1;
    }
    const plus = given.indexOf('+');
    return this.#intern(plus > 0 ? given.slice(0, plus) : given);
  }

  /** Whether branch `i`'s target is the first byte of a function (a call's landing). */
  targetIsEntry(i: number): boolean {
    const l = this.#list;
    if (this.#symbols !== undefined) {
      const key = l.toKey(i);
      const s = this.#symbols.indexOf(key);
      if (s >= 0) return this.#symbols.startAt(s) === key;
      // Kernel addresses: kallsyms knows where its functions start.
      if (l.toHi[i]! >= 0x80000000) {
        const hit = this.#symbols.lookup(l.toHi[i]!, l.toLo[i]!);
        if (hit !== undefined) return hit.offset === 0;
      }
    }
    const given = l.toName[i];
    return given !== undefined && (!given.includes('+') || /\+(0x)?0+$/.test(given));
  }

  /** The name of a function id ('??' when unknown). */
  name(id: number): string {
    if (id >= 0) return this.#symbols!.nameAt(id);
    if (id <= -2) return this.#names[-id - 2]!;
    return '??';
  }

  /** `func+0xoff`, the source's own name, or undefined when nothing names it. */
  describe(i: number, side: 0 | 1): string | undefined {
    const l = this.#list;
    const hi = side === 0 ? l.fromHi[i]! : l.toHi[i]!;
    const lo = side === 0 ? l.fromLo[i]! : l.toLo[i]!;
    return this.#symbols?.format(hi, lo) ?? (side === 0 ? l.fromName[i] : l.toName[i]);
  }

  /** `func+0xoff` or the hex address. */
  label(i: number, side: 0 | 1): string {
    const l = this.#list;
    return (
      this.describe(i, side) ??
      (side === 0 ? hexAddress(l.fromHi[i]!, l.fromLo[i]!) : hexAddress(l.toHi[i]!, l.toLo[i]!))
    );
  }

  #intern(name: string): number {
    let id = this.#interned.get(name);
    if (id === undefined) {
      id = -2 - this.#names.length;
      this.#names.push(name);
      this.#interned.set(name, id);
    }
    return id;
  }
}
