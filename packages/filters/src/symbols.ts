/**
 * Kernel symbol tables for `.function` predicates: the kernel resolves a name (kallsyms_lookup_name) and then the
 * function's start and size (kallsyms_lookup_size_offset); user space does the same from /proc/kallsyms or the
 * symbol list a trace file carries.
 */

export interface SymbolRange {
  readonly start: bigint;
  readonly end: bigint;
}

export interface SymbolTable {
  /** Address of the first symbol with this name (lowest address among duplicates), or undefined. */
  lookupName(name: string): bigint | undefined;
  /** The symbol containing `address`: from its start to the next symbol's address. */
  lookupRange(address: bigint): SymbolRange | undefined;
}

/** Parses /proc/kallsyms text (`ffffffff81000000 T _text [module]`); lines that do not parse are skipped. */
export function parseKallsyms(text: string): SymbolTable {
  const names = new Map<string, bigint>();
  const moduleNames = new Map<string, bigint>();
  const addresses: bigint[] = [];
  for (const line of text.split('\n')) {
    const m = /^([0-9a-fA-F]+)\s+(\S)\s+(\S+)(\s+\[\S+\])?/.exec(line);
    if (m === null) continue;
    const address = BigInt(`0x${m[1]}`);
    if (address === 0n) continue;
    const target = m[4] === undefined ? names : moduleNames;
    const prev = target.get(m[3]!);
    if (prev === undefined || address < prev) target.set(m[3]!, address);
    addresses.push(address);
  }
  const sorted = [...new Set(addresses)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    lookupName: (name) => (name === '' ? undefined : (names.get(name) ?? moduleNames.get(name))),
    lookupRange(address) {
      let lo = 0;
      let hi = sorted.length - 1;
      if (hi < 0 || address < sorted[0]!) return undefined;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (sorted[mid]! <= address) lo = mid;
        else hi = mid - 1;
      }
      const next = sorted[lo + 1];
      return next === undefined ? undefined : { start: sorted[lo]!, end: next };
    },
  };
}
