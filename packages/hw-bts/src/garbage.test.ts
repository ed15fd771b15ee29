/**
 * Garbage is refused, never reported: random bytes in any detected format give no branch, and a raw BTS file with
 * corrupted records ends with a BtsError naming the file and the byte offset (or, lenient, counts what it skipped).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { BranchList } from './branch.ts';
import { BtsError } from './errors.ts';
import { decodeBranchInput, readBranchInput } from './input.ts';
import { decodeBts, encodeBts } from './raw.ts';

const dir = mkdtempSync(join(tmpdir(), 'evtrace-bts-garbage-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('random bytes', () => {
  it('never come out as branches: refused at a byte offset or line, or read as nothing but problems', () => {
    fc.assert(
      fc.property(fc.noBias(fc.uint8Array({ minLength: 1, maxLength: 4096 })), (bytes) => {
        let d: ReturnType<typeof decodeBranchInput>;
        try {
          d = decodeBranchInput(bytes, { source: 'random' });
        } catch (error) {
          expect(error).toBeInstanceOf(BtsError);
          expect((error as BtsError).message).toMatch(/^random(: byte \d+|:\d+:\d+)/);
          return;
        }
        expect(d.format === 'gdb-call-history' ? d.segments.length : d.branches.length).toBe(0);
        expect(d.problems.length).toBeGreaterThan(0);
        for (const p of d.problems) expect(p.message).toMatch(/^random(: byte \d+|:\d+:\d+)/);
      }),
      { numRuns: 80 },
    );
  });

  it('an empty file is refused, naming it', () => {
    const path = join(dir, 'empty');
    writeFileSync(path, '');
    expect(() => readBranchInput(path)).toThrow(
      `${path}: byte 0: empty: expected raw BTS records, perf.data, perf script, QEMU log or gdb record text, or a trace`,
    );
  });
});

describe('corrupted raw BTS records', () => {
  const list = new BranchList();
  for (let i = 0n; i < 40n; i++) list.add(0x401000n + i * 16n, 0xffffffff81000000n + i);
  const good = encodeBts(list);

  it('are refused at the offset of the first bad record, or skipped and counted with --lenient', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(good.length / 8 - 1), fc.bigInt({ min: 1n, max: 2n ** 64n - 1n })), {
          minLength: 1,
          maxLength: 8,
        }),
        (edits) => {
          const bytes = Buffer.from(good);
          for (const [word, value] of edits) bytes.writeBigUInt64LE(value, word * 8);
          const canonical = (a: bigint) => a < 2n ** 47n || a >= 2n ** 64n - 2n ** 47n;
          const bad: number[] = [];
          for (let at = 0; at < bytes.length; at += 24) {
            const from = bytes.readBigUInt64LE(at);
            const to = bytes.readBigUInt64LE(at + 8);
            if ((from !== 0n || to !== 0n) && !(canonical(from) && canonical(to))) bad.push(at);
          }
          const lenient = decodeBts(bytes, { source: 'c.bts', lenient: true });
          if (bad.length === 0) {
            expect(decodeBts(bytes, { source: 'c.bts' }).branches.length).toBe(lenient.branches.length);
            return;
          }
          expect(() => decodeBranchInput(bytes, { source: 'c.bts', format: 'bts64' })).toThrow(
            new RegExp(`^c\\.bts: byte ${bad[0]}: not a BTS record`),
          );
          expect(lenient.notes).toContain(
            `${bad.length} records with non-canonical addresses skipped (not BTS records)`,
          );
          expect(lenient.branches.length).toBe(40 - bad.length);
        },
      ),
      { numRuns: 80 },
    );
  });
});
