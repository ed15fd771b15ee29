import { zstdCompressSync, zstdDecompressSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { zstdContextKept, zstdDecodeInto, zstdFrame } from './zstd-frames.ts';

/** Bytes like trace pages: runs of a repeated pattern among random ones. */
const PAGES = fc
  .array(
    fc.oneof(
      fc.uint8Array({ maxLength: 512 }),
      fc
        .record({ pattern: fc.uint8Array({ minLength: 1, maxLength: 24 }), times: fc.nat(400) })
        .map(({ pattern, times }) => {
          const out = new Uint8Array(pattern.length * times);
          for (let i = 0; i < times; i++) out.set(pattern, i * pattern.length);
          return out;
        }),
    ),
    { maxLength: 40 },
  )
  .map((parts) => Buffer.concat(parts));

describe('zstd frames from one kept context', () => {
  it('are the bytes zstdCompressSync gives, frame after frame, and decompress to the input', () => {
    fc.assert(
      fc.property(fc.array(PAGES, { minLength: 1, maxLength: 6 }), (inputs) => {
        for (const raw of inputs) {
          const frame = zstdFrame(raw);
          expect(frame.equals(zstdCompressSync(raw))).toBe(true);
          expect(zstdDecompressSync(frame).equals(raw)).toBe(true);
        }
      }),
      { numRuns: 100 },
    );
    // Node's zstd handle is there: the frames came from the kept context, not a context each.
    expect(zstdContextKept()).toBe(true);
  });

  it('takes input that does not compress, and empty input', () => {
    const random = Buffer.alloc(200_000);
    for (let i = 0; i < random.length; i++) random[i] = (i * 2654435761) >>> 24;
    for (const raw of [random, Buffer.alloc(0), random.subarray(0, 40_960)]) {
      expect(zstdFrame(raw).equals(zstdCompressSync(raw))).toBe(true);
    }
  });
});

describe('zstd frames decoded by one kept context into a reused buffer', () => {
  /** What the kept context makes of `frame` expecting `size` bytes: the bytes, or undefined where it declines. */
  const decodeInto = (frame: Uint8Array, size: number, into = Buffer.alloc(size + 1)) =>
    zstdDecodeInto(frame, into, size) ? Buffer.from(into.subarray(0, size)) : undefined;

  it('gives the input back, frame after frame, and declines frames that are corrupt, cut or of another size', () => {
    const reused = Buffer.alloc(1 << 17);
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            raw: PAGES,
            damage: fc.oneof(
              fc.constant({ kind: 'none' as const }),
              fc.record({ kind: fc.constant('byte' as const), at: fc.nat(), value: fc.nat(255) }),
              fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
              fc.record({ kind: fc.constant('size' as const), by: fc.integer({ min: -3, max: 3 }) }),
            ),
          }),
          { minLength: 1, maxLength: 8 },
        ),
        (cases) => {
          for (const { raw, damage } of cases) {
            let frame = zstdCompressSync(raw);
            let size = raw.length;
            if (damage.kind === 'byte') {
              frame = Buffer.from(frame);
              frame[damage.at % frame.length] = damage.value;
            } else if (damage.kind === 'cut') frame = frame.subarray(0, damage.at % frame.length);
            else if (damage.kind === 'size') size = Math.max(0, size + damage.by);
            let expected: Buffer | undefined;
            try {
              expected = zstdDecompressSync(frame);
            } catch {
              expected = undefined;
            }
            const got = decodeInto(frame, size, reused);
            // Where it decodes, it gives what zstdDecompressSync gives; it declines whatever that refuses or sizes
            // otherwise (a corrupt frame may still decode, to the bytes zstdDecompressSync also gives).
            if (got !== undefined) expect(expected !== undefined && got.equals(expected)).toBe(true);
            else expect(expected === undefined || expected.length !== size || damage.kind !== 'none').toBe(true);
            // (An empty frame may be declined: the reader then decompresses it as usual.)
            if (damage.kind === 'none' && raw.length > 0) expect(got?.equals(raw)).toBe(true);
          }
          // Whatever came before, the next whole frame decodes.
          const raw = Buffer.from('after the damage '.repeat(100));
          expect(decodeInto(zstdCompressSync(raw), raw.length)?.equals(raw)).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('declines a buffer with no room beyond the size, where a longer frame would not show', () => {
    const raw = Buffer.from('x'.repeat(1000));
    expect(zstdDecodeInto(zstdCompressSync(raw), Buffer.alloc(1000), 1000)).toBe(false);
    expect(decodeInto(zstdCompressSync(raw), 1000)?.equals(raw)).toBe(true);
  });
});
