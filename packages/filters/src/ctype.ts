/**
 * The kernel's character classes (lib/ctype.c, Latin-1) and integer parsing (lib/kstrtox.c). The filter parser works
 * on the expression's bytes, as the kernel does, so columns are byte offsets.
 */

const SPACE = new Uint8Array(256);
const DIGIT = new Uint8Array(256);
const ALNUM = new Uint8Array(256);
for (const c of [0x20, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0xa0]) SPACE[c] = 1;
for (let c = 0x30; c <= 0x39; c++) DIGIT[c] = ALNUM[c] = 1;
for (let c = 0x41; c <= 0x5a; c++) ALNUM[c] = ALNUM[c + 0x20] = 1;
// Latin-1 letters: 0xc0-0xd6, 0xd8-0xf6, 0xf8-0xff.
for (let c = 0xc0; c <= 0xff; c++) if (c !== 0xd7 && c !== 0xf7) ALNUM[c] = 1;

export const isSpace = (c: number): boolean => SPACE[c] === 1;
export const isDigit = (c: number): boolean => DIGIT[c] === 1;
export const isAlnum = (c: number): boolean => ALNUM[c] === 1;

const U64_MAX = (1n << 64n) - 1n;

function digitValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const l = c | 0x20;
  if (l >= 0x61 && l <= 0x66) return l - 0x61 + 10;
  return 99;
}

/** kstrtoull(s, 0): auto base (0x hex, leading 0 octal), whole string, optional trailing newline. */
export function kstrtoull(s: string): bigint | undefined {
  let i = 0;
  if (s[0] === '+') i++;
  return parseUnsigned(s, i);
}

function parseUnsigned(s: string, i: number): bigint | undefined {
  let base = 10n;
  if (s[i] === '0') {
    if ((s[i + 1] === 'x' || s[i + 1] === 'X') && digitValue(s.charCodeAt(i + 2)) < 16) {
      base = 16n;
      i += 2;
    } else base = 8n;
  }
  let value = 0n;
  let n = 0;
  for (; i < s.length; i++, n++) {
    const d = digitValue(s.charCodeAt(i));
    if (BigInt(d) >= base) break;
    value = value * base + BigInt(d);
    if (value > U64_MAX) return undefined;
  }
  if (n === 0) return undefined;
  if (s[i] === '\n') i++;
  return i === s.length ? value : undefined;
}

/** kstrtoll(s, 0): as kstrtoull with an optional leading '-', range-checked to s64. */
export function kstrtoll(s: string): bigint | undefined {
  if (s[0] === '-') {
    const v = parseUnsigned(s, 1);
    if (v === undefined || v > 1n << 63n) return undefined;
    return -v;
  }
  const v = kstrtoull(s);
  if (v === undefined || v >= 1n << 63n) return undefined;
  return v;
}
