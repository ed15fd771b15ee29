import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ByteOut, utf8 } from './byte-out.ts';

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
      }),
    );
  });

  it('hexadecimal digits of numbers and bigints up to 64 bits, and wider ones', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.integer({ min: 0, max: 2 ** 32 }),
          fc.maxSafeNat(),
          fc.constantFrom(0, 15, 16, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1),
          fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
          fc.constantFrom(0n, 1n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 63n, 2n ** 64n - 1n, 2n ** 64n, 2n ** 80n + 5n),
        ),
        (v) => {
          const out = new ByteOut(1);
          out.hex(v);
          out.byte(32);
          expect(out.toString()).toBe(`${v.toString(16)} `);
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
