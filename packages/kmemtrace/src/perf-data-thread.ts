/**
 * A perf.data file analysed as fast as it can be: read and analysed by the WebAssembly module (perf-data-wasm.ts: the
 * records walked, each kmem sample decoded as it is read, merged into perf's order and analysed) on this thread; or,
 * when that module declines the file (damage, samples out of order, events it does not read), on two threads: while a
 * worker starts, this thread walks the file to find the samples' order and hands it over; the worker reads and
 * decodes the samples in that order (perf-data-worker.ts) while this thread loads the kernel symbols, then analyses
 * each batch as it arrives. The result is the one-thread reader's, event for event, either way: the events come in
 * its order, and the source names keys with its keys.
 */
import { availableParallelism } from 'node:os';
import { formatLocation, type Location } from '@evtrace/errors';
import { TraceFormatError, type TraceFormatErrorCode } from '@evtrace/trace-format';
import { type AnalyzeOptions, analyze, type KmemAnalysis, KmemAnalyzer } from './analyze.ts';
import { KmemError, type KmemErrorCode } from './errors.ts';
import { KmemColumns, type KmemSource } from './event.ts';
import { type PerfDataSourceOptions, perfDataSource, perfDataState } from './perf-data.ts';

/** What the worker is given. */
export interface PerfDataJob {
  readonly file: string;
  readonly lenient: boolean;
}

/** What the worker posts: batches in order, then the end or the error that stopped it. */
export type PerfDataMessage =
  | {
      readonly kind: 'batch';
      readonly length: number;
      /** The numeric columns, laid out as {@link KmemColumns} lays them in one buffer. */
      readonly columns: ArrayBuffer;
      /** Cache name ids (-1: none), numbered in the order the names were first met. */
      readonly cache: Int32Array<ArrayBuffer>;
      /** The names met for the first time in this batch. */
      readonly names: readonly string[];
    }
  | {
      readonly kind: 'end';
      readonly siteAddresses: readonly number[];
      readonly odd: readonly bigint[];
      readonly diagnostics: readonly string[];
    }
  | {
      readonly kind: 'error';
      readonly name: string;
      readonly code?: string;
      readonly message: string;
      readonly location?: Location;
    };

/** Options of {@link analysePerfData}. */
export interface PerfDataAnalysisOptions extends PerfDataSourceOptions, AnalyzeOptions {}

/**
 * Analyses a perf.data file of kmem tracepoints (`perf kmem record`) as `analyze(perfDataSource(file).events)` does:
 * with the WebAssembly reader and analysis on this thread, or (a file it declines) with the samples read on a worker
 * thread where there is a second core. The source names the analysis's keys and holds the diagnostics.
 * @throws the errors {@link perfDataSource} throws, with the same code, message and location, whichever thread met them.
 */
export async function analysePerfData(
  file: string,
  options: PerfDataAnalysisOptions = {},
): Promise<{ readonly analysis: KmemAnalysis; readonly source: KmemSource }> {
  const source = perfDataSource(file, options);
  const state = perfDataState.get(source)!;
  const analysis = state.analyseInWasm(options);
  if (analysis !== undefined) {
    state.loadSymbols();
    return { analysis, source };
  }
  if (availableParallelism() > 1) return analyseOnTwoThreads(file, options);
  const again = perfDataSource(file, options);
  return { analysis: analyze(again.events, options), source: again };
}

/** {@link analysePerfData} on two threads, with the reader in TypeScript (see the top). */
async function analyseOnTwoThreads(
  file: string,
  options: PerfDataAnalysisOptions,
): Promise<{ readonly analysis: KmemAnalysis; readonly source: KmemSource }> {
  // Opened here too: a file that is no kmem perf.data is refused before a thread is started.
  const source = perfDataSource(file, options);
  const state = perfDataState.get(source)!;
  const { Worker } = await import('node:worker_threads');
  const module = import.meta.url.endsWith('.ts') ? './perf-data-worker.ts' : './perf-data-worker.js';
  const job: PerfDataJob = { file, lenient: options.lenient === true };
  const worker = new Worker(new URL(module, import.meta.url), { workerData: job });
  // While the worker starts, this thread walks the file to find the samples' order, which it hands over: the
  // worker then only reads and decodes them, in that order.
  try {
    const walked = state.walk();
    const transfer = (walked?.queues ?? []).flatMap((q) => [q.time.buffer, q.offset.buffer, q.layout.buffer]);
    worker.postMessage({ walked }, transfer);
  } catch (error) {
    worker.on('error', () => {});
    await worker.terminate();
    throw error;
  }
  const analyzer = new KmemAnalyzer(options);
  const cacheNames: string[] = [];
  // Every batch's texts: cache names set for each event below, no gfp flag texts from a perf.data.
  const texts = { cache: [] as (string | undefined)[], gfpText: [] as (string | undefined)[] };
  const headerWarnings = source.diagnostics.length;
  try {
    await new Promise<void>((resolve, reject) => {
      let ended = false;
      worker.on('message', (m: PerfDataMessage) => {
        try {
          if (m.kind === 'batch') {
            cacheNames.push(...m.names);
            const c = new KmemColumns(m.cache.length, m.columns, texts);
            for (let i = 0; i < m.length; i++) {
              const id = m.cache[i]!;
              c.cache[i] = id >= 0 ? cacheNames[id] : undefined;
            }
            c.length = m.length;
            analyzer.pushColumns(c);
            // Analysed: the buffers go back to be filled again.
            worker.postMessage({ columns: m.columns, cache: m.cache }, [m.columns, m.cache.buffer as ArrayBuffer]);
          } else if (m.kind === 'end') {
            ended = true;
            state.siteAddresses.push(...m.siteAddresses);
            for (const a of m.odd) state.keys.key(a);
            // The worker's diagnostics (its header warnings are this thread's), then this thread's own since.
            const own = source.diagnostics.splice(headerWarnings);
            source.diagnostics.length = 0;
            source.diagnostics.push(...m.diagnostics, ...own);
            resolve();
          } else {
            ended = true;
            reject(rebuilt(m));
          }
        } catch (error) {
          reject(error);
        }
      });
      worker.on('error', reject);
      worker.on('exit', (code) => {
        if (!ended) reject(new Error(`the thread reading ${file} stopped (exit code ${code})`));
      });
      // While the worker reads the first batch.
      state.loadSymbols();
    });
  } finally {
    await worker.terminate();
  }
  return { analysis: analyzer.result(), source };
}

/** The worker's error as the error its thread threw: the same class, code, message and location. */
function rebuilt(m: PerfDataMessage & { kind: 'error' }): Error {
  const where = m.location === undefined ? '' : formatLocation(m.location);
  const bare = where !== '' && m.message.startsWith(`${where}: `) ? m.message.slice(where.length + 2) : m.message;
  if (m.name === 'KmemError' && m.code !== undefined)
    return new KmemError(m.code as KmemErrorCode, bare, m.location ?? {});
  if (m.name === 'TraceFormatError' && m.code !== undefined)
    return new TraceFormatError(m.code as TraceFormatErrorCode, bare, m.location);
  return Object.assign(new Error(m.message), m.code !== undefined ? { code: m.code } : {});
}
