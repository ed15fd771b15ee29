import { describe, expect, it } from 'vitest';
import { PAGE_MULTI_WRITER } from './page.ts';
import { EXTENDED_HEADER_SIZE } from './record.ts';
import { RingBuffer } from './ringbuffer.ts';

function multi(pageCount = 4) {
  return RingBuffer.create({ pageCount, mode: 'discard', writers: 'multi', clock: { name: 't' } });
}

describe('SharedWriter (several writers, atomic reservation)', () => {
  it('interleaves writers record by record; records carry extended headers and exact timestamps', () => {
    const buf = multi();
    const r = buf.reader();
    const a = buf.sharedWriter(1);
    const b = buf.sharedWriter(2);
    const offA = a.reserveAt(3, 4, 100);
    const offB = b.reserveAt(70000, 4, 101);
    expect(offB - offA).toBe(4 + EXTENDED_HEADER_SIZE);
    a.view.setUint32(offA, 0xaaaa, true);
    b.view.setUint32(offB, 0xbbbb, true);
    // B commits first: A's record is not complete, so nothing is readable yet.
    b.commit();
    expect(r.next()).toBe(false);
    a.commit();
    expect(r.next()).toBe(true);
    expect([r.type, r.timestamp, r.view.getUint32(r.offset, true)]).toEqual([3, 100, 0xaaaa]);
    expect(r.next()).toBe(true);
    expect([r.type, r.timestamp, r.view.getUint32(r.offset, true)]).toEqual([70000, 101, 0xbbbb]);
    a.close();
    expect(r.next()).toBe(false);
    expect(r.ended).toBe(false);
    b.close();
    expect(r.next()).toBe(false);
    expect(r.ended).toBe(true);
  });

  it('opens pages as they fill, drops when full and counts it, and the last close ends the stream', () => {
    const buf = multi(2);
    const r = buf.reader();
    const ws = [buf.sharedWriter(0), buf.sharedWriter(1), buf.sharedWriter(2)];
    let written = 0;
    let dropped = 0;
    for (let i = 0; i < 600; i++) {
      const w = ws[i % 3]!;
      const off = w.reserveAt(1, 12, i);
      if (off < 0) dropped++;
      else {
        w.view.setUint32(off, i, true);
        w.commit();
        written++;
      }
    }
    expect(dropped).toBeGreaterThan(0);
    expect(ws.reduce((n, w) => n + w.stats().discarded, 0)).toBe(dropped);
    expect(buf.stats().discarded).toBe(dropped);
    const seen: number[] = [];
    while (r.next()) seen.push(r.view.getUint32(r.offset, true));
    expect(seen).toEqual([...seen].sort((x, y) => x - y));
    expect(seen.length).toBe(written);
    // Room again: writing resumes and the loss is reported before the next page.
    const off = ws[0]!.reserveAt(1, 12, 1000);
    expect(off).toBeGreaterThan(0);
    ws[0]!.view.setUint32(off, 1000, true);
    for (const w of ws) w.close();
    expect(r.next()).toBe(true);
    expect(r.view.getUint32(r.offset, true)).toBe(1000);
    expect(r.next()).toBe(false);
    expect(r.ended).toBe(true);
    expect(r.delivered + r.lost).toBe(601);
    const snap = buf.snapshot();
    expect(snap.pageHeader(snap.pageCount - 1).flags & PAGE_MULTI_WRITER).toBe(PAGE_MULTI_WRITER);
  });

  it('refuses the wrong writer model and impossible records', () => {
    const buf = multi();
    expect(() => buf.writer()).toThrow(expect.objectContaining({ code: 'ERR_RINGBUF_WRITER_MODEL' }));
    const w = buf.sharedWriter();
    expect(() => w.reserveAt(1, buf.maxPayload + 1, 0)).toThrow(
      expect.objectContaining({ code: 'ERR_RINGBUF_RECORD_TOO_LARGE' }),
    );
    expect(() => w.reserve(1, 4)).toThrow(/clock is t/);
    expect(() => w.reserveAt(-2, 4, 0)).toThrow(/record type -2/);
    w.close();
    expect(() => w.reserveAt(1, 4, 0)).toThrow(expect.objectContaining({ code: 'ERR_RINGBUF_CLOSED' }));
  });
});
