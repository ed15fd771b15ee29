// Benchmarks of @evtrace/ringbuf beside ringbuf.js (the peer), Uint8Array.prototype.set (the limit for byte
// payloads) and a bare JS ring (the floor for structured records), all measured in this run.
// Run: pnpm bench (built and bundled first, as users run it), or node src/ringbuf.bench.ts (from sources)
import { loadavg } from 'node:os';
import { Worker } from 'node:worker_threads';
import {
  type Comparison,
  consume,
  fromTotal,
  type Measurement,
  measureRounds,
  printComparisons,
  type Rounds,
} from '@evtrace/bench';
import { RingBuffer as PeerRing } from 'ringbuf.js';
import { monotonicNs } from './clock.ts';
import { RingBuffer } from './ringbuffer.ts';

// Every case adds into a local and stores into `sink` once per timed call: `sink` soon outgrows a small integer, and
// a per-record store of a double into this module variable allocates, which would bill the garbage collector to
// whichever case did it (ringbuf.js's 32 B case ran at half its speed that way).
let sink = 0;

// A timed call performs REPS records in a loop (singles stay singles: one commit and one read per record), so the
// harness's call through a closure is not billed to one record; the median of SAMPLES samples is reported.
// Setup (buffers, writers, readers, sources) happens before timing, for evtrace, the peers and the floors alike.
const REPS = 64;
const SAMPLES = 15;
const options = (bytesPerOp?: number) => ({ opsPerCall: REPS, samples: SAMPLES, bytesPerOp });

/**
 * Times cases in rounds ({@link measureRounds}). Each case's closure is built twice and the second is timed: V8
 * specialises the code of a closure literal that has only ever had one instance to the objects it captured (they
 * become constants: no map checks, no field loads); real callers do not get that, so every case here, ours and the
 * others alike, runs as ordinary optimised code.
 */
function rounds(cases: [name: string, make: () => () => void][], bytesPerOp?: number) {
  const timedCases = cases.map(([name, make]) => {
    make();
    return { name, fn: make(), bytesPerOp };
  });
  return measureRounds(timedCases, options(bytesPerOp));
}

/** A row of case `ours` beside case `peer`, with the speedup taken round by round. */
function compare(r: Rounds, label: string, ours: number, peer: number, target?: string): Comparison {
  return {
    case: label,
    ours: r.measurements[ours]!,
    peer: r.measurements[peer]!,
    speedup: r.ratio(peer, ours),
    target,
  };
}

function load(): string {
  return `load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')} on ${navigator.hardwareConcurrency} cores`;
}

function buffer32(): RingBuffer {
  return RingBuffer.create({ pageSize: 65536, pageCount: 8, mode: 'discard' });
}

/** The 8 u32 fields of a benchmark record (inlined by V8). */
function fill(ww: Uint32Array, k: number, c: number): void {
  ww[k] = c;
  ww[k + 1] = 2;
  ww[k + 2] = 3;
  ww[k + 3] = 4;
  ww[k + 4] = 5;
  ww[k + 5] = 6;
  ww[k + 6] = 7;
  ww[k + 7] = 8;
}

function sum8(rw: Uint32Array, j: number): number {
  return rw[j]! + rw[j + 1]! + rw[j + 2]! + rw[j + 3]! + rw[j + 4]! + rw[j + 5]! + rw[j + 6]! + rw[j + 7]!;
}

/** reserve + 8 u32 fields + commit, then next + 8 u32 fields, per record. */
function oursSingle(stamped: boolean): () => () => void {
  return () => {
    const buf = buffer32();
    const w = buf.writer();
    const r = buf.reader();
    if (stamped) {
      return () => {
        const ww = w.words;
        let sum = 0;
        for (let c = 0; c < REPS; c++) {
          fill(ww, w.reserve(1, 32) >> 2, c);
          w.commit();
          r.next();
          sum += sum8(r.words, r.offset >> 2);
        }
        sink += sum;
      };
    }
    return () => {
      const ww = w.words;
      let sum = 0;
      for (let c = 0; c < REPS; c++) {
        fill(ww, w.reserveAt(1, 32, 0) >> 2, c);
        w.commit();
        r.next();
        sum += sum8(r.words, r.offset >> 2);
      }
      sink += sum;
    };
  };
}

/** REPS records reserved and filled, one commit, then REPS records read. */
function oursBatch(stamped: boolean): () => () => void {
  return () => {
    const buf = buffer32();
    const w = buf.writer();
    const r = buf.reader();
    const read = () => {
      let sum = 0;
      for (let c = 0; c < REPS; c++) {
        r.next();
        sum += sum8(r.words, r.offset >> 2);
      }
      sink += sum;
    };
    if (stamped) {
      return () => {
        const ww = w.words;
        for (let c = 0; c < REPS; c++) fill(ww, w.reserve(1, 32) >> 2, c);
        w.commit();
        read();
      };
    }
    return () => {
      const ww = w.words;
      for (let c = 0; c < REPS; c++) fill(ww, w.reserveAt(1, 32, 0) >> 2, c);
      w.commit();
      read();
    };
  };
}

function peer32(batch: number): () => () => void {
  return () => {
    const rb = new PeerRing(PeerRing.getStorageForCapacity(65536, Uint8Array), Uint8Array);
    const src = new Uint8Array(32 * batch).fill(7);
    const dst = new Uint8Array(32 * batch);
    const rounds = REPS / batch;
    return () => {
      let sum = 0;
      for (let c = 0; c < rounds; c++) {
        rb.push(src);
        rb.pop(dst);
        sum += dst[5]!;
      }
      sink += sum;
    };
  };
}

/**
 * The floor: a bare JS ring doing only the unavoidable work of a 32-byte record with a compact header, and nothing
 * else (no checks, no page headers, no loss accounting): the writer stores the 2 header words, the 8 payload words
 * and the commit word; the reader loads the commit word, the 2 header words and the 8 payload words. With `stamped`,
 * the writer reads the clock and stores its low bits in the header.
 */
function floor32(batch: number, stamped: boolean): () => () => void {
  return () => {
    const u32 = new Uint32Array(new SharedArrayBuffer(65536 * 8));
    const limit = (65536 * 8) / 4 - 10 * REPS;
    let wp = 16;
    let rp = 16;
    return () => {
      let sum = 0;
      if (wp > limit) wp = rp = 16;
      for (let c = 0; c < REPS; c++) {
        const i = wp;
        u32[i] = stamped ? ((monotonicNs() & 0x7ffffff) << 5) | 1 : 1;
        u32[i + 1] = 32;
        u32[i + 2] = c;
        u32[i + 3] = 2;
        u32[i + 4] = 3;
        u32[i + 5] = 4;
        u32[i + 6] = 5;
        u32[i + 7] = 6;
        u32[i + 8] = 7;
        u32[i + 9] = 8;
        wp = i + 10;
        if (batch === 1 || c === REPS - 1) {
          u32[0] = wp;
          const end = u32[0]!;
          while (rp < end) {
            const j = rp;
            const len = u32[j + 1]!;
            sum += (u32[j]! & 31) + u32[j + 2]! + u32[j + 3]! + u32[j + 4]! + u32[j + 5]!;
            sum += u32[j + 6]! + u32[j + 7]! + u32[j + 8]! + u32[j + 9]!;
            rp = j + 2 + ((len + 3) >> 2);
          }
        }
      }
      sink += sum;
    };
  };
}

function clockAlone(): () => void {
  return () => {
    let t = 0;
    for (let c = 0; c < REPS; c++) t += monotonicNs();
    consume(t);
  };
}

function performanceNow(): () => void {
  return () => {
    let t = 0;
    for (let c = 0; c < REPS; c++) t += performance.now();
    consume(t);
  };
}

function oursBytes(size: number, batch: number): () => () => void {
  return () => {
    const buf = RingBuffer.create({ pageSize: 65536, pageCount: 8, mode: 'discard', clock: { name: 'bench' } });
    const w = buf.writer();
    const r = buf.reader();
    const src = new Uint8Array(size).fill(3);
    if (batch === 1) {
      return () => {
        let sum = 0;
        for (let c = 0; c < REPS; c++) {
          w.writeBytes(2, src, 0);
          r.next();
          sum += r.length;
        }
        sink += sum;
      };
    }
    return () => {
      let sum = 0;
      for (let c = 0; c < REPS; c += batch) {
        for (let b = 0; b < batch; b++) w.bytes.set(src, w.reserveAt(2, size, 0));
        w.commit();
        for (let b = 0; b < batch; b++) {
          r.next();
          sum += r.length;
        }
      }
      sink += sum;
    };
  };
}

function setBytes(size: number): () => () => void {
  return () => {
    const dst = new Uint8Array(new SharedArrayBuffer(65536 * 8));
    const src = new Uint8Array(size).fill(3);
    let at = 0;
    return () => {
      let sum = 0;
      for (let c = 0; c < REPS; c++) {
        dst.set(src, at);
        at = (at + size + 8) & (65536 * 8 - 8192 - 1);
        sum += at;
      }
      sink += sum;
    };
  };
}

/**
 * Records of `size` bytes (16: 4 u32 fields; 32: 8, as in the single-thread cases) from a producer worker to the
 * consumer on the main thread. The consumer reads every field of every record (ringbuf.js's pop copies them all).
 */
async function throughput(
  kind: 'ours' | 'peer',
  n: number,
  commitEvery: number,
  size = 16,
): Promise<Measurement & { waits: string }> {
  const sync = new SharedArrayBuffer(16);
  const flags = new Int32Array(sync);
  let sab: SharedArrayBuffer;
  let consume_: () => number;
  // Polls that found nothing new, and (from the worker) reserves that found the buffer full: when both stay well
  // below one per record, neither side waits for the other and the rate is set by the cache lines they exchange.
  let empty = 0;
  if (kind === 'ours') {
    const buf = RingBuffer.create({ pageSize: 65536, pageCount: 16, mode: 'discard', clock: { name: 'bench' } });
    sab = buf.buffer as SharedArrayBuffer;
    const r = buf.reader();
    consume_ =
      size === 32
        ? () => {
            let count = 0;
            let sum = 0;
            for (;;) {
              if (r.next()) {
                sum += sum8(r.words, r.offset >> 2);
                count++;
              } else if (r.ended) break;
              else empty++;
            }
            sink += sum;
            return count;
          }
        : () => {
            let count = 0;
            let sum = 0;
            for (;;) {
              if (r.next()) {
                const j = r.offset >> 2;
                const w = r.words;
                sum += w[j]! + w[j + 1]! + w[j + 2]! + w[j + 3]!;
                count++;
              } else if (r.ended) break;
              else empty++;
            }
            sink += sum;
            return count;
          };
  } else {
    sab = PeerRing.getStorageForCapacity(65536 * 16, Uint8Array);
    const rb = new PeerRing(sab, Uint8Array);
    const dst = new Uint8Array(size * 1024);
    consume_ = () => {
      let bytes = 0;
      let sum = 0;
      while (bytes < n * size) {
        const got = rb.pop(dst);
        bytes += got;
        if (got > 0) sum += dst[0]!;
      }
      sink += sum;
      return bytes / size;
    };
  }
  // Run from sources or as the built bundle (the bench script), whose worker is a .js beside it.
  const file = import.meta.url.endsWith('.ts') ? './ringbuf.bench.worker.ts' : './ringbuf.bench.worker.js';
  const worker = new Worker(new URL(file, import.meta.url), {
    workerData: { kind, sab, sync, n, commitEvery, size },
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
      ? `evtrace worker->main ${size} B records, commit every ${commitEvery}`
      : `ringbuf.js worker->main ${size} B records, pushes of ${commitEvery}`;
  const waits =
    kind === 'ours'
      ? ` (evtrace per record: ${(Atomics.load(flags, 2) / n).toFixed(2)} reserves found the buffer full, ${(empty / n).toFixed(2)} polls found nothing)`
      : '';
  return { ...fromTotal(label, ns, n, size), waits };
}

/**
 * Each side of the cross-thread case alone: one thread writes about 830 KiB of 16 B records (13 of the 16 pages, so
 * the writer never finds the buffer full) and then reads them all, over and over. Median ns per record of each side.
 */
function sidesAlone(): { write: number; read: number } {
  const buf = RingBuffer.create({ pageSize: 65536, pageCount: 16, mode: 'discard', clock: { name: 'bench' } });
  const w = buf.writer();
  const r = buf.reader();
  const per = 13 * Math.floor(65536 / 24) - 100;
  const writes: number[] = [];
  const reads: number[] = [];
  let sum = 0;
  for (let round = 0; round < 60; round++) {
    const t0 = process.hrtime.bigint();
    const words = w.words;
    for (let i = 0; i < per; i++) {
      const k = w.reserveAt(1, 16, i) >> 2;
      words[k] = i;
      words[k + 1] = i;
      words[k + 2] = i;
      words[k + 3] = i;
      w.commit();
    }
    const t1 = process.hrtime.bigint();
    let got = 0;
    while (r.next()) {
      const j = r.offset >> 2;
      const rw = r.words;
      sum += rw[j]! + rw[j + 1]! + rw[j + 2]! + rw[j + 3]!;
      got++;
    }
    const t2 = process.hrtime.bigint();
    if (got !== per) throw new Error(`sides alone: read ${got} of ${per} records`);
    // The first rounds fault the pages in and let V8 optimise; only the later ones count.
    if (round >= 20) {
      writes.push(Number(t1 - t0) / per);
      reads.push(Number(t2 - t1) / per);
    }
  }
  sink += sum;
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1]!;
  return { write: median(writes), read: median(reads) };
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

const v = process.versions;
process.stdout.write(
  `@evtrace/ringbuf benchmarks: node ${v.node} (V8 ${v.v8}), ${process.arch}, ${load()}.\n` +
    `Each case is timed as the median of ${SAMPLES} samples of ${REPS} records per call, the cases of a table in rounds\n` +
    '(one sample of each per round); every figure is printed beside the peer or limit measured in the same run. The\n' +
    "speedup is the median of the rounds' ratios, so it can differ from the ratio of the two medians when the\n" +
    "machine's speed changed during the run. Above 1 means evtrace is faster; a floor is a bare JS loop doing only\n" +
    'the unavoidable loads and stores, so ours/floor cannot go below 1.\n',
);

// Each table's cases are timed in rounds, one sample of every case per round (see measureRounds): this VM's speed
// drifts by up to half within a minute, and a ratio is only worth printing when both figures saw the same machine.
// Singles and batches are separate groups, singles first: once ringbuf.js has pushed both 32 B and 2 KiB arrays, V8's
// feedback for its push and pop no longer fits either, and its 32 B case runs about twice as slow (measured).
const single = rounds([
  ['evtrace reserveAt+8 u32+commit, next+8 u32', oursSingle(false)],
  ['ringbuf.js push+pop 32 B', peer32(1)],
  ['bare JS ring, commit per record (floor)', floor32(1, false)],
]);
const batched = rounds([
  [`evtrace reserveAt+8 u32 x${REPS}, one commit, next+8 u32 x${REPS}`, oursBatch(false)],
  [`ringbuf.js push+pop ${32 * REPS} B`, peer32(REPS)],
  [`bare JS ring, commit per ${REPS} (floor)`, floor32(REPS, false)],
]);
printComparisons(`32-byte structured records written and read, no timestamp (${load()})`, [
  compare(single, 'commit per record, vs ringbuf.js push+pop 32 B', 0, 1, '>= 7x, <= 15 ns'),
  compare(single, 'commit per record, vs the floor', 0, 2, '<= 15 ns'),
  compare(batched, `batches of ${REPS}, vs ringbuf.js push+pop ${32 * REPS} B`, 0, 1, '<= 15 ns'),
  compare(batched, `batches of ${REPS}, vs the floor`, 0, 2, '<= 15 ns'),
]);

const stamped = rounds([
  ['monotonicNs() (the buffer clock)', clockAlone],
  ['performance.now()', performanceNow],
  ['evtrace reserve (clock)+8 u32+commit, next+8 u32', oursSingle(true)],
  [`evtrace reserve (clock)+8 u32 x${REPS}, one commit, next x${REPS}`, oursBatch(true)],
  ['bare JS ring + clock read, commit per record (floor)', floor32(1, true)],
]);
printComparisons(`Timestamped 32-byte records vs the clock read alone (${load()})`, [
  compare(stamped, 'clock read: monotonicNs vs performance.now', 0, 1),
  compare(stamped, 'record with timestamp, commit per record', 2, 0, '<= clock + 15 ns'),
  compare(stamped, `record with timestamp, batches of ${REPS}`, 3, 0, '<= clock + 15 ns'),
  compare(stamped, 'record with timestamp, commit per record, vs the floor', 2, 4),
]);
// The cost above the clock, round by round: (record - clock) in each round, median over the rounds.
const above = (i: number) => stamped.difference(i, 0).toFixed(1);
process.stdout.write(
  `\nrecord cost above the clock read (median of the rounds' differences): ${above(2)} ns committed singly, ` +
    `${above(3)} ns in batches of ${REPS}; floor (bare ring + clock) ${above(4)} ns\n`,
);

const bytesRows: Comparison[] = [];
for (const size of [256, 1024, 4096]) {
  const payload = rounds(
    [
      [`Uint8Array set ${size} B into a SharedArrayBuffer`, setBytes(size)],
      [`evtrace writeBytes+next ${size} B`, oursBytes(size, 1)],
      [`evtrace reserveAt+set x16, one commit, next x16, ${size} B`, oursBytes(size, 16)],
    ],
    size,
  );
  bytesRows.push(compare(payload, `${size} B payload, commit per record`, 1, 0, '<= 1.3x set'));
  bytesRows.push(compare(payload, `${size} B payload, commit per 16`, 2, 0, '<= 1.3x set'));
}
printComparisons(
  `Byte payloads: writeBytes + zero-copy next vs a bare Uint8Array.set of the same bytes, the limit (${load()})`,
  bytesRows,
);

const n = 10_000_000;
const throughputRows: Comparison[] = [];
for (const every of [1, 16, 64]) {
  const ours = await throughput('ours', n, every);
  throughputRows.push({
    case: `16 B records, producer worker -> consumer main thread, ${every === 1 ? 'per-record commit' : `batches of ${every}`}${ours.waits}`,
    ours,
    peer: await throughput('peer', n, every),
    target: '>= 50 M/s',
  });
}
const ours32 = await throughput('ours', n, 1, 32);
throughputRows.push({
  case: `32 B structured records (8 u32 written, 8 read), per-record commit, each side on its own core${ours32.waits}`,
  ours: ours32,
  peer: await throughput('peer', n, 1, 32),
});
printComparisons(`Cross-thread throughput, two threads (${load()})`, throughputRows);
const alone = sidesAlone();
process.stdout.write(
  `\neach side alone, one thread, 16 B records, 830 KiB at a time: write ${alone.write.toFixed(1)} ns, read ${alone.read.toFixed(1)} ns ` +
    `per record (${(1e3 / Math.max(alone.write, alone.read)).toFixed(0)} M/s for the slower side)\n`,
);

process.stdout.write(
  `\n### Atomics operations per record (counted by wrapping Atomics; 32 B records, 4 KiB pages, each record or batch read as soon as it is committed)\n\n| mode | reader in | commit / read | writer | reader | total |\n| --- | --- | --- | --- | --- | --- |\n${atomicsPerRecord().join('\n')}\n`,
);
consume(sink);
