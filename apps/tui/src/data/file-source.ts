/**
 * A trace file as a viewer source. ftrace recordings (trace.dat, raw pages) are indexed on open (a pass over page and
 * record headers) and decoded a row at a time. CTF traces are indexed progressively (trace-format's
 * `CtfTraceReader.index()`): enough for the first screen on open, the rest in slices between frames, the list growing
 * as it goes; rows are decoded when drawn, with the rest of their packet.
 */
import { basename } from 'node:path';
import {
  type CtfTraceReader,
  type IndexedCtfTrace,
  type IndexedTrace,
  indexFtrace,
  openTrace,
  TraceFormatError,
  type TraceReader,
} from '@evtrace/trace-format';
import { ViewerError } from '../errors.ts';
import type { CpuStats, SourceStats, ViewerSource } from './source.ts';
import { arrayStore, type EventStore, pidOf } from './store.ts';
import { lazySymbols } from './symbols.ts';

/** Slices of the trace's span in the per-CPU rate sparklines. */
const RATE_SLICES = 60;
/** CTF: events indexed before the first frame (a screen's worth many times over), and the time that may take. */
const FIRST_EVENTS = 2000;
const FIRST_MS = 50;
/** CTF: indexing slices between frames, and how often views hear of the growth. */
const SLICE_MS = 4;
const NOTIFY_MS = 250;

/**
 * Opens a CTF directory, trace.dat file or raw-pages directory.
 * @throws ViewerError `ERR_VIEW_INPUT` with the format error's message (file and offset) and the error as `cause`.
 */
export function openFileSource(path: string): ViewerSource {
  let reader: TraceReader & { metadata?: import('@evtrace/trace-format').FtraceMetadata };
  let store: EventStore;
  let ctf: IndexedCtfTrace | undefined;
  try {
    reader = openTrace(path, { lenient: true });
    if ('cpuPages' in reader && reader.metadata !== undefined) {
      store = indexFtrace(reader as Parameters<typeof indexFtrace>[0], { lenient: true }) satisfies IndexedTrace;
    } else if (reader.kind === 'ctf') {
      ctf = (reader as CtfTraceReader).index();
      ctf.advance(FIRST_MS, FIRST_EVENTS);
      store = ctfStore(ctf);
    } else {
      store = arrayStore([...reader.events()]);
    }
  } catch (error) {
    throw inputError(error);
  }
  const lostByCpu = 'lost' in store ? (store as IndexedTrace).lost : new Map<number, number>();
  const bytesByCpu = 'bytes' in store ? (store as IndexedTrace).bytes : undefined;
  const cmdlines = reader.metadata?.cmdlines;
  const name = `${basename(path)} (${reader.kind})`;
  let stats: SourceStats | undefined;
  const listeners = new Set<() => void>();
  /** Problems of the background indexing (the reader's own warnings are read-only). */
  const indexWarnings: string[] = [];
  let indexing = ctf !== undefined && !ctf.done;
  const stopIndexing = indexing
    ? indexInBackground(ctf!, indexWarnings, (s, finished) => {
        store = s;
        stats = undefined;
        indexing = !finished;
        for (const l of listeners) l();
      })
    : () => {};
  return {
    get label() {
      return indexing ? `${name} indexing ${Math.floor(ctf!.progress * 100)}%` : name;
    },
    live: false,
    store: () => store,
    eventClasses: () => reader.eventClasses,
    stats: () => (stats ??= fileStats(store, lostByCpu, bytesByCpu)),
    lost: () => [...lostByCpu.values()].reduce((a, b) => a + b, 0),
    taskName: (pid) => cmdlines?.get(pid),
    symbols: lazySymbols(() => reader.metadata?.kallsyms(), true),
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    warnings: () => (indexWarnings.length === 0 ? reader.warnings : [...reader.warnings, ...indexWarnings]),
    close: async () => stopIndexing(),
  };
}

function inputError(error: unknown): unknown {
  return error instanceof TraceFormatError ? new ViewerError('ERR_VIEW_INPUT', error.message, { cause: error }) : error;
}

/** The CTF index as it is now: a store whose length stays that of the moment it was taken. */
function ctfStore(index: IndexedCtfTrace): EventStore {
  return {
    length: index.length,
    tsNs: (i) => index.tsNs(i),
    cpu: (i) => index.cpu(i),
    pid: (i) => pidOf(index.event(i)),
    eventClass: (i) => index.eventClass(i),
    event: (i) => index.event(i),
  };
}

/**
 * Indexes the rest of a CTF trace in slices that leave the event loop free between them (keys and frames go on),
 * handing out a new store every {@link NOTIFY_MS} and at the end. A corrupt stream ends the indexing with a warning
 * (the reader is lenient, so only an unreadable file does). Returns the function that stops it.
 */
function indexInBackground(
  index: IndexedCtfTrace,
  warnings: string[],
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
    const now = performance.now();
    if (done || now - told >= NOTIFY_MS) {
      told = now;
      publish(ctfStore(index), done);
    }
    if (!done) setImmediate(step);
  };
  setImmediate(step);
  return () => {
    stopped = true;
  };
}

/**
 * Per-CPU counts and rates over the trace's span, per-type counts: one pass over the summary columns. A file has no
 * buffer fill: what it tells of each CPU is its events, its bytes (`bytesByCpu`, where the format says) and the losses
 * it marks.
 */
export function fileStats(
  store: EventStore,
  lostByCpu: ReadonlyMap<number, number>,
  bytesByCpu?: ReadonlyMap<number, number>,
): SourceStats {
  const n = store.length;
  const first = n > 0 ? store.tsNs(0) : 0n;
  const last = n > 0 ? store.tsNs(n - 1) : 0n;
  const spanNs = Number(last - first) || 1;
  const sliceNs = spanNs / RATE_SLICES;
  const perCpu = new Map<number, { events: number; slices: Float64Array }>();
  const perType = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const cpu = store.cpu(i) ?? 0;
    let c = perCpu.get(cpu);
    if (c === undefined) perCpu.set(cpu, (c = { events: 0, slices: new Float64Array(RATE_SLICES) }));
    c.events++;
    const slice = Math.min(RATE_SLICES - 1, Math.floor(Number(store.tsNs(i) - first) / sliceNs));
    c.slices[slice]!++;
    const name = store.eventClass(i).name;
    perType.set(name, (perType.get(name) ?? 0) + 1);
  }
  for (const cpu of lostByCpu.keys()) if (!perCpu.has(cpu)) perCpu.set(cpu, { events: 0, slices: new Float64Array(0) });
  const seconds = spanNs / 1e9;
  const cpus: CpuStats[] = [...perCpu.entries()]
    .sort(([a], [b]) => a - b)
    .map(([cpu, c]) => ({
      cpu,
      events: c.events,
      lost: lostByCpu.get(cpu) ?? 0,
      rates: [...c.slices].map((k) => k / (sliceNs / 1e9)),
      ...(bytesByCpu?.has(cpu) ? { bytes: bytesByCpu.get(cpu)! } : {}),
    }));
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
