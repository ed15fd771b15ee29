import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RingbufError } from './errors.ts';
import { P } from './page.ts';
import { RingBuffer } from './ringbuffer.ts';
import { Snapshot } from './snapshot.ts';

function filled(mode: 'overwrite' | 'discard', records: number) {
  const buf = RingBuffer.create({ pageCount: 4, mode, clock: { name: 't' } });
  const w = buf.writer();
  for (let i = 0; i < records; i++) {
    const off = w.reserveAt(i % 35, 4 + (i % 50), 1000 * i);
    w.view.setUint32(off, i, true);
    w.commit();
  }
  return { buf, w };
}

describe('snapshot (trace-shot)', () => {
  it('copies what the buffer holds without consuming it, including the open page', () => {
    const { buf } = filled('overwrite', 1000);
    const r = buf.reader();
    const snap = buf.snapshot();
    const seqs: number[] = [];
    while (snap.next()) seqs.push(snap.view.getUint32(snap.offset, true));
    expect(seqs.at(-1)).toBe(999);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, k) => 1000 - seqs.length + k));
    expect(snap.lostBefore + seqs.length).toBe(1000);
    // The reader still sees the same records: the snapshot did not consume them.
    let n = 0;
    while (r.next()) n++;
    expect(n).toBe(seqs.length);
    // The open page became a complete packet in the copy.
    const lastPage = snap.pageHeader(snap.pageCount - 1);
    expect(lastPage.timestampEnd).toBe(999_000);
    expect(lastPage.contentSize).toBeGreaterThan(80);
  });

  it('pages written out verbatim decode again from bytes', () => {
    const { buf } = filled('discard', 300);
    const snap = buf.snapshot();
    const disk = new Uint8Array(snap.pageCount * snap.pageSize);
    for (let i = 0; i < snap.pageCount; i++) disk.set(snap.page(i), i * snap.pageSize);
    const again = new Snapshot(disk, 4096);
    let n = 0;
    while (again.next()) {
      expect(again.view.getUint32(again.offset, true)).toBe(n);
      expect(again.timestamp).toBe(1000 * n);
      n++;
    }
    expect(n).toBe(300);
    again.rewind();
    expect(again.next()).toBe(true);
    expect(again.timestamp).toBe(0);
  });

  it('names the page and byte offset of a corrupt page', () => {
    const { buf } = filled('discard', 300);
    const snap = buf.snapshot();
    const bytes = snap.bytes.slice();
    new DataView(bytes.buffer).setUint32(4096 + P.contentSize, 5, true);
    expect(() => {
      const s = new Snapshot(bytes, 4096);
      while (s.next());
    }).toThrow(`byte ${4096 + P.contentSize}: page 1: content_size 5 bits`);
    expect(() => new Snapshot(new Uint8Array(5000), 4096)).toThrow(
      /5000 bytes is not a whole number of 4096-byte pages/,
    );
  });

  it('fuzz: mutated pages decode or fail with RingbufError only, never hang', () => {
    const { buf } = filled('discard', 400);
    const pages = buf.snapshot().bytes.slice();
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(pages.length - 1), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 16 }),
        (mutations) => {
          const bytes = pages.slice();
          for (const [at, value] of mutations) bytes[at] = value;
          try {
            const s = new Snapshot(bytes, 4096);
            let n = 0;
            while (s.next()) {
              expect(s.offset + s.length).toBeLessThanOrEqual(bytes.length);
              n++;
            }
            expect(n).toBeLessThanOrEqual(bytes.length / 8);
          } catch (error) {
            expect(error).toBeInstanceOf(RingbufError);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('fuzz: a live reader over mutated pages returns records inside the region or a RingbufError', () => {
    const { buf } = filled('discard', 400);
    const image = new Uint8Array(buf.buffer).slice();
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 4096, max: image.length - 1 }), fc.integer({ min: 0, max: 255 })), {
          minLength: 1,
          maxLength: 16,
        }),
        fc.constantFrom<'overwrite' | 'discard'>('overwrite', 'discard'),
        (mutations, mode) => {
          const sab = new SharedArrayBuffer(image.length);
          const bytes = new Uint8Array(sab);
          bytes.set(image);
          new DataView(sab).setUint32(24, mode === 'overwrite' ? 1 : 2, true);
          for (const [at, value] of mutations) bytes[at] = value;
          try {
            const r = RingBuffer.attach(sab).reader({ start: 'oldest' });
            let n = 0;
            while (r.next() && n < 100_000) {
              expect(r.offset + r.length).toBeLessThanOrEqual(r.bytes.length);
              n++;
            }
            expect(n).toBeLessThan(100_000);
          } catch (error) {
            expect(error).toBeInstanceOf(RingbufError);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
