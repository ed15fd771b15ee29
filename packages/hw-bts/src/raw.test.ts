import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BranchFlag, BranchList } from './branch.ts';
import { BtsError } from './errors.ts';
import { decodeBts, encodeBts } from './raw.ts';

/** A 24-byte record written field by field as the SDM lays it out (not through encodeBts). */
function record64(from: bigint, to: bigint, flags: bigint): Uint8Array {
  const b = new Uint8Array(24);
  const v = new DataView(b.buffer);
  v.setBigUint64(0, from, true);
  v.setBigUint64(8, to, true);
  v.setBigUint64(16, flags, true);
  return b;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

describe('raw BTS records', () => {
  it('decodes 24-byte records: kernel and user addresses exactly, bit 4 predicted (clear: mispredicted), other bits ignored', () => {
    const bytes = concat(
      record64(0xffffffff81234567n, 0x7ffd12345678n, 0x10n),
      record64(0x401000n, 0xffffffff8100abcdn, 0x0fn),
    );
    const d = decodeBts(bytes);
    expect(d.problems).toEqual([]);
    expect(d.branches.toArray().map((b) => [b.from, b.to, b.flags])).toEqual([
      [0xffffffff81234567n, 0x7ffd12345678n, ['predicted']],
      [0x401000n, 0xffffffff8100abcdn, ['mispredicted']],
    ]);
  });

  it('decodes 12-byte 32-bit records', () => {
    const b = new Uint8Array(24);
    const v = new DataView(b.buffer);
    v.setUint32(0, 0xc1000000, true);
    v.setUint32(4, 0x08048000, true);
    v.setUint32(8, 0x10, true);
    v.setUint32(12, 0x08048010, true);
    v.setUint32(16, 0x08048020, true);
    const d = decodeBts(b, { format: 'bts32' });
    expect(d.branches.toArray().map((x) => [x.from, x.to, x.flags])).toEqual([
      [0xc1000000n, 0x08048000n, ['predicted']],
      [0x08048010n, 0x08048020n, ['mispredicted']],
    ]);
  });

  it('keeps every whole record before a truncated one and says where the partial record starts', () => {
    const bytes = concat(record64(1n, 2n, 0n), record64(3n, 4n, 0x10n), new Uint8Array(10).fill(7));
    const d = decodeBts(bytes, { source: 'x.bts' });
    expect(d.branches.length).toBe(2);
    expect(d.problems).toHaveLength(1);
    expect(d.problems[0]).toBeInstanceOf(BtsError);
    expect(d.problems[0]!.code).toBe('ERR_BTS_TRUNCATED');
    expect(d.problems[0]!.offset).toBe(48);
    expect(d.problems[0]!.message).toBe(
      'x.bts: byte 48: truncated 24-byte BTS record: 10 bytes at the end (2 whole records kept)',
    );
  });

  it('skips all-zero padding records with a note', () => {
    const d = decodeBts(concat(record64(5n, 6n, 0n), new Uint8Array(48)));
    expect(d.branches.length).toBe(1);
    expect(d.notes).toEqual(['2 all-zero 24-byte records skipped (padding)']);
  });

  it('round-trips through encodeBts in both layouts', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.oneof(
              fc.bigInt({ min: 1n, max: 2n ** 47n - 1n }),
              fc.bigInt({ min: 2n ** 64n - 2n ** 47n, max: 2n ** 64n - 1n }),
            ),
            fc.oneof(
              fc.bigInt({ min: 0n, max: 2n ** 47n - 1n }),
              fc.bigInt({ min: 2n ** 64n - 2n ** 47n, max: 2n ** 64n - 1n }),
            ),
            fc.boolean(),
          ),
          { maxLength: 50 },
        ),
        (rows) => {
          const list = new BranchList();
          for (const [f, t, p] of rows) list.add(f, t, { flags: p ? BranchFlag.predicted : 0 });
          const back = decodeBts(encodeBts(list)).branches.toArray();
          expect(back.map((b) => [b.from, b.to, b.flags[0] === 'predicted'])).toEqual(rows);
          const small = decodeBts(encodeBts(list, 'bts32'), { format: 'bts32' }).branches;
          expect(small.length).toBe(
            rows.filter(([f, t]) => (f & 0xffffffffn) !== 0n || (t & 0xffffffffn) !== 0n).length,
          );
        },
      ),
    );
  });

  it('refuses a record with a non-canonical address at its offset, or skips and counts it when lenient', () => {
    const bytes = concat(record64(0x401000n, 0x401020n, 0x10n), record64(0x1234_5678_9abc_def0n, 0x401000n, 0n));
    const e = (() => {
      try {
        decodeBts(bytes, { source: 'x.bts' });
      } catch (error) {
        return error as BtsError;
      }
    })();
    expect(e?.code).toBe('ERR_BTS_FORMAT');
    expect(e?.offset).toBe(24);
    expect(e?.message).toMatch(/^x\.bts: byte 24: not a BTS record: from 0x123456789abcdef0 to 0x401000/);
    const d = decodeBts(bytes, { lenient: true });
    expect(d.branches.length).toBe(1);
    expect(d.notes).toEqual(['1 records with non-canonical addresses skipped (not BTS records)']);
  });

  it('fuzz: any bytes decode to canonical branches plus at most one truncation problem, or are refused at an offset', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 2000 }),
        fc.constantFrom('bts64' as const, 'bts32' as const),
        fc.boolean(),
        (bytes, format, lenient) => {
          const size = format === 'bts64' ? 24 : 12;
          let d: ReturnType<typeof decodeBts>;
          try {
            d = decodeBts(bytes, { format, lenient, source: 'f' });
          } catch (error) {
            expect(lenient || format === 'bts32').toBe(false);
            expect((error as BtsError).code).toBe('ERR_BTS_FORMAT');
            expect((error as BtsError).offset! % size).toBe(0);
            expect((error as BtsError).message).toMatch(/^f: byte \d+: not a BTS record/);
            return;
          }
          expect(d.branches.length).toBeLessThanOrEqual(Math.floor(bytes.length / size));
          if (format === 'bts64')
            for (const b of d.branches.toArray()) {
              for (const a of [b.from, b.to]) expect(a < 2n ** 47n || a >= 2n ** 64n - 2n ** 47n).toBe(true);
            }
          expect(d.problems.length).toBe(bytes.length % size === 0 ? 0 : 1);
          for (const p of d.problems) expect(p.code).toBe('ERR_BTS_TRUNCATED');
        },
      ),
    );
  });
});
