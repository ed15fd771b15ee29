import { describe, expect, it } from 'vitest';
import { parseCpuList } from './cpulist.ts';
import { kstrtoll, kstrtoull } from './ctype.ts';
import { globMatch, matchBytes, parsePattern } from './glob.ts';

const b = (s: string) => new TextEncoder().encode(s);
const padded = (s: string, n: number) => {
  const out = new Uint8Array(n);
  out.set(b(s));
  return out;
};

describe('string matching', () => {
  it('classifies ~ patterns as the kernel does', () => {
    expect(parsePattern(b('abc*'), true).kind).toBe('front');
    expect(parsePattern(b('*abc'), true).kind).toBe('end');
    expect(parsePattern(b('*abc*'), true).kind).toBe('middle');
    expect(parsePattern(b('a*c'), true).kind).toBe('glob');
    expect(parsePattern(b('a?c'), true).kind).toBe('glob');
    expect(parsePattern(b('1*'), true).kind).toBe('full');
    expect(parsePattern(b('!abc'), true)).toMatchObject({ kind: 'full', negate: true });
    expect(parsePattern(b('a*'), false).kind).toBe('full');
  });

  it('matches an end pattern against the end of the whole char[16] array, as the kernel does', () => {
    const p = parsePattern(b('*bash'), true);
    expect(matchBytes(p, padded('bash', 16), 16)).toBe(false);
    expect(matchBytes(p, padded('abcdefghijkbash', 16), 16)).toBe(true);
    expect(matchBytes(p, b('bash\0'), 5)).toBe(true);
  });

  it('implements glob_match classes, negation with ! only, ranges and escapes', () => {
    expect(globMatch(b('[a-c]x'), b('bx'))).toBe(true);
    expect(globMatch(b('[!a-c]x'), b('bx'))).toBe(false);
    expect(globMatch(b('[^a]x'), b('^x'))).toBe(true);
    expect(globMatch(b('a\\*'), b('a*'))).toBe(true);
    expect(globMatch(b('a\\*'), b('ab'))).toBe(false);
    expect(globMatch(b('k*/[0-9]*'), b('kworker/1:2'))).toBe(true);
    expect(globMatch(b('[a-'), b('[a-'))).toBe(true);
  });
});

describe('kernel integer and CPU list parsing', () => {
  it('reads hex, octal and decimal, whole strings only, within 64 bits', () => {
    expect(kstrtoull('0x1f')).toBe(31n);
    expect(kstrtoull('010')).toBe(8n);
    expect(kstrtoull('08')).toBeUndefined();
    expect(kstrtoull('0x')).toBeUndefined();
    expect(kstrtoull('18446744073709551616')).toBeUndefined();
    expect(kstrtoll('-9223372036854775808')).toBe(-(1n << 63n));
    expect(kstrtoll('9223372036854775808')).toBeUndefined();
    expect(kstrtoll('--1')).toBeUndefined();
  });

  it('parses cpulists with ranges, strides, N and all', () => {
    expect([...parseCpuList('0-3,6', 8)!]).toEqual([0, 1, 2, 3, 6]);
    expect([...parseCpuList('0-7:1/4', 8)!]).toEqual([0, 4]);
    expect([...parseCpuList('N', 8)!]).toEqual([7]);
    expect(parseCpuList('all', 4)!.size).toBe(4);
    expect(parseCpuList('8', 8)).toBeUndefined();
    expect(parseCpuList('3-1', 8)).toBeUndefined();
    expect(parseCpuList('a', 8)).toBeUndefined();
  });
});
