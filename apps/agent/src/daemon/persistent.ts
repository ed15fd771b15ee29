/**
 * Persistent buffers as session sources: `attach` makes a named buffer the source of a session, so viewers,
 * trace-shots, status and metrics work on it as on any session, and `detach` (or `destroy`) lets go of it without
 * deleting it. The sources themselves (user-space buffers followed read-only, kernel buffers read through their raw
 * pipes) are @evtrace/persistent-events'; this is the agent's side: names, specs, listings and error codes.
 */
import type { AttachSpec, BufferList, PersistentBufferStatus, SessionSpec } from '@evtrace/agent-protocol';
import { SESSION_NAME } from '@evtrace/agent-protocol';
import {
  isPersistentSource,
  KernelBufferSource,
  listPersistent,
  PersistentError,
  type PersistentSource,
  type PersistentTarget,
  UserBufferSource,
} from '@evtrace/persistent-events';
import type { EventSource } from '@evtrace/trace-format';
import { AgentError, asAgentError } from './errors.ts';

/** Which buffer a session is attached to (kept in its state file, so a restarted agent attaches again). */
export type AttachTarget = PersistentTarget;

/** A source reading a persistent buffer. */
export type AttachedSource = PersistentSource;

export const isAttached = isPersistentSource;

/** What `status` adds for an attached session. */
export function persistentStatus(source: EventSource) {
  if (!isAttached(source)) return {};
  return { persistent: { buffer: source.target.buffer, backend: source.target.backend, path: source.path } };
}

/** PersistentErrors as the protocol's codes: a missing buffer, a bad name, a buffer the caller may not read. */
export function attachError(error: unknown): AgentError {
  if (!(error instanceof PersistentError)) return asAgentError(error);
  const message = `${error.code}: ${error.message}`;
  switch (error.code) {
    case 'ERR_PERSISTENT_NOT_FOUND':
      return new AgentError('ERR_AGENT_NO_BUFFER', message, { cause: error });
    case 'ERR_PERSISTENT_NAME':
    case 'ERR_PERSISTENT_ARGUMENT':
      return new AgentError('ERR_AGENT_BAD_MESSAGE', message, { cause: error });
    case 'ERR_PERSISTENT_PERMISSION':
      // The message of opening the buffer directly, under the agent's code for it.
      return new AgentError('ERR_AGENT_PERMISSION', error.message, { cause: error });
    default:
      return new AgentError('ERR_AGENT_SOURCE', message, { cause: error });
  }
}

/** The session name of an attach: given, or the buffer's name with `/` as `.`. */
export function attachName(spec: AttachSpec): string {
  if (spec.name !== undefined) return spec.name;
  const name = spec.buffer.split('/').join('.');
  if (!SESSION_NAME.test(name))
    throw new AgentError('ERR_AGENT_BAD_MESSAGE', `${spec.buffer} makes no session name (${name}): give one with name`);
  return name;
}

/** The unprepared source for a target (prepare it through {@link prepareAttached}). */
export function attachedSource(target: AttachTarget, tracefs?: string): AttachedSource {
  try {
    return target.backend === 'kernel' ? new KernelBufferSource(target, tracefs) : new UserBufferSource(target);
  } catch (error) {
    throw attachError(error);
  }
}

/** Prepares an attached source (a second call does nothing), its failures as the protocol's codes. */
export function prepareAttached(source: AttachedSource): void {
  try {
    source.prepare();
  } catch (error) {
    throw attachError(error);
  }
}

/**
 * The session spec of an attached source (after `prepare`): its classes, the buffer's mode, and session buffers of
 * four times the buffer's size (at least 4 MiB), so they keep what the buffer holds though pages travel part full.
 */
export function attachedSpec(name: string, source: AttachedSource): SessionSpec {
  const classes = source.eventClasses.map((c) => c.name);
  return {
    name,
    events: classes.length > 0 ? classes : ['*'],
    mode: source.mode,
    bufferSize: Math.min(1 << 30, Math.max(4 << 20, 4 * Math.ceil(source.size / source.cpus.length))),
  };
}

/** The `buffers` reply: every buffer the agent sees, with the session attached to it; the agent's read counted. */
export function listBuffers(
  attached: ReadonlyMap<string, { session: string; user: boolean }>,
  options: { dir?: string; tracefs?: string },
): BufferList {
  const listing = listPersistent({
    ...(options.dir !== undefined ? { dir: options.dir } : {}),
    ...(options.tracefs !== undefined ? { tracefs: options.tracefs } : {}),
  });
  const buffers: PersistentBufferStatus[] = listing.buffers.map((b) => {
    const a = attached.get(b.path);
    if (a === undefined) return b;
    // The listing does not count this process's own read-only mapping; the attached session is a reader.
    return { ...b, session: a.session, ...(a.user && b.readers !== null ? { readers: b.readers + 1 } : {}) };
  });
  return {
    buffers,
    unreadable: listing.unreadable,
    ...(listing.kernelUnavailable !== undefined ? { kernelUnavailable: listing.kernelUnavailable } : {}),
    ...(listing.bootAbsent !== undefined ? { bootAbsent: listing.bootAbsent } : {}),
  };
}
