/**
 * A reader thread: drains its CPUs' raw pipes until told to stop, sleeping between passes on an Atomics wait (exact
 * and independent of the main thread's event loop), at the priority the recorder asks for (Linux priorities are
 * per thread).
 */
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { PageLayout } from '@evtrace/trace-format';
import { type CpuFds, MIN_POLL_MS, nextInterval, PageReader } from './reader.ts';

/** What the recorder hands a reader thread. */
export interface ReaderWorkerData {
  readonly cpus: readonly CpuFds[];
  readonly layout: PageLayout;
  readonly bufferBytes: number;
  /** The nice value to ask for, or undefined to keep the inherited one. */
  readonly priority: number | undefined;
  /** Int32Array over a SharedArrayBuffer: [0] becomes 1 when tracing has stopped and the thread should finish. */
  readonly control: Int32Array;
}

const data = workerData as ReaderWorkerData;
try {
  if (data.priority !== undefined) {
    try {
      setPriority(data.priority);
    } catch {}
  }
  const reader = new PageReader(data.cpus, data.layout, data.bufferBytes);
  // The recorder turns tracing on only when every reader is polling: a thread starting under load can take
  // longer than a buffer takes to fill.
  parentPort!.postMessage({ ready: true });
  let interval = MIN_POLL_MS * 4;
  let last = performance.now();
  while (Atomics.load(data.control, 0) === 0) {
    const fastest = reader.drainAll();
    const now = performance.now();
    interval = nextInterval(interval, fastest, now - last, data.bufferBytes);
    last = now;
    Atomics.wait(data.control, 0, 0, interval);
  }
  reader.drainToEnd();
  parentPort!.postMessage({ totals: reader.totals });
} catch (error) {
  const { message, code, path, errno } = error as { message: string; code?: string; path?: string; errno?: string };
  parentPort!.postMessage({ error: { message, code, path, errno } });
}
