/**
 * Persistent buffers as event sources ({@link EventSource} of @evtrace/trace-format), the interface the evtrace
 * agent's sessions read the kernel, demo and hardware sources through: a session attached to a buffer records, shows
 * and snapshots it as any other. Reading leaves the buffer as it is: a user-space buffer is followed read-only
 * ({@link UserBufferSource}), a kernel buffer's raw pipes are read with its settings untouched
 * ({@link KernelBufferSource}).
 */
import type { EventSource } from '@evtrace/trace-format';

/** Which buffer a source reads. */
export interface PersistentTarget {
  /** The buffer's name (`team/app/flight`), or a boot-time buffer's instance name for the kernel backend. */
  readonly buffer: string;
  /** `user`: a file in a shared mapping; `kernel`: a tracefs instance. */
  readonly backend: 'user' | 'kernel';
  /** Directory of user-space buffers, when not the default. */
  readonly dir?: string;
}

/** A source reading a persistent buffer. */
export interface PersistentSource extends EventSource {
  readonly target: PersistentTarget;
  /** The buffer file or tracefs instance directory. */
  readonly path: string;
  /** Data bytes the buffer holds at most, known after `prepare`. */
  readonly size: number;
  /** The buffer's mode, known after `prepare`. */
  readonly mode: 'overwrite' | 'discard';
}

/** True for a source reading a persistent buffer (a {@link UserBufferSource} or a {@link KernelBufferSource}). */
export const isPersistentSource = (source: EventSource): source is PersistentSource => 'target' in source;
