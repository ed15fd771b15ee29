import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bit, bits, field, halves, hi32, lo32 } from './bits.ts';

// The fast paths split registers into 32-bit halves through a scratch word; BigInt arithmetic is the reference.
const ref = (v: bigint, lo: number, hi: number) => Number((v >> BigInt(lo)) & ((1n << BigInt(hi - lo + 1)) - 1n));
const range = fc
  .integer({ min: 0, max: 63 })
  .chain((lo) => fc.integer({ min: lo, max: Math.min(63, lo + 31) }).map((hi) => [lo, hi] as const));

describe('register bit fields without BigInt arithmetic', () => {
  it('bits() equals the BigInt shift-and-mask for every field up to 32 bits wide, straddling halves or not', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), range, (v, [lo, hi]) => {
        expect(bits(v, lo, hi)).toBe(ref(v, lo, hi));
        const [h, l] = halves(v);
        expect(field(h, l, lo, hi)).toBe(ref(v, lo, hi));
        expect(bit(v, lo)).toBe(ref(v, lo, lo) === 1);
      }),
      { numRuns: 5000 },
    );
  });

  it('splits into unsigned halves', () => {
    expect([hi32(0xfedcba9876543210n), lo32(0xfedcba9876543210n)]).toEqual([0xfedcba98, 0x76543210]);
    expect(bits(0xffffffffffffffffn, 0, 31)).toBe(0xffffffff);
    expect(bits(0xffffffffffffffffn, 32, 63)).toBe(0xffffffff);
    expect(bits(0x8000000180000000n, 31, 32)).toBe(3);
  });
});
