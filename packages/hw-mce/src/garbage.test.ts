/**
 * Garbage is refused, never reported: random bytes read as any buffer kind give no record, and binary input without
 * the evidence of struct mce records ends with an MceError naming the file and the byte offset.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MceError } from './errors.ts';
import { encodeStructMce, STRUCT_MCE } from './inputs/struct-mce.ts';
import { readMceBuffer } from './read.ts';
import { emptyRecord } from './record.ts';

/** Uniform random bytes with at least one NUL in their head, so that detection takes them for struct mce. */
const binary = fc.tuple(fc.noBias(fc.uint8Array({ minLength: 128, maxLength: 65536 })), fc.nat()).map(([bytes, at]) => {
  bytes[at % Math.min(bytes.length, 4096)] = 0;
  return bytes;
});

function refusal(f: () => unknown): MceError | undefined {
  try {
    f();
  } catch (error) {
    if (error instanceof MceError) return error;
    throw error;
  }
  return undefined;
}

describe('random bytes', () => {
  it('as binary input: refused with the file and a byte offset, never a record', () => {
    fc.assert(
      fc.property(binary, (bytes) => {
        const e = refusal(() => readMceBuffer(bytes, { file: 'random.bin' }));
        expect(e?.code).toBe('ERR_MCE_INPUT');
        expect(e?.location?.file).toBe('random.bin');
        expect(e?.location?.offset).toBeTypeOf('number');
        expect(e?.message).toMatch(/^random\.bin: byte \d+: .*expected struct mce records/);
      }),
      { numRuns: 60 },
    );
  });

  it('as any kind: no record comes out of them', () => {
    fc.assert(
      fc.property(
        fc.noBias(fc.uint8Array({ maxLength: 8192 })),
        fc.constantFrom('mcelog-ascii', 'kernel-log', 'trace-text', 'struct-mce', undefined),
        (bytes, kind) => {
          try {
            const r = readMceBuffer(bytes, { file: 'random', ...(kind ? { kind } : {}) });
            expect(r.records).toEqual([]);
          } catch (error) {
            expect(error).toBeInstanceOf(MceError);
            expect((error as MceError).location?.file).toBe('random');
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('the evidence of struct mce records', () => {
  const good = encodeStructMce([
    Object.assign(emptyRecord({ kind: 'struct-mce' }), { status: 0x9c00000000000090n, bank: 7, cpuid: 0x50654 }),
  ]);

  it('takes a finished record with VAL set and a plain MCG_STATUS', () => {
    expect(readMceBuffer(good, { file: 'ok' }).records).toHaveLength(1);
  });

  it('looks past unfinished records to the first finished one', () => {
    const bytes = Buffer.concat([Buffer.alloc(128), good]);
    const r = readMceBuffer(bytes, { file: 'ok', kind: 'struct-mce', recordLength: 128 });
    expect(r.records).toHaveLength(1);
    expect(r.notes.map((n) => n.message)).toEqual(['record not finished by the kernel (finished = 0): skipped']);
  });

  it('refuses VAL clear, a reserved MCG_STATUS bit, or no finished record, at the offset', () => {
    const noVal = Buffer.from(good);
    noVal.writeBigUInt64LE(0x1c00000000000090n, STRUCT_MCE.status);
    expect(refusal(() => readMceBuffer(noVal, { file: 'f' }))?.message).toBe(
      'f: byte 0: not a machine-check record (MCi_STATUS.VAL clear): expected struct mce records (finished = 1, MCi_STATUS.VAL set, no reserved MCG_STATUS bit)',
    );
    const reserved = Buffer.concat([Buffer.alloc(128), good]);
    reserved.writeBigUInt64LE(0x100n, 128 + STRUCT_MCE.mcgstatus);
    expect(
      refusal(() => readMceBuffer(reserved, { file: 'f', kind: 'struct-mce', recordLength: 128 }))?.message,
    ).toMatch(/^f: byte 128: not a machine-check record \(MCG_STATUS 0x100\)/);
    expect(refusal(() => readMceBuffer(Buffer.alloc(256), { file: 'f' }))?.message).toMatch(
      /^f: byte 0: no finished 128-byte record: expected struct mce records/,
    );
  });
});
