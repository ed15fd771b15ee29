/**
 * Kernel symbol tables for `.function` predicates: the kernel resolves a name (kallsyms_lookup_name) and then the
 * function's start and size (kallsyms_lookup_size_offset); user space does the same from /proc/kallsyms or the
 * symbol list a trace file carries. @evtrace/trace-format's `Kallsyms` (parsed with `types: 'all'`) is one.
 */

import { Kallsyms } from '@evtrace/trace-format';

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

/**
 * Parses /proc/kallsyms text (`ffffffff81000000 T _text [module]`) into a table of every symbol, as
 * `Kallsyms.parse(text, { types: 'all' })` does; lines that do not parse are skipped.
 */
export function parseKallsyms(text: string): SymbolTable {
  return Kallsyms.parse(text, { types: 'all' });
}
