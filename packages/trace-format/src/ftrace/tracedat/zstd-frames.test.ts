import { zstdCompressSync, zstdDecompressSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { zstdContextKept, zstdFrame } from './zstd-frames.ts';

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
