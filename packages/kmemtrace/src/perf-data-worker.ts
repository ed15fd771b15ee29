/**
 * The thread {@link analysePerfData} reads a perf.data file on: opened while the main thread walks it, it decodes the
 * kmem samples in the order of that walk as {@link perfDataSource} does and posts each batch of columns (its buffer
 * handed over, not copied) with the cache names met for the first time, then what names the keys, or the error that
 * stopped it.
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import type { Location } from '@evtrace/errors';
import type { SampleWalk } from '@evtrace/trace-format';
import { KmemColumns, type KmemEventStream, type KmemSource } from './event.ts';
import { type PerfDataState, perfDataSource, perfDataState } from './perf-data.ts';
import type { PerfDataJob, PerfDataMessage } from './perf-data-thread.ts';
import { BATCH } from './perf-script.ts';

const job = workerData as PerfDataJob;
const port = parentPort!;
const post = (message: PerfDataMessage, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

// Opened while the main thread walks the file to order its samples: its walk is the first message.
let opened: { source: KmemSource; state: PerfDataState } | undefined;
try {
  const source = perfDataSource(job.file, { lenient: job.lenient });
  opened = { source, state: perfDataState.get(source)! };
} catch (error) {
  fail(error);
}
port.once('message', (first: { readonly walked?: SampleWalk }) => {
  if (opened !== undefined) read(opened.source, opened.state, first.walked);
});

function read(source: KmemSource, state: PerfDataState, walked: SampleWalk | undefined): void {
  try {
    if (walked !== undefined) state.replay(walked);
    // Buffers the main thread has analysed come back to be filled again: a fresh buffer per batch would have the
    // collector run for their sake. Each batch is decoded straight into the buffers handed over.
    const spare: { columns: ArrayBuffer; cache: Int32Array<ArrayBuffer> }[] = [];
    // The texts are the main thread's to make from the ids: one pair of arrays serves every batch here.
    const texts = { cache: new Array<string | undefined>(BATCH), gfpText: new Array<string | undefined>(BATCH) };
    const batches = (source.events as KmemEventStream).batches()[Symbol.iterator]();
    let named = 0;
    for (;;) {
      for (let back = receiveMessageOnPort(port); back !== undefined; back = receiveMessageOnPort(port))
        spare.push(back.message);
      const reused = spare.pop();
      const columns = reused?.columns ?? new ArrayBuffer(KmemColumns.bytes(BATCH));
      const cache = reused?.cache ?? new Int32Array(BATCH);
      state.into(new KmemColumns(BATCH, columns, texts), cache);
      const next = batches.next();
      if (next.done === true) break;
      const names = state.cacheNames.slice(named);
      named = state.cacheNames.length;
      post({ kind: 'batch', length: next.value.length, columns, cache, names }, [columns, cache.buffer as ArrayBuffer]);
    }
    post({
      kind: 'end',
      siteAddresses: state.siteAddresses,
      odd: [...state.keys.odd()],
      diagnostics: source.diagnostics,
    });
  } catch (error) {
    fail(error);
  }
}

/** Posts the error that stopped the reading. */
function fail(error: unknown): void {
  const e = error as { name?: unknown; code?: unknown; message?: unknown; location?: Location };
  post({
    kind: 'error',
    name: String(e?.name ?? 'Error'),
    ...(typeof e?.code === 'string' ? { code: e.code } : {}),
    message: String(e?.message ?? error),
    ...(e?.location !== undefined ? { location: e.location } : {}),
  });
}
