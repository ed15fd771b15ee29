/**
 * Waiting for trace data as trace-cmd does: in poll(2) on the raw pipes, which the kernel wakes when a CPU's buffer
 * has filled to the instance's `buffer_percent`. A reader that sleeps on timers alone must wake often enough for the
 * fastest burst it may meet (every 20 ms, 50 passes a second, mostly over near-empty pages when idle); one woken by
 * the kernel sleeps as long as it likes when idle and is woken at once by a burst.
 */
import { loadLibc, type Poll } from './libc.ts';

/**
 * The instance's `buffer_percent` while a {@link PipeWaiter} waits: a CPU's buffer this full wakes it, leaving the
 * rest for what comes before the reader has drained it. Lower wakes the reader more often for the same pages; higher
 * dropped events in bursts under load (packages/tracefs/src/record.bench.ts prints loss and CPU for a setting).
 */
export const WAKE_PERCENT = 18;

const POLLIN = 1;
const EINTR = 4;

/** A poll(2) set over raw pipes. */
export class PipeWaiter {
  readonly #poll: Poll;
  readonly #errno: () => number;
  readonly #set: Uint8Array;
  readonly #view: DataView;
  readonly #count: number;

  private constructor(poll: Poll, errno: () => number, pipes: readonly number[]) {
    this.#poll = poll;
    this.#errno = errno;
    this.#count = pipes.length;
    this.#set = new Uint8Array(8 * pipes.length);
    this.#view = new DataView(this.#set.buffer);
    for (const [i, fd] of pipes.entries()) {
      this.#view.setInt32(8 * i, fd, true);
      this.#view.setInt16(8 * i + 4, POLLIN, true);
    }
  }

  /** A waiter over `pipes`, or undefined where poll(2) cannot be called (no FFI). */
  static open(pipes: readonly number[]): PipeWaiter | undefined {
    const libc = loadLibc();
    return libc === null || pipes.length === 0 ? undefined : new PipeWaiter(libc.poll, libc.errno, pipes);
  }

  /**
   * Blocks until a pipe's buffer reaches the watermark, `ms` pass or a signal arrives. False when poll(2) itself
   * failed (not interrupted): the caller should stop using this waiter rather than spin on it.
   */
  wait(ms: number): boolean {
    for (let i = 0; i < this.#count; i++) this.#view.setInt16(8 * i + 6, 0, true);
    const n = this.#poll(this.#set, this.#count, Math.max(0, Math.ceil(ms)));
    return n >= 0 || this.#errno() === EINTR;
  }
}
