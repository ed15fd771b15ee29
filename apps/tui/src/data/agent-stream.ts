/**
 * A session's live stream as the viewer keeps it: a worker thread reads and decodes the subscription
 * (agent-stream-worker.ts) and posts each event's summary columns with its JSON text; here they fill a bounded window
 * of columns, counted per CPU and type, whose snapshots are the Events view's store. A row's full event is
 * decoded again from its text by the stream's own decoder (the subscribe reply's classes) when a view asks for it,
 * once while it stays in the window.
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
  /** The events' JSON texts, one after the other; `ends[i]` is where event i's ends (and event i+1's starts). */
  readonly text: string;
  readonly ends: Uint32Array;
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

/** Events per chunk of {@link LiveColumns}: a power of two, so a position splits into chunk and index by bits. */
const CHUNK_BITS = 12;
const CHUNK = 1 << CHUNK_BITS;

/** A run of events as columns, only ever appended to: what a snapshot saw of it never changes. */
interface Chunk {
  readonly ts: BigUint64Array;
  readonly cpu: Int32Array;
  readonly pid: Int32Array;
  readonly cls: Uint16Array;
  /** Each event's text: the batch's string it is in, and where. */
  readonly batch: string[];
  readonly start: Uint32Array;
  readonly end: Uint32Array;
  /** Full events decoded so far (undefined until a view asked for one). */
  readonly decoded: (TraceEvent | undefined)[];
  length: number;
}

const newChunk = (): Chunk => ({
  ts: new BigUint64Array(CHUNK),
  cpu: new Int32Array(CHUNK),
  pid: new Int32Array(CHUNK),
  cls: new Uint16Array(CHUNK),
  batch: new Array<string>(CHUNK),
  start: new Uint32Array(CHUNK),
  end: new Uint32Array(CHUNK),
  decoded: new Array<TraceEvent | undefined>(CHUNK),
  length: 0,
});

/**
 * The most recent events as columns, in chunks that are only appended to and dropped whole once older than the
 * window: a snapshot is the list of chunks (no copy), and stays whole however the window moves on.
 */
export class LiveColumns {
  readonly capacity: number;
  #chunks: Chunk[] = [];
  /** Sequence number of the first event of the first chunk. */
  #first = 0;
  /** Events pushed in all. */
  #total = 0;
  readonly #classes: EventClass[] = [];
  readonly #counters = new LiveWindow(0);
  readonly #decoder: JsonEventDecoder;

  constructor(capacity: number, decoder: JsonEventDecoder) {
    this.capacity = capacity;
    this.#decoder = decoder;
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
    const byCpu = new Map<number, Map<string, number>>();
    let chunk = this.#chunks.at(-1);
    for (let i = 0; i < rows.ts.length; i++) {
      if (chunk === undefined || chunk.length === CHUNK) this.#chunks.push((chunk = newChunk()));
      const j = chunk.length++;
      chunk.ts[j] = rows.ts[i]!;
      chunk.cpu[j] = rows.cpu[i]!;
      chunk.pid[j] = rows.pid[i]!;
      chunk.cls[j] = rows.cls[i]!;
      chunk.batch[j] = rows.text;
      chunk.start[j] = i === 0 ? 0 : rows.ends[i - 1]!;
      chunk.end[j] = rows.ends[i]!;
      let types = byCpu.get(rows.cpu[i]!);
      if (types === undefined) byCpu.set(rows.cpu[i]!, (types = new Map()));
      const name = this.#classes[rows.cls[i]!]!.name;
      types.set(name, (types.get(name) ?? 0) + 1);
    }
    this.#total += rows.ts.length;
    // Whole chunks older than the window leave (snapshots that hold them keep them).
    while (this.#chunks.length > 1 && this.#total - (this.#first + CHUNK) >= this.capacity) {
      this.#chunks.shift();
      this.#first += CHUNK;
    }
    for (const [cpu, types] of byCpu) this.#counters.count(Math.max(0, cpu), types);
  }

  #inferred(rows: StreamRows, id: number): EventClass {
    const at = rows.cls.indexOf(id);
    const text = rows.text.slice(at === 0 ? 0 : rows.ends[at - 1], rows.ends[at]);
    return this.#decoder.decode(JSON.parse(text)).eventClass;
  }

  stats(): SourceStats {
    return this.#counters.stats();
  }

  /** The newest `capacity` events now, oldest first; later pushes do not change it. */
  snapshot(): EventStore {
    const chunks = this.#chunks.slice();
    const skip = Math.max(0, this.#total - this.capacity - this.#first);
    const length = this.#total - this.#first - skip;
    const classes = this.#classes.slice();
    const decoder = this.#decoder;
    const at = (i: number): [Chunk, number] => {
      const k = skip + i;
      return [chunks[k >> CHUNK_BITS]!, k & (CHUNK - 1)];
    };
    return {
      length,
      tsNs(i) {
        const k = skip + i;
        return chunks[k >> CHUNK_BITS]!.ts[k & (CHUNK - 1)]!;
      },
      cpu(i) {
        const k = skip + i;
        const cpu = chunks[k >> CHUNK_BITS]!.cpu[k & (CHUNK - 1)]!;
        return cpu < 0 ? null : cpu;
      },
      pid(i) {
        const k = skip + i;
        return chunks[k >> CHUNK_BITS]!.pid[k & (CHUNK - 1)]!;
      },
      eventClass(i) {
        const k = skip + i;
        return classes[chunks[k >> CHUNK_BITS]!.cls[k & (CHUNK - 1)]!]!;
      },
      event(i) {
        const [c, j] = at(i);
        let e = c.decoded[j];
        if (e === undefined) c.decoded[j] = e = decoder.decode(JSON.parse(c.batch[j]!.slice(c.start[j], c.end[j])));
        return e;
      },
    };
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
        worker.postMessage('ack');
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
