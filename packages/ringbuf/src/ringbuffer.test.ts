import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { monotonicNs } from './clock.ts';
import type { RingbufError } from './errors.ts';
import { PAGE_CLOSED, PAGE_HEADER_SIZE, PAGE_LOST_BEFORE } from './page.ts';
import { COMPACT_HEADER_SIZE, EXTENDED_HEADER_SIZE } from './record.ts';
import { RingBuffer } from './ringbuffer.ts';
import { ORDERED_STORES } from './shared.ts';

interface Rec {
  type: number;
  ts: number;
  payload: number[];
}

function drain(r: { next(): boolean; type: number; timestamp: number; payload(): Uint8Array }): Rec[] {
  const out: Rec[] = [];
  while (r.next()) out.push({ type: r.type, ts: r.timestamp, payload: [...r.payload()] });
  return out;
}

describe('records', () => {
  it('round-trips compact and extended records with exact timestamps', () => {
    const buf = RingBuffer.create({ pageCount: 4, mode: 'discard', clock: { name: 'test' } });
    const r = buf.reader();
    const w = buf.writer();
    const input: Rec[] = [
      { type: 0, ts: 1000, payload: [] },
      { type: 29, ts: 1000, payload: [1] },
      { type: 30, ts: 1001, payload: [2, 3] }, // type 30+ needs the extended form
      { type: 7, ts: 1001 + 2 ** 27 - 1, payload: [4, 5, 6] }, // largest compact delta
      { type: 7, ts: 1001 + 2 ** 28, payload: [7, 8, 9, 10] }, // too far for 27 bits
      { type: 5, ts: 500, payload: [11] }, // going back in time: extended
      { type: 0xffffffff, ts: 2 ** 53 - 1, payload: [12, 13, 14, 15, 16] },
      { type: 1, ts: 2 ** 53 - 1, payload: [] },
    ];
    for (const rec of input) expect(w.writeBytes(rec.type, Uint8Array.from(rec.payload), rec.ts)).toBe(true);
    expect(drain(r)).toEqual(input);
    expect(r.delivered).toBe(input.length);
    expect(r.lost).toBe(0);
  });

  it('rebuilds exact timestamps from long chains of compact deltas (past 2^30 and near 2^53)', () => {
    for (const start of [0, 2 ** 53 - 2 ** 40]) {
      const buf = RingBuffer.create({ pageSize: 65536, pageCount: 2, mode: 'discard', clock: { name: 'test' } });
      const r = buf.reader();
      const w = buf.writer();
      const input: Rec[] = [];
      let ts = start;
      for (let i = 0; i < 300; i++) {
        input.push({ type: i % 30, ts, payload: [i & 255] });
        ts += i % 3 === 0 ? 2 ** 27 - 1 : 12345 + i; // every record compact, deltas add up far past 2^30
      }
      for (const rec of input) expect(w.writeBytes(rec.type, Uint8Array.from(rec.payload), rec.ts)).toBe(true);
      const out = drain(r);
      expect(out).toEqual(input);
      const snap = buf.snapshot();
      expect(drain(snap)).toEqual(input);
    }
  });

  it('uses 8-byte compact and 20-byte extended headers', () => {
    const buf = RingBuffer.create({ clock: { name: 'test' } });
    const w = buf.writer();
    const a = w.reserveAt(1, 4, 10);
    const b = w.reserveAt(2, 4, 11);
    const c = w.reserveAt(31, 4, 12);
    const d = w.reserveAt(2, 4, 13);
    expect(b - a).toBe(4 + COMPACT_HEADER_SIZE);
    expect(c - b).toBe(4 + EXTENDED_HEADER_SIZE);
    expect(d - c).toBe(4 + COMPACT_HEADER_SIZE);
    // The compact word holds the 5-bit tag low and the timestamp's low 27 bits above it.
    expect(w.words[(a - COMPACT_HEADER_SIZE) >> 2]).toBe((10 << 5) | 1);
  });

  it('stamps records with CLOCK_MONOTONIC by default', () => {
    const buf = RingBuffer.create();
    const w = buf.writer();
    const r = buf.reader();
    const before = monotonicNs();
    w.reserve(1, 0);
    w.commit();
    const after = monotonicNs();
    expect(r.next()).toBe(true);
    expect(r.timestamp).toBeGreaterThanOrEqual(before);
    expect(r.timestamp).toBeLessThanOrEqual(after);
    const hr = Number(process.hrtime.bigint());
    expect(Math.abs(monotonicNs() - hr)).toBeLessThan(5e6);
  });

  it('refuses a record that can never fit and accepts the largest that can', () => {
    const buf = RingBuffer.create({ pageSize: 4096 });
    const w = buf.writer();
    expect(buf.maxPayload).toBe(4096 - PAGE_HEADER_SIZE - EXTENDED_HEADER_SIZE);
    expect(() => w.writeBytes(1, new Uint8Array(4096), 1)).toThrow(
      /a record of 4096 bytes can never fit: pages of this buffer hold at most 3996/,
    );
    try {
      w.reserveAt(1, 5000, 1);
    } catch (error) {
      expect((error as RingbufError).code).toBe('ERR_RINGBUF_RECORD_TOO_LARGE');
    }
    expect(w.writeBytes(40, new Uint8Array(buf.maxPayload).fill(9), 1)).toBe(true);
  });

  it('carries records larger than 4 KiB in larger pages', () => {
    const buf = RingBuffer.create({ pageSize: 1 << 20, pageCount: 2, mode: 'discard', clock: { name: 't' } });
    const r = buf.reader();
    const w = buf.writer();
    const big = new Uint8Array(300_000).map((_, i) => i * 7);
    expect(w.writeBytes(3, big, 1)).toBe(true);
    expect(w.writeBytes(4, big.subarray(0, 70_000), 2)).toBe(true);
    expect(r.next()).toBe(true);
    expect(r.length).toBe(300_000);
    expect(r.payload()).toEqual(big);
    expect(r.next()).toBe(true);
    expect(r.payload()).toEqual(big.subarray(0, 70_000));
  });

  it('rejects bad arguments with clear errors', () => {
    const buf = RingBuffer.create();
    const w = buf.writer();
    expect(() => w.reserveAt(-1, 4, 1)).toThrow(/record type -1/);
    expect(() => w.reserveAt(1.5, 4, 1)).toThrow(/record type 1.5/);
    expect(() => w.reserveAt(1, -4, 1)).toThrow(/record size -4/);
    expect(() => w.reserveAt(1, 4, 1.5)).toThrow(/timestamp 1.5/);
    const ext = RingBuffer.create({ clock: { name: 'kernel' } }).writer();
    expect(() => ext.reserve(1, 4)).toThrow(/clock is kernel/);
  });

  it('rejects bad arguments on an open page too, where reserveAt takes its fast path', () => {
    const buf = RingBuffer.create({ pageSize: 4096, clock: { name: 't' } });
    const w = buf.writer();
    expect(w.reserveAt(1, 4, 10)).toBeGreaterThan(0);
    for (const type of [-1, 1.5, Number.NaN, 2 ** 32 + 1]) {
      expect(() => w.reserveAt(type, 4, 11)).toThrow(expect.objectContaining({ code: 'ERR_RINGBUF_ARGUMENT' }));
    }
    for (const size of [-4, 0.5, Number.NaN]) {
      expect(() => w.reserveAt(1, size, 11)).toThrow(expect.objectContaining({ code: 'ERR_RINGBUF_ARGUMENT' }));
    }
    // Sizes whose padded length wraps 32-bit arithmetic must not slip past the page end.
    for (const size of [2 ** 31 - 1, 2 ** 32 - 1, 2 ** 26]) {
      expect(() => w.reserveAt(1, size, 11)).toThrow(expect.objectContaining({ code: 'ERR_RINGBUF_RECORD_TOO_LARGE' }));
    }
    expect(() => w.reserveAt(1, 4, 10.5)).toThrow(/timestamp 10.5/);
    expect(() => w.reserveAt(1, 4, Number.NaN)).toThrow(/timestamp NaN/);
    expect(() => w.reserveAt(1, 4, 2 ** 53)).toThrow(/timestamp 9007199254740992/);
    expect(w.reserveAt(1, 4, 9)).toBeGreaterThan(0);
    const r = buf.reader({ start: 'oldest' });
    w.commit();
    let n = 0;
    while (r.next()) n++;
    expect(n).toBe(2); // the record at 10 and the one going back in time to 9
  });

  it('allows one single writer at a time, and a forced takeover resumes the stream', () => {
    const buf = RingBuffer.create({ mode: 'discard', clock: { name: 't' } });
    const r = buf.reader();
    const w = buf.writer();
    expect(() => buf.writer()).toThrow(expect.objectContaining({ code: 'ERR_RINGBUF_WRITER_BUSY' }));
    expect(() => buf.sharedWriter()).toThrow(expect.objectContaining({ code: 'ERR_RINGBUF_WRITER_MODEL' }));
    for (let i = 0; i < 10; i++) w.writeBytes(1, new Uint8Array([i]), i);
    // The first writer "crashes" (never closes); another takes over.
    const w2 = buf.writer({ force: true });
    for (let i = 10; i < 20; i++) w2.writeBytes(1, new Uint8Array([i]), i);
    w2.close();
    expect(drain(r).map((x) => x.payload[0])).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(r.ended).toBe(true);
    expect(buf.stats().written).toBe(20);
  });
});

/** Runs fn counting the Atomics.load calls it makes. */
function countLoads(fn: () => void): number {
  const load = Atomics.load;
  let n = 0;
  Atomics.load = ((a: Int32Array, i: number) => {
    n++;
    return load(a, i);
  }) as typeof Atomics.load;
  try {
    fn();
  } finally {
    Atomics.load = load;
  }
  return n;
}

describe('a reader in the writer thread', () => {
  it('takes committed records from the writer without an Atomics.load each, and nothing uncommitted', () => {
    const buf = RingBuffer.create({ pageSize: 65536, pageCount: 4, mode: 'discard', clock: { name: 't' } });
    const r = buf.reader();
    const w = buf.writer();
    w.words[w.reserveAt(1, 4, 1) >> 2] = 42;
    expect(r.next()).toBe(false); // reserved, not committed
    w.commit();
    expect(r.next()).toBe(true);
    expect(r.words[r.offset >> 2]).toBe(42);
    const loads = countLoads(() => {
      for (let i = 0; i < 1000; i++) {
        w.words[w.reserveAt(1, 4, 2 + i) >> 2] = i;
        w.commit();
        expect(r.next()).toBe(true);
        expect([r.words[r.offset >> 2], r.timestamp]).toEqual([i, 2 + i]);
      }
    });
    expect(loads).toBe(0);
    expect(r.next()).toBe(false);
  });

  it('lets readers of another RingBuffer object (as in another thread) follow the commit word, plainly on x86', () => {
    const buf = RingBuffer.create({ pageSize: 4096, pageCount: 8, mode: 'discard', clock: { name: 't' } });
    const other = RingBuffer.attach(buf.buffer);
    const mine = buf.reader();
    const theirs = other.reader();
    const w = buf.writer();
    const got: number[][] = [[], []];
    let loads = 0;
    for (let i = 0; i < 500; i++) {
      w.writeBytes(1, Uint8Array.of(i & 255), i);
      while (mine.next()) got[0]!.push(mine.bytes[mine.offset]!);
      loads += countLoads(() => {
        while (theirs.next()) got[1]!.push(theirs.bytes[theirs.offset]!);
      });
    }
    const want = Array.from({ length: 500 }, (_, i) => i & 255);
    expect(got).toEqual([want, want]);
    // x86: plain loads of the commit word, with an Atomics.load every 16th empty poll; elsewhere one per poll.
    if (ORDERED_STORES) expect(loads).toBeLessThan(100);
    else expect(loads).toBeGreaterThanOrEqual(500);
  });

  it('follows a writer that takes over in the same thread, page by page', () => {
    const buf = RingBuffer.create({ pageSize: 4096, pageCount: 4, mode: 'discard', clock: { name: 't' } });
    const r = buf.reader();
    const got: number[] = [];
    let w = buf.writer();
    for (let i = 0; i < 2000; i++) {
      if (i % 700 === 699) w = buf.writer({ force: true });
      expect(w.writeBytes(1, Uint8Array.of(i & 255, i >> 8), i)).toBe(true);
      if (i % 3 === 0) while (r.next()) got.push(r.bytes[r.offset]! | (r.bytes[r.offset + 1]! << 8));
    }
    w.close();
    while (r.next()) got.push(r.bytes[r.offset]! | (r.bytes[r.offset + 1]! << 8));
    expect(got).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    expect(r.ended).toBe(true);
  });
});

describe('Atomics per record', () => {
  it('an overwrite-mode reader in another thread loads the commit word and the generation, not the flags, per record', () => {
    const buf = RingBuffer.create({ pageSize: 4096, pageCount: 8, mode: 'overwrite', clock: { name: 't' } });
    const r = RingBuffer.attach(buf.buffer).reader();
    const w = buf.writer();
    let read = 0;
    const loads = countLoads(() => {
      for (let i = 0; i < 3000; i++) {
        expect(w.writeBytes(1, Uint8Array.of(i & 255), i)).toBe(true);
        expect(r.next()).toBe(true);
        expect(r.bytes[r.offset]).toBe(i & 255);
        read++;
      }
    });
    expect(read).toBe(3000);
    // Two loads per record, plus a few per page (about 250 records per 4 KiB page).
    expect(loads / read).toBeLessThan(2.1);
  });
});

describe('pages', () => {
  it('fill page headers like CTF packet contexts', () => {
    const buf = RingBuffer.create({ pageCount: 4, mode: 'discard', clock: { name: 't' } });
    const w = buf.writer({ streamId: 7 });
    for (let i = 0; i < 200; i++) w.writeBytes(2, new Uint8Array(24), 100 + i);
    w.close();
    const snap = buf.snapshot();
    expect(snap.pageCount).toBe(2);
    const h0 = snap.pageHeader(0);
    const perPage = Math.floor((4096 - PAGE_HEADER_SIZE) / 32);
    expect(h0).toMatchObject({
      timestampBegin: 100,
      timestampEnd: 100 + perPage - 1,
      contentSize: PAGE_HEADER_SIZE + perPage * 32,
      packetSize: 4096,
      seq: 0,
      recordsBefore: 0,
      recordCount: perPage,
      streamId: 7,
      eventsDiscarded: 0,
    });
    expect(h0.flags & PAGE_CLOSED).toBe(PAGE_CLOSED);
    const h1 = snap.pageHeader(1);
    expect(h1).toMatchObject({
      seq: 1,
      recordsBefore: perPage,
      recordCount: 200 - perPage,
      timestampBegin: 100 + perPage,
    });
  });

  it('keep timestamp_end at the largest timestamp when a producer goes back in time', () => {
    for (const close of [true, false]) {
      const buf = RingBuffer.create({ clock: { name: 't' } });
      const w = buf.writer();
      for (const ts of [100, 500, 510, 200, 300]) w.writeBytes(1, new Uint8Array(4), ts);
      if (close) w.close();
      const h = buf.snapshot().pageHeader(0);
      expect([h.timestampBegin, h.timestampEnd, h.recordCount]).toEqual([100, 510, 5]);
    }
  });

  it('discard mode drops the newest, counts them in the next page header and in the header', () => {
    const buf = RingBuffer.create({ pageCount: 2, mode: 'discard', clock: { name: 't' } });
    const r = buf.reader();
    const w = buf.writer();
    let accepted = 0;
    for (let i = 0; i < 1000; i++) if (w.writeBytes(1, new Uint8Array(new Uint32Array([i]).buffer), i)) accepted++;
    expect(accepted).toBeLessThan(1000);
    const first = drain(r);
    expect(first.length).toBe(accepted);
    for (let i = 1000; i < 1010; i++) w.writeBytes(1, new Uint8Array(new Uint32Array([i]).buffer), i);
    w.close();
    const rest = drain(r);
    expect(rest.map((x) => new Uint32Array(Uint8Array.from(x.payload).buffer)[0])).toEqual(
      Array.from({ length: 10 }, (_, k) => 1000 + k),
    );
    expect(r.lost).toBe(1000 - accepted);
    expect(buf.stats()).toMatchObject({ discarded: 1000 - accepted, written: accepted + 10 });
    const snap = buf.snapshot();
    const last = snap.pageHeader(snap.pageCount - 1);
    expect(last.eventsDiscarded).toBe(1000 - accepted);
    expect(last.flags & PAGE_LOST_BEFORE).toBe(PAGE_LOST_BEFORE);
  });

  it('overwrite mode keeps the newest pages and counts the overwritten records exactly', () => {
    const buf = RingBuffer.create({ pageCount: 3, mode: 'overwrite', clock: { name: 't' } });
    const r = buf.reader();
    const w = buf.writer();
    for (let i = 0; i < 1000; i++) {
      const off = w.reserveAt(1, 4, i);
      w.view.setUint32(off, i, true);
      w.commit();
    }
    w.close();
    const got: number[] = [];
    while (r.next()) got.push(r.view.getUint32(r.offset, true));
    expect(got.at(-1)).toBe(999);
    expect(got).toEqual(Array.from({ length: got.length }, (_, k) => 1000 - got.length + k));
    expect(got.length + r.lost).toBe(1000);
    expect(buf.stats().overwritten).toBe(r.lost);
  });

  it('readers are independent: each sees every record', () => {
    const buf = RingBuffer.create({ pageCount: 4, mode: 'discard', clock: { name: 't' } });
    const a = buf.reader();
    const b = buf.reader();
    const w = buf.writer();
    for (let i = 0; i < 300; i++) w.writeBytes(3, new Uint8Array([i & 255]), i);
    const fromA = drain(a);
    for (let i = 300; i < 400; i++) w.writeBytes(3, new Uint8Array([i & 255]), i);
    w.close();
    const fromB = drain(b);
    fromA.push(...drain(a));
    expect(fromA.length + a.lost).toBe(400);
    expect(fromB.length + b.lost).toBe(400);
    // b held pages back, so the writer dropped for both: the same records.
    expect(fromA).toEqual(fromB);
  });

  it('a closed reader no longer holds pages back', () => {
    const buf = RingBuffer.create({ pageCount: 2, mode: 'discard', clock: { name: 't' } });
    const slow = buf.reader();
    const fast = buf.reader();
    const w = buf.writer();
    slow.close();
    let delivered = 0;
    for (let i = 0; i < 2000; i++) {
      w.writeBytes(1, new Uint8Array(8), i);
      while (fast.next()) delivered++;
    }
    expect(delivered).toBe(2000);
    expect(buf.stats().discarded).toBe(0);
  });

  it('fails on more than 32 readers with a clear error', () => {
    const buf = RingBuffer.create();
    for (let i = 0; i < 32; i++) buf.reader();
    expect(() => buf.reader()).toThrow(/all 32 reader slots are taken/);
  });

  it('reports a page whose records run past the committed end as corrupt, with its offset', () => {
    const buf = RingBuffer.create({ mode: 'discard', clock: { name: 't' } });
    const r = buf.reader();
    const w = buf.writer();
    const off = w.reserveAt(1, 8, 1);
    w.commit();
    w.words[(off >> 2) - 1] = 5000; // length word of the record
    expect(() => r.next()).toThrow(/page 0: record at page offset 80 runs past the committed end 96/);
  });

  // The reader's fast path adds in int32: each of these lengths wraps that sum or the padding, and must still be
  // refused, never taken for a record that fits.
  it.each([0x7ffffff8, 0x7ffffffc, 0x80000000, 0xfffffff9, 0xfffffffc, 0xffffffff])(
    'refuses a record whose length %i wraps 32-bit arithmetic',
    (length) => {
      const buf = RingBuffer.create({ mode: 'discard', clock: { name: 't' } });
      const r = buf.reader();
      const w = buf.writer();
      const off = w.reserveAt(1, 8, 1);
      w.commit();
      w.words[(off >> 2) - 1] = length;
      expect(() => r.next()).toThrow(/page 0: record at page offset 80 runs past the committed end 96/);
      expect(r.delivered).toBe(0);
    },
  );
});

describe('property: single-threaded interleavings', () => {
  const op = fc.oneof(
    fc.record({ kind: fc.constant('write' as const), size: fc.nat(700), type: fc.nat(40), gap: fc.nat(2 ** 28) }),
    fc.record({ kind: fc.constant('read' as const), max: fc.nat(50) }),
    fc.record({ kind: fc.constant('snapshot' as const) }),
  );
  for (const mode of ['discard', 'overwrite'] as const) {
    it(`${mode}: records arrive intact, in order, and delivered + lost == produced`, () => {
      fc.assert(
        fc.property(fc.array(op, { maxLength: 400 }), fc.integer({ min: 2, max: 5 }), (ops, pageCount) => {
          const buf = RingBuffer.create({ pageCount, mode, clock: { name: 't' } });
          const r = buf.reader();
          const w = buf.writer();
          let produced = 0;
          let ts = 0;
          let last = -1;
          const check = (cur: { view: DataView; offset: number; length: number; timestamp: number; type: number }) => {
            const seq = cur.view.getUint32(cur.offset, true);
            expect(seq).toBeGreaterThan(last);
            last = seq;
            expect(cur.length).toBe(4 + (seq % 700));
            expect(cur.type).toBe(seq % 41);
            for (let j = 4; j < cur.length; j++) expect(cur.view.getUint8(cur.offset + j)).toBe((seq + j) & 255);
          };
          for (const o of ops) {
            if (o.kind === 'write') {
              ts += o.gap % 3 === 0 ? o.gap : o.gap % 1000;
              const seq = produced++;
              const size = 4 + (seq % 700);
              const off = w.reserveAt(seq % 41, size, ts);
              if (off >= 0) {
                w.view.setUint32(off, seq, true);
                for (let j = 4; j < size; j++) w.bytes[off + j] = (seq + j) & 255;
                w.commit();
              }
            } else if (o.kind === 'read') {
              for (let k = 0; k < o.max && r.next(); k++) check(r);
            } else {
              const snap = buf.snapshot();
              let prev = -1;
              let prevTs = -1;
              while (snap.next()) {
                const seq = snap.view.getUint32(snap.offset, true);
                expect(seq).toBeGreaterThan(prev);
                expect(snap.timestamp).toBeGreaterThanOrEqual(prevTs);
                prev = seq;
                prevTs = snap.timestamp;
              }
            }
          }
          w.close();
          while (r.next()) check(r);
          expect(r.ended).toBe(true);
          expect(r.delivered + r.lost).toBe(produced);
          const s = buf.stats();
          expect(s.written + s.discarded).toBe(produced);
        }),
        { numRuns: 60 },
      );
    });
  }
});
