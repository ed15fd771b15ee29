/**
 * The command line's output, written to descriptors 1 and 2 directly. Node's `process.stdout` and `process.stderr`
 * are streams that load `net` (pipes) or `tty` when first touched, CPU every command would pay when the standard
 * streams are pipes, as under a supervisor (apps/agent/src/commands/end-to-end.bench.ts prints a command's CPU).
 */
import { writeSync } from 'node:fs';

let streamed = false;

/** The reused encoding buffer's size: larger texts get their own. */
const SCRATCH_BYTES = 1 << 20;

/**
 * Whether some text went through an overflow stream, which may still be writing it: the program must then let the
 * event loop finish rather than exit at once.
 */
export function wroteThroughStream(): boolean {
  return streamed;
}

/** Where the rest of a write goes when the descriptor is full and non-blocking: a stream, which waits. */
export interface Overflow {
  write(bytes: Uint8Array): unknown;
  /** How the stream reports a write that failed after it was queued (EPIPE once the reader has gone). */
  on?(event: 'error', listener: (error: NodeJS.ErrnoException) => void): unknown;
}

/** How messages name a descriptor: the standard streams by name. */
function descriptorName(fd: number): string {
  return fd === 1 ? 'standard output' : fd === 2 ? 'standard error' : `descriptor ${fd}`;
}

/**
 * A writer of all of `text` to `fd`, synchronously. A reader that went away (EPIPE, `evtrace cat TRACE | head`; EIO,
 * a terminal hung up) calls `onClosed`, also when text queued in the overflow stream finds it gone. A descriptor left
 * non-blocking by the process that handed it over (EAGAIN when full; Node's parent end of a spawned child's stdio is
 * such a socket) gets the rest through `overflow()`, and so does every later
 * text: the stream may still hold queued bytes, which a direct write would overtake.
 */
export function descriptorWriter(
  fd: number,
  overflow: () => Overflow,
  onClosed: () => void,
): (text: string | Uint8Array) => void {
  let stream: Overflow | undefined;
  // Text is encoded into one buffer, reused from write to write: a command printing millions of lines allocates
  // nothing per write (and leaves no garbage outside the heap for the collector to find late).
  let scratch: Buffer | undefined;
  return (text) => {
    // A stream keeps what it is given until it is written: a copy (Buffer.from copies; a Buffer's slice would not),
    // since callers (and this writer) reuse buffers.
    if (stream !== undefined) {
      stream.write(Buffer.from(text));
      return;
    }
    let bytes: Uint8Array;
    if (typeof text !== 'string') bytes = text;
    else {
      // UTF-8 takes at most 3 bytes per UTF-16 unit: a text that surely fits is encoded without measuring it first
      // (measuring walks the whole string once more).
      if (text.length * 3 > SCRATCH_BYTES && Buffer.byteLength(text) > SCRATCH_BYTES) bytes = Buffer.from(text);
      else {
        scratch ??= Buffer.allocUnsafeSlow(SCRATCH_BYTES);
        bytes = scratch.subarray(0, scratch.write(text));
      }
    }
    let done = 0;
    try {
      while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // EIO: the terminal was hung up (SIGHUP), the same reader gone for good.
      if (code === 'EPIPE' || code === 'EIO') return onClosed();
      // A write to a descriptor names no path: the error names the stream (`cannot write standard output: ENOSPC`).
      if (code !== 'EAGAIN') throw Object.assign(error as Error, { path: descriptorName(fd) });
      stream = overflow();
      // Queued text meets a reader that went away later, as an error event: the same quiet end as above.
      stream.on?.('error', (e) => {
        if (e.code !== 'EPIPE') throw e;
        onClosed();
      });
      streamed = true;
      stream.write(Buffer.from(bytes.subarray(done)));
    }
  };
}
