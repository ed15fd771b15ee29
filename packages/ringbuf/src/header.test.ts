import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RingbufError } from './errors.ts';
import { H, HEADER_SIZE, LAYOUT_VERSION } from './header.ts';
import { RingBuffer } from './ringbuffer.ts';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof RingbufError) return error.code;
    throw error;
  }
  return undefined;
}

describe('header page', () => {
  it('describes the buffer so that attach learns everything from it', () => {
    const buf = RingBuffer.create({
      pageSize: 16384,
      pageCount: 5,
      mode: 'discard',
      clock: { name: 'kernel_ns', offsetNs: 42 },
    });
    const other = RingBuffer.attach(buf.buffer);
    expect(other.pageSize).toBe(16384);
    expect(other.pageCount).toBe(5);
    expect(other.mode).toBe('discard');
    expect(other.writers).toBe('single');
    expect(other.clockName).toBe('kernel_ns');
    expect(other.clockOffsetNs).toBe(42);
    expect(other.byteLength).toBe(HEADER_SIZE + 5 * 16384);
    const bytes = new Uint8Array(buf.buffer, 0, 12);
    expect([...bytes.subarray(0, 4)].map((b) => String.fromCharCode(b)).join('')).toBe('EVRB');
    expect(new DataView(buf.buffer).getUint32(H.version, true)).toBe(LAYOUT_VERSION);
  });

  it('names CLOCK_MONOTONIC and its realtime offset by default', () => {
    const buf = RingBuffer.create();
    expect(RingBuffer.attach(buf.buffer).clockName).toBe('CLOCK_MONOTONIC');
    expect(Math.abs(buf.clockOffsetNs + Number(process.hrtime.bigint()) - Date.now() * 1e6)).toBeLessThan(5e9);
  });

  it('is position independent: the same bytes work at another offset of another buffer', () => {
    const buf = RingBuffer.create({ pageCount: 3, mode: 'discard' });
    const w = buf.writer();
    for (let i = 0; i < 300; i++) {
      const off = w.reserveAt(i % 50, 4, 1000 + i);
      w.view.setUint32(off, i, true);
      w.commit();
    }
    w.close();
    const moved = new SharedArrayBuffer(buf.byteLength + 4096);
    new Uint8Array(moved, 4096).set(new Uint8Array(buf.buffer));
    const r = RingBuffer.attach(moved, 4096).reader();
    const seen: number[] = [];
    while (r.next()) seen.push(r.view.getUint32(r.offset, true));
    expect(seen.length + r.lost).toBe(300);
    expect(seen).toEqual(Array.from({ length: seen.length }, (_, k) => 300 - seen.length + k));
  });

  it('works over a plain ArrayBuffer region at an offset', () => {
    const region = new ArrayBuffer(RingBuffer.byteLength({ pageCount: 2 }) + 64);
    const buf = RingBuffer.create({ pageCount: 2, buffer: region, byteOffset: 64 });
    const w = buf.writer();
    expect(w.writeBytes(3, new Uint8Array([1, 2, 3]), 5)).toBe(true);
    w.commit();
    const r = RingBuffer.attach(region, 64).reader({ start: 'oldest' });
    expect(r.next()).toBe(true);
    expect([r.type, r.timestamp, [...r.payload()]]).toEqual([3, 5, [1, 2, 3]]);
  });

  it('refuses a foreign header', () => {
    const sab = new SharedArrayBuffer(8192);
    new Uint8Array(sab).set(new TextEncoder().encode('\x7fELF'));
    expect(() => RingBuffer.attach(sab)).toThrow(/not an evtrace ring buffer: magic 0x464c457f/);
    expect(codeOf(() => RingBuffer.attach(sab))).toBe('ERR_RINGBUF_BAD_MAGIC');
  });

  it('refuses a newer layout version, naming both versions', () => {
    const buf = RingBuffer.create();
    new DataView(buf.buffer).setUint32(H.version, LAYOUT_VERSION + 1, true);
    expect(() => RingBuffer.attach(buf.buffer)).toThrow(
      `layout version ${LAYOUT_VERSION + 1} is newer than the version ${LAYOUT_VERSION}`,
    );
    expect(codeOf(() => RingBuffer.attach(buf.buffer))).toBe('ERR_RINGBUF_VERSION');
  });

  it('refuses the other byte order', () => {
    const buf = RingBuffer.create();
    new DataView(buf.buffer).setUint32(H.byteOrder, 0x01020304, false);
    expect(codeOf(() => RingBuffer.attach(buf.buffer))).toBe('ERR_RINGBUF_BYTE_ORDER');
  });

  it.each([
    [H.pageSize, 5000, /page size 5000 must be a power of two/],
    [H.pageCount, 1, /page count 1 must be/],
    [H.mode, 9, /unknown mode 9/],
    [H.headerSize, 512, /header size is 512, expected 4096/],
    [H.clockId, 7, /unknown clock id 7/],
  ])('refuses a corrupt header field at byte %i', (at, value, message) => {
    const buf = RingBuffer.create();
    new DataView(buf.buffer).setUint32(at, value, true);
    expect(() => RingBuffer.attach(buf.buffer)).toThrow(message);
    expect(() => RingBuffer.attach(buf.buffer)).toThrow(`byte ${at}:`);
  });

  it('refuses a region smaller than the header says', () => {
    const buf = RingBuffer.create({ pageCount: 4 });
    expect(() => RingBuffer.attach(buf.buffer, 0, buf.byteLength - 4096)).toThrow(/describes 4 pages of 4096 bytes/);
  });

  it('refuses bad creation options with clear errors', () => {
    expect(() => RingBuffer.create({ pageSize: 1000 })).toThrow(/page size 1000 must be a power of two from 4096/);
    expect(() => RingBuffer.create({ pageCount: 1 })).toThrow(/page count 1/);
    expect(() => RingBuffer.create({ writers: 'multi' })).toThrow(/discard mode only/);
    expect(() => RingBuffer.create({ clock: { name: 'bad name' } })).toThrow(/printable ASCII/);
    expect(() => RingBuffer.create({ buffer: new SharedArrayBuffer(8192), byteOffset: 4 })).toThrow(/multiple of 8/);
    expect(() => RingBuffer.create({ buffer: new SharedArrayBuffer(8192) })).toThrow(/these options need 69632/);
  });

  it('supports pages from 4 KiB to 64 MiB', () => {
    expect(RingBuffer.byteLength({ pageSize: 1 << 20, pageCount: 2 })).toBe(4096 + (2 << 20));
    expect(() => RingBuffer.byteLength({ pageSize: 1 << 27, pageCount: 2 })).toThrow(/page size/);
  });

  it('fuzz: attach on mutated headers throws only RingbufError', () => {
    const buf = RingBuffer.create({ pageCount: 2, mode: 'discard' });
    const w = buf.writer();
    for (let i = 0; i < 200; i++) w.writeBytes(i % 40, new Uint8Array(i % 17), i * 10);
    w.close();
    const original = new Uint8Array(buf.buffer).slice();
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(HEADER_SIZE - 1), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
        (mutations) => {
          const copy = new SharedArrayBuffer(original.length);
          const bytes = new Uint8Array(copy);
          bytes.set(original);
          for (const [at, value] of mutations) bytes[at] = value;
          try {
            const other = RingBuffer.attach(copy);
            const r = other.reader();
            let n = 0;
            while (r.next() && n < 10000) n++;
            other.snapshot();
          } catch (error) {
            expect(error).toBeInstanceOf(RingbufError);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
