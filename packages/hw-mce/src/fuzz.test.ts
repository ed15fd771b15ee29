/**
 * Every decoder fuzzed with fast-check over mutated real inputs (mcelog's test inputs and a kernel log, struct mce
 * records, trace text): only MceError may escape, nothing hangs, and every record returned decodes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeMce } from './decode.ts';
import { MceError } from './errors.ts';
import { encodeStructMce } from './inputs/struct-mce.ts';
import { toJsonLine, toText } from './output.ts';
import { readMceBuffer } from './read.ts';
import { emptyRecord } from './record.ts';
import { fixture } from './testing/formats.ts';

const dir = fixture('mce-mcelog-cases');
const texts = readdirSync(dir)
  .filter((f) => f.endsWith('.inp') || f.endsWith('.out'))
  .map((f) => readFileSync(join(dir, f)));
const binary = encodeStructMce(
  [0x9c00000000000090n, 0xbd80000000100134n, 0xdc2040000000011bn].map((status, i) =>
    Object.assign(emptyRecord({ kind: 'struct-mce' }), {
      status,
      bank: i,
      cpu: i,
      cpuid: 0x50654,
      cpuvendor: i === 2 ? 2 : 0,
      ipid: 0x9600000000n,
    }),
  ),
);
const kinds = ['mcelog-ascii', 'kernel-log', 'trace-text', 'struct-mce'] as const;

/** A real input with bytes flipped, inserted or cut. */
const mutated = fc
  .tuple(
    fc.constantFrom(...texts, binary),
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('flip', 'insert', 'cut')), {
      maxLength: 12,
    }),
  )
  .map(([base, edits]) => {
    let b = Buffer.from(base);
    for (const [at, byte, op] of edits) {
      const i = b.length === 0 ? 0 : at % b.length;
      if (op === 'flip' && b.length > 0) b[i] = byte;
      else if (op === 'insert') b = Buffer.concat([b.subarray(0, i), Buffer.from([byte]), b.subarray(i)]);
      else b = b.subarray(0, i);
    }
    return b;
  });

describe('fuzzing the readers and the decoder', () => {
  it('mutated inputs of every kind: only MceError, and every record decodes and prints', () => {
    fc.assert(
      fc.property(mutated, fc.constantFrom(...kinds, undefined), (bytes, kind) => {
        let read: ReturnType<typeof readMceBuffer>;
        try {
          read = readMceBuffer(bytes, kind ? { kind } : {});
        } catch (error) {
          expect(error).toBeInstanceOf(MceError);
          return;
        }
        for (const r of read.records) {
          const d = decodeMce(r);
          expect(toText(d).length).toBeGreaterThan(0);
          expect(JSON.parse(toJsonLine(d)).severity).toBe(d.severity);
        }
      }),
      { numRuns: 1500 },
    );
  });

  it('arbitrary register values decode without throwing, for every CPU kind', () => {
    const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });
    fc.assert(
      fc.property(
        u64,
        u64,
        u64,
        u64,
        u64,
        fc.nat(255),
        fc.integer({ min: 0, max: 0xffffffff }),
        fc.constantFrom(0, 2, 9, undefined),
        (status, misc, mcgstatus, mcgcap, ipid, bank, cpuid, vendor) => {
          const d = decodeMce(
            Object.assign(emptyRecord({ kind: 'struct-mce' }), {
              status,
              misc,
              mcgstatus,
              mcgcap,
              ipid,
              bank,
              cpuid,
              cpuvendor: vendor,
            }),
          );
          expect(['corrected', 'deferred', 'ucna', 'srao', 'srar', 'fatal']).toContain(d.severity);
          expect(d.summary).not.toBe('');
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('a large garbage text reads in linear time', () => {
    const junk = Buffer.from('CPU CPU STATUS STATUS 0x 0x (XEN) RIP <:> '.repeat(40_000));
    const t0 = performance.now();
    const read = readMceBuffer(junk, { kind: 'mcelog-ascii' });
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(read.records.length + read.notes.length).toBeGreaterThan(0);
  });
});
