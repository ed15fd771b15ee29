import { closeSync, mkdtempSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { copyFileRange } from './copy-range.ts';

const dir = mkdtempSync(join(tmpdir(), 'evtrace-copy-range-'));

/**
 * An input file of `length` patterned bytes and an empty output, both open; `use` runs with them and they are closed
 * after. Returns the input's bytes and the output's as written.
 */
function withFiles(
  name: string,
  length: number,
  use: (input: number, out: number, data: Buffer) => void,
): { data: Buffer; got: Buffer } {
  const data = Buffer.from(Array.from({ length }, (_, i) => (i * 31) & 255));
  writeFileSync(join(dir, `${name}-in`), data);
  const input = openSync(join(dir, `${name}-in`), 'r');
  const out = openSync(join(dir, `${name}-out`), 'w');
  try {
    use(input, out, data);
  } finally {
    closeSync(input);
    closeSync(out);
  }
  return { data, got: readFileSync(join(dir, `${name}-out`)) };
}

describe('copyFileRange (the kernel copy_file_range, through koffi)', () => {
  it('appends the input from its position at the output position, and both positions move on', () => {
    const { data, got } = withFiles('append', 3 * 65536 + 123, (input, out, source) => {
      writeSync(out, 'head:');
      expect(copyFileRange(input, out, 65536)).toBe(true);
      // Positions moved: a plain write lands after the copy, a second copy takes the input's next bytes.
      writeSync(out, '|');
      expect(copyFileRange(input, out, source.length - 65536)).toBe(true);
    });
    expect(got.subarray(0, 5).toString()).toBe('head:');
    expect(got.subarray(5, 5 + 65536).equals(data.subarray(0, 65536))).toBe(true);
    expect(got[5 + 65536]).toBe('|'.charCodeAt(0));
    expect(got.subarray(6 + 65536).equals(data.subarray(65536))).toBe(true);
  });

  it('copies between given offsets without moving either position', () => {
    const { data, got } = withFiles('at', 2 * 65536 + 77, (input, out) => {
      expect(copyFileRange(input, out, 65536 + 77, { from: 65536, to: 8192 })).toBe(true);
      // The output's own position is still 0: a plain write lands at the start.
      writeSync(out, 'head');
    });
    expect(got.length).toBe(8192 + 65536 + 77);
    expect(got.subarray(0, 4).toString()).toBe('head');
    expect(got.subarray(4, 8192).every((b) => b === 0)).toBe(true);
    expect(got.subarray(8192).equals(data.subarray(65536))).toBe(true);
  });

  it('declines, writing nothing, where the kernel cannot copy (a procfs input): the caller reads and writes', () => {
    const input = openSync('/proc/version', 'r');
    const out = openSync(join(dir, 'declined'), 'w');
    try {
      expect(copyFileRange(input, out, 64)).toBe(false);
    } finally {
      closeSync(input);
      closeSync(out);
    }
    expect(readFileSync(join(dir, 'declined')).length).toBe(0);
  });

  it('says when the input ends before the length asked for', () => {
    writeFileSync(join(dir, 'short'), Buffer.alloc(1000, 7));
    const input = openSync(join(dir, 'short'), 'r');
    const out = openSync(join(dir, 'short-out'), 'w');
    try {
      expect(() => copyFileRange(input, out, 4096)).toThrow(
        expect.objectContaining({ code: 'ERR_SHORT_INPUT', message: 'the input ended after 1000 of 4096 bytes' }),
      );
    } finally {
      closeSync(input);
      closeSync(out);
    }
  });
});
