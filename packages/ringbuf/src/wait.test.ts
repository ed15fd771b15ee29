import { describe, expect, it } from 'vitest';
import { RingBuffer } from './ringbuffer.ts';

describe('Reader.wait', () => {
  it('sleeps until the watermark page completes; a page switch of the writer wakes it', async () => {
    const buf = RingBuffer.create({ mode: 'discard', pageCount: 8 });
    const r = buf.reader();
    const w = buf.writer();
    const t0 = performance.now();
    const woken = r.wait(5000, 2);
    let resolved = false;
    void woken.then(() => {
      resolved = true;
    });
    // 125 records of 32 bytes fill a page: one complete page is below the watermark of two.
    for (let i = 0; i < 200; i++) w.writeBytes(1, new Uint8Array(24));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(resolved).toBe(false);
    for (let i = 0; i < 100; i++) w.writeBytes(1, new Uint8Array(24));
    expect(await woken).toBe(true);
    expect(performance.now() - t0).toBeLessThan(4000);
    let n = 0;
    while (r.next()) n++;
    expect(n).toBe(300);
  });

  it('times out when nothing comes, and flush wakes it for a partly filled page', async () => {
    const buf = RingBuffer.create({ mode: 'discard' });
    const r = buf.reader();
    const w = buf.writer();
    expect(await r.wait(20)).toBe(false);
    w.writeBytes(1, new Uint8Array(4));
    const woken = r.wait(5000, 4);
    setTimeout(() => w.flush(), 10);
    expect(await woken).toBe(true);
    expect(r.next()).toBe(true);
  });

  it('returns at once when the writer has closed', async () => {
    const buf = RingBuffer.create({ mode: 'discard' });
    const r = buf.reader();
    buf.writer().close();
    expect(await r.wait(10_000)).toBe(true);
    expect(r.next()).toBe(false);
    expect(r.ended).toBe(true);
  });
});
