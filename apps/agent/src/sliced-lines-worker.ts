/**
 * A worker thread of {@link printSliced}: opens the input itself, decodes and prints the events of its share of the
 * time slices (text or JSON lines), and posts the text as UTF-8 in its ring, slice by slice, waiting while the ring
 * is full of text the main thread has not written yet.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { codeOf } from '@evtrace/errors';
import { ByteOut, sliceOf } from '@evtrace/trace-format';
import { CliCode } from './exit-codes.ts';
import type { SliceJob, SliceMessage } from './sliced-lines.ts';
import { jsonLineWriter, openInput, textLines } from './trace-input.ts';

/** Output collected before it is posted (text or JSON lines, written as bytes): posting costs little per line. */
const POST_BYTES = 1 << 16;

const job = workerData as SliceJob;
const port = parentPort!;
const owed = new Int32Array(job.owed);
const ring = Buffer.from(job.ring);
const post = (m: SliceMessage) => port.postMessage(m);

let slice = -1;
const out = new ByteOut(POST_BYTES + (1 << 12));
/** Where the next text goes in the ring. */
let head = 0;
function send(): void {
  if (out.length === 0) return;
  // Text that does not fit before the ring's end starts at its beginning.
  const room = out.length;
  const skip = head + room > ring.length ? ring.length - head : 0;
  // Wait while the main thread has not yet written what this text would overwrite.
  for (let left = Atomics.load(owed, job.index); left + skip + room > ring.length; ) {
    Atomics.wait(owed, job.index, left, 1000);
    left = Atomics.load(owed, job.index);
  }
  if (skip > 0) head = 0;
  const length = room;
  ring.set(out.bytes.subarray(0, room), head);
  out.length = 0;
  Atomics.add(owed, job.index, skip + length);
  post({ kind: 'text', slice, at: head, length, span: skip + length });
  head += length;
}

const slices = { startNs: BigInt(job.slices.startNs), widthNs: BigInt(job.slices.widthNs), records: 0 };
let opened: ReturnType<typeof openInput> | undefined;
try {
  opened = openInput(job.input, {
    ...job.options,
    part: { slices, index: job.index, count: job.count },
  });
  const line = job.json ? jsonLineWriter(opened) : textLines(opened.reader);
  const offset = (opened.reader as { tsOffsetNs?: bigint }).tsOffsetNs ?? 0n;
  for (const e of opened.events()) {
    const k = sliceOf(slices, e.tsNs - offset);
    if (k % job.count !== job.index) {
      // An event of another thread's slice, decoded because it names a task: the text writer learns the name as
      // it prints it (trace-cmd's sched plugins); the line itself is the other thread's.
      if (!job.json) {
        const mark = out.length;
        line(e, out);
        out.length = mark;
      }
      continue;
    }
    if (k !== slice) {
      send();
      slice = k;
      post({ kind: 'progress', slice });
    }
    line(e, out);
    if (out.length >= POST_BYTES) send();
  }
  send();
  post({ kind: 'done', warnings: opened.reader.warnings, notes: opened.notes });
} catch (error) {
  // What was printed before the failure is kept, as a single thread keeps it.
  send();
  post({
    kind: 'failed',
    code: codeOf(error) ?? CliCode.Internal,
    message: error instanceof Error ? error.message : String(error),
    exitCode: (error as { exitCode?: number }).exitCode,
    warnings: opened?.reader.warnings ?? [],
    notes: opened?.notes ?? [],
  });
}
