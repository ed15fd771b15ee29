/**
 * The thread {@link analysePerfData} reads a perf.data file on: it decodes the kmem samples as
 * {@link perfDataSource} does and posts each batch of columns (its buffer handed over, not copied) with the cache
 * names met for the first time, then what names the keys, or the error that stopped it.
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import type { Location } from '@evtrace/errors';
import type { SampleWalk } from '@evtrace/trace-format';
import { KmemColumns, type KmemEventStream } from './event.ts';
import { perfDataSource, perfDataState } from './perf-data.ts';
import type { PerfDataJob, PerfDataMessage } from './perf-data-thread.ts';

const job = workerData as PerfDataJob;
const port = parentPort!;
const post = (message: PerfDataMessage, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

// The main thread walks the file, to order its samples, while this thread starts: its walk is the first message.
port.once('message', (first: { readonly walked?: SampleWalk }) => read(first.walked));

function read(walked: SampleWalk | undefined): void {
  try {
    const source = perfDataSource(job.file, { lenient: job.lenient, ...(walked !== undefined ? { walked } : {}) });
    const state = perfDataState.get(source)!;
    const cacheIds = new Map<string, number>();
    // Buffers the main thread has analysed come back to be filled again: a fresh buffer per batch would have the
    // collector run for their sake.
    const spare: { columns: ArrayBuffer; cache: Int32Array<ArrayBuffer> }[] = [];
    for (const batch of (source.events as KmemEventStream).batches()) {
      const n = batch.length;
      for (let back = receiveMessageOnPort(port); back !== undefined; back = receiveMessageOnPort(port))
        spare.push(back.message);
      const reused = spare.pop();
      const size = KmemColumns.bytes(batch.capacity);
      const fits = reused !== undefined && reused.columns.byteLength === size;
      // The numeric columns lie in one buffer: copied whole, what lies past the batch's length unread.
      const columns = fits ? reused.columns : new ArrayBuffer(size);
      new Uint8Array(columns).set(new Uint8Array(batch.buffer, 0, size));
      const cache = fits ? reused.cache : new Int32Array(batch.capacity);
      const names: string[] = [];
      for (let i = 0; i < n; i++) {
        const name = batch.cache[i];
        if (name === undefined) {
          cache[i] = -1;
          continue;
        }
        let id = cacheIds.get(name);
        if (id === undefined) {
          id = cacheIds.size;
          cacheIds.set(name, id);
          names.push(name);
        }
        cache[i] = id;
      }
      post({ kind: 'batch', length: n, columns, cache, names }, [columns, cache.buffer as ArrayBuffer]);
    }
    post({
      kind: 'end',
      siteAddresses: state.siteAddresses,
      odd: [...state.keys.odd()],
      diagnostics: source.diagnostics,
    });
  } catch (error) {
    const e = error as { name?: unknown; code?: unknown; message?: unknown; location?: Location };
    post({
      kind: 'error',
      name: String(e?.name ?? 'Error'),
      ...(typeof e?.code === 'string' ? { code: e.code } : {}),
      message: String(e?.message ?? error),
      ...(e?.location !== undefined ? { location: e.location } : {}),
    });
  }
}
