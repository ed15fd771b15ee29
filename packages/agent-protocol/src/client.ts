/**
 * The client viewers and the CLI use: one connection to the agent, typed requests, and subscriptions as async
 * iterables. A subscription's consumer sets the pace: while it lags, the client stops reading the socket, the agent's
 * per-viewer queue fills and the agent counts this viewer's loss (sent as `loss` items), never the session's.
 */
import { createConnection, type Socket } from 'node:net';
import { type EventClass, type JsonEventDecoder, type TraceEvent, TraceFormatError } from '@evtrace/trace-format';
import { ProtocolError } from './errors.ts';
import { encodeLine, LineDecoder, MAX_SERVER_MESSAGE_BYTES } from './framing.ts';
import {
  type AttachSpec,
  type BufferList,
  type DetachResult,
  type HelloResult,
  type OutputFormat,
  PROTOCOL_VERSION,
  PROTOCOL_VERSIONS,
  type Request,
  type SessionSpec,
  type SessionStatus,
  type SnapshotResult,
  type StreamMessage,
  type SubscribeResult,
  type TriggerSpec,
} from './messages.ts';
import { defaultSocketPath } from './paths.ts';
import { type BufferStats, checkBufferStats } from './stats.ts';
import { streamDecoder } from './stream.ts';
import { parseServerMessage } from './validate.ts';

/** What a subscription yields. */
export type SubscriptionItem =
  /**
   * One event, decoded by the session's event classes (trace-format's `JsonEventDecoder`): `pid` and `flags` in
   * `scopes['event.context']` (`common_pid`...), `comm` through trace-format's `eventComm(event)`.
   */
  | { readonly kind: 'event'; readonly event: TraceEvent }
  /** Everything before this was the session's recent window; what follows arrives live. */
  | { readonly kind: 'live' }
  /** This viewer lost `lost` events (it read too slowly); `total` since it subscribed. */
  | { readonly kind: 'loss'; readonly lost: number; readonly total: number };

/** What {@link Subscription.batches} yields: the events of one message together, or one of the other items. */
export type SubscriptionBatch =
  /** Events in time order per CPU, decoded as {@link SubscriptionItem}'s. */
  | { readonly kind: 'events'; readonly events: readonly TraceEvent[] }
  | Exclude<SubscriptionItem, { readonly kind: 'event' }>;

/** A live view of a session. Iterate it once; it ends when the session stops or {@link close} is called. */
export interface Subscription extends AsyncIterable<SubscriptionItem> {
  readonly stream: number;
  /**
   * The classes of the session's events (from its format files; an agent older than protocol 3 sends none, and then
   * they are inferred from each class's first event, so this grows as they arrive).
   */
  readonly eventClasses: readonly EventClass[];
  /** Why the stream ended, once it has. */
  readonly endReason: string | undefined;
  /**
   * The same stream a message at a time: each message's events in one array (a fast stream costs one step per
   * message, not per event). Iterate either the subscription or this, once.
   */
  batches(): AsyncIterable<SubscriptionBatch>;
  /** Unsubscribes; the iteration ends. */
  close(): Promise<void>;
}

/** Options of {@link AgentClient.subscribe}. */
export interface SubscribeOptions {
  /** Start with the session's recent window. Default true. */
  readonly window?: boolean;
  /** Events the agent may queue for this viewer before it counts losses. Default 10000. */
  readonly queue?: number;
}

/** A connection to the agent. */
export interface AgentClient {
  /** What the agent said in the handshake. */
  readonly agent: HelloResult;
  createSession(spec: SessionSpec): Promise<SessionStatus>;
  start(name: string): Promise<SessionStatus>;
  stop(name: string): Promise<SessionStatus>;
  /** Writes a trace-shot of the session's buffers while recording continues. */
  snapshot(name: string, options?: { dir?: string; format?: OutputFormat }): Promise<SnapshotResult>;
  destroy(name: string): Promise<void>;
  list(): Promise<SessionStatus[]>;
  status(name: string): Promise<SessionStatus>;
  /** Adds a trigger to a session. */
  trigger(name: string, trigger: TriggerSpec): Promise<SessionStatus>;
  subscribe(name: string, options?: SubscribeOptions): Promise<Subscription>;
  /** Protocol 2: the persistent buffers the agent sees (both backends), each with the session attached to it. */
  buffers(options?: { dir?: string }): Promise<BufferList>;
  /** Protocol 2: makes a persistent buffer the source of a new, running session. */
  attach(spec: AttachSpec): Promise<SessionStatus>;
  /** Protocol 2: ends a session attached to a persistent buffer; the buffer stays. */
  detach(name: string): Promise<DetachResult>;
  /**
   * The gauges of a session's buffers per CPU: the samples the agent took after `since` (default: all it keeps).
   * @throws ProtocolError `ERR_AGENT_BAD_REPLY` when the reply is not well-formed gauges.
   */
  stats(name: string, since?: number): Promise<BufferStats>;
  /** Closes the connection; pending requests fail with `ERR_AGENT_CLOSED`. */
  close(): void;
}

/** Stream messages a consumer may have waiting before the client stops reading the socket. */
const HIGH_WATER = 16;

type Pending = { resolve(v: unknown): void; reject(e: ProtocolError): void; onResult?: (v: unknown) => void };

class StreamQueue {
  readonly stream: number;
  endReason: string | undefined;
  /** One entry per message: its events decoded together, so a consumer takes a message's events in one step. */
  readonly #batches: SubscriptionBatch[] = [];
  #head = 0;
  #wake: (() => void) | undefined;
  #ended = false;
  #failure: ProtocolError | undefined;
  #discarding = false;
  readonly #paced: (backlog: number) => void;
  readonly decoder: JsonEventDecoder;

  constructor(stream: number, decoder: JsonEventDecoder, paced: (backlog: number) => void) {
    this.stream = stream;
    this.decoder = decoder;
    this.#paced = paced;
  }

  /** Messages waiting for the consumer. */
  get backlog(): number {
    return this.#batches.length - this.#head;
  }

  /** Drops what is queued and everything but the end that follows (the consumer closed the subscription). */
  discard(): void {
    this.#discarding = true;
    this.#batches.length = 0;
    this.#head = 0;
  }

  /** @throws TraceFormatError for an event its class does not describe. */
  push(m: StreamMessage): void {
    if (this.#discarding && m.kind !== 'end') return;
    if (m.kind === 'events') {
      const events = new Array<TraceEvent>(m.events.length);
      for (let i = 0; i < events.length; i++) events[i] = this.decoder.decode(m.events[i], `events[${i}]`);
      this.#batches.push({ kind: 'events', events });
    } else if (m.kind === 'live') this.#batches.push({ kind: 'live' });
    else if (m.kind === 'loss') this.#batches.push({ kind: 'loss', lost: m.lost, total: m.total });
    else {
      this.endReason = m.reason;
      this.#ended = true;
    }
    this.#wake?.();
  }

  fail(error: ProtocolError): void {
    this.#failure = error;
    this.#ended = true;
    this.#wake?.();
  }

  async *batches(): AsyncGenerator<SubscriptionBatch> {
    for (;;) {
      if (this.#head < this.#batches.length) {
        const batch = this.#batches[this.#head]!;
        this.#batches[this.#head++] = undefined as never;
        if (this.#head === this.#batches.length) {
          this.#batches.length = 0;
          this.#head = 0;
        }
        this.#paced(this.backlog);
        yield batch;
        continue;
      }
      if (this.#ended) {
        if (this.#failure !== undefined) throw this.#failure;
        return;
      }
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#wake = undefined;
    }
  }

  async *items(): AsyncGenerator<SubscriptionItem> {
    for await (const batch of this.batches()) {
      if (batch.kind !== 'events') yield batch;
      else
        for (const event of batch.events) {
          // Closed meanwhile: the rest of the batch is dropped with the queue.
          if (this.#discarding) return;
          yield { kind: 'event', event };
        }
    }
  }
}

/**
 * Connects to the agent at `socketPath` (default {@link defaultSocketPath}) and performs the `hello` handshake.
 *
 * @throws ProtocolError `ERR_AGENT_CONNECT` when nothing listens there or access is refused; `ERR_AGENT_VERSION` (remote)
 * when the agent speaks another protocol version.
 */
export async function connectAgent(
  socketPath: string = defaultSocketPath(),
  options: { client?: string } = {},
): Promise<AgentClient> {
  const socket = await new Promise<Socket>((resolve, reject) => {
    const s = createConnection(socketPath);
    s.once('connect', () => {
      s.removeAllListeners('error');
      resolve(s);
    });
    s.once('error', (error: NodeJS.ErrnoException) => {
      const hint =
        error.code === 'ENOENT' || error.code === 'ECONNREFUSED'
          ? ' (is `evtrace agent` running? --socket or EVTRACE_AGENT_SOCKET name another socket)'
          : error.code === 'EACCES'
            ? ' (the socket is for root and the agent group only)'
            : '';
      reject(
        new ProtocolError(
          'ERR_AGENT_CONNECT',
          `cannot connect to ${socketPath}: ${error.code ?? error.message}${hint}`,
          {
            cause: error,
          },
        ),
      );
    });
  });
  const client = new Client(socket, socketPath);
  await client.hello(options.client ?? 'evtrace');
  return client;
}

class Client implements AgentClient {
  agent: HelloResult = { protocol: 0, agent: '', pid: 0 };
  readonly #socket: Socket;
  readonly #path: string;
  readonly #decoder = new LineDecoder(MAX_SERVER_MESSAGE_BYTES);
  readonly #pending = new Map<number, Pending>();
  readonly #streams = new Map<number, StreamQueue>();
  #nextId = 1;
  #closed: ProtocolError | undefined;
  #paused = false;

  constructor(socket: Socket, path: string) {
    this.#socket = socket;
    this.#path = path;
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('error', () => {});
    socket.on('close', () =>
      this.#shutdown(new ProtocolError('ERR_AGENT_CLOSED', `the agent at ${path} closed the connection`)),
    );
  }

  async hello(name: string): Promise<void> {
    // An older agent refuses the newer versions and serves the ops of its own (the newer ones get ERR_AGENT_UNKNOWN_OP
    // there): ask for each version this package speaks, newest first.
    const versions = [...PROTOCOL_VERSIONS].filter((v) => v <= PROTOCOL_VERSION).sort((a, b) => b - a);
    for (const [i, version] of versions.entries()) {
      try {
        this.agent = (await this.#request({ op: 'hello', version, client: name })) as HelloResult;
        return;
      } catch (error) {
        if (!(error instanceof ProtocolError && error.code === 'ERR_AGENT_VERSION') || i === versions.length - 1)
          throw error;
      }
    }
  }

  #onData(chunk: Buffer): void {
    for (const frame of this.#decoder.push(chunk)) {
      if ('oversize' in frame) {
        this.#fatal(
          new ProtocolError(
            'ERR_AGENT_REPLY_TOO_LARGE',
            `a message of ${frame.oversize} bytes from the agent exceeds ${MAX_SERVER_MESSAGE_BYTES}`,
          ),
        );
        return;
      }
      const parsed = parseServerMessage(frame.line);
      if (!parsed.ok) {
        this.#fatal(new ProtocolError('ERR_AGENT_BAD_REPLY', `bad message from the agent: ${parsed.message}`));
        return;
      }
      const m = parsed.value;
      if ('stream' in m) {
        const q = this.#streams.get(m.stream);
        if (q === undefined) continue;
        try {
          q.push(m);
        } catch (error) {
          if (!(error instanceof TraceFormatError)) throw error;
          this.#fatal(
            new ProtocolError('ERR_AGENT_BAD_REPLY', `bad event from the agent (stream ${m.stream}): ${error.message}`),
          );
          return;
        }
        if (m.kind === 'end') this.#streams.delete(m.stream);
        else if (q.backlog > HIGH_WATER && !this.#paused) {
          this.#paused = true;
          this.#socket.pause();
        }
        continue;
      }
      const p = m.id === null ? undefined : this.#pending.get(m.id);
      if (p === undefined) {
        // An error the agent could not tie to a request (our line was unreadable): fail everything in flight.
        if (!m.ok) this.#fatal(new ProtocolError(m.error.code, m.error.message, { remote: true }));
        continue;
      }
      this.#pending.delete(m.id!);
      if (m.ok) {
        p.onResult?.(m.result);
        p.resolve(m.result);
      } else p.reject(new ProtocolError(m.error.code, m.error.message, { remote: true }));
    }
  }

  #paced = (backlog: number) => {
    if (this.#paused && backlog <= HIGH_WATER / 2) {
      this.#paused = false;
      this.#socket.resume();
    }
  };

  #fatal(error: ProtocolError): void {
    this.#shutdown(error);
    this.#socket.destroy();
  }

  #shutdown(error: ProtocolError): void {
    if (this.#closed !== undefined) return;
    this.#closed = error;
    for (const p of this.#pending.values()) p.reject(error);
    this.#pending.clear();
    for (const q of this.#streams.values()) {
      if (error.code === 'ERR_AGENT_CLOSED') q.push({ stream: q.stream, kind: 'end', reason: 'connection closed' });
      else q.fail(error);
    }
    this.#streams.clear();
  }

  #request(body: Record<string, unknown>, onResult?: (v: unknown) => void): Promise<unknown> {
    if (this.#closed !== undefined) return Promise.reject(this.#closed);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, ...(onResult ? { onResult } : {}) });
      this.#socket.write(encodeLine({ id, ...body } as Request));
    });
  }

  createSession(spec: SessionSpec): Promise<SessionStatus> {
    return this.#request({ op: 'create', session: spec }) as Promise<SessionStatus>;
  }
  start(name: string): Promise<SessionStatus> {
    return this.#request({ op: 'start', name }) as Promise<SessionStatus>;
  }
  stop(name: string): Promise<SessionStatus> {
    return this.#request({ op: 'stop', name }) as Promise<SessionStatus>;
  }
  snapshot(name: string, options: { dir?: string; format?: OutputFormat } = {}): Promise<SnapshotResult> {
    return this.#request({ op: 'snapshot', name, ...options }) as Promise<SnapshotResult>;
  }
  async destroy(name: string): Promise<void> {
    await this.#request({ op: 'destroy', name });
  }
  list(): Promise<SessionStatus[]> {
    return this.#request({ op: 'list' }) as Promise<SessionStatus[]>;
  }
  status(name: string): Promise<SessionStatus> {
    return this.#request({ op: 'status', name }) as Promise<SessionStatus>;
  }
  trigger(name: string, trigger: TriggerSpec): Promise<SessionStatus> {
    return this.#request({ op: 'trigger', name, trigger }) as Promise<SessionStatus>;
  }

  async subscribe(name: string, options: SubscribeOptions = {}): Promise<Subscription> {
    let queue: StreamQueue | undefined;
    // Registered while the reply line is handled, before any of the stream's messages that follow it in the same read.
    let refused: ProtocolError | undefined;
    const result = (await this.#request({ op: 'subscribe', name, ...options }, (r) => {
      const stream = (r as SubscribeResult).stream;
      let decoder: JsonEventDecoder;
      try {
        decoder = streamDecoder(r);
      } catch (error) {
        refused = error as ProtocolError;
        return;
      }
      queue = new StreamQueue(stream, decoder, this.#paced);
      this.#streams.set(stream, queue);
    })) as SubscribeResult;
    if (refused !== undefined) {
      this.#fatal(refused);
      throw refused;
    }
    const q = queue!;
    // One iteration of the stream, by events or by batches; asking again for the same kind continues it.
    let items: AsyncGenerator<SubscriptionItem> | undefined;
    let batches: AsyncGenerator<SubscriptionBatch> | undefined;
    const both = () =>
      new ProtocolError('ERR_AGENT_ARGUMENT', `stream ${q.stream} is iterated already, by the other kind of step`);
    return {
      stream: result.stream,
      get eventClasses() {
        return q.decoder.eventClasses;
      },
      get endReason() {
        return q.endReason;
      },
      [Symbol.asyncIterator]: () => {
        if (batches !== undefined) throw both();
        items ??= q.items();
        return items;
      },
      batches: () => ({
        [Symbol.asyncIterator]: () => {
          if (items !== undefined) throw both();
          batches ??= q.batches();
          return batches;
        },
      }),
      close: async () => {
        if (this.#closed !== undefined || !this.#streams.has(q.stream)) return;
        // The reply must get through even when this stream's backlog paused reading.
        q.discard();
        this.#paced(0);
        await this.#request({ op: 'unsubscribe', stream: q.stream }).catch(() => {});
      },
    };
  }

  buffers(options: { dir?: string } = {}): Promise<BufferList> {
    return this.#request({ op: 'buffers', ...options }) as Promise<BufferList>;
  }
  attach(spec: AttachSpec): Promise<SessionStatus> {
    return this.#request({ op: 'attach', ...spec }) as Promise<SessionStatus>;
  }
  detach(name: string): Promise<DetachResult> {
    return this.#request({ op: 'detach', name }) as Promise<DetachResult>;
  }

  async stats(name: string, since?: number): Promise<BufferStats> {
    const result = await this.#request({ op: 'stats', name, ...(since !== undefined ? { since } : {}) });
    const wrong = checkBufferStats(result);
    if (wrong !== undefined) throw new ProtocolError('ERR_AGENT_BAD_REPLY', `bad stats from the agent: ${wrong}`);
    return result as BufferStats;
  }

  close(): void {
    this.#shutdown(new ProtocolError('ERR_AGENT_CLOSED', `connection to ${this.#path} closed by the client`));
    this.#socket.end();
  }
}
