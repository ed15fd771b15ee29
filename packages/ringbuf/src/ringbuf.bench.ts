// Benchmarks of @evtrace/ringbuf beside ringbuf.js (the peer) and Uint8Array.prototype.set (the limit), all measured
// in this run. Run: node src/ringbuf.bench.ts
import { Worker } from 'node:worker_threads';
import { type Comparison, consume, fromTotal, type Measurement, measure, printComparisons } from '@evtrace/bench';
import { RingBuffer as PeerRing } from 'ringbuf.js';
import { monotonicNs } from './clock.ts';
import { RingBuffer } from './ringbuffer.ts';

let sink = 0;

// Every case runs REPS operations per timed call (singles stay singles: one commit and one read per record), so
// the harness's call through a megamorphic closure is not billed to one record, and reports the median of SAMPLES
// samples. Setup (buffers, writers, readers, sources) happens before timing, for evtrace and the peers alike.
const REPS = 16;
const SAMPLES = 15;

function ours32(batch: number, withClock: boolean): Measurement {
  const buf = RingBuffer.create({ pageSize: 65536, pageCount: 8, mode: 'discard' });
  const w = buf.writer();
  const r = buf.reader();
  const ww = w.words;
  const name = `evtrace ${withClock ? 'reserve (clock)' : 'reserveAt'}+8 u32+commit, next+8 u32${batch > 1 ? ` x${batch}` : ''}`;
  const calls = batch === 1 ? REPS : 1;
  return measure(
    name,
    () => {
      for (let c = 0; c < calls; c++) oneCall();
    },
    { opsPerCall: batch * calls, bytesPerOp: 32, samples: SAMPLES },
  );
  function oneCall(): void {
    for (let b = 0; b < batch; b++) {
      const off = withClock ? w.reserve(1, 32) : w.reserveAt(1, 32, 0);
      const k = off >> 2;
      ww[k] = b;
      ww[k + 1] = 2;
      ww[k + 2] = 3;
      ww[k + 3] = 4;
      ww[k + 4] = 5;
      ww[k + 5] = 6;
      ww[k + 6] = 7;
      ww[k + 7] = 8;
      if (batch === 1) w.commit();
    }
    if (batch > 1) w.commit();
    let sum = 0;
    for (let b = 0; b < batch; b++) {
      r.next();
      const rw = r.words;
      const j = r.offset >> 2;
      sum += rw[j]! + rw[j + 1]! + rw[j + 2]! + rw[j + 3]! + rw[j + 4]! + rw[j + 5]! + rw[j + 6]! + rw[j + 7]!;
    }
    sink += sum;
  }
}

function peer32(batch: number): Measurement {
  const rb = new PeerRing(PeerRing.getStorageForCapacity(65536, Uint8Array), Uint8Array);
  const src = new Uint8Array(32 * batch).fill(7);
  const dst = new Uint8Array(32 * batch);
  const calls = batch === 1 ? REPS : 1;
  return measure(
    `ringbuf.js push+pop ${32 * batch} B`,
    () => {
      for (let c = 0; c < calls; c++) {
        rb.push(src);
        rb.pop(dst);
        sink += dst[5]!;
      }
    },
    { opsPerCall: batch * calls, bytesPerOp: 32, samples: SAMPLES },
  );
}

function oursBytes(size: number, batch: number): Measurement {
  const buf = RingBuffer.create({ pageSize: 65536, pageCount: 8, mode: 'discard', clock: { name: 'bench' } });
  const w = buf.writer();
  const r = buf.reader();
  const src = new Uint8Array(size).fill(3);
  if (batch === 1) {
    return measure(
      `evtrace writeBytes+next ${size} B`,
      () => {
        for (let c = 0; c < REPS; c++) {
          w.writeBytes(2, src, 0);
          r.next();
          sink += r.length;
        }
      },
      { bytesPerOp: size, opsPerCall: REPS, samples: SAMPLES },
    );
  }
  return measure(
    `evtrace reserveAt+set x${batch}, one commit, next x${batch}, ${size} B`,
    () => {
      for (let b = 0; b < batch; b++) w.bytes.set(src, w.reserveAt(2, size, 0));
      w.commit();
      for (let b = 0; b < batch; b++) {
        r.next();
        sink += r.length;
      }
    },
    { bytesPerOp: size, opsPerCall: batch, samples: SAMPLES },
  );
}

function setBytes(size: number): Measurement {
  const dst = new Uint8Array(new SharedArrayBuffer(65536 * 8));
  const src = new Uint8Array(size).fill(3);
  let at = 0;
  return measure(
    `Uint8Array set ${size} B into a SharedArrayBuffer`,
    () => {
      for (let c = 0; c < REPS; c++) {
        dst.set(src, at);
        at = (at + size + 8) & (65536 * 8 - 8192 - 1);
        sink += at;
      }
    },
    { bytesPerOp: size, opsPerCall: REPS, samples: SAMPLES },
  );
}

async function throughput(kind: 'ours' | 'peer', n: number, commitEvery: number): Promise<Measurement> {
  const sync = new SharedArrayBuffer(16);
  const flags = new Int32Array(sync);
  let sab: SharedArrayBuffer;
  let consume_: () => number;
  if (kind === 'ours') {
    const buf = RingBuffer.create({ pageSize: 65536, pageCount: 16, mode: 'discard', clock: { name: 'bench' } });
    sab = buf.buffer as SharedArrayBuffer;
    const r = buf.reader();
    consume_ = () => {
      let count = 0;
      let sum = 0;
      for (;;) {
        if (r.next()) {
          sum += r.words[r.offset >> 2]!;
          count++;
        } else if (r.ended) break;
      }
      sink += sum;
      return count;
    };
  } else {
    sab = PeerRing.getStorageForCapacity(65536 * 16, Uint8Array);
    const rb = new PeerRing(sab, Uint8Array);
    const dst = new Uint8Array(16 * 1024);
    consume_ = () => {
      let bytes = 0;
      while (bytes < n * 16) {
        const got = rb.pop(dst);
        bytes += got;
        if (got > 0) sink += dst[0]!;
      }
      return bytes / 16;
    };
  }
  const worker = new Worker(new URL('./ringbuf.bench.worker.ts', import.meta.url), {
    workerData: { kind, sab, sync, n, commitEvery },
  });
  while (Atomics.load(flags, 0) === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  const t0 = process.hrtime.bigint();
  Atomics.store(flags, 1, 1);
  const got = consume_();
  const ns = Number(process.hrtime.bigint() - t0);
  await worker.terminate();
  if (got !== n) throw new Error(`${kind}: consumed ${got} of ${n} records`);
  const label =
    kind === 'ours'
      ? `evtrace worker->main 16 B records, commit every ${commitEvery} (producer retried ${Atomics.load(flags, 2)} full reserves)`
      : `ringbuf.js worker->main 16 B records, pushes of ${commitEvery}`;
  return fromTotal(label, ns, n, 16);
}

/** Wraps the global Atomics methods so that each call counts against `counter.side` ('w' or 'r'). */
function wrapAtomics(counter: { side: 'w' | 'r'; w: number; r: number }): () => void {
  const names = ['load', 'store', 'add', 'sub', 'or', 'compareExchange', 'notify', 'exchange', 'and'] as const;
  const table = Atomics as unknown as Record<string, unknown>;
  const saved = names.map((k) => table[k]);
  names.forEach((k, i) => {
    const original = saved[i] as (...args: unknown[]) => unknown;
    table[k] = (...args: unknown[]) => {
      counter[counter.side]++;
      return original.apply(Atomics, args);
    };
  });
  return () => {
    names.forEach((k, i) => {
      table[k] = saved[i];
    });
  };
}

/**
 * Atomics per record with the reader keeping up: per record, each record is committed and read at once; per 64,
 * 64 records are committed together and then read.
 */
function atomicsPerRecord(): string[] {
  const lines: string[] = [];
  for (const [mode, thread] of [
    ['discard', 'other'],
    ['discard', 'same'],
    ['overwrite', 'other'],
  ] as const) {
    for (const batch of [1, 64]) {
      const buf = RingBuffer.create({ pageSize: 4096, pageCount: 64, mode, clock: { name: 'bench' } });
      const w = buf.writer();
      // Another RingBuffer object over the same memory reads as another thread would.
      const r = thread === 'same' ? buf.reader() : RingBuffer.attach(buf.buffer).reader();
      const counter = { side: 'w' as 'w' | 'r', w: 0, r: 0 };
      let written = 0;
      let read = 0;
      const unwrap = wrapAtomics(counter);
      try {
        for (let round = 0; round < 2000; round++) {
          for (let i = 0; i < 64; i++) {
            counter.side = 'w';
            const off = w.reserveAt(1, 32, written++);
            w.words[off >> 2] = i;
            if (batch === 1 || i === 63) w.commit();
            counter.side = 'r';
            if (batch === 1 || i === 63) {
              for (let k = 0; k < batch && r.next(); k++) read++;
            }
          }
        }
      } finally {
        unwrap();
      }
      if (read !== written) throw new Error(`atomics count: read ${read} of ${written} records`);
      lines.push(
        `| ${mode} | ${thread === 'same' ? "writer's thread" : 'another thread'} | ${batch === 1 ? 'per record' : 'per 64 records'} | ${(counter.w / written).toFixed(3)} | ${(counter.r / read).toFixed(3)} | ${((counter.w + counter.r) / read).toFixed(3)} |`,
      );
    }
  }
  return lines;
}

const rows: Comparison[] = [];
rows.push({ case: 'push+pop 32 B record, single', ours: ours32(1, false), peer: peer32(1), target: '>= 7x, <= 15 ns' });
rows.push({
  case: 'push+pop 32 B records, batches of 64',
  ours: ours32(64, false),
  peer: peer32(64),
  target: '<= 15 ns',
});
printComparisons('ringbuf vs ringbuf.js: 32-byte structured records written and read (no timestamp)', rows);

const clockOptions = { opsPerCall: REPS, samples: SAMPLES };
const clock = measure(
  'performance.now()',
  () => {
    let t = 0;
    for (let c = 0; c < REPS; c++) t += performance.now();
    consume(t);
  },
  clockOptions,
);
const mono = measure(
  'monotonicNs() (the buffer clock)',
  () => {
    let t = 0;
    for (let c = 0; c < REPS; c++) t += monotonicNs();
    consume(t);
  },
  clockOptions,
);
const stamped = ours32(1, true);
const stampedBatch = ours32(64, true);
printComparisons('Timestamped 32-byte record vs the clock read alone', [
  { case: 'clock read: monotonicNs vs performance.now', ours: mono, peer: clock },
  {
    case: '32 B record with timestamp, written and read, commit per record',
    ours: stamped,
    peer: clock,
    target: '<= clock + 15 ns',
  },
  {
    case: '32 B record with timestamp, written and read, batches of 64',
    ours: stampedBatch,
    peer: clock,
    target: '<= clock + 15 ns',
  },
]);
process.stdout.write(
  `\nrecord cost above the clock read: ${(stamped.nsPerOp - mono.nsPerOp).toFixed(1)} ns per record committed singly, ${(stampedBatch.nsPerOp - mono.nsPerOp).toFixed(1)} ns in batches of 64\n`,
);

const bytesRows: Comparison[] = [];
for (const size of [256, 1024, 4096]) {
  const limit = setBytes(size);
  bytesRows.push({
    case: `${size} B payload, commit per record`,
    ours: oursBytes(size, 1),
    peer: limit,
    target: '<= 1.3x set',
  });
  bytesRows.push({
    case: `${size} B payload, commit per 16`,
    ours: oursBytes(size, 16),
    peer: limit,
    target: '<= 1.3x set',
  });
}
printComparisons(
  'Byte payloads: writeBytes + zero-copy next vs a bare Uint8Array.set of the same bytes (the limit)',
  bytesRows,
);

const n = 10_000_000;
const throughputRows: Comparison[] = [
  {
    case: 'producer worker -> consumer main thread, per-record commit',
    ours: await throughput('ours', n, 1),
    peer: await throughput('peer', n, 1),
    target: '>= 50 M/s',
  },
  {
    case: 'producer worker -> consumer main thread, batches of 16',
    ours: await throughput('ours', n, 16),
    peer: await throughput('peer', n, 16),
    target: '>= 50 M/s',
  },
  {
    case: 'producer worker -> consumer main thread, batches of 64',
    ours: await throughput('ours', n, 64),
    peer: await throughput('peer', n, 64),
    target: '>= 50 M/s',
  },
];
printComparisons('Cross-thread throughput (two cores)', throughputRows);

process.stdout.write(
  `\n### Atomics operations per record (counted by wrapping Atomics; 32 B records, 4 KiB pages, each record or batch read as soon as it is committed)\n\n| mode | reader in | commit / read | writer | reader | total |\n| --- | --- | --- | --- | --- | --- |\n${atomicsPerRecord().join('\n')}\n`,
);
consume(sink);
