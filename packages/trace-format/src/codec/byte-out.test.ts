import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ByteOut, IntKey, KeptTexts, utf8 } from './byte-out.ts';

describe('ByteOut writes the text String() gives', () => {
  it('integers of every width, numbers and bigints, in decimal', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.integer({ min: -(2 ** 31), max: 2 ** 31 }),
          fc.maxSafeInteger(),
          fc.constantFrom(0, 9, 10, 99, 100, 2 ** 31 - 1, 2 ** 31, 2 ** 53 - 1, -(2 ** 53) + 1),
          fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }),
        ),
        (v) => {
          const out = new ByteOut(1);
          out.int(v);
          out.byte(32);
          if (typeof v === 'number' && v >= 0) out.uint(v);
          const expected = typeof v === 'number' && v >= 0 ? `${v} ${v}` : `${v} `;
          expect(out.toString()).toBe(expected);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('nine digits, zero-padded', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ min: 0, max: 999_999_999 }), fc.constantFrom(0, 1, 99_999, 100_000, 999_999_999)),
        (v) => {
          const out = new ByteOut(4);
          out.nine(v);
          expect(out.toString()).toBe(String(v).padStart(9, '0'));
        },
      ),
    );
  });

  it('text of any kind, labels and copies, growing as it goes', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary' }), { maxLength: 20 }), (parts) => {
        const out = new ByteOut(1);
        const label = utf8('é=');
        let expected = '';
        for (const p of parts) {
          out.text(p);
          out.raw(label);
          expected += `${Buffer.from(p, 'utf8').toString('utf8')}é=`;
        }
        const copy = new ByteOut(1);
        copy.copy(out.bytes, 0, out.length);
        expect(copy.toString()).toBe(expected);
        const viewed = new ByteOut(1);
        viewed.copyView(new DataView(out.bytes.buffer), 0, out.length);
        expect(viewed.toString()).toBe(expected);
      }),
    );
  });

  it('hexadecimal digits of numbers and bigints, bigints in decimal, zero-padded decimals', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.maxSafeNat(), fc.constantFrom(0, 15, 16, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1)),
        fc.oneof(
          fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
          fc.constantFrom(0n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 64n - 1n, 2n ** 64n, 2n ** 70n),
        ),
        fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }),
        fc.nat({ max: 2 ** 31 - 1 }),
        fc.nat({ max: 12 }),
        (n, big, signed, small, width) => {
          const out = new ByteOut(1);
          out.hex(n);
          out.byte(32);
          out.hexBigint(big);
          out.byte(32);
          out.bigint(signed);
          out.byte(32);
          out.padded(small, width);
          expect(out.toString()).toBe(
            `${n.toString(16)} ${big.toString(16)} ${signed} ${String(small).padStart(width, '0')}`,
          );
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('strings as JSON.stringify writes them, quoted and escaped', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary' }),
          fc.string(),
          fc.constantFrom('', 'a"b', 'back\\slash', 'tab\there', '\u007f', '\ud800 lone', 'kworker/u4:1'),
        ),
        (s) => {
          const out = new ByteOut(1);
          out.jsonString(s);
          out.jsonString('x');
          expect(out.toString()).toBe(`${JSON.stringify(s)}"x"`);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('KeptTexts', () => {
  it('writes back the text kept for each integer value, a number and a bigint of one value alike', () => {
    const value = fc.oneof(
      fc.integer({ min: -5, max: 5 }),
      fc.maxSafeInteger(),
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }),
      fc.constantFrom(2n ** 32n, -(2n ** 32n), 2n ** 64n - 1n, -1n, -1, 2 ** 53 - 1, -(2 ** 53) + 1),
    );
    fc.assert(
      fc.property(fc.array(value, { maxLength: 60 }), fc.integer({ min: 1, max: 40 }), (values, limit) => {
        const kept = new KeptTexts(limit);
        const key = new IntKey();
        const text = (v: number | bigint) => `<${BigInt(v)}é>`;
        const keptCount = new Set<bigint>();
        for (const v of [...values, ...values]) {
          expect(key.of(v)).toBe(true);
          const out = new ByteOut(1);
          out.byte(35);
          if (kept.write(key, out)) keptCount.add(BigInt(v));
          else kept.keep(key, text(v), out);
          expect(out.toString()).toBe(`#${text(v)}`);
        }
        expect(keptCount.size).toBeLessThanOrEqual(limit);
        kept.clear();
        const out = new ByteOut(1);
        for (const v of values) expect(key.of(v) && kept.write(key, out)).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('finds each of many texts kept, as its table grows, and keeps no more than its limit', () => {
    const kept = new KeptTexts(20_000);
    const key = new IntKey();
    const values = Array.from({ length: 30_000 }, (_, i) => (i % 2 === 0 ? 0xffffffff81000000n + BigInt(i * 64) : i));
    const out = new ByteOut(1);
    for (const v of values) {
      key.of(v);
      kept.keep(key, `t${v}`, out);
    }
    let found = 0;
    for (const v of values) {
      key.of(v);
      out.length = 0;
      if (kept.write(key, out)) {
        expect(out.toString()).toBe(`t${v}`);
        found++;
      }
    }
    expect(found).toBe(20_000);
  });

  it('takes no value beyond 64 bits or a number that is not a safe integer', () => {
    const key = new IntKey();
    for (const v of [2n ** 64n, -(2n ** 63n) - 1n, 0.5, 2 ** 53, Number.NaN, 'text', undefined])
      expect(key.of(v)).toBe(false);
  });
});
