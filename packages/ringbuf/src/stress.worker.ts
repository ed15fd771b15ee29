// A producer thread for stress.test.ts: writes `count` records of random sizes whose bytes can be checked.
import { parentPort, workerData } from 'node:worker_threads';
import { RingBuffer } from './ringbuffer.ts';

const { buffer, producer, count, seed, maxSize, multi } = workerData as {
  buffer: SharedArrayBuffer;
  producer: number;
  count: number;
  seed: number;
  maxSize: number;
  multi: boolean;
};
const buf = RingBuffer.attach(buffer);
const w = multi ? buf.sharedWriter(producer) : buf.writer({ streamId: producer });
let x = seed | 1;
for (let seq = 0; seq < count; seq++) {
  x ^= x << 13;
  x ^= x >>> 17;
  x ^= x << 5;
  const size = 8 + ((x >>> 0) % maxSize);
  const off = w.reserve(seq % 40, size);
  if (off >= 0) {
    w.view.setUint32(off, producer, true);
    w.view.setUint32(off + 4, seq, true);
    for (let j = 8; j < size; j++) w.bytes[off + j] = (seq + j) & 255;
    w.commit();
  }
  if ((x & 1023) === 0) w.flush();
}
w.close();
parentPort!.postMessage(w.stats());
