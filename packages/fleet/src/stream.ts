/**
 * The JetStream stream every fleet subject goes to and the object store of trace-shots: created when absent, checked
 * when present, with a message that says what does not fit.
 */
import {
  DiscardPolicy,
  type JetStreamManager,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type StreamInfo,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { FleetError } from './errors.ts';
import { DEFAULT_STREAM, SUBJECT_ROOT } from './subjects.ts';

/** The stream's settings. Ages and windows in milliseconds. */
export interface StreamSettings {
  readonly name?: string;
  /** Copies kept in a cluster: 1, or 3 for a stream that survives a node. Default 1. */
  readonly replicas?: number;
  /** Oldest message kept. Default 7 days. */
  readonly maxAgeMs?: number;
  /** Most bytes kept (oldest dropped first). Default: no limit. */
  readonly maxBytes?: number;
  /** The window in which a message id seen before is dropped. Default 2 minutes. */
  readonly duplicateWindowMs?: number;
  /** Default file. */
  readonly storage?: 'file' | 'memory';
}

const ALL = `${SUBJECT_ROOT}.>`;
const nanos = (ms: number) => ms * 1_000_000;

/** The settings with their defaults. */
export function streamSettings(s: StreamSettings = {}): Required<Omit<StreamSettings, 'maxBytes'>> & {
  maxBytes: number;
} {
  return {
    name: s.name ?? DEFAULT_STREAM,
    replicas: s.replicas ?? 1,
    maxAgeMs: s.maxAgeMs ?? 7 * 24 * 3600 * 1000,
    maxBytes: s.maxBytes ?? -1,
    duplicateWindowMs: s.duplicateWindowMs ?? 2 * 60 * 1000,
    storage: s.storage ?? 'file',
  };
}

function streamError(what: string, error: unknown): FleetError {
  const message = (error as Error).message ?? String(error);
  const hint = /jetstream not enabled|503|no responders/i.test(message)
    ? ' (is JetStream enabled? nats-server -js, or jetstream {} in its config)'
    : /insufficient resources|replicas/i.test(message)
      ? ' (an R3 stream needs a cluster of at least 3 JetStream servers)'
      : '';
  return new FleetError('ERR_FLEET_STREAM', `${what}: ${message}${hint}`, { cause: error });
}

/**
 * Creates the stream, or checks the one there: it must take `evtrace.>` and keep as many replicas as asked.
 * Returns its info and what differs but does not stop publishing (limits set by another agent or an operator).
 * @throws FleetError `ERR_FLEET_STREAM` when it cannot be created or does not fit.
 */
export async function ensureStream(
  nc: NatsConnection,
  settings: StreamSettings = {},
): Promise<{ info: StreamInfo; notes: string[] }> {
  const s = streamSettings(settings);
  let jsm: JetStreamManager;
  try {
    jsm = await jetstreamManager(nc);
  } catch (error) {
    throw streamError('JetStream is not available', error);
  }
  let info: StreamInfo | undefined;
  try {
    info = await jsm.streams.info(s.name);
  } catch (error) {
    if (!/stream not found/i.test((error as Error).message)) throw streamError(`cannot read stream ${s.name}`, error);
  }
  if (info === undefined) {
    try {
      info = await jsm.streams.add({
        name: s.name,
        subjects: [ALL],
        retention: RetentionPolicy.Limits,
        storage: s.storage === 'memory' ? StorageType.Memory : StorageType.File,
        num_replicas: s.replicas,
        max_age: nanos(s.maxAgeMs),
        max_bytes: s.maxBytes,
        duplicate_window: nanos(s.duplicateWindowMs),
        discard: DiscardPolicy.Old,
      });
    } catch (error) {
      throw streamError(`cannot create stream ${s.name} (subjects ${ALL}, ${s.replicas} replicas)`, error);
    }
    return { info, notes: [`created stream ${s.name} (subjects ${ALL}, ${s.replicas} replicas, ${s.storage})`] };
  }
  const c = info.config;
  if (!c.subjects?.includes(ALL))
    throw new FleetError(
      'ERR_FLEET_STREAM',
      `stream ${s.name} exists with subjects ${JSON.stringify(c.subjects ?? [])}, not ${ALL}: use another stream name or add ${ALL} to it`,
    );
  if ((c.num_replicas || 1) !== s.replicas)
    throw new FleetError(
      'ERR_FLEET_STREAM',
      `stream ${s.name} exists with ${c.num_replicas || 1} replicas, not the ${s.replicas} asked for: change one of the two (nats stream edit ${s.name} --replicas N)`,
    );
  const notes: string[] = [];
  if (c.duplicate_window !== nanos(s.duplicateWindowMs))
    notes.push(
      `stream ${s.name} drops duplicates within ${c.duplicate_window / 1e9} s, not ${s.duplicateWindowMs / 1000} s: a spool replayed later than that may be stored twice`,
    );
  if (c.max_age !== nanos(s.maxAgeMs) || c.max_bytes !== s.maxBytes)
    notes.push(
      `stream ${s.name} exists with its own limits (max age ${c.max_age / 1e9} s, max bytes ${c.max_bytes}); kept`,
    );
  return { info, notes };
}
