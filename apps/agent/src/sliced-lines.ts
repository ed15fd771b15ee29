/**
 * `cat` of an ftrace recording on several threads. The recording's time is cut into slices (see trace-format's
 * `timeSlices`); each worker thread opens the input itself and prints every n-th slice, decoding only its own
 * slices' records and the task-naming events of the others (so that every thread knows each task's name as a single
 * thread would). The main thread writes the slices' text in order: the output is the single thread's, byte for byte.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { type FtraceReader, type TimeSlices, timeSlices } from '@evtrace/trace-format';
import { CliCode, CliExit, type ExitCode } from './exit-codes.ts';
import type { OpenedInput } from './trace-input.ts';

/** What a worker is given. */
export interface SliceJob {
  /** The recording, which each thread reads from its file as it goes. */
  readonly input: string;
  readonly options: { filter?: string; buffer?: string; allBuffers?: boolean };
  readonly json: boolean;
  readonly slices: { readonly startNs: string; readonly widthNs: string };
  readonly index: number;
  readonly count: number;
  /** Per worker: bytes of its ring posted and not yet written (an Int32Array over it). */
  readonly owed: SharedArrayBuffer;
  /** The worker's ring of UTF-8 text, written by it, read by the main thread in the order posted. */
  readonly ring: SharedArrayBuffer;
}

/** What a worker posts: text of a slice, the slice it moved on to, its end. */
export type SliceMessage =
  | {
      readonly kind: 'text';
      readonly slice: number;
      /** The text's place in the ring. */
      readonly at: number;
      readonly length: number;
      /** Ring bytes it frees once written: its length, and the end of the ring it skipped. */
      readonly span: number;
    }
  | { readonly kind: 'progress'; readonly slice: number }
  | { readonly kind: 'done'; readonly warnings: readonly string[]; readonly notes: readonly string[] }
  | {
      readonly kind: 'failed';
      readonly code: string;
      readonly message: string;
      readonly exitCode: number | undefined;
      readonly warnings: readonly string[];
      readonly notes: readonly string[];
    };

/** What {@link printSliced} read: the warnings and notes for stderr, and the failure that ended it. */
export interface SlicedRead {
  readonly warnings: readonly string[];
  readonly notes: readonly string[];
  /** A thread's error (as a {@link CliExit}), or the output's (a failed write). */
  readonly failure?: unknown;
}

/** Records per slice: a slice's text is a few megabytes, so that threads seldom wait for one another. */
const RECORDS_PER_SLICE = 32768;
/** Fewest cores on which a large recording is shared between threads without being asked. */
const AUTO_CORES = 4;
/** A recording smaller than this (in records, estimated from its pages) is read on one thread unless asked. */
const SMALLEST_SHARED = 1 << 18;
/** Each worker's ring of text: what it may print ahead of the main thread's writing. */
const RING_BYTES = 4 << 20;

/**
 * How many threads to read `opened` (from `input`) with, and its slices; undefined to read it on this thread. `threads` is the
 * user's `--threads`. Undefined: one per core up to 4 on a machine of 4 cores or more, for a recording large enough to
 * gain; on fewer cores the threads' own costs (each walks every page, has its own heap and collector) leave too little.
 */
export function sliceReading(
  input: string,
  opened: OpenedInput,
  options: { threads?: number; lenient?: boolean; limited: boolean; recordsPerSlice?: number },
): { count: number; slices: TimeSlices } | undefined {
  const reader = opened.reader as OpenedInput['reader'] & Partial<FtraceReader>;
  // Standard input is read once, by this thread.
  if (input === '-' || options.threads === 1 || options.lenient || options.limited) return undefined;
  if (reader.kind === 'ctf' || reader.cpuPages === undefined) return undefined;
  const cores = availableParallelism();
  const count = options.threads ?? (cores >= AUTO_CORES ? Math.min(4, cores) : 1);
  if (count < 2) return undefined;
  const slices = timeSlices(reader as FtraceReader, options.recordsPerSlice ?? RECORDS_PER_SLICE);
  if (slices === undefined) return undefined;
  if (options.threads === undefined && slices.records < SMALLEST_SHARED) return undefined;
  return { count, slices };
}

/** Where the worker script is: next to this module in src (tests), at the dist root once bundled. */
function workerUrl(): URL {
  return import.meta.url.endsWith('.ts')
    ? new URL('./sliced-lines-worker.ts', import.meta.url)
    : new URL('./sliced-lines-worker.js', import.meta.url);
}

/**
 * Prints the events of `input` on `count` worker threads, writing their text to `write` in slice order. Resolves to
 * the warnings and notes of the read (the first thread's: every thread reads every page) and, when a thread failed,
 * its error, once what the threads printed before it is written.
 */
export function printSliced(
  input: string,
  options: SliceJob['options'] & { json: boolean },
  plan: { count: number; slices: TimeSlices },
  write: (bytes: Uint8Array) => void,
): Promise<SlicedRead> {
  const { count, slices } = plan;
  const owedBytes = new SharedArrayBuffer(4 * count);
  const owed = new Int32Array(owedBytes);
  const rings = Array.from({ length: count }, () => new SharedArrayBuffer(RING_BYTES));
  const views = rings.map((r) => new Uint8Array(r));
  const queues: { slice: number; at: number; length: number; span: number }[][] = Array.from(
    { length: count },
    () => [],
  );
  /** Per worker: the slice it is on (it prints nothing more before it), or Infinity once it has ended. */
  const at = new Array<number>(count).fill(-1);
  let result: { warnings: readonly string[]; notes: readonly string[] } | undefined;
  let failure: unknown;
  /** The output failed: nothing more is written. */
  let stopped = false;
  const { json, ...open } = options;
  return new Promise((resolve) => {
    const workers: Worker[] = [];
    const drain = () => {
      while (!stopped) {
        // The earliest slice queued is written once every other thread has moved past it.
        let best = -1;
        for (let i = 0; i < count; i++) {
          const head = queues[i]![0];
          if (head !== undefined && (best < 0 || head.slice < queues[best]![0]!.slice)) best = i;
        }
        if (best < 0) return;
        const head = queues[best]![0]!;
        for (let i = 0; i < count; i++) if (i !== best && at[i]! < head.slice) return;
        queues[best]!.shift();
        try {
          write(views[best]!.subarray(head.at, head.at + head.length));
        } catch (error) {
          // The output failed (a full disk): nothing more can be written, and the threads waiting for room in
          // their rings are stopped.
          failure ??= error;
          stopped = true;
          for (const q of queues) q.length = 0;
          for (const w of workers) void w.terminate();
          return;
        }
        Atomics.sub(owed, best, head.span);
        Atomics.notify(owed, best);
      }
    };
    let ended = 0;
    const end = (i: number) => {
      at[i] = Number.POSITIVE_INFINITY;
      drain();
      if (++ended < count) return;
      resolve({ warnings: [], notes: [], ...result, ...(failure !== undefined ? { failure } : {}) });
    };
    for (let index = 0; index < count; index++) {
      const job: SliceJob = {
        input,
        options: open,
        json,
        slices: { startNs: String(slices.startNs), widthNs: String(slices.widthNs) },
        index,
        count,
        owed: owedBytes,
        ring: rings[index]!,
      };
      const worker = new Worker(workerUrl(), { workerData: job });
      workers.push(worker);
      let finished = false;
      worker.on('message', (m: SliceMessage) => {
        if (m.kind === 'text') {
          if (!stopped) queues[index]!.push(m);
        } else if (m.kind === 'progress') at[index] = m.slice;
        else {
          finished = true;
          if (index === 0 || m.kind === 'failed') result ??= { warnings: m.warnings, notes: m.notes };
          if (m.kind === 'failed') failure ??= new CliExit(m.code, m.message, m.exitCode as ExitCode | undefined);
          end(index);
          return;
        }
        drain();
      });
      worker.on('error', (error) => {
        if (finished) return;
        finished = true;
        failure ??= new CliExit(CliCode.Internal, error.message);
        end(index);
      });
      worker.on('exit', () => {
        if (finished) return;
        finished = true;
        failure ??= new CliExit(CliCode.Internal, `a reading thread ended before its slices were printed`);
        end(index);
      });
    }
  });
}
