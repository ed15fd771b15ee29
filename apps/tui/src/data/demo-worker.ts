// The embedded demo's producer thread: runs @evtrace/tracefs's demo source into a raw-pages directory until the
// viewer posts 'stop', so producing never competes with drawing for the viewer's thread.
import { parentPort, workerData } from 'node:worker_threads';
import { recordDemo } from '@evtrace/tracefs';

const { dir, events, cpus, rate } = workerData as { dir: string; events: string[]; cpus: number; rate: number };
const stop = new AbortController();
parentPort!.on('message', (m) => {
  if (m === 'stop') stop.abort();
});
recordDemo({ events, dir, cpus, rate, durationMs: Number.MAX_SAFE_INTEGER, signal: stop.signal })
  .then(
    (result) => parentPort!.postMessage({ done: true, total: result.total }),
    (error: Error) => parentPort!.postMessage({ done: true, error: error.message }),
  )
  // The message listener would keep the thread alive.
  .finally(() => parentPort!.close());
parentPort!.postMessage({ started: true });
