/**
 * A trace file as a viewer source. Traces are indexed progressively (trace-format's `indexFtraceProgressively` for
 * trace.dat and raw pages, `CtfTraceReader.index()` for CTF): enough for the first screen on open, the rest in slices
 * between frames, the list growing as it goes; rows are decoded when drawn (ftrace: from their page, a compressed
 * chunk decompressed again; CTF: with the rest of their packet).
 */
import { basename } from 'node:path';
import {
  type CtfTraceReader,
  type EventClass,
  type FtraceMetadata,
  type IndexedCtfTrace,
  type IndexedTrace,
  indexFtraceProgressively,
  openTrace,
  TraceFormatError,
  type TraceReader,
} from '@evtrace/trace-format';
import { ViewerError } from '../errors.ts';
import type { CpuStats, SourceStats, ViewerSource } from './source.ts';
import { arrayStore, type EventStore, pidOf } from './store.ts';
import { lazySymbols } from './symbols.ts';

/** Slices of the trace's span in the per-CPU rate sparklines, and events sampled per slice at most to draw them. */
const RATE_SLICES = 60;
const RATE_SAMPLES = 1000;
/** Events indexed before the first frame (a screen's worth many times over), and the time that may take. */
const FIRST_EVENTS = 2000;
const FIRST_MS = 50;
/** Indexing slices between frames, and how often views hear of the growth. */
const SLICE_MS = 4;
const NOTIFY_MS = 250;

/** An index that grows between frames: trace-format's ftrace and CTF indexes. */
type GrowingIndex = IndexedTrace | IndexedCtfTrace;

/** A trace file as a source: the viewer's, plus a way to wait for its whole index. */
export interface FileSource extends ViewerSource {
  /** Resolves once every event of the file is indexed (starting the indexing if nobody listens yet). */
  indexed(): Promise<void>;
}

/**
 * Opens a CTF directory, trace.dat file or raw-pages directory: the first rows indexed, the rest from the first
 * {@link ViewerSource.subscribe} (or {@link FileSource.indexed}) on, between frames.
 * @throws ViewerError `ERR_VIEW_INPUT` with the format error's message (file and offset) and the error as `cause`.
 */
export function openFileSource(path: string): FileSource {
  let reader: TraceReader & { metadata?: FtraceMetadata };
  let store: EventStore;
  let index: GrowingIndex | undefined;
  let ftrace: IndexedTrace | undefined;
  try {
    reader = openTrace(path, { lenient: true });
    if ('cpuPages' in reader && reader.metadata !== undefined) {
      index = ftrace = indexFtraceProgressively(reader as Parameters<typeof indexFtraceProgressively>[0], {
        lenient: true,
      });
    } else if (reader.kind === 'ctf') {
      index = (reader as CtfTraceReader).index();
    }
    if (index !== undefined) {
      index.advance(FIRST_MS, FIRST_EVENTS);
      store = indexStore(index);
    } else {
      store = arrayStore([...reader.events()]);
    }
  } catch (error) {
    throw inputError(error);
  }
  const lostByCpu = ftrace?.lost ?? new Map<number, number>();
  const bytesByCpu = ftrace?.bytes;
  const cmdlines = reader.metadata?.cmdlines;
  const name = `${basename(path)} (${reader.kind})`;
  let stats: SourceStats | undefined;
  const counts = new EventCounts();
  // Without symbols of its own, a trace's rows are named from this machine's: read while the viewer starts.
  const symbols = lazySymbols(() => reader.metadata?.kallsyms(), true, !reader.metadata?.kallsymsText);
  const listeners = new Set<() => void>();
  /** Problems of the background indexing (the reader's own warnings are read-only). */
  const indexWarnings: string[] = [];
  let indexing = index !== undefined && !index.done;
  /**
   * The rest is indexed once someone listens (the viewer subscribes when its first frame is drawn, so the indexing
   * does not compete with the start); undefined until then.
   */
  let stopIndexing: (() => void) | undefined;
  const startIndexing = () =>
    indexInBackground(index!, indexWarnings, counts, (s, finished) => {
      store = s;
      stats = undefined;
      indexing = !finished;
      for (const l of listeners) l();
    });
  const subscribe = (listener: () => void) => {
    listeners.add(listener);
    if (indexing && stopIndexing === undefined) stopIndexing = startIndexing();
    return () => {
      listeners.delete(listener);
    };
  };
  return {
    get label() {
      return indexing ? `${name} indexing ${Math.floor(index!.progress * 100)}%` : name;
    },
    live: false,
    store: () => store,
    eventClasses: () => reader.eventClasses,
    stats: () => (stats ??= fileStats(store, lostByCpu, bytesByCpu, counts)),
    lost: () => [...lostByCpu.values()].reduce((a, b) => a + b, 0),
    taskName: (pid) => cmdlines?.get(pid),
    symbols,
    subscribe,
    warnings: () => (indexWarnings.length === 0 ? reader.warnings : [...reader.warnings, ...indexWarnings]),
    async indexed() {
      while (indexing) {
        await new Promise<void>((resolve) => {
          const off = subscribe(() => {
            off();
            resolve();
          });
        });
      }
    },
    close: async () => stopIndexing?.(),
  };
}

function inputError(error: unknown): unknown {
  return error instanceof TraceFormatError ? new ViewerError('ERR_VIEW_INPUT', error.message, { cause: error }) : error;
}

/** The index as it is now: a store whose length stays that of the moment it was taken. */
function indexStore(index: GrowingIndex): EventStore {
  const pid: (i: number) => number = 'pid' in index ? (i) => index.pid(i) : (i) => pidOf(index.event(i));
  return {
    length: index.length,
    tsNs: (i) => index.tsNs(i),
    cpu: (i) => index.cpu(i),
    pid,
    eventClass: (i) => index.eventClass(i),
    event: (i) => index.event(i),
  };
}

/**
 * Indexes the rest of a trace in slices that leave the event loop free between them (keys and frames go on),
 * counting the new events (`counts`) and handing out a new store every {@link NOTIFY_MS} and at the end. A corrupt file ends the indexing with a warning
 * (the reader is lenient, so only an unreadable one does). Returns the function that stops it.
 */
function indexInBackground(
  index: GrowingIndex,
  warnings: string[],
  counts: EventCounts,
  publish: (store: EventStore, finished: boolean) => void,
): () => void {
  let stopped = false;
  let told = performance.now();
  const step = () => {
    if (stopped) return;
    let done: boolean;
    try {
      done = index.advance(SLICE_MS);
    } catch (error) {
      warnings.push(`indexing stopped: ${(inputError(error) as Error).message}`);
      done = true;
    }
    // Counted here, a slice's worth at a time, rather than all at once in the frame that asks for the stats.
    counts.add(indexStore(index));
    const now = performance.now();
    if (done || now - told >= NOTIFY_MS) {
      told = now;
      publish(indexStore(index), done);
    }
    if (!done) setImmediate(step);
  };
  setImmediate(step);
  return () => {
    stopped = true;
  };
}

/**
 * Events per CPU and per type of a store that only grows (a file's, as it is indexed): each event is counted once,
 * when a store longer than the last one is added.
 */
export class EventCounts {
  #counted = 0;
  readonly cpus = new Map<number, number>();
  readonly types = new Map<EventClass, number>();
  add(store: EventStore): void {
    for (let i = this.#counted; i < store.length; i++) {
      const cpu = store.cpu(i) ?? 0;
      this.cpus.set(cpu, (this.cpus.get(cpu) ?? 0) + 1);
      const c = store.eventClass(i);
      this.types.set(c, (this.types.get(c) ?? 0) + 1);
    }
    this.#counted = Math.max(this.#counted, store.length);
  }
}

/**
 * Per-CPU counts and rates over the trace's span, per-type counts. A file has no buffer fill: what it tells of each
 * CPU is its events, its bytes (`bytesByCpu`, where the format says) and the losses it marks. The counts are exact
 * (`counts` carries them over from the same store's shorter past); the rates of a long trace come from events sampled
 * evenly, each counting for the events up to the next sample.
 */
export function fileStats(
  store: EventStore,
  lostByCpu: ReadonlyMap<number, number>,
  bytesByCpu?: ReadonlyMap<number, number>,
  counts: EventCounts = new EventCounts(),
): SourceStats {
  counts.add(store);
  const n = store.length;
  const first = n > 0 ? store.tsNs(0) : 0n;
  const last = n > 0 ? store.tsNs(n - 1) : 0n;
  const spanNs = Number(last - first) || 1;
  const sliceNs = spanNs / RATE_SLICES;
  const slicesOf = new Map<number, Float64Array>();
  const step = Math.max(1, Math.floor(n / (RATE_SLICES * RATE_SAMPLES)));
  for (let i = 0; i < n; i += step) {
    const cpu = store.cpu(i) ?? 0;
    let slices = slicesOf.get(cpu);
    if (slices === undefined) slicesOf.set(cpu, (slices = new Float64Array(RATE_SLICES)));
    const slice = Math.min(RATE_SLICES - 1, Math.floor(Number(store.tsNs(i) - first) / sliceNs));
    slices[slice]! += Math.min(step, n - i);
  }
  const cpuList = new Set([...counts.cpus.keys(), ...lostByCpu.keys()]);
  const seconds = spanNs / 1e9;
  const cpus: CpuStats[] = [...cpuList]
    .sort((a, b) => a - b)
    .map((cpu) => ({
      cpu,
      events: counts.cpus.get(cpu) ?? 0,
      lost: lostByCpu.get(cpu) ?? 0,
      rates: [...(slicesOf.get(cpu) ?? new Float64Array(counts.cpus.has(cpu) ? RATE_SLICES : 0))].map(
        (k) => k / (sliceNs / 1e9),
      ),
      ...(bytesByCpu?.has(cpu) ? { bytes: bytesByCpu.get(cpu)! } : {}),
    }));
  const perType = new Map<string, number>();
  for (const [c, k] of counts.types) perType.set(c.name, (perType.get(c.name) ?? 0) + k);
  let lost = 0;
  for (const v of lostByCpu.values()) lost += v;
  return {
    cpus,
    types: [...perType.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([name, events]) => ({ name, events, rate: events / seconds })),
    eventsPerSec: n / seconds,
    lost,
    total: n,
  };
}
