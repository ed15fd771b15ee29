/**
 * The agent's side: records go into per-channel batches, each sealed batch into the spool, and from the spool to
 * JetStream with a window of unacknowledged messages in flight, each with its message id. A failed or timed-out
 * publish sends again from the first unacknowledged entry, in order; what had reached the stream is dropped there by
 * its id. Callers never wait for NATS: `add` only appends to memory and, when a batch is full, to the spool file.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { type JetStreamClient, jetstream } from '@nats-io/jetstream';
import { type ObjectStore, Objm } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectFleet, type FleetConnectOptions } from './connect.ts';
import { ENVELOPE_VERSION, type EnvelopeHeader, encodeEnvelope } from './envelope.ts';
import { FleetError } from './errors.ts';
import { Spool, type SpoolDropped, type SpoolOptions } from './spool.ts';
import { ensureStream, type StreamSettings, streamSettings } from './stream.ts';
import { type Channel, checkHost, DEFAULT_SHOT_BUCKET, messageId, subjectOf } from './subjects.ts';

/** Options of {@link FleetPublisher.start}. */
export interface PublisherOptions {
  /** This host's name in subjects and records. */
  readonly host: string;
  readonly connection: FleetConnectOptions;
  readonly stream?: StreamSettings;
  /** The spool's directory (kept across restarts: what is in it is sent when the publisher starts again). */
  readonly spoolDir: string;
  readonly spool?: SpoolOptions;
  /** A batch is sealed at this many records, this many bytes, or after this many milliseconds. */
  readonly batch?: { readonly records?: number; readonly bytes?: number; readonly delayMs?: number };
  /** Messages in flight without an acknowledgement. Default 64. */
  readonly window?: number;
  /** Milliseconds to wait for an acknowledgement. Default 2000. */
  readonly ackTimeoutMs?: number;
  /** The object store of trace-shots, and the largest shot stored (bytes; larger ones only get their notice). */
  readonly shots?: { readonly bucket?: string; readonly maxBytes?: number };
  /** Where the publisher says what happens to the connection. */
  readonly log?: (line: string) => void;
}

/** Counters of a publisher. */
export interface PublisherStats {
  readonly connected: boolean;
  /** Records handed to `add`. */
  readonly records: number;
  /** Messages the stream acknowledged (duplicates included). */
  readonly acked: number;
  /** Acknowledged messages the stream had already (sent again after a failure). */
  readonly duplicates: number;
  /** Publish attempts that failed or timed out (each sends again from the spool). */
  readonly failures: number;
  /** Bytes waiting in the spool. */
  readonly spoolBytes: number;
  /** What the full spool dropped, over its life. */
  readonly dropped: SpoolDropped;
}

/** What a trace-shot notice says, besides where the shot went. */
export interface ShotNotice {
  readonly session: string;
  /** The shot's file or directory name, the key under the host in the object store. */
  readonly shot: string;
  readonly events?: number;
  readonly format?: string;
  readonly why?: string;
}

interface InFlight {
  readonly end: { segment: number; offset: number };
  done: boolean;
}

export class FleetPublisher {
  readonly host: string;
  readonly #o: PublisherOptions;
  readonly #spool: Spool;
  readonly #boot = randomUUID();
  readonly #batches = new Map<Channel, { records: string[]; bytes: number }>();
  readonly #batchRecords: number;
  readonly #batchBytes: number;
  #timer: NodeJS.Timeout | undefined;
  #nc: NatsConnection | undefined;
  #js: JetStreamClient | undefined;
  #shots: ObjectStore | undefined;
  #inflight: InFlight[] = [];
  /** Bumped at each failure: acknowledgements of an older generation are ignored (their entries are sent again). */
  #generation = 0;
  /** The pause after a failed publish before sending again. */
  #retry: NodeJS.Timeout | undefined;
  /** The next connection attempt while no connection exists. */
  #reconnect: NodeJS.Timeout | undefined;
  #backoff = 100;
  #statusSeq = 0;
  #lastError: string | undefined;
  #closed = false;
  #idle: (() => void)[] = [];
  #stats = { records: 0, acked: 0, duplicates: 0, failures: 0 };

  private constructor(o: PublisherOptions, spool: Spool) {
    this.host = checkHost(o.host);
    this.#o = o;
    this.#spool = spool;
    this.#batchRecords = o.batch?.records ?? 1024;
    this.#batchBytes = o.batch?.bytes ?? 256 * 1024;
  }

  /**
   * Opens the spool and connects. A server that cannot be reached is not an error (records are spooled and sent
   * when it is back); refused credentials and a stream that does not fit are.
   * @throws FleetError `ERR_FLEET_AUTH`, `ERR_FLEET_STREAM`, `ERR_FLEET_SPOOL`, `ERR_FLEET_ARGUMENT`.
   */
  static async start(o: PublisherOptions): Promise<FleetPublisher> {
    checkHost(o.host);
    const spool = Spool.open(o.spoolDir, o.spool);
    const p = new FleetPublisher(o, spool);
    for (const n of spool.notes) p.#log(n);
    try {
      await p.#connect();
    } catch (error) {
      if (!transient(error)) {
        spool.close();
        throw error;
      }
      p.#log(`${(error as Error).message}; spooling to ${o.spoolDir} until it can be reached`);
      p.#reconnectLater();
    }
    return p;
  }

  #log(line: string): void {
    this.#o.log?.(line);
  }

  async #connect(): Promise<void> {
    const nc = await connectFleet({ ...this.#o.connection, reconnect: true, name: `evtrace ${this.host}` });
    try {
      const { notes } = await ensureStream(nc, this.#o.stream);
      for (const n of notes) this.#log(n);
    } catch (error) {
      await nc.close().catch(() => {});
      throw error;
    }
    if (this.#closed) {
      await nc.close();
      return;
    }
    this.#nc = nc;
    this.#js = jetstream(nc);
    this.#log(`connected to NATS at ${nc.getServer()}`);
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect') this.#log(`NATS connection lost; spooling until it is back`);
        else if (s.type === 'reconnect') {
          this.#log(`reconnected to NATS at ${nc.getServer()}`);
          this.#fail(undefined);
        }
      }
    })();
    void nc.closed().then(() => {
      if (this.#nc === nc) {
        this.#nc = undefined;
        this.#js = undefined;
        if (!this.#closed) this.#reconnectLater();
      }
    });
    this.#pump();
  }

  #reconnectLater(): void {
    if (this.#closed || this.#reconnect !== undefined) return;
    this.#reconnect = setTimeout(() => {
      this.#reconnect = undefined;
      this.#connect().catch((error: FleetError) => {
        // Said once per distinct reason, not at every attempt.
        if (error.message !== this.#lastError) this.#log((this.#lastError = error.message));
        this.#reconnectLater();
      });
    }, 1000);
    this.#reconnect.unref();
  }

  /** Adds one record (a single-line JSON object) to the channel's batch. */
  add(channel: Channel, record: string): void {
    if (this.#closed) throw new FleetError('ERR_FLEET_ARGUMENT', 'the publisher is closed');
    let b = this.#batches.get(channel);
    if (b === undefined) this.#batches.set(channel, (b = { records: [], bytes: 0 }));
    b.records.push(record);
    b.bytes += record.length + 1;
    this.#stats.records++;
    if (b.records.length >= this.#batchRecords || b.bytes >= this.#batchBytes) this.#seal(channel, b);
    else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.flush();
      }, this.#o.batch?.delayMs ?? 20);
      this.#timer.unref();
    }
  }

  /** Seals every open batch into the spool (and sends it when connected). */
  flush(): void {
    for (const [channel, b] of this.#batches) if (b.records.length > 0) this.#seal(channel, b);
  }

  #seal(channel: Channel, b: { records: string[]; bytes: number }): void {
    const records = b.records;
    b.records = [];
    b.bytes = 0;
    const seq = this.#spool.reserve(this.host, channel, records.length);
    const header: EnvelopeHeader = {
      v: ENVELOPE_VERSION,
      host: this.host,
      channel,
      seq,
      n: records.length,
      time: new Date().toISOString(),
    };
    this.#spool.append({ host: this.host, channel, seq, count: records.length, body: encodeEnvelope(header, records) });
    this.#pump();
  }

  #pump(): void {
    const js = this.#js;
    if (js === undefined || this.#retry !== undefined) return;
    const window = this.#o.window ?? 64;
    const generation = this.#generation;
    while (this.#inflight.length < window) {
      const next = this.#spool.next();
      if (next === undefined) break;
      const { entry, end } = next;
      const item: InFlight = { end, done: false };
      this.#inflight.push(item);
      js.publish(subjectOf(entry.host, entry.channel), entry.body, {
        msgID: messageId(entry.host, entry.channel, entry.seq),
        timeout: this.#o.ackTimeoutMs ?? 2000,
      }).then(
        (ack) => {
          if (generation !== this.#generation) return;
          this.#stats.acked++;
          if (ack.duplicate) this.#stats.duplicates++;
          item.done = true;
          this.#advance();
        },
        (error: Error) => {
          if (generation === this.#generation) this.#fail(error);
        },
      );
    }
    if (this.#inflight.length === 0 && this.#spool.empty) for (const f of this.#idle.splice(0)) f();
  }

  #advance(): void {
    let last: InFlight | undefined;
    while (this.#inflight[0]?.done === true) last = this.#inflight.shift();
    if (last !== undefined) {
      this.#spool.ack(last.end);
      this.#backoff = 100;
    }
    this.#pump();
  }

  /** Starts again from the first unacknowledged entry: at once after a reconnect, after a backoff after an error. */
  #fail(error: Error | undefined): void {
    this.#generation++;
    this.#inflight = [];
    this.#spool.rewind();
    if (error === undefined) {
      this.#pump();
      return;
    }
    this.#stats.failures++;
    if (this.#retry !== undefined || this.#closed) return;
    const delay = this.#backoff;
    this.#backoff = Math.min(this.#backoff * 2, 2000);
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.#pump();
    }, delay);
    this.#retry.unref();
  }

  /**
   * Publishes a status record (latest wins: it bypasses the spool, so a full spool's drop count still gets out);
   * nothing is sent while disconnected. The spool's counters are added as `spool`.
   */
  status(record: Readonly<Record<string, unknown>>): void {
    const js = this.#js;
    if (js === undefined) return;
    const seq = ++this.#statusSeq;
    const s = this.stats;
    const body = encodeEnvelope(
      {
        v: ENVELOPE_VERSION,
        host: this.host,
        channel: 'status',
        seq,
        n: 1,
        time: new Date().toISOString(),
        boot: this.#boot,
      },
      [JSON.stringify({ ...record, spool: { bytes: s.spoolBytes, dropped: s.dropped }, exported: s.records })],
    );
    js.publish(subjectOf(this.host, 'status'), body, { msgID: `${this.host}.status.${this.#boot}.${seq}` }).catch(
      () => {},
    );
  }

  /**
   * Stores a trace-shot (a file, or a CTF directory file by file) in the object store under `HOST/SHOT` when it is
   * no larger than the configured maximum and NATS is reachable, then publishes its notice on the `shot` channel
   * (through the spool) saying whether it was stored.
   */
  async shot(path: string, notice: ShotNotice): Promise<{ stored: boolean; reason?: string }> {
    const files = shotFiles(path);
    const bytes = files.reduce((a, f) => a + f.size, 0);
    const max = this.#o.shots?.maxBytes ?? 64 * 1024 * 1024;
    let stored = false;
    let reason: string | undefined;
    if (bytes > max) reason = `${bytes} bytes, over the ${max}-byte limit`;
    else if (this.#nc === undefined) reason = 'NATS was unreachable';
    else {
      try {
        this.#shots ??= await new Objm(this.#nc).create(this.#o.shots?.bucket ?? DEFAULT_SHOT_BUCKET, {
          replicas: streamSettings(this.#o.stream).replicas,
        });
        for (const f of files)
          await this.#shots.putBlob(
            { name: `${this.host}/${notice.shot}${f.rel ? `/${f.rel}` : ''}` },
            readFileSync(f.path),
          );
        stored = true;
      } catch (error) {
        reason = `the object store refused it: ${(error as Error).message}`;
      }
    }
    this.add(
      'shot',
      JSON.stringify({
        time: new Date().toISOString(),
        ...notice,
        bytes,
        files: files.map((f) => f.rel || basename(path)),
        layout: files.length === 1 && files[0]!.rel === '' ? 'file' : 'directory',
        stored,
        ...(reason !== undefined ? { reason } : {}),
      }),
    );
    this.flush();
    return { stored, ...(reason !== undefined ? { reason } : {}) };
  }

  get connected(): boolean {
    return this.#js !== undefined;
  }

  get stats(): PublisherStats {
    return {
      connected: this.connected,
      ...this.#stats,
      spoolBytes: this.#spool.bytes,
      dropped: this.#spool.dropped,
    };
  }

  /** Seals the open batches and resolves true once the stream acknowledged everything, false after `timeoutMs`. */
  async drain(timeoutMs: number): Promise<boolean> {
    this.flush();
    if (this.#inflight.length === 0 && this.#spool.empty) return true;
    const done = new Promise<boolean>((resolve) => this.#idle.push(() => resolve(true)));
    const late = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref());
    return Promise.race([done, late]);
  }

  /** Seals the open batches into the spool and disconnects; what is not acknowledged is sent by the next start. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.flush();
    this.#closed = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#retry);
    clearTimeout(this.#reconnect);
    const nc = this.#nc;
    this.#nc = undefined;
    this.#js = undefined;
    this.#spool.close();
    await nc?.close().catch(() => {});
  }
}

/**
 * Whether starting may go on spooling after `error`: the server is unreachable, or JetStream answered with a server
 * error (a cluster still electing its leader). Refused credentials and a stream that does not fit are not.
 */
function transient(error: unknown): boolean {
  const e = error as FleetError;
  return e.code === 'ERR_FLEET_CONNECT' || (e.code === 'ERR_FLEET_STREAM' && e.cause !== undefined);
}

/** The files of a trace-shot: itself, or every file under it with its relative path. */
function shotFiles(path: string): { path: string; rel: string; size: number }[] {
  const st = statSync(path);
  if (!st.isDirectory()) return [{ path, rel: '', size: st.size }];
  const out: { path: string; rel: string; size: number }[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.push({ path: p, rel: relative(path, p), size: statSync(p).size });
    }
  };
  walk(path);
  return out;
}
