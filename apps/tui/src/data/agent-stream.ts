/**
 * A session's live stream as the viewer keeps it: a worker thread reads and decodes the subscription
 * (agent-stream-worker.ts) and posts each event's summary columns with its JSON text; here they fill a fixed-size
 * ring of columns, counted per CPU and type, whose snapshots are the Events view's store. A row's full event is
 * decoded again from its text by the stream's own decoder (the subscribe reply's classes) when a view asks for it,
 * once while it stays in the ring.
 */
import { Worker } from 'node:worker_threads';
import { streamDecoder } from '@evtrace/agent-protocol';
import type { EventClass, JsonEventDecoder, Timed, TraceEvent } from '@evtrace/trace-format';
import { LiveWindow } from './live-window.ts';
import type { SourceStats } from './source.ts';
import type { EventStore } from './store.ts';

/** What the worker is started with. */
export interface WorkerSetup {
  readonly socket: string;
  readonly session: string;
  /** Events the agent may queue for this viewer. */
  readonly queue: number;
  /** The session's CPUs, waited for by the time merge from the start. */
  readonly cpus: readonly number[];
  /** How often the worker posts what it merged, ms. */
  readonly flushMs: number;
}

/** One event in the worker's merge. */
export interface StreamRow extends Timed {
  readonly cpu: number;
  readonly pid: number;
  readonly cls: number;
  readonly text: string;
}

/** The subscription is open: its reply, from which the events' decoder is built. */
export interface StreamStart {
  readonly kind: 'start';
  readonly reply: unknown;
}

/** Events merged since the last batch, in time order, as columns. */
export interface StreamRows {
  readonly kind: 'rows';
  readonly ts: BigUint64Array;
  /** -1: none. */
  readonly cpu: Int32Array;
  /** -1: none. */
  readonly pid: Int32Array;
  /** Class ids, numbered by first appearance; `classes` names those new in this batch. */
  readonly cls: Uint16Array;
  readonly text: readonly string[];
  readonly classes: readonly string[];
  /** Task names that changed: [pid, comm]. */
  readonly tasks: readonly (readonly [number, string])[];
  /** Events received from the agent and lost in its queue for this viewer, since the subscription. */
  readonly received: number;
  readonly lost: number;
}

export type WorkerMessage =
  | StreamStart
  | StreamRows
  | { readonly kind: 'end'; readonly reason: string }
  | { readonly kind: 'error'; readonly message: string; readonly code?: string };

/** The ring of the most recent events as columns, with the counters of everything received. */
export class LiveColumns {
  readonly capacity: number;
  readonly #ts: BigUint64Array;
  readonly #cpu: Int32Array;
  readonly #pid: Int32Array;
  readonly #cls: Uint16Array;
  readonly #text: string[];
  /** Full events decoded so far, by ring slot (undefined until asked for). */
  readonly #decoded: (TraceEvent | undefined)[];
  /** Events pushed in all: the next event's sequence number. */
  #total = 0;
  readonly #classes: EventClass[] = [];
  readonly #counters = new LiveWindow(0);
  readonly #decoder: JsonEventDecoder;

  constructor(capacity: number, decoder: JsonEventDecoder) {
    this.capacity = capacity;
    this.#decoder = decoder;
    this.#ts = new BigUint64Array(capacity);
    this.#cpu = new Int32Array(capacity);
    this.#pid = new Int32Array(capacity);
    this.#cls = new Uint16Array(capacity);
    this.#text = new Array<string>(capacity);
    this.#decoded = new Array<TraceEvent | undefined>(capacity);
  }

  /** The session's event classes (from the subscribe reply; for an older agent, those of the events so far). */
  get eventClasses(): readonly EventClass[] {
    return this.#decoder.eventClasses;
  }

  /** Adds a batch from the worker. */
  push(rows: StreamRows): void {
    for (const name of rows.classes) {
      const cls = this.#decoder.eventClasses.find((c) => c.name === name);
      // An agent older than protocol 3 sent no formats: the class is inferred from its first event.
      this.#classes.push(cls ?? this.#inferred(rows, this.#classes.length));
    }
    const cap = this.capacity;
    const byCpu = new Map<number, Map<string, number>>();
    for (let i = 0; i < rows.ts.length; i++) {
      const slot = this.#total++ % cap;
      this.#ts[slot] = rows.ts[i]!;
      this.#cpu[slot] = rows.cpu[i]!;
      this.#pid[slot] = rows.pid[i]!;
      this.#cls[slot] = rows.cls[i]!;
      this.#text[slot] = rows.text[i]!;
      this.#decoded[slot] = undefined;
      let types = byCpu.get(rows.cpu[i]!);
      if (types === undefined) byCpu.set(rows.cpu[i]!, (types = new Map()));
      const name = this.#classes[rows.cls[i]!]!.name;
      types.set(name, (types.get(name) ?? 0) + 1);
    }
    for (const [cpu, types] of byCpu) this.#counters.count(Math.max(0, cpu), types);
  }

  #inferred(rows: StreamRows, id: number): EventClass {
    const at = rows.cls.indexOf(id);
    return this.#decoder.decode(JSON.parse(rows.text[at]!)).eventClass;
  }

  stats(): SourceStats {
    return this.#counters.stats();
  }

  /** The ring now, oldest first; later pushes do not change it. */
  snapshot(): EventStore {
    const n = Math.min(this.#total, this.capacity);
    const from = this.#total - n;
    const cap = this.capacity;
    const at = from % cap;
    const copy = <T extends BigUint64Array | Int32Array | Uint16Array>(a: T, make: (n: number) => T): T => {
      const out = make(n);
      const head = a.subarray(at, Math.min(cap, at + n)) as T;
      out.set(head as never);
      if (head.length < n) out.set(a.subarray(0, n - head.length) as never, head.length);
      return out;
    };
    const ts = copy(this.#ts, (k) => new BigUint64Array(k));
    const cpu = copy(this.#cpu, (k) => new Int32Array(k));
    const pid = copy(this.#pid, (k) => new Int32Array(k));
    const cls = copy(this.#cls, (k) => new Uint16Array(k));
    const text =
      at + n <= cap ? this.#text.slice(at, at + n) : [...this.#text.slice(at), ...this.#text.slice(0, at + n - cap)];
    const classes = this.#classes.slice();
    return {
      length: n,
      tsNs: (i) => ts[i]!,
      cpu: (i) => (cpu[i]! < 0 ? null : cpu[i]!),
      pid: (i) => pid[i]!,
      eventClass: (i) => classes[cls[i]!]!,
      event: (i) => this.#event(from + i, text[i]!),
    };
  }

  /** Event number `seq`, from the ring's decoded copy while it is there. */
  #event(seq: number, text: string): TraceEvent {
    const inRing = seq >= this.#total - this.capacity;
    const slot = seq % this.capacity;
    const cached = inRing ? this.#decoded[slot] : undefined;
    if (cached !== undefined) return cached;
    const e = this.#decoder.decode(JSON.parse(text));
    if (inRing) this.#decoded[slot] = e;
    return e;
  }
}

/** Where the worker script is: next to this module in src (tests), at the dist root once bundled. */
function workerUrl(): URL {
  return import.meta.url.endsWith('.ts')
    ? new URL('./agent-stream-worker.ts', import.meta.url)
    : new URL('./agent-stream-worker.js', import.meta.url);
}

/** A session's stream, read by a worker thread. */
export interface AgentStream {
  readonly window: LiveColumns;
  /** Events received from the agent, and lost in its queue for this viewer. */
  readonly received: number;
  readonly lost: number;
  /** Task names as the events carried them: the last one per pid. */
  readonly tasks: ReadonlyMap<number, string>;
  /** Why the stream ended, once it has (an error's message for a failure). */
  readonly ended: string | undefined;
  /** Called after each batch is in the window. */
  onRows: (() => void) | undefined;
  /** Called once when the stream ends. */
  onEnd: ((reason: string) => void) | undefined;
  close(): Promise<void>;
}

/**
 * Subscribes to `setup.session` from a worker thread; resolves once the subscription is open.
 *
 * @throws Error with the agent's `code` (a ProtocolError's) when the subscription is refused.
 */
export function startAgentStream(setup: WorkerSetup, capacity: number): Promise<AgentStream> {
  const worker = new Worker(workerUrl(), { workerData: setup });
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let stream: (AgentStream & { received: number; lost: number; ended: string | undefined }) | undefined;
    const tasks = new Map<number, string>();
    const end = (reason: string) => {
      if (stream === undefined || stream.ended !== undefined) return;
      stream.ended = reason;
      stream.onEnd?.(reason);
    };
    worker.on('message', (m: WorkerMessage) => {
      if (m.kind === 'start') {
        const window = new LiveColumns(capacity, streamDecoder(m.reply));
        stream = {
          window,
          received: 0,
          lost: 0,
          tasks,
          ended: undefined,
          onRows: undefined,
          onEnd: undefined,
          async close() {
            worker.postMessage('close');
            const timer = setTimeout(() => void worker.terminate(), 2000);
            await exited;
            clearTimeout(timer);
          },
        };
        resolve(stream);
      } else if (m.kind === 'rows' && stream !== undefined) {
        stream.window.push(m);
        for (const [pid, comm] of m.tasks) tasks.set(pid, comm);
        stream.received = m.received;
        stream.lost = m.lost;
        stream.onRows?.();
      } else if (m.kind === 'end') end(m.reason);
      else if (m.kind === 'error') {
        if (stream === undefined) reject(Object.assign(new Error(m.message), m.code ? { code: m.code } : {}));
        else end(m.message);
      }
    });
    worker.once('error', (error) => {
      if (stream === undefined) reject(error);
      else end(error.message);
    });
    void exited.then(() => {
      if (stream === undefined) reject(new Error('the stream reader exited before the subscription opened'));
      else end('closed');
    });
  });
}
