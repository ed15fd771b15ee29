/**
 * Where fleet messages go: one JetStream stream holds every subject `evtrace.<host>.<channel>`, so that a reader picks
 * a host, a channel or everything with one subject filter, and the stream's limits apply to the whole fleet.
 */
import { FleetError } from './errors.ts';

/** The first token of every subject. */
export const SUBJECT_ROOT = 'evtrace';
/** The stream's default name. */
export const DEFAULT_STREAM = 'EVTRACE';
/** The object store trace-shots go to. */
export const DEFAULT_SHOT_BUCKET = 'evtrace-shots';

/** Channels with a fixed name; session events go to `events.<session>`. */
export const CHANNELS = ['mce', 'edac', 'threshold', 'status', 'shot'] as const;
export type FixedChannel = (typeof CHANNELS)[number];
/** What a message carries: a fixed channel, or a session's events. */
export type Channel = FixedChannel | `events.${string}`;

const HOST = /^[A-Za-z0-9_-]{1,64}$/;
const SESSION = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;

/** Refuses a host name that cannot be one subject token (dots, wildcards, spaces). */
export function checkHost(host: string): string {
  if (!HOST.test(host))
    throw new FleetError(
      'ERR_FLEET_ARGUMENT',
      `host name ${JSON.stringify(host)} cannot be a NATS subject token: use letters, digits, _ and - (at most 64; no dots)`,
    );
  return host;
}

/** The channel of a session's events. */
export function eventsChannel(session: string): Channel {
  if (!SESSION.test(session) || session.endsWith('.') || session.includes('..'))
    throw new FleetError('ERR_FLEET_ARGUMENT', `session name ${JSON.stringify(session)} cannot be part of a subject`);
  return `events.${session}`;
}

/** `evtrace.<host>.<channel>`. */
export function subjectOf(host: string, channel: Channel): string {
  return `${SUBJECT_ROOT}.${host}.${channel}`;
}

/** Host and channel of a subject this package writes, or undefined. */
export function parseSubject(subject: string): { host: string; channel: Channel } | undefined {
  const parts = subject.split('.');
  if (parts.length < 3 || parts[0] !== SUBJECT_ROOT) return undefined;
  return { host: parts[1]!, channel: parts.slice(2).join('.') as Channel };
}

/** A subject filter: one host or all (`*`), one channel or a wildcard tail. */
export function subjectFilter(host: string | undefined, channel: string): string {
  return `${SUBJECT_ROOT}.${host === undefined ? '*' : checkHost(host)}.${channel}`;
}

/** The message id JetStream deduplicates by: the same batch spooled and sent twice gets the same id. */
export function messageId(host: string, channel: Channel, seq: number): string {
  return `${host}.${channel}.${seq}`;
}
