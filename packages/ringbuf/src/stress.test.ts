import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RecordCursor } from './cursor.ts';
import { Merge } from './merge.ts';
import { RingBuffer } from './ringbuffer.ts';
import type { Snapshot } from './snapshot.ts';
import type { WriterStats } from './writer.ts';

const WORKER = new URL('./stress.worker.ts', import.meta.url);

function produce(
  buffer: SharedArrayBuffer,
  producer: number,
  count: number,
  seed: number,
  maxSize: number,
  multi = false,
) {
  const worker = new Worker(WORKER, { workerData: { buffer, producer, count, seed, maxSize, multi } });
  return new Promise<WriterStats>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

/** Checks one record written by stress.worker.ts; returns [producer, seq]. */
function checkRecord(c: RecordCursor): [number, number] {
  const producer = c.view.getUint32(c.offset, true);
  const seq = c.view.getUint32(c.offset + 4, true);
  expect(c.type).toBe(seq % 40);
  for (let j = 8; j < c.length; j++) {
    if (c.bytes[c.offset + j] !== ((seq + j) & 255))
      throw new Error(`torn record: producer ${producer} seq ${seq} byte ${j}`);
  }
  return [producer, seq];
}

function checkSnapshot(snap: Snapshot, producer: number, overwrite: boolean): void {
  let last = -1;
  while (snap.next()) {
    const [p, seq] = checkRecord(snap);
    expect(p).toBe(producer);
    // Overwrite mode never drops inside the held pages: a snapshot is one gap-free run.
    if (overwrite && last >= 0) expect(seq).toBe(last + 1);
    else expect(seq).toBeGreaterThan(last);
    last = seq;
  }
  expect(snap.ended).toBe(true);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('stress: worker producers, per-thread buffers merged by timestamp', () => {
  for (const mode of ['overwrite', 'discard'] as const) {
    it(`${mode}: no torn or duplicated record, order kept, delivered + lost == produced`, async () => {
      const seed = fc.sample(fc.integer({ min: 1, max: 2 ** 30 }), 1)[0]!;
      let rnd = seed;
      const rand = (n: number) => {
        rnd = (rnd * 1103515245 + 12345) & 0x7fffffff;
        return rnd % n;
      };
      const producers = 3;
      const count = 30_000;
      const pageSize = rand(2) === 0 ? 4096 : 16384;
      const bufs = Array.from({ length: producers }, () =>
        RingBuffer.create({ pageSize, pageCount: 4 + rand(60), mode }),
      );
      const readers = bufs.map((b) => b.reader());
      // An independent second reader of buffer 0, drained at random moments.
      const other = bufs[0]!.reader();
      let otherLast = -1;
      const drainOther = () => {
        while (other.next()) {
          const [p, seq] = checkRecord(other);
          expect(p).toBe(0);
          expect(seq).toBeGreaterThan(otherLast);
          otherLast = seq;
        }
      };
      const merge = new Merge(readers);
      const done = bufs.map((b, p) => produce(b.buffer as SharedArrayBuffer, p, count, seed + p, 300));
      const last = new Array<number>(producers).fill(-1);
      const delivered = new Array<number>(producers).fill(0);
      let lastTs = 0;
      let snapshots = 0;
      while (!merge.ended) {
        let n = 0;
        const burst = 1 + rand(3000);
        while (n < burst && merge.next()) {
          const [p, seq] = checkRecord(merge.current);
          expect(p).toBe(merge.index);
          expect(seq).toBeGreaterThan(last[p]!);
          expect(merge.current.timestamp).toBeGreaterThanOrEqual(lastTs);
          lastTs = merge.current.timestamp;
          last[p] = seq;
          delivered[p]!++;
          n++;
        }
        const pick = rand(8);
        if (pick === 0) {
          const p = rand(producers);
          checkSnapshot(bufs[p]!.snapshot(), p, mode === 'overwrite');
          snapshots++;
        } else if (pick === 1) drainOther();
        else if (pick < 4) await sleep(rand(3));
        else if (n < burst) await readers[rand(producers)]!.wait(2);
      }
      const stats = await Promise.all(done);
      for (let p = 0; p < producers; p++) {
        expect(stats[p]!.written + stats[p]!.discarded).toBe(count);
        expect(delivered[p]! + readers[p]!.lost).toBe(count);
        expect(readers[p]!.delivered).toBe(delivered[p]);
        if (mode === 'discard') expect(readers[p]!.lost).toBe(stats[p]!.discarded);
        else expect(stats[p]!.discarded).toBe(0);
      }
      drainOther();
      expect(other.ended).toBe(true);
      expect(other.delivered + other.lost).toBe(count);
      expect(snapshots).toBeGreaterThan(0);
    }, 60_000);
  }
});

describe('stress: several writers on one buffer through atomic reservation', () => {
  it('discard: every record intact, per-producer order kept, delivered + lost == produced', async () => {
    const buf = RingBuffer.create({ pageSize: 4096, pageCount: 4, mode: 'discard', writers: 'multi' });
    // The holder keeps the stream open until every worker has attached and finished.
    const holder = buf.sharedWriter(99);
    const reader = buf.reader();
    const count = 20_000;
    const producers = 2;
    const done = Promise.all(
      Array.from({ length: producers }, (_, p) =>
        produce(buf.buffer as SharedArrayBuffer, p, count, 17 + p, 120, true),
      ),
    );
    let finished = false;
    done.then(() => holder.close());
    void done.then(() => {
      finished = true;
    });
    const last = new Array<number>(producers).fill(-1);
    let delivered = 0;
    let spins = 0;
    while (!reader.ended) {
      while (reader.next()) {
        const [p, seq] = checkRecord(reader);
        expect(seq).toBeGreaterThan(last[p]!);
        last[p] = seq;
        delivered++;
      }
      if (++spins % 5 === 0) {
        // A snapshot of a buffer filled by two writers at once: every record intact, each producer in order.
        const snap = buf.snapshot();
        const seen = [-1, -1];
        while (snap.next()) {
          const [p, seq] = checkRecord(snap);
          expect(seq).toBeGreaterThan(seen[p]!);
          seen[p] = seq;
        }
      }
      if (spins % 3 === 0) await sleep(1);
      else await reader.wait(2);
    }
    const stats = await done;
    expect(finished).toBe(true);
    const discarded = stats.reduce((a, s) => a + s.discarded, 0);
    expect(stats.reduce((a, s) => a + s.written, 0) + discarded).toBe(producers * count);
    expect(delivered + reader.lost).toBe(producers * count);
    expect(reader.lost).toBe(discarded);
  }, 60_000);
});
