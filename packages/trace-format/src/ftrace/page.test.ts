import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import { PagePacker, packPages } from './encode.ts';
import type { PageLayout } from './headers.ts';
import { readPage } from './page.ts';

const layout = (pageSize: number, byteOrder: 'le' | 'be' = 'le'): PageLayout => ({
  byteOrder,
  timestampOffset: 0,
  commitOffset: 8,
  commitSize: 8,
  dataOffset: 16,
  pageSize,
});

function readAll(bytes: Buffer, l: PageLayout) {
  const out: { ts: bigint; data: number[] }[] = [];
  const infos = [];
  /** Per page: where its first record's payload starts (-1: none). */
  const firsts: number[] = [];
  for (let at = 0; at < bytes.length; at += l.pageSize) {
    firsts.push(-1);
    infos.push(
      readPage(bytes, at, l, (ts, s, n) => {
        if (firsts.at(-1) === -1) firsts[firsts.length - 1] = s;
        out.push({ ts, data: [...bytes.subarray(s, s + n)] });
      }),
    );
  }
  return { out, infos, firsts };
}

const records = fc.array(
  fc.record({
    gap: fc.oneof(fc.bigInt({ min: 0n, max: 1000n }), fc.bigInt({ min: 1n << 27n, max: 1n << 40n })),
    len: fc.integer({ min: 1, max: 300 }),
  }),
  { maxLength: 80 },
);

describe('ring-buffer pages', () => {
  for (const [name, l, abs] of [
    ['4 KiB little-endian, time extends', layout(4096), false],
    ['16 KiB little-endian, absolute stamps', layout(16384), true],
    ['4 KiB big-endian', layout(4096, 'be'), false],
  ] as const) {
    it(`decode what packPages wrote (${name}): timestamps and payloads`, () => {
      fc.assert(
        fc.property(records, (rs) => {
          let ts = 1_000_000n;
          const input = rs.map((r, i) => {
            ts += r.gap;
            return { tsNs: ts, data: Buffer.alloc(r.len, i & 0xff) };
          });
          const bytes = packPages(input, l, { absoluteStamps: abs });
          expect(bytes.length % l.pageSize).toBe(0);
          const { out, infos, firsts } = readAll(bytes, l);
          expect(out.map((o) => o.ts)).toEqual(input.map((r) => r.tsNs));
          // A page leads with a record when its first payload follows the first header word (and a length word).
          infos.forEach((info, p) => {
            const data = p * l.pageSize + l.dataOffset;
            expect(info.leadingRecord).toBe(firsts[p] === data + 4 || firsts[p] === data + 8);
          });
          // Payloads come back padded to 4 bytes.
          out.forEach((o, i) => {
            expect(o.data.slice(0, input[i]!.data.length)).toEqual([...input[i]!.data]);
          });
        }),
        { numRuns: 60 },
      );
    });
  }

  it('reports the missed-events flag and the stored count', () => {
    const bytes = packPages([{ tsNs: 5n, data: Buffer.alloc(8), missed: 42 }], layout(4096));
    const info = readPage(bytes, 0, layout(4096), () => {});
    expect(info).toMatchObject({ missedEvents: true, missedCount: 42, dataLength: 12, tsNs: 5n, leadingRecord: true });
  });

  it('starts a flagged page at each record after a loss, with its count or without one, leaving room for the count', () => {
    const l = layout(4096);
    const full = (4096 - 16) / 12;
    const records = Array.from({ length: 2 * full }, (_, i) => ({
      tsNs: BigInt(10 + i),
      data: Buffer.alloc(8, i & 0xff),
      ...(i === 3 ? { missed: 7 } : i === 3 + full - 1 ? { missed: null } : {}),
    }));
    const bytes = packPages(records, l);
    const firsts: number[] = [];
    const infos = Array.from({ length: bytes.length / 4096 }, (_, p) => {
      let first: number | undefined;
      const info = readPage(bytes, p * 4096, l, (_ts, start) => {
        first ??= bytes[start]!;
      });
      firsts.push(first!);
      return info;
    });
    // Records 0-2; from 3, a page that holds one record fewer (the count after its data); from 3 + full - 1, the rest.
    expect(firsts).toEqual([0, 3, (3 + full - 1) & 0xff]);
    expect(infos.map((i) => [i.missedEvents, i.missedCount, i.dataLength / 12])).toEqual([
      [false, undefined, 3],
      [true, 7, full - 1],
      [true, undefined, 2 * full - (3 + full - 1)],
    ]);
    expect(infos.every((i) => i.leadingRecord)).toBe(true);
  });

  it('skips discarded events (padding with a length) and stops at end-of-page padding', () => {
    const l = layout(4096);
    const bytes = packPages(
      [
        { tsNs: 10n, data: Buffer.alloc(8, 1) },
        { tsNs: 20n, data: Buffer.alloc(8, 2) },
        { tsNs: 30n, data: Buffer.alloc(8, 3) },
      ],
      l,
    );
    // Turn the second record (at data offset 12) into a discarded one: type_len 29, delta 10, length word.
    bytes.writeUInt32LE((10 << 5) | 29, 16 + 12);
    bytes.writeUInt32LE(8, 16 + 16);
    const { out } = readAll(bytes, l);
    expect(out.map((o) => o.data[0])).toEqual([1, 3]);
    // The discarded event's delta still counts toward the next one's time.
    expect(out.map((o) => o.ts)).toEqual([10n, 30n]);
    // Null padding (delta 0) ends the page early.
    bytes.writeUInt32LE(29, 16 + 12);
    expect(readAll(bytes, l).out.map((o) => o.data[0])).toEqual([1]);
  });

  it('never throws anything but TraceFormatError on mutated pages, naming the byte offset', () => {
    const l = layout(4096);
    const base = packPages(
      Array.from({ length: 200 }, (_, i) => ({ tsNs: BigInt(i) * 1_000_000n, data: Buffer.alloc((i % 40) + 1, i) })),
      l,
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(base.length - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 12 }),
        (edits) => {
          const b = Buffer.from(base);
          for (const [pos, v] of edits) b[pos] = v;
          for (let at = 0; at < b.length; at += l.pageSize) {
            try {
              readPage(b, at, l, () => {}, { file: 'cpu0.raw' });
            } catch (e) {
              expect(e).toBeInstanceOf(TraceFormatError);
              expect((e as Error).message).toMatch(/^cpu0\.raw: byte \d+: /);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('PagePacker.placerAfter', () => {
  it('places records where placeAfter places them, and declines where it declines (both byte orders)', () => {
    fc.assert(
      fc.property(
        records,
        fc.constantFrom('le' as const, 'be' as const),
        fc.constantFrom(512, 4096),
        (recs, byteOrder, pageSize) => {
          const l = layout(pageSize, byteOrder);
          const pagesOf = (withPlacer: boolean) => {
            const pages: Buffer[] = [];
            const packer = new PagePacker(l, (page) => pages.push(Buffer.from(page)));
            const placers = new Map<number, (deltaNs: number) => number>();
            const places: number[] = [];
            let ts = 1000n;
            recs.forEach((r, i) => {
              ts += r.gap;
              const delta = Number(r.gap);
              let at = -1;
              if (i > 0) {
                if (!withPlacer) at = packer.placeAfter(delta, r.len);
                else {
                  if (!placers.has(r.len)) placers.set(r.len, packer.placerAfter(r.len));
                  at = placers.get(r.len)!(delta);
                }
              }
              places.push(at);
              // Declined (or the first): placed by its time, as a caller does.
              if (at < 0) at = packer.place(ts, r.len);
              packer.page.fill(i & 0xff, at, at + r.len);
            });
            packer.close();
            return { pages: Buffer.concat(pages), places };
          };
          const plain = pagesOf(false);
          const placed = pagesOf(true);
          expect(placed.places).toEqual(plain.places);
          expect(placed.pages.equals(plain.pages)).toBe(true);
          // And the records read back in order (each padded to 4 bytes).
          expect(readAll(placed.pages, l).out.map((o) => o.data.length)).toEqual(recs.map((r) => (r.len + 3) & ~3));
        },
      ),
      { numRuns: 200 },
    );
  });
});
