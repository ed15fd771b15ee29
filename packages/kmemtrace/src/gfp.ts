/**
 * gfp flags to names. The kernel prints them from a table in the event's `print fmt`
 * (`__print_flags(REC->gfp_flags, "|", { mask, "NAME" }, ...)`, masks as constant C expressions); that table is the
 * authority for the recording kernel, so it is parsed when a format file is at hand. Otherwise a built-in table of
 * Linux 6.x's flags (include/linux/gfp_types.h, include/trace/events/mmflags.h) is used.
 */

/** `[mask, name]` pairs, composite names first, in the order the kernel tries them. */
export type GfpTable = readonly (readonly [bigint, string])[];

const b = (n: number) => 1n << BigInt(n);
const DMA = b(0);
const HIGHMEM = b(1);
const DMA32 = b(2);
const MOVABLE = b(3);
const HIGH = b(5);
const IO = b(6);
const FS = b(7);
const DIRECT_RECLAIM = b(10);
const KSWAPD_RECLAIM = b(11);
const NOWARN = b(13);
const COMP = b(18);
const NOMEMALLOC = b(19);
const HARDWALL = b(20);
const ACCOUNT = b(22);
const RECLAIM = DIRECT_RECLAIM | KSWAPD_RECLAIM;
const KERNEL = RECLAIM | IO | FS;
const USER = KERNEL | HARDWALL;
const HIGHUSER = USER | HIGHMEM;
const HIGHUSER_MOVABLE = HIGHUSER | MOVABLE;
const TRANSHUGE_LIGHT = (HIGHUSER_MOVABLE | COMP | NOMEMALLOC | NOWARN) & ~RECLAIM;

/** Linux 6.x's table, used when the recording carries none. */
export const BUILTIN_GFP_TABLE: GfpTable = [
  [TRANSHUGE_LIGHT | DIRECT_RECLAIM, 'GFP_TRANSHUGE'],
  [TRANSHUGE_LIGHT, 'GFP_TRANSHUGE_LIGHT'],
  [HIGHUSER_MOVABLE, 'GFP_HIGHUSER_MOVABLE'],
  [HIGHUSER, 'GFP_HIGHUSER'],
  [USER, 'GFP_USER'],
  [KERNEL | ACCOUNT, 'GFP_KERNEL_ACCOUNT'],
  [KERNEL, 'GFP_KERNEL'],
  [RECLAIM | IO, 'GFP_NOFS'],
  [HIGH | KSWAPD_RECLAIM, 'GFP_ATOMIC'],
  [RECLAIM, 'GFP_NOIO'],
  [KSWAPD_RECLAIM | NOWARN, 'GFP_NOWAIT'],
  [DMA, 'GFP_DMA'],
  [DMA32, 'GFP_DMA32'],
  [RECLAIM, '__GFP_RECLAIM'],
  ...(
    [
      'DMA',
      'HIGHMEM',
      'DMA32',
      'MOVABLE',
      'RECLAIMABLE',
      'HIGH',
      'IO',
      'FS',
      'ZERO',
      undefined,
      'DIRECT_RECLAIM',
      'KSWAPD_RECLAIM',
      'WRITE',
      'NOWARN',
      'RETRY_MAYFAIL',
      'NOFAIL',
      'NORETRY',
      'MEMALLOC',
      'COMP',
      'NOMEMALLOC',
      'HARDWALL',
      'THISNODE',
      'ACCOUNT',
      'ZEROTAGS',
      'NO_OBJ_EXT',
    ] as const
  ).flatMap((name, bit): [bigint, string][] => (name === undefined ? [] : [[b(bit), `__GFP_${name}`]])),
];

/**
 * The table of the first `__print_flags` over `field` in a print fmt, or undefined when there is none or an entry's
 * mask is not a constant expression this evaluator understands (then the caller falls back to the built-in table).
 */
export function parseGfpTable(printFmt: string, field = 'gfp_flags'): GfpTable | undefined {
  const call = printFmt.search(new RegExp(`__print_flags\\s*\\(\\s*REC->${field}\\b`));
  if (call < 0) return undefined;
  const table: [bigint, string][] = [];
  let i = printFmt.indexOf('{', call);
  while (i >= 0) {
    const end = matchingBrace(printFmt, i);
    if (end < 0) return undefined;
    const entry = printFmt.slice(i + 1, end);
    const m = /,\s*(?:"([^"]*)"|\(\(void \*\)0\)|NULL)\s*$/.exec(entry);
    if (m === null) return undefined;
    if (m[1] === undefined) break;
    const mask = evaluate(entry.slice(0, m.index));
    if (mask === undefined) return undefined;
    table.push([mask, m[1]]);
    // The next entry, unless the argument list closes first.
    const next = /^\s*,\s*\{/.exec(printFmt.slice(end + 1));
    if (next === null) break;
    i = end + next[0].length;
  }
  return table.length > 0 ? table : undefined;
}

function matchingBrace(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      i = text.indexOf('"', i + 1);
      if (i < 0) return -1;
    } else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i;
  }
  return -1;
}

/**
 * Names of `flags` as the kernel prints them: matching masks joined by `|`, leftover bits in hex, `none` for 0. A
 * value no kernel writes (negative, fractional: corrupt input) is named as such instead of being turned into bits.
 */
export function gfpNames(flags: number | bigint, table: GfpTable = BUILTIN_GFP_TABLE): string {
  if (typeof flags === 'number' ? !(Number.isSafeInteger(flags) && flags >= 0) : flags < 0n)
    return `invalid (${flags})`;
  let rest = BigInt(flags);
  if (rest === 0n) return 'none';
  const names: string[] = [];
  for (const [mask, name] of table) {
    if (rest === 0n) break;
    if (mask !== 0n && (rest & mask) === mask) {
      names.push(name);
      rest &= ~mask;
    }
  }
  if (rest !== 0n) names.push(`0x${rest.toString(16)}`);
  return names.join('|');
}

/** A memoizing `gfpNames` for one table (a recording has few distinct flag values). */
export function gfpNamer(table: GfpTable = BUILTIN_GFP_TABLE): (flags: number) => string {
  const cache = new Map<number, string>();
  return (flags) => {
    let s = cache.get(flags);
    if (s === undefined) cache.set(flags, (s = gfpNames(flags, table)));
    return s;
  };
}

/** The value of a name the kernel prints (`GFP_KERNEL|__GFP_ZERO|0x40000`), or undefined when a part is unknown. */
export function gfpValue(text: string, table: GfpTable = BUILTIN_GFP_TABLE): number | undefined {
  if (text === 'none' || text === '0') return 0;
  let v = 0n;
  for (const part of text.split('|')) {
    const known = table.find(([, name]) => name === part);
    if (known !== undefined) v |= known[0];
    else if (/^0x[0-9a-f]+$/i.test(part)) v |= BigInt(part);
    else return undefined;
  }
  return Number(v);
}

const MASK64 = (1n << 64n) - 1n;

/** Evaluates a constant C integer expression (literals, casts, `| & ^ ~ << >> + - !`), or undefined. */
export function evaluate(expr: string): bigint | undefined {
  const tokens = expr.match(/0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|[A-Za-z_]\w*|<<|>>|\S/g) ?? [];
  let at = 0;
  const peek = () => tokens[at];
  const fail = Symbol('fail');
  const binary = (next: () => bigint, ops: Record<string, (a: bigint, b: bigint) => bigint>) => (): bigint => {
    let v = next();
    for (let op = peek(); op !== undefined && ops[op] !== undefined; op = peek()) {
      at++;
      v = ops[op]!(v, next()) & MASK64;
    }
    return v;
  };
  const primary = (): bigint => {
    const t = tokens[at++];
    if (t === undefined) throw fail;
    if (t === '(') {
      // A cast: a parenthesized list of type words.
      let j = at;
      while (tokens[j] !== undefined && /^[A-Za-z_]\w*$/.test(tokens[j]!)) j++;
      if (j > at && tokens[j] === ')') {
        at = j + 1;
        return unary();
      }
      const v = or();
      if (tokens[at++] !== ')') throw fail;
      return v;
    }
    if (/^\d/.test(t)) return BigInt(t.replace(/[uUlL]+$/, ''));
    throw fail;
  };
  const unary = (): bigint => {
    const t = peek();
    if (t !== '~' && t !== '-' && t !== '!') return primary();
    at++;
    const v = unary();
    return t === '~' ? ~v & MASK64 : t === '-' ? -v & MASK64 : v === 0n ? 1n : 0n;
  };
  const add = binary(unary, { '+': (a, c) => a + c, '-': (a, c) => a - c });
  const shift = binary(add, { '<<': (a, c) => (c >= 64n ? 0n : a << c), '>>': (a, c) => (c >= 64n ? 0n : a >> c) });
  const and = binary(shift, { '&': (a, c) => a & c });
  const xor = binary(and, { '^': (a, c) => a ^ c });
  const or: () => bigint = binary(xor, { '|': (a, c) => a | c });
  try {
    const v = or();
    return at === tokens.length ? v : undefined;
  } catch (error) {
    if (error === fail) return undefined;
    throw error;
  }
}
