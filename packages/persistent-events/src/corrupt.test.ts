import {
  closeSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { openPersistent, PersistentError } from './index.ts';

const dir = mkdtempSync(join(tmpdir(), 'persistent-corrupt-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A real buffer file with some records, returned as bytes. */
function realBuffer(): { path: string; bytes: Uint8Array } {
  const buf = openPersistent('c/source', { dir, create: { size: 16384, classes: ['a:b', 'c:d'] } });
  const w = buf.writer();
  for (let i = 0; i < 300; i++) {
    const at = w.reserve(i % 2, 12);
    w.view.setUint32(at, i, true);
    w.commit();
  }
  w.close();
  buf.close();
  return { path: buf.path, bytes: new Uint8Array(readFileSync(buf.path)) };
}
const source = realBuffer();

function withBytes(name: string, bytes: Uint8Array): () => unknown {
  writeFileSync(join(dir, 'c', `${name}.evrb`), bytes);
  return () => openPersistent(`c/${name}`, { dir, readOnly: true }).close();
}

function patch(at: number, value: number): Uint8Array {
  const b = source.bytes.slice();
  new DataView(b.buffer).setUint32(at, value, true);
  return b;
}

describe('damaged buffer files give ERR_PERSISTENT_CORRUPT with the file and byte offset', () => {
  const cases: Array<[string, Uint8Array, number, RegExp]> = [
    ['magic', patch(0, 0x12345678), 0, /not an evtrace ring buffer: magic 0x12345678/],
    ['version', patch(4, 9), 4, /layout version 9 is newer/],
    ['byte-order', patch(8, 0x04030201), 8, /big-endian/],
    ['page-size', patch(16, 5000), 16, /page size 5000 must be a power of two/],
    ['page-count', patch(20, 1), 20, /page count 1 must be/],
    ['mode', patch(24, 7), 24, /unknown mode 7/],
    ['meta-magic', patch(4096 + 4 * 4096, 0), 4096 + 4 * 4096, /metadata page magic/],
    ['meta-json', patch(4096 + 4 * 4096 + 12, 0x2c2c2c2c), 4096 + 4 * 4096 + 12, /JSON does not parse/],
  ];
  for (const [what, bytes, offset, message] of cases) {
    it(`corrupt ${what}`, () => {
      const open = withBytes(`bad-${what}`, bytes);
      expect(open).toThrow(expect.objectContaining({ code: 'ERR_PERSISTENT_CORRUPT', offset }));
      expect(open).toThrow(message);
      expect(open).toThrow(new RegExp(`bad-${what}\\.evrb: byte ${offset}: `));
    });
  }

  it('a header page cut short', () => {
    const open = withBytes('short-header', source.bytes.subarray(0, 1000));
    expect(open).toThrow(expect.objectContaining({ code: 'ERR_PERSISTENT_CORRUPT', offset: 1000 }));
    expect(open).toThrow(/byte 1000: truncated: the file has 1000 bytes, the header page needs 4096/);
  });

  it('data pages cut short (mapping them would fault)', () => {
    const file = join(dir, 'c', 'short-pages.evrb');
    writeFileSync(file, source.bytes);
    truncateSync(file, 4096 + 3 * 4096 + 100);
    const open = () => openPersistent('c/short-pages', { dir, readOnly: true });
    expect(open).toThrow(expect.objectContaining({ code: 'ERR_PERSISTENT_CORRUPT', offset: 4096 + 3 * 4096 + 100 }));
    expect(open).toThrow(
      /truncated: the header describes 4 pages of 4096 bytes \(24576 bytes with the metadata page\)/,
    );
  });

  it('an empty file', () => {
    expect(withBytes('empty', new Uint8Array(0))).toThrow(
      expect.objectContaining({ code: 'ERR_PERSISTENT_CORRUPT', offset: 0 }),
    );
  });

  it('a damaged data page still opens; the snapshot names the page', () => {
    const b = source.bytes.slice();
    // A record length in the first data page that runs past its page.
    new DataView(b.buffer).setUint32(4096 + 80 + 4, 1 << 20, true);
    writeFileSync(join(dir, 'c', 'bad-record.evrb'), b);
    const buf = openPersistent('c/bad-record', { dir, readOnly: true });
    try {
      expect(() => buf.snapshot()).toThrow(/records do not add up/);
    } finally {
      buf.close();
    }
  });

  it('fuzz: any mutation of the header, data and metadata pages opens or fails with a typed error, never anything else', () => {
    const regionEnd = 4096 + 4 * 4096;
    let n = 0;
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            at: fc.oneof(
              fc.integer({ min: 0, max: 255 }),
              fc.integer({ min: 4096, max: regionEnd - 1 }),
              fc.integer({ min: regionEnd, max: regionEnd + 200 }),
            ),
            value: fc.integer({ min: 0, max: 255 }),
          }),
          { minLength: 1, maxLength: 8 },
        ),
        fc.option(fc.integer({ min: 0, max: source.bytes.length }), { nil: undefined }),
        (mutations, cut) => {
          const b = source.bytes.slice();
          for (const m of mutations) b[m.at] = m.value;
          const file = join(dir, 'c', 'fuzz.evrb');
          const fd = openSync(file, 'w');
          writeSync(fd, b, 0, cut ?? b.length);
          closeSync(fd);
          try {
            const buf = openPersistent('c/fuzz', { dir, readOnly: true });
            try {
              buf.info();
              const s = buf.snapshot();
              while (s.next()) n++;
            } catch (error) {
              // Pages are checked as they are read: their errors are ringbuf's typed ones.
              if ((error as Error).name !== 'RingbufError') throw error;
            } finally {
              buf.close();
            }
          } catch (error) {
            if (!(error instanceof PersistentError)) throw error;
            expect(error.code).toBe('ERR_PERSISTENT_CORRUPT');
            expect(error.offset).toBeTypeOf('number');
          }
        },
      ),
      { numRuns: 400 },
    );
    expect(n).toBeGreaterThan(0);
  });
});
