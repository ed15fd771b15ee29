import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ByteOrder, FieldValue, IntegerClass, StructClass } from '../model/types.ts';
import { BitReader } from './bit-reader.ts';
import { BitWriter } from './bit-writer.ts';
import { compileScope, type DecodeContext } from './decoder.ts';
import { compileEncoder } from './encoder.ts';

function int(size: number, signed: boolean, align: number, byteOrder: ByteOrder): IntegerClass {
  return { kind: 'int', size, signed, align, byteOrder, base: 10, encoding: 'none' };
}

function decode(type: StructClass, bytes: Uint8Array): FieldValue {
  const ctx: DecodeContext = { r: new BitReader(bytes, 'mem'), stack: [], roots: {} };
  return compileScope(type, { scope: 'event.fields', rootClasses: { 'event.fields': type } })(ctx);
}

describe('bit-level codecs', () => {
  it('reads CTF bit-fields in both byte orders (spec layout)', () => {
    // LE: fields fill from the least significant bit; BE: from the most significant bit.
    const le: StructClass = {
      kind: 'struct',
      minAlign: 1,
      members: [
        { name: 'a', type: int(3, false, 1, 'le') },
        { name: 'b', type: int(5, false, 1, 'le') },
        { name: 'c', type: int(12, true, 1, 'le') },
      ],
    };
    expect(decode(le, Uint8Array.of(0b10101_011, 0xff, 0x0f))).toEqual({ a: 3, b: 21, c: -1 });
    const be: StructClass = {
      ...le,
      members: le.members.map((m) => ({ ...m, type: { ...(m.type as IntegerClass), byteOrder: 'be' } })),
    };
    expect(decode(be, Uint8Array.of(0b011_10101, 0xff, 0xf0))).toEqual({ a: 3, b: 21, c: -1 });
  });

  it('round-trips random integer layouts exactly (encoder then decoder)', () => {
    const member = fc
      .record({
        size: fc.integer({ min: 1, max: 64 }),
        signed: fc.boolean(),
        align: fc.constantFrom(1, 8, 16, 32, 64),
        le: fc.boolean(),
        seed: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
      })
      .map(({ size, signed, align, le, seed }) => {
        const type = int(size, signed, align, le ? 'le' : 'be');
        let v = BigInt.asUintN(size, seed);
        if (signed) v = BigInt.asIntN(size, v);
        const value: number | bigint = size > 53 ? v : Number(v);
        return { type, value };
      });
    fc.assert(
      fc.property(fc.array(member, { minLength: 1, maxLength: 12 }), (members) => {
        // CTF changes byte order only on a byte boundary (bit numbering differs between the orders).
        const types = members.map((m, i) =>
          i > 0 && m.type.byteOrder !== members[i - 1]!.type.byteOrder
            ? { ...m.type, align: Math.max(8, m.type.align) }
            : m.type,
        );
        const type: StructClass = {
          kind: 'struct',
          minAlign: 1,
          members: types.map((t, i) => ({ name: `f${i}`, type: t })),
        };
        const values = Object.fromEntries(members.map((m, i) => [`f${i}`, m.value]));
        const w = new BitWriter(8);
        compileEncoder(type)(w, values);
        const bytes = w.bytes.slice(0, Math.ceil(w.pos / 8));
        expect(decode(type, bytes)).toEqual(values);
      }),
      { numRuns: 500 },
    );
  });

  it('reports a truncated field with the file and byte offset', () => {
    const type: StructClass = { kind: 'struct', minAlign: 1, members: [{ name: 'x', type: int(32, false, 8, 'le') }] };
    const ctx: DecodeContext = { r: new BitReader(Uint8Array.of(1, 2), 'f.bin', 100), stack: [], roots: {} };
    const d = compileScope(type, { scope: 'event.fields', rootClasses: {} });
    expect(() => d(ctx)).toThrow(
      'f.bin: byte 100: truncated field: needs 32 bits at bit 0 of the packet, only 16 left',
    );
  });
});

describe('generated codecs and hostile names', () => {
  it('keeps field names that look like code as plain data', () => {
    const names = ['__proto__', 'constructor', '"]; throw 1; //', "'); process.exit(1); ('", '\u2028', 'toString'];
    const type: StructClass = {
      kind: 'struct',
      minAlign: 1,
      members: names.map((name) => ({ name, type: int(8, false, 8, 'le') })),
    };
    const values = Object.fromEntries(names.map((n, i) => [n, i + 1]));
    const w = new BitWriter(8);
    compileEncoder(type)(w, values);
    expect(Array.from(w.bytes.subarray(0, names.length))).toEqual([1, 2, 3, 4, 5, 6]);
    const decoded = decode(type, w.bytes.subarray(0, names.length)) as Record<string, number>;
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
    for (const [i, n] of names.entries()) expect(Object.getOwnPropertyDescriptor(decoded, n)?.value).toBe(i + 1);
  });
});
