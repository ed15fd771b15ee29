// Producer thread of ringbuf.bench.ts: writes `n` records of 16 or 32 bytes (u32 fields) into our buffer or into
// ringbuf.js.
import { workerData } from 'node:worker_threads';
import { RingBuffer as PeerRing } from 'ringbuf.js';
import { RingBuffer } from './ringbuffer.ts';

const { kind, sab, sync, n, commitEvery, size } = workerData as {
  kind: 'ours' | 'peer';
  sab: SharedArrayBuffer;
  sync: SharedArrayBuffer;
  n: number;
  commitEvery: number;
  size: 16 | 32;
};
const flags = new Int32Array(sync);
Atomics.store(flags, 0, 1);
while (Atomics.load(flags, 1) === 0);

if (kind === 'ours') {
  const w = RingBuffer.attach(sab).writer();
  const words = w.words;
  let retries = 0;
  const mask = commitEvery - 1;
  for (let i = 0; i < n; i++) {
    let off = w.reserveAt(1, size, i);
    while (off < 0) {
      retries++;
      off = w.reserveAt(1, size, i);
    }
    const k = off >> 2;
    words[k] = i;
    words[k + 1] = i;
    words[k + 2] = i;
    words[k + 3] = i;
    if (size === 32) {
      words[k + 4] = i;
      words[k + 5] = i;
      words[k + 6] = i;
      words[k + 7] = i;
    }
    if ((i & mask) === mask) w.commit();
  }
  w.close();
  Atomics.store(flags, 2, retries);
} else {
  const rb = new PeerRing(sab, Uint8Array);
  const batch = new Uint8Array(size * commitEvery);
  let retries = 0;
  for (let i = 0; i < n; i += commitEvery) {
    let done = 0;
    while (done < batch.length) {
      const pushed = rb.push(batch, batch.length - done, done);
      if (pushed === 0) retries++;
      done += pushed;
    }
  }
  Atomics.store(flags, 2, retries);
}
Atomics.store(flags, 3, 1);
