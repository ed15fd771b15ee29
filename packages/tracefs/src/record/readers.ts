/**
 * Reading a recording's pages: each CPU's raw pipe paired with its output, then drained by one loop on the calling
 * thread or by one worker thread per CPU until the recording ends. Tracing is switched on once the readers are ready
 * (and the threads raised after the workload started), and off before the last pages are drained.
 */
import { join } from 'node:path';
import type { PageLayout } from '@evtrace/trace-format';
import { TracefsError, type TracefsErrorCode } from '../errors.ts';
import { openRawPipe } from '../pages/raw-pipe.ts';
import type { RecordOptions } from './options.ts';
import { PipeWaiter } from './pipe-wait.ts';
import { DEFAULT_NICE, type Raised, raisePriority } from './priority.ts';
import { openRaw, openRegions, output } from './raw-dir.ts';
import { type CpuFds, MIN_POLL_MS, nextInterval, PageReader, type ReaderTotals } from './reader.ts';
import type { ReaderWorkerData } from './reader-worker.ts';
import { type PageGeometry, setTracing } from './setup.ts';

/**
 * Opens each CPU's raw pipe and its output: its region of the shared `cpus.raw` where the regions layout applies
 * (see raw-dir.ts), else its own `cpuN.raw` after `room` bytes of hole. Every descriptor opened is pushed to
 * `descriptors` as soon as it is open, for the caller to close whatever happens.
 */
export function openCpuOutputs(
  p: string,
  dir: string,
  cpus: readonly number[],
  room: number,
  pageSize: number,
  descriptors: number[],
): CpuFds[] {
  const shared = room > 0 ? openRegions(dir, cpus, room, pageSize) : undefined;
  if (shared !== undefined) descriptors.push(shared.fd);
  return cpus.map((cpu): CpuFds => {
    const pipe = openRawPipe(p, cpu).fd;
    descriptors.push(pipe);
    const region = shared?.regions.find((r) => r.cpu === cpu);
    if (shared !== undefined && region !== undefined)
      return { cpu, pipe, out: shared.fd, outPath: shared.path, region: { start: region.start, end: region.end } };
    const outPath = join(dir, `cpu${cpu}.raw`);
    const out = output(outPath, () => openRaw(outPath, room));
    descriptors.push(out);
    return { cpu, pipe, out, outPath };
  });
}

/** What reading changed that the recording reports and undoes: tracing started, threads raised. */
export interface ReadState {
  started: boolean;
  /** How the recorder's threads were raised, to be restored. */
  raised: Raised | undefined;
  /** The nice value the reader threads asked for (`threads: 'per-cpu'`). */
  threadPriority: number | undefined;
}

/** Where and how long to read. */
export interface ReadPlan {
  /** The instance directory. */
  readonly p: string;
  readonly cpus: readonly CpuFds[];
  readonly geometry: PageGeometry;
  /** `performance.now()` at which the recording ends (infinite without `durationMs`). */
  readonly deadline: number;
  readonly options: RecordOptions;
}

/** The longest a `blocking` reader goes without turning to the event loop. */
const YIELD_MS = 100;

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Reads every CPU in one loop on the calling thread until the signal aborts or the deadline passes, sleeping between
 * passes on a timer, or (`sleep: 'blocking'`) in poll(2) on the pipes where the kernel wakes it (`woken`), else in
 * `Atomics.wait`, turning to the event loop at least every {@link YIELD_MS}. Drains everything once tracing is off.
 */
export async function readInThread(plan: ReadPlan, woken: boolean, state: ReadState): Promise<ReaderTotals[]> {
  const { p, cpus, geometry, deadline, options } = plan;
  const { bufferBytes } = geometry;
  const reader = new PageReader(cpus, geometry.layout, bufferBytes);
  setTracing(p, true);
  state.started = true;
  options.onStart?.();
  // Raised after the workload started, so that it keeps its own priority.
  state.raised = raisePriority(options.priority);
  let interval = MIN_POLL_MS * 4;
  let last = performance.now();
  const nap = options.sleep === 'blocking' ? new Int32Array(new SharedArrayBuffer(4)) : undefined;
  let waiter = nap !== undefined && woken ? PipeWaiter.open(cpus.map((f) => f.pipe)) : undefined;
  let yielded = last;
  while (!options.signal?.aborted && performance.now() < deadline) {
    const fastest = reader.drainAll();
    const now = performance.now();
    interval = nextInterval(interval, fastest, now - last, bufferBytes);
    last = now;
    const ms = Math.max(0, Math.min(interval, deadline - now));
    if (nap !== undefined && now - yielded < YIELD_MS) {
      if (waiter?.wait(Math.min(YIELD_MS - (now - yielded), deadline - now)) === false) waiter = undefined;
      if (waiter === undefined) Atomics.wait(nap, 0, 0, ms);
    } else {
      // Woken by the kernel, the reader only needs one turn of the event loop here, not a nap; it then waits
      // again rather than draining pipes it drained just before the turn (an idle recording drained twice a wake).
      await sleep(waiter !== undefined ? 0 : ms, options.signal);
      yielded = performance.now();
      if (waiter !== undefined && !options.signal?.aborted && yielded < deadline) {
        if (!waiter.wait(Math.min(YIELD_MS, deadline - yielded))) waiter = undefined;
      }
    }
  }
  setTracing(p, false);
  reader.drainToEnd();
  return [reader.totals];
}

/**
 * Reads each CPU in its own worker thread: tracing goes on once every thread is ready, and the recording ends at the
 * signal, the deadline, or the first thread that fails (a full disk). Resolves to each thread's totals.
 */
export async function readPerCpu(plan: ReadPlan, state: ReadState): Promise<ReaderTotals[]> {
  const { p, cpus, geometry, deadline, options } = plan;
  const threads = cpus.map((cpu) => startReaderThread(cpu, geometry.layout, geometry.bufferBytes, options.priority));
  state.threadPriority = options.priority === false ? undefined : (options.priority ?? DEFAULT_NICE);
  try {
    // A thread that fails before it is ready rejects `done`: wait for whichever comes first.
    await Promise.race([Promise.all(threads.map((t) => t.ready)), ...threads.map((t) => t.done)]);
    setTracing(p, true);
    state.started = true;
    options.onStart?.();
    state.raised = raisePriority(options.priority);
    // A thread that fails (a full disk) ends the recording at once, not at the deadline.
    const running = new AbortController();
    const end = () => running.abort();
    options.signal?.addEventListener('abort', end, { once: true });
    for (const t of threads) t.done.catch(end);
    try {
      while (!options.signal?.aborted && !running.signal.aborted && performance.now() < deadline) {
        await sleep(Math.min(250, deadline - performance.now()), running.signal);
      }
    } finally {
      options.signal?.removeEventListener('abort', end);
    }
    setTracing(p, false);
  } finally {
    for (const t of threads) t.stop();
  }
  return Promise.all(threads.map((t) => t.done));
}

/** A reader thread for one CPU: `stop()` after tracing is off; `done` resolves to what it read. */
function startReaderThread(
  cpu: CpuFds,
  layout: PageLayout,
  bufferBytes: number,
  priority: number | false | undefined,
): { stop: () => void; ready: Promise<void>; done: Promise<ReaderTotals> } {
  const control = new Int32Array(new SharedArrayBuffer(4));
  const data: ReaderWorkerData = {
    cpus: [cpu],
    layout,
    bufferBytes,
    priority: priority === false ? undefined : (priority ?? DEFAULT_NICE),
    control,
  };
  // Sources run as .ts (type stripping); the built package ships reader-worker.js beside index.js.
  const file = import.meta.url.endsWith('.ts') ? './reader-worker.ts' : './reader-worker.js';
  // Loaded here: the default single reader never needs node:worker_threads.
  const { Worker } = process.getBuiltinModule('node:worker_threads') as typeof import('node:worker_threads');
  const worker = new Worker(new URL(file, import.meta.url), { workerData: data });
  let onReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  const done = new Promise<ReaderTotals>((resolve, reject) => {
    type Failure = { message: string; code?: string; path?: string; errno?: string };
    worker.on('message', (m: { ready?: true; totals?: ReaderTotals; error?: Failure }) => {
      if (m.ready) onReady();
      else if (m.totals !== undefined) resolve(m.totals);
      else {
        const code = (m.error?.code?.startsWith('ERR_TRACEFS_') ? m.error.code : 'ERR_TRACEFS_IO') as TracefsErrorCode;
        const { path, errno } = m.error ?? {};
        reject(
          new TracefsError(code, m.error?.message ?? 'reader thread failed', {
            ...(path !== undefined ? { path } : {}),
            ...(errno !== undefined ? { errno } : {}),
          }),
        );
      }
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new TracefsError('ERR_TRACEFS_IO', `reader thread exited (${code})`)));
  });
  return {
    stop: () => {
      Atomics.store(control, 0, 1);
      Atomics.notify(control, 0);
    },
    ready,
    done,
  };
}
