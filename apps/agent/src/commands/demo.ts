import { Worker } from 'node:worker_threads';
import { Merge, type Reader, RingBuffer, RingbufError, type WriterStats } from '@evtrace/ringbuf';
import type { Command } from 'commander';
import { addCommand, type CliIO } from '../command.ts';
import { usageError } from '../exit-codes.ts';
import { setExamples } from '../help.ts';
import { sizeOption } from '../units.ts';
import { DEMO_TYPE_NAMES, DemoType, type DemoWorkerData } from './demo-events.ts';

/** Pages per producer buffer. */
const PAGES = 64;

interface DemoOptions {
  producers: string;
  events: string;
  mode: string;
  pageSize: string;
  limit?: string;
  json?: boolean;
}

function integer(text: string, name: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw usageError(`${name} must be an integer from ${min} to ${max}, got '${text}'`);
  }
  return n;
}

/** Where the worker script is: next to this module in src (tests), at the dist root once bundled. */
function workerUrl(): URL {
  return import.meta.url.endsWith('.ts')
    ? new URL('./demo-worker.ts', import.meta.url)
    : new URL('./demo-worker.js', import.meta.url);
}

/** One event as a readable line or a JSON object, decoded in place from the record. */
function describe(r: Reader, producer: number, t0: number, json: boolean): string {
  const seq = r.view.getUint32(r.offset, true);
  const type = DEMO_TYPE_NAMES[r.type] ?? `type${r.type}`;
  let fields: Record<string, number | string>;
  if (r.type === DemoType.sample) fields = { value: Number(r.view.getFloat64(r.offset + 8, true).toFixed(6)) };
  else if (r.type === DemoType.alloc) fields = { bytes: r.view.getUint32(r.offset + 4, true) };
  else fields = { text: new TextDecoder().decode(r.bytes.subarray(r.offset + 4, r.offset + r.length)) };
  // The timestamp is a 64-bit nanosecond count: a decimal string, as in every evtrace JSON output.
  if (json) return JSON.stringify({ ts: String(r.timestamp), producer, seq, type, ...fields });
  const rel = ((r.timestamp - t0) / 1e9).toFixed(9);
  const shown = Object.entries(fields)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? JSON.stringify(v) : v}`)
    .join(' ');
  return `+${rel}s  producer ${producer}  #${String(seq).padEnd(6)} ${type.padEnd(7)}${shown}`;
}

async function runDemo(options: DemoOptions, io: CliIO): Promise<void> {
  const producers = integer(options.producers, '--producers', 1, 32);
  const events = integer(options.events, '--events', 0, 1e9);
  // Every event is still read and counted; only the printing stops (large runs measure the buffer, not the terminal).
  const limit = options.limit === undefined ? Number.POSITIVE_INFINITY : integer(options.limit, '--limit', 0, 1e9);
  if (options.mode !== 'overwrite' && options.mode !== 'discard') {
    throw usageError(`--mode must be overwrite or discard, got '${options.mode}'`);
  }
  const pageSize = sizeOption('--page-size', options.pageSize);
  let bufs: RingBuffer[];
  try {
    bufs = Array.from({ length: producers }, () =>
      RingBuffer.create({ pageSize, pageCount: PAGES, mode: options.mode as 'overwrite' }),
    );
  } catch (error) {
    if (error instanceof RingbufError) throw usageError(`--page-size: ${error.message}`);
    throw error;
  }
  const readers = bufs.map((b) => b.reader());
  const merge = new Merge(readers);
  const json = options.json === true;
  const barrier = new SharedArrayBuffer(8);
  const gate = new Int32Array(barrier);
  const workers = bufs.map((b, producer) => {
    const data: DemoWorkerData = { buffer: b.buffer as SharedArrayBuffer, producer, events, barrier };
    const worker = new Worker(workerUrl(), { workerData: data });
    return new Promise<WriterStats>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`demo producer ${producer} exited with status ${code}`)));
    });
  });
  // A producer that fails must end the demo instead of leaving the reader waiting.
  let failure: unknown;
  for (const w of workers) w.catch((error) => (failure ??= error));
  for (let ready = 0; ready < producers && failure === undefined; ready = Atomics.load(gate, 0)) {
    const r = Atomics.waitAsync(gate, 0, ready, 100);
    if (r.async) await r.value;
  }
  const started = process.hrtime.bigint();
  Atomics.store(gate, 1, 1);
  Atomics.notify(gate, 1);
  const delivered = new Array<number>(producers).fill(0);
  let t0 = -1;
  let out: string[] = [];
  let shown = 0;
  while (!merge.ended) {
    if (failure !== undefined) throw failure;
    while (merge.next()) {
      const r = merge.current;
      if (t0 < 0) t0 = r.timestamp;
      delivered[merge.index]!++;
      if (shown++ < limit) out.push(describe(r, merge.index, t0, json));
      if (out.length >= 1024) {
        io.stdout(`${out.join('\n')}\n`);
        out = [];
      }
    }
    const live = readers.find((r) => !r.ended);
    if (live) await live.wait(10);
  }
  if (out.length > 0) io.stdout(`${out.join('\n')}\n`);
  const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;
  const stats = await Promise.all(workers);
  const rows = stats.map((s, p) => ({
    producer: p,
    produced: s.written + s.discarded,
    delivered: delivered[p]!,
    lost: readers[p]!.lost,
  }));
  const total = rows.reduce((a, r) => a + r.delivered, 0);
  const lost = rows.reduce((a, r) => a + r.lost, 0);
  const lines = [
    '',
    'producer  produced  delivered  lost',
    ...rows.map(
      (r) =>
        `${String(r.producer).padStart(8)}  ${String(r.produced).padStart(8)}  ${String(r.delivered).padStart(9)}  ${String(r.lost).padStart(4)}`,
    ),
    `${total} events delivered, ${lost} lost, in ${elapsedMs.toFixed(1)} ms (${((total / elapsedMs) * 1000).toFixed(0)} events/s); ` +
      `${producers} worker thread(s), one ${options.mode}-mode buffer each (${PAGES} pages of ${pageSize} bytes), merged by timestamp`,
  ];
  io.stderr(`${lines.join('\n')}\n`);
}

/** `evtrace demo`: worker threads write events into ring buffers; a reader merges and prints them. */
export function registerDemo(program: Command, io: CliIO): void {
  const cmd = addCommand(program, 'demo')
    .summary('write events from worker threads into ring buffers and read them back merged by timestamp')
    .description(
      `Starts N producer threads. Each writes events into its own @evtrace/ringbuf buffer (the per-CPU
model) with the structured, allocation-free write API. The main thread merges the buffers by
timestamp and prints one line per event (or one JSON object per line with --json), then a summary
on stderr: events produced, delivered and lost per producer, and the throughput.`,
    )
    .option('--producers <n>', 'producer threads, one buffer each', '2')
    .option('--events <n>', 'events each producer writes', '10')
    .option('--mode <mode>', 'overwrite (flight recorder) or discard (newest dropped when full)', 'overwrite')
    .option('--page-size <size>', 'page size: 4k up to 64M, a power of two', '4k')
    .option('-n, --limit <n>', 'print only the first N events (all are still read and counted)')
    .option('--json', 'print one JSON object per event')
    .action(async (options: DemoOptions) => runDemo(options, io));
  setExamples(
    cmd,
    `evtrace demo                                  2 producers x 10 events, readable lines
evtrace demo --json | jq .type                one JSON object per event
evtrace demo --producers 4 --events 1000000 --mode discard > /dev/null
                                              throughput and loss accounting only`,
  );
}
