/**
 * The embedded demo as a live source: @evtrace/tracefs's demo producer, in a worker thread, writes raw pages into a
 * private temporary directory in real time, and the viewer reads each CPU's new whole pages a few times a second, as a recorder drains
 * trace_pipe_raw. Used when no agent answers; everything it shows is labelled DEMO.
 */
import { closeSync, existsSync, fstatSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import {
  decodeCpuPages,
  type FtraceMetadata,
  LiveMerge,
  openRawPagesDir,
  readPage,
  type TraceEvent,
} from '@evtrace/trace-format';
import { DEMO_EVENTS } from '@evtrace/tracefs';
import { LiveWindow } from './live-window.ts';
import type { ViewerSource } from './source.ts';
import { lazySymbols } from './symbols.ts';

/** Options of {@link startDemoSource}. */
export interface DemoSourceOptions {
  /** Why the demo runs, shown in the status bar (e.g. "no agent at /run/evtrace/agent.sock"). */
  readonly reason?: string;
  /** Events per second over all CPUs. Default 40000. */
  readonly rate?: number;
  readonly cpus?: number;
  /** Events kept for the Events view. Default 100000. */
  readonly window?: number;
  /** How often new pages are read, in ms. Default 200. */
  readonly pollMs?: number;
  /**
   * Decode only each CPU's newest pages at each poll when more arrived (the rest are counted exactly, not decoded), so
   * a fast stream never makes the viewer fall behind. Default true; false for outputs that need every event.
   */
  readonly sample?: boolean;
}

/** Pages per CPU decoded at each poll when sampling: about 4 500 events of the demo's. */
const SAMPLE_PAGES = 48;

/** The demo as a live source, which can also be stopped and asked how many events it produced. */
export interface DemoSource extends ViewerSource {
  /**
   * Stops the producer and reads what it wrote last; `stats().total` then counts every event the viewer received,
   * to compare with `produced`.
   */
  stop(): Promise<{ produced: number }>;
}

/** Where the worker script is: next to this module in src (tests), at the dist root once bundled. */
function workerUrl(): URL {
  return import.meta.url.endsWith('.ts')
    ? new URL('./demo-worker.ts', import.meta.url)
    : new URL('./demo-worker.js', import.meta.url);
}

/** Starts the demo producer and returns it as a live source. */
export async function startDemoSource(options: DemoSourceOptions = {}): Promise<DemoSource> {
  const cpuCount = options.cpus ?? 2;
  const rate = options.rate ?? 40_000;
  const parent = mkdtempSync(join(tmpdir(), 'evtrace-view-demo-'));
  const dir = join(parent, 'raw');
  const worker = new Worker(workerUrl(), {
    workerData: {
      dir,
      events: DEMO_EVENTS.filter((e) => e !== 'bts:branch'),
      cpus: cpuCount,
      rate: Math.max(1, Math.round(rate / cpuCount)),
    },
  });
  let produced = 0;
  worker.on('message', (m: { done?: boolean; total?: number }) => {
    if (m.done && m.total !== undefined) produced = m.total;
  });
  const finished = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  // The producer creates the directory, its metadata and the cpuN.raw files before it reports.
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the demo producer exited (status ${code}) before it started`)));
  });
  if (!existsSync(join(dir, 'cpu0.raw'))) throw new Error(`demo producer did not start in ${dir}`);
  const reader = openRawPagesDir(dir);
  const meta = reader.metadata;
  const pageSize = meta.page.pageSize;
  const window = new LiveWindow(options.window ?? 100_000);
  const files = Array.from({ length: cpuCount }, (_, cpu) => ({
    cpu,
    fd: openSync(join(dir, `cpu${cpu}.raw`), 'r'),
    offset: 0,
  }));
  const listeners = new Set<() => void>();
  const warnings: string[] = [];
  // A CPU's pages may reach its file a moment after another's: events are shown once every CPU has gone past them.
  const merger = new LiveMerge<TraceEvent>({ cpus: files.map((f) => f.cpu) });
  const types = new Map(meta.eventClasses.map((c) => [c.id, c.name]));
  const poll = () => {
    for (const f of files) {
      const size = fstatSync(f.fd).size;
      const whole = size - (size % pageSize) - f.offset;
      if (whole <= 0) continue;
      const bytes = Buffer.allocUnsafe(whole);
      let got = 0;
      while (got < whole) got += readSync(f.fd, bytes, got, whole - got, f.offset + got);
      f.offset += whole;
      let from = 0;
      if (options.sample !== false && whole > SAMPLE_PAGES * pageSize) {
        from = whole - SAMPLE_PAGES * pageSize;
        const counted = countRecords(meta, bytes.subarray(0, from), types);
        window.count(f.cpu, counted.byType);
        if (counted.lost > 0) window.lose(f.cpu, counted.lost);
      }
      const decoded = decodeCpuPages(
        meta,
        { cpu: f.cpu, bytes: bytes.subarray(from) },
        { lenient: true, warn: (m) => warnings.push(m) },
      );
      if (decoded.lost > 0) window.lose(f.cpu, decoded.lost);
      merger.add(f.cpu, decoded.events);
    }
    const ready = merger.take();
    if (ready.length > 0) window.push(ready);
    for (const l of listeners) l();
  };
  const timer = setInterval(poll, options.pollMs ?? 200);
  let closed = false;
  let stopped = false;
  const stopProducer = async () => {
    if (stopped) return;
    stopped = true;
    worker.postMessage('stop');
    await finished;
  };
  return {
    label: `DEMO (embedded source${options.reason ? `; ${options.reason}` : ''})`,
    live: true,
    store: () => window.snapshot(),
    eventClasses: () => meta.eventClasses,
    stats: () => window.stats(),
    lost: () => window.stats().lost,
    taskName: (pid) => meta.cmdlines.get(pid),
    // Synthetic addresses: only the demo's own symbols (if any) name them, never this machine's.
    symbols: lazySymbols(() => meta.kallsyms(), false),
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    warnings: () => warnings,
    async stop() {
      await stopProducer();
      // What the producer wrote last: every CPU has reached its end, so nothing is held back.
      poll();
      const rest = merger.take(true);
      if (rest.length > 0) window.push(rest);
      return { produced };
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      await stopProducer();
      for (const f of files) closeSync(f.fd);
      rmSync(parent, { recursive: true, force: true });
    },
  };
}

/** Counts the records of whole pages by event type without decoding them, and the events lost before them. */
export function countRecords(
  meta: FtraceMetadata,
  bytes: Buffer,
  names: ReadonlyMap<number, string>,
): { byType: Map<string, number>; lost: number } {
  const le = meta.byteOrder === 'le';
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const byId = new Map<number, number>();
  let lost = 0;
  const onRecord = (_ts: bigint, start: number, length: number) => {
    if (length < 2) return;
    const id = view.getUint16(start, le);
    byId.set(id, (byId.get(id) ?? 0) + 1);
  };
  for (let at = 0; at + meta.page.pageSize <= bytes.length; at += meta.page.pageSize) {
    try {
      const info = readPage(bytes, at, meta.page, onRecord);
      if (info.missedEvents) lost += info.missedCount ?? 1;
    } catch {
      // A corrupt page is reported when decoded; counting skips it.
    }
  }
  const byType = new Map<string, number>();
  for (const [id, n] of byId) {
    const name = names.get(id);
    if (name !== undefined) byType.set(name, (byType.get(name) ?? 0) + n);
  }
  return { byType, lost };
}
