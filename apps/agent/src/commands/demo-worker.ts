// A demo producer thread: writes `events` records into its own @evtrace/ringbuf buffer (the per-CPU model) with
// the structured API, then closes the stream and reports its counters.
import { parentPort, workerData } from 'node:worker_threads';
import { RingBuffer } from '@evtrace/ringbuf';
import { DemoType, type DemoWorkerData } from './demo-events.ts';

const { buffer, producer, events, barrier } = workerData as DemoWorkerData;
const w = RingBuffer.attach(buffer).writer({ streamId: producer });
const gate = new Int32Array(barrier);
Atomics.add(gate, 0, 1);
Atomics.notify(gate, 0);
Atomics.wait(gate, 1, 0);
const text = new TextEncoder();
const scratch = new Uint8Array(64);
for (let seq = 0; seq < events; seq++) {
  const kind = seq % 3;
  if (kind === 0) {
    const off = w.reserve(DemoType.sample, 16);
    if (off >= 0) {
      w.view.setUint32(off, seq, true);
      w.view.setFloat64(off + 8, Math.sin(seq / 10 + producer), true);
      w.commit();
    }
  } else if (kind === 1) {
    const off = w.reserve(DemoType.alloc, 8);
    if (off >= 0) {
      w.view.setUint32(off, seq, true);
      w.view.setUint32(off + 4, 64 << ((seq + producer) % 7), true);
      w.commit();
    }
  } else {
    const { written = 0 } = text.encodeInto(`hello from producer ${producer}`, scratch.subarray(4));
    new DataView(scratch.buffer).setUint32(0, seq, true);
    w.writeBytes(DemoType.log, scratch.subarray(0, 4 + written));
  }
}
w.close();
parentPort!.postMessage(w.stats());
