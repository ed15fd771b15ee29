import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { readElfSymbols } from './elf.ts';
import { BtsError } from './errors.ts';
import { buildProgram, CC_MISSING, hasTool } from './testing/programs.ts';

const why = !hasTool('cc')
  ? CC_MISSING
  : !hasTool('readelf')
    ? 'readelf is not installed (apt-get install binutils)'
    : '';

describe.skipIf(why !== '')(`ELF symbol tables${why ? ` (skipped: ${why})` : ''}`, () => {
  // Built before the tests, not while they are collected: a skipped suite is collected too.
  let exe = '';
  let bytes = Buffer.alloc(0);
  beforeAll(() => {
    exe = buildProgram();
    bytes = readFileSync(exe);
  });

  it('lists the same defined functions as readelf -s, with the same values and sizes', () => {
    const ours = readElfSymbols(bytes, exe);
    expect(ours.class).toBe(64);
    expect(ours.type).toBe(2);
    const theirs = new Set<string>();
    for (const line of execFileSync('readelf', ['-sW', exe], { encoding: 'utf8' }).split('\n')) {
      const f = line.trim().split(/\s+/);
      // Num: Value Size Type Bind Vis Ndx Name
      if (f.length >= 8 && (f[3] === 'FUNC' || f[3] === 'IFUNC') && f[6] !== 'UND' && BigInt(`0x${f[1]}`) !== 0n)
        theirs.add(`${BigInt(`0x${f[1]}`)}:${f[2]!.startsWith('0x') ? BigInt(f[2]!) : BigInt(f[2]!)}:${f[7]}`);
    }
    const mine = new Set(ours.symbols.map((s) => `${s.value}:${s.size}:${s.name}`));
    expect(theirs.size).toBeGreaterThan(100);
    expect(mine).toEqual(theirs);
  });

  it("reads a shared object's .dynsym (libc)", () => {
    const libc = execFileSync('cc', ['-print-file-name=libc.so.6'], { encoding: 'utf8' }).trim();
    const s = readElfSymbols(readFileSync(libc), libc);
    expect(s.type).toBe(3);
    expect(s.symbols.some((x) => x.name === 'malloc' && x.table === '.dynsym')).toBe(true);
  });

  it('rejects non-ELF and cut ELF files with ERR_BTS_ELF and a byte offset', () => {
    expect(() => readElfSymbols(new TextEncoder().encode('#!/bin/sh\necho hi\n'.repeat(4)), 'x.sh')).toThrow(
      /x\.sh: byte 0: not an ELF file/,
    );
    const cut = bytes.subarray(0, 4096);
    try {
      readElfSymbols(cut, 'cut');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(BtsError);
      expect((error as BtsError).code).toBe('ERR_BTS_ELF');
      expect((error as BtsError).offset).toBeGreaterThan(0);
    }
  });

  it('fuzz: mutated headers and section tables throw only ERR_BTS_ELF', () => {
    const head = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(40, true));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.oneof(fc.nat(64), fc.integer({ min: head, max: bytes.length - 1 })), fc.nat(255)), {
          minLength: 1,
          maxLength: 6,
        }),
        (edits) => {
          const b = Uint8Array.from(bytes);
          for (const [at, v] of edits) b[at] = v;
          try {
            readElfSymbols(b, 'm');
          } catch (error) {
            expect(error).toBeInstanceOf(BtsError);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
