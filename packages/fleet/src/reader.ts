/**
 * The reading side of `evtrace fleet`: session events across hosts (historical and live), the hosts' last status,
 * hardware errors aggregated per host and DIMM or bank, and stored trace-shots.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import {
  DeliverPolicy,
  type JetStreamManager,
  type JsMsg,
  jetstream,
  jetstreamManager,
  type OrderedConsumerOptions,
  type StreamInfo,
} from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { decodeEnvelope, envelopeHeader, envelopeRecords, stampedLines } from './envelope.ts';
import { FleetError } from './errors.ts';
import {
  type FleetSeverity,
  type HardwareErrorRecord,
  isSeverity,
  placeOf,
  SEVERITIES,
  type ThresholdRecord,
} from './records.ts';
import { DEFAULT_SHOT_BUCKET, DEFAULT_STREAM, parseSubject, subjectFilter } from './subjects.ts';

/** How long a reader without follow waits for a message before it asks the server what is left, and gives up. */
const IDLE_MS = 1000;
const STALL_MS = 30_000;

/** From where a reader starts: every message kept, those since a time, or only new ones. */
export type Since = 'all' | 'new' | Date;

/** One record read from the fleet. */
export interface FleetRecord {
  readonly host: string;
  /** The channel: `mce`, `events.SESSION`... */
  readonly channel: string;
  readonly seq: number;
  /** The record's JSON text. */
  readonly record: string;
  /** When its message was stored (the stream's clock). */
  readonly stored: Date;
}

/** Options of {@link readChannel}. */
export interface ReadOptions {
  readonly stream?: string;
  /** One host, or all. */
  readonly host?: string;
  readonly since?: Since;
  /** Keep reading new messages as they come (a live tail); otherwise stop at the end of what is stored. */
  readonly follow?: boolean;
  /** Stops the reading. */
  readonly signal?: AbortSignal;
}

async function manager(nc: NatsConnection): Promise<JetStreamManager> {
  try {
    return await jetstreamManager(nc);
  } catch (error) {
    throw new FleetError('ERR_FLEET_STREAM', `JetStream is not available: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** The stream's info (with the subjects under `filter`). @throws FleetError `ERR_FLEET_STREAM` naming what is missing. */
async function streamInfo(jsm: JetStreamManager, stream: string, filter?: string): Promise<StreamInfo> {
  try {
    return await jsm.streams.info(stream, filter !== undefined ? { subjects_filter: filter } : undefined);
  } catch (error) {
    const missing = /stream not found/i.test((error as Error).message);
    throw new FleetError(
      'ERR_FLEET_STREAM',
      missing
        ? `no stream ${stream} on this server: no agent has published to it yet (or another stream name was meant)`
        : `cannot read stream ${stream}: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/** The records of one message: its host and channel, the sequence number of its first record. */
export interface FleetBatch {
  readonly host: string;
  readonly channel: string;
  /** The first record's sequence number; record `i` has `seq + i`. */
  readonly seq: number;
  /** How many records it holds. */
  readonly count: number;
  /** When its message was stored (the stream's clock). */
  readonly stored: Date;
  /** The records' JSON texts (decoded when first asked for). @throws FleetError `ERR_FLEET_MESSAGE` */
  readonly records: readonly string[];
  /**
   * The records as JSON lines with `host`, `seq` and `session` first ({@link stamped}), spliced as bytes without
   * decoding them. @throws FleetError `ERR_FLEET_MESSAGE`
   */
  stampedLines(session?: string): Uint8Array;
}

class MessageBatch implements FleetBatch {
  readonly host: string;
  readonly channel: string;
  readonly seq: number;
  readonly count: number;
  readonly stored: Date;
  readonly #body: Uint8Array;
  readonly #start: number;
  readonly #where: string;
  #records: string[] | undefined;

  constructor(m: JsMsg, host: string, channel: string) {
    this.#where = `${m.subject} (stream sequence ${m.seq})`;
    const { header, start } = envelopeHeader(m.data, this.#where);
    this.host = host;
    this.channel = channel;
    this.seq = header.seq;
    this.count = header.n;
    this.stored = new Date(Math.floor(Number(m.info.timestampNanos) / 1e6));
    this.#body = m.data;
    this.#start = start;
  }

  get records(): readonly string[] {
    this.#records ??= envelopeRecords(this.#body, this.#start, this.count, this.#where);
    return this.#records;
  }

  stampedLines(session?: string): Uint8Array {
    return stampedLines(this.#body, this.#start, this.count, { host: this.host, seq: this.seq, session }, this.#where);
  }
}

/**
 * The records of the channels matching `channel` (`events.>`, `mce`...), record by record in stream order, each
 * with its host and sequence number.
 * @throws FleetError `ERR_FLEET_STREAM` when the stream cannot be read, `ERR_FLEET_MESSAGE` for a foreign message.
 */
export async function* readChannel(
  nc: NatsConnection,
  channel: string,
  o: ReadOptions = {},
): AsyncGenerator<FleetRecord> {
  for await (const b of readBatches(nc, channel, o))
    for (let i = 0; i < b.records.length; i++)
      yield { host: b.host, channel: b.channel, seq: b.seq + i, record: b.records[i]!, stored: b.stored };
}

/**
 * {@link readChannel} message by message: a reader that handles records in bulk (`fleet tail`) makes no object per
 * record. Each host's records of a spooled channel come once: a batch whose records were all read before (a spool
 * replayed after the stream's duplicate window, which the stream then stores again) is left out.
 */
export async function* readBatches(
  nc: NatsConnection,
  channel: string,
  o: ReadOptions = {},
): AsyncGenerator<FleetBatch> {
  // The last sequence number read per host and channel. Status is sent outside the spool, numbered anew at each
  // start of its agent: it is not told apart here (readers take a host's latest).
  const last = new Map<string, number>();
  for await (const b of storedBatches(nc, channel, o)) {
    if (b.channel === 'status') {
      yield b;
      continue;
    }
    const key = `${b.host}\0${b.channel}`;
    const seen = last.get(key);
    const end = b.seq + b.count - 1;
    if (seen !== undefined && end <= seen) continue;
    last.set(key, seen === undefined ? end : Math.max(seen, end));
    yield b;
  }
}

/** The messages of the channels matching `channel` as the stream holds them, duplicates included. */
async function* storedBatches(nc: NatsConnection, channel: string, o: ReadOptions = {}): AsyncGenerator<FleetBatch> {
  const stream = o.stream ?? DEFAULT_STREAM;
  const filter = subjectFilter(o.host, channel);
  const since = o.since ?? 'new';
  const jsm = await manager(nc);
  const info = await streamInfo(jsm, stream, filter);
  const held = Object.values(info.state.subjects ?? {}).reduce((a, n) => a + n, 0);
  const after = since instanceof Date && new Date(info.state.last_ts).getTime() < since.getTime();
  if (o.follow !== true && (since === 'new' || held === 0 || after)) return;
  // Without follow, reading ends at what the stream held when it began, however fast agents publish meanwhile: from
  // the start, at the count of messages held; from a time, at the last message matching then (a consumer's pending
  // count can be wrong for a while after a cluster moved the stream's leader, so neither trusts it).
  const last = info.state.last_seq;
  const counted = since === 'all';
  let lastMatching = 0;
  if (o.follow !== true && since instanceof Date) {
    let newest = 0;
    for (const subject of Object.keys(info.state.subjects ?? {})) {
      const m = await jsm.streams.getMessage(stream, { last_by_subj: subject }).catch(() => null);
      if (m === null) continue;
      lastMatching = Math.max(lastMatching, m.seq);
      newest = Math.max(newest, m.time.getTime());
    }
    if (newest < since.getTime()) return;
  }
  const options: Partial<OrderedConsumerOptions> = {
    filter_subjects: filter,
    deliver_policy: since === 'all' ? DeliverPolicy.All : since === 'new' ? DeliverPolicy.New : DeliverPolicy.StartTime,
    ...(since instanceof Date ? { opt_start_time: since.toISOString() } : {}),
  };
  const consumer = await jetstream(nc).consumers.get(stream, options);
  // Bounded by bytes, not messages: a batch of large messages past the client's pending limit would be dropped by it
  // as a slow consumer's, and memory stays bounded whatever the message size.
  const messages = await consumer.consume({ max_bytes: 8 * 1024 * 1024 });
  const stop = () => void messages.close();
  o.signal?.addEventListener('abort', stop, { once: true });
  if (o.follow !== true) {
    // Without follow: ends at the end of what was stored when reading began. A stall (a cluster moving its leader) is
    // waited out, and one that lasts is an error, never a silently short answer.
    let idle: NodeJS.Timeout | undefined;
    let quiet = 0;
    let stalled: FleetError | undefined;
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(check, IDLE_MS);
    };
    const check = () => {
      quiet += IDLE_MS;
      consumer.info(false).then(
        (ci) => {
          if (quiet >= STALL_MS) {
            stalled = new FleetError(
              'ERR_FLEET_STREAM',
              `reading ${filter} from stream ${stream}: nothing arrived for ${STALL_MS / 1000} s before the end of what it held when reading began (${ci.num_pending} messages pending)`,
            );
            return stop();
          }
          arm();
        },
        () => (quiet >= STALL_MS ? stop() : arm()),
      );
    };
    let read = 0;
    arm();
    try {
      for await (const m of messages) {
        quiet = 0;
        arm();
        if (m.seq > last) break;
        yield batchOf(m);
        read++;
        if (m.seq === last || (counted ? read >= held : m.seq >= lastMatching)) break;
      }
      if (stalled !== undefined) throw stalled;
    } finally {
      clearTimeout(idle);
      o.signal?.removeEventListener('abort', stop);
      await messages.close();
    }
    return;
  }
  try {
    for await (const m of messages) yield batchOf(m);
  } finally {
    o.signal?.removeEventListener('abort', stop);
    await messages.close();
  }
}

function batchOf(m: JsMsg): FleetBatch {
  const where = parseSubject(m.subject);
  if (where === undefined)
    throw new FleetError('ERR_FLEET_MESSAGE', `${m.subject} (stream sequence ${m.seq}) is not an evtrace subject`);
  return new MessageBatch(m, where.host, where.channel);
}

/** A host's last status, as `fleet hosts` lists it. */
export interface HostSummary {
  readonly host: string;
  /** When its last status was stored; undefined when it sent none (only events). */
  readonly lastSeen: Date | undefined;
  /** The status record, parsed. */
  readonly status: Readonly<Record<string, unknown>> | undefined;
  /** Messages the stream holds for the host. */
  readonly messages: number;
}

/** Every host with messages in the stream, with its last status. */
export async function fleetHosts(nc: NatsConnection, o: { stream?: string } = {}): Promise<HostSummary[]> {
  const stream = o.stream ?? DEFAULT_STREAM;
  const jsm = await manager(nc);
  const subjects = (await streamInfo(jsm, stream, subjectFilter(undefined, '>'))).state.subjects ?? {};
  const hosts = new Map<string, number>();
  for (const [subject, n] of Object.entries(subjects)) {
    const where = parseSubject(subject);
    if (where !== undefined) hosts.set(where.host, (hosts.get(where.host) ?? 0) + n);
  }
  const out: HostSummary[] = [];
  for (const [host, messages] of [...hosts].sort(([a], [b]) => a.localeCompare(b))) {
    let lastSeen: Date | undefined;
    let status: Record<string, unknown> | undefined;
    const subject = subjectFilter(host, 'status');
    if (subjects[subject] !== undefined) {
      const m = await jsm.streams.getMessage(stream, { last_by_subj: subject });
      if (m !== null) {
        const e = decodeEnvelope(m.data, `${subject} (stream sequence ${m.seq})`);
        lastSeen = m.time;
        status = JSON.parse(e.records[0] ?? '{}') as Record<string, unknown>;
      }
    }
    out.push({ host, lastSeen, status, messages });
  }
  return out;
}

/** Hardware errors of one host at one place (a DIMM, else a bank), as `fleet errors` lists them. */
export interface ErrorSummary {
  readonly host: string;
  /** The DIMM, `bank N`, or `unknown`. */
  readonly place: string;
  readonly errors: number;
  readonly corrected: number;
  /** Errors worse than corrected. */
  readonly uncorrected: number;
  readonly worst: FleetSeverity;
  readonly lastSeen: string;
  /** Thresholds crossed there: how many, and the last one's message, action and result. */
  readonly threshold:
    | { readonly crossings: number; readonly message: string; readonly action: string; readonly result: string }
    | undefined;
}

/** Machine checks, memory errors and threshold crossings since `since`, per host and DIMM (or bank). */
export async function fleetErrors(
  nc: NatsConnection,
  o: { stream?: string; since: Since; host?: string },
): Promise<ErrorSummary[]> {
  type Row = { -readonly [K in keyof ErrorSummary]: ErrorSummary[K] };
  const rows = new Map<string, Row>();
  const row = (host: string, place: string, time: string): Row => {
    const key = `${host}\0${place}`;
    let r = rows.get(key);
    if (r === undefined)
      rows.set(
        key,
        (r = {
          host,
          place,
          errors: 0,
          corrected: 0,
          uncorrected: 0,
          worst: 'corrected',
          lastSeen: time,
          threshold: undefined,
        }),
      );
    if (time > r.lastSeen) r.lastSeen = time;
    return r;
  };
  const read = {
    since: o.since,
    ...(o.stream !== undefined ? { stream: o.stream } : {}),
    ...(o.host ? { host: o.host } : {}),
  };
  for (const channel of ['mce', 'edac']) {
    for await (const rec of readChannel(nc, channel, read)) {
      const e = JSON.parse(rec.record) as HardwareErrorRecord;
      const r = row(rec.host, placeOf(e), e.time);
      const n = Number.isSafeInteger(e.count) && e.count > 0 ? e.count : 1;
      const severity = isSeverity(e.severity) ? e.severity : 'fatal';
      r.errors += n;
      if (severity === 'corrected') r.corrected += n;
      else r.uncorrected += n;
      if (SEVERITIES.indexOf(severity) > SEVERITIES.indexOf(r.worst)) r.worst = severity;
    }
  }
  for await (const rec of readChannel(nc, 'threshold', read)) {
    const t = JSON.parse(rec.record) as ThresholdRecord;
    const r = row(rec.host, placeOf(t), t.time);
    r.threshold = {
      crossings: (r.threshold?.crossings ?? 0) + 1,
      message: t.message,
      action: t.action,
      result: t.result,
    };
  }
  return [...rows.values()].sort((a, b) => a.host.localeCompare(b.host) || a.place.localeCompare(b.place));
}

/**
 * Writes a stored trace-shot of `host` into `dir` (a file keeps its name; a CTF directory is written under its
 * name). Returns the path written.
 * @throws FleetError `ERR_FLEET_NO_SHOT` when the object store has no such shot.
 */
export async function pullShot(
  nc: NatsConnection,
  host: string,
  shot: string,
  dir: string,
  o: { bucket?: string } = {},
): Promise<string> {
  const bucket = o.bucket ?? DEFAULT_SHOT_BUCKET;
  let names: string[];
  let store: Awaited<ReturnType<Objm['open']>>;
  try {
    store = await new Objm(nc).open(bucket);
    names = (await store.list()).filter((i) => !i.deleted).map((i) => i.name);
  } catch (error) {
    throw new FleetError('ERR_FLEET_NO_SHOT', `no trace-shot store ${bucket}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const key = `${host}/${shot}`;
  const parts = names.filter((n) => n === key || n.startsWith(`${key}/`));
  if (parts.length === 0) {
    const mine = names.filter((n) => n.startsWith(`${host}/`)).map((n) => n.slice(host.length + 1).split('/')[0]);
    throw new FleetError(
      'ERR_FLEET_NO_SHOT',
      `host ${host} has no trace-shot ${shot} in ${bucket}${mine.length ? ` (it has: ${[...new Set(mine)].join(', ')})` : ''}`,
    );
  }
  const root = resolve(dir);
  for (const name of parts) {
    const out = resolve(root, name.slice(host.length + 1));
    // Keys come from the store: one that climbs out of the directory is refused.
    if (!out.startsWith(root + sep))
      throw new FleetError('ERR_FLEET_MESSAGE', `object ${name} names a path outside ${root}`);
    const data = await store.getBlob(name);
    if (data === null) throw new FleetError('ERR_FLEET_NO_SHOT', `object ${name} vanished while it was read`);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, data, { mode: 0o600 });
  }
  return join(root, shot);
}
