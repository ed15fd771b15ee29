/**
 * The tracefs recorder: configures a private instance, reads every CPU's `trace_pipe_raw` without blocking and
 * appends the sub-buffers verbatim to `cpuN.raw` files of a raw-pages directory (the layout @evtrace/trace-format's
 * `openRawPagesDir` reads). The metadata (header_page, header_event, formats, sub-buffer size, clock, kallsyms,
 * saved_cmdlines) is written before tracing starts, so a recorder killed at any moment leaves a directory readable up
 * to its last complete page.
 *
 * One loop reads all CPUs: a read returns one sub-buffer, EAGAIN when the CPU's buffer is empty. Between passes the
 * loop sleeps for as long as the fastest CPU needs to fill an eighth of its buffer at the rate just measured, so a
 * busy trace is read early (no loss) and an idle one is read rarely (few near-empty pages, little CPU).
 */
import {
  closeSync,
  constants,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { dirname, join } from 'node:path';
import { type EventClass, type PageLayout, parseHeaderPage } from '@evtrace/trace-format';
import { type EventName, listEvents, matchEvents, readEventFormat } from './catalog.ts';
import { ioError, TracefsError } from './errors.ts';
import { type EventFilterPlan, planEventFilter, writeKernelFilter } from './filter.ts';
import { cleanStaleInstances, createInstance, type Instance } from './instance.ts';
import { findTracefs } from './mount.ts';
import { countPageRecords, type PageCount, parseCpuStats } from './pages.ts';

/** Options of {@link record}. */
export interface RecordOptions {
  /** Event patterns: `system:event`, globs allowed (`sched:*`), or a bare system. */
  readonly events: readonly string[];
  /** The raw-pages directory to create. Its parent must exist; the directory itself must not. */
  readonly dir: string;
  /** An ftrace filter applied to every selected event (kernel part pushed down, the rest left to the reader). */
  readonly filter?: string;
  /** Per-CPU buffer size in KiB (`buffer_size_kb`). Default: the kernel's. */
  readonly bufferKb?: number;
  /** Sub-buffer size in KiB (`buffer_subbuf_size_kb`). Default: the kernel's. */
  readonly subbufKb?: number;
  /** Trace clock (`trace_clock`). Default: the kernel's (`local`). */
  readonly clock?: string;
  /** The tracefs mount point. Default: found through /proc/mounts, mounted when root. */
  readonly tracefs?: string;
  /** Stops the recording when aborted. */
  readonly signal?: AbortSignal;
  /** Stops the recording after this many milliseconds. */
  readonly durationMs?: number;
  /** The nice value the reading thread asks for (raised only when allowed), or false to keep it. Default -20. */
  readonly priority?: number | false;
  /** Called once tracing is on, before the reader raises its priority (so a workload started here keeps its own). */
  readonly onStart?: () => void;
}

/** Events the kernel lost on one CPU, from `per_cpu/cpuN/stats`. */
export interface CpuLoss {
  readonly cpu: number;
  /** Events overwritten before they were read (overwrite mode). */
  readonly overrun: number;
  /** Events dropped because the buffer was full (non-overwrite mode, evtrace's). */
  readonly dropped: number;
  /** Events lost because an interrupt nested too deep while writing. */
  readonly commitOverrun: number;
  /** Pages read with the kernel's missed-events flag. */
  readonly missedPages: number;
}

/** What a recording produced. */
export interface RecordResult {
  /** The raw-pages directory. */
  readonly dir: string;
  /** The tracefs instance used (already removed). */
  readonly instance: string;
  readonly pageSize: number;
  /** Records read, by `system:event`. */
  readonly events: ReadonlyMap<string, number>;
  /** Total records read. */
  readonly total: number;
  /** Loss by CPU. */
  readonly lost: readonly CpuLoss[];
  /** Sub-buffers read. */
  readonly pages: number;
  /** Bytes of record data in them. */
  readonly dataBytes: number;
  /** Bytes of the `cpuN.raw` files. */
  readonly rawBytes: number;
  /** The selected events' classes. */
  readonly eventClasses: readonly EventClass[];
  /** User-space remainders of the filter, by `system:event` (empty when the kernel applies all of it). */
  readonly userSpaceFilters: ReadonlyMap<string, EventFilterPlan>;
  /** The nice value the reader ran at, when it changed it. */
  readonly priority: number | undefined;
  /** Wall time of the recording in ms. */
  readonly durationMs: number;
}

const MIN_POLL_MS = 2;
/**
 * The longest sleep, even when idle: a burst must not fill a buffer before the next pass (20 ms lets a default
 * 1.4 MiB buffer absorb 70 MB/s per CPU; a hackbench load writes about 25 MB/s per CPU).
 */
const MAX_POLL_MS = 20;
/** The share of a CPU buffer the busiest CPU may fill between passes. */
const FILL_BETWEEN_PASSES = 1 / 8;
/** Pages buffered per CPU before one write. */
const BATCH_PAGES = 64;

const write = (file: string, value: string, what: string, code: 'ERR_TRACEFS_SETTING' | 'ERR_TRACEFS_IO') => {
  try {
    writeFileSync(file, value);
  } catch (error) {
    const e = ioError(file, error, what);
    throw e.code === 'ERR_TRACEFS_PERMISSION' ? e : new TracefsError(code, `${what} (${value}): ${e.message}`, e);
  }
};

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Checks the options that need no kernel, so a bad command line leaves nothing behind. */
function checkOptions(options: RecordOptions): void {
  for (const [name, v] of [
    ['bufferKb', options.bufferKb],
    ['subbufKb', options.subbufKb],
  ] as const) {
    if (v !== undefined && (!Number.isInteger(v) || v <= 0)) {
      throw new TracefsError('ERR_TRACEFS_SETTING', `${name} must be a positive integer, not ${v}`);
    }
  }
  if (options.events.length === 0) throw new TracefsError('ERR_TRACEFS_EVENT', 'no event selected');
}

/** Creates the output directory; its parent must exist. */
function createOutputDir(dir: string): void {
  try {
    mkdirSync(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT' ? `directory ${dirname(dir)} does not exist` : code === 'EEXIST' ? 'already exists' : code;
    throw new TracefsError('ERR_TRACEFS_OUTPUT', `cannot create ${dir}: ${why}`, {
      path: dir,
      errno: code,
      cause: error,
    });
  }
}

/** Copies the instance's metadata into the raw-pages directory. */
function writeMetadata(tracefs: string, inst: string, dir: string, selected: readonly EventName[]): void {
  mkdirSync(join(dir, 'events'));
  // tracefs files report size 0, so they are read and written, never copied with copy_file_range.
  for (const f of ['header_page', 'header_event']) {
    writeFileSync(join(dir, 'events', f), readFileSync(join(inst, 'events', f)));
  }
  for (const e of selected) {
    const to = join(dir, 'events', e.system, e.event);
    mkdirSync(to, { recursive: true });
    writeFileSync(join(to, 'format'), readFileSync(join(inst, 'events', e.system, e.event, 'format')));
  }
  writeFileSync(join(dir, 'buffer_subbuf_size_kb'), readFileSync(join(inst, 'buffer_subbuf_size_kb')));
  writeFileSync(join(dir, 'trace_clock'), readFileSync(join(inst, 'trace_clock')));
  writeFileSync(join(dir, 'saved_cmdlines'), readFileSync(join(tracefs, 'saved_cmdlines')));
  try {
    writeFileSync(join(dir, 'kallsyms'), readFileSync('/proc/kallsyms'));
  } catch {}
}

interface CpuReader {
  readonly cpu: number;
  readonly fd: number;
  readonly out: number;
  missedPages: number;
}

/**
 * Records the selected events until `signal` aborts or `durationMs` passes, into a new raw-pages directory.
 * Nothing is left in tracefs afterwards, whatever happens; when configuration fails, the output directory is
 * removed too.
 *
 * @throws TracefsError for unknown events (`ERR_TRACEFS_EVENT`), invalid filters (`ERR_TRACEFS_FILTER`), a missing
 * output directory (`ERR_TRACEFS_OUTPUT`), refused settings (`ERR_TRACEFS_SETTING`), or missing privileges.
 */
export async function record(options: RecordOptions): Promise<RecordResult> {
  checkOptions(options);
  const tracefs = options.tracefs ?? findTracefs();
  cleanStaleInstances(tracefs);
  const selected = matchEvents(listEvents(tracefs), options.events);
  const classes = selected.map((e) => readEventFormat(tracefs, e).eventClass);
  const plans = new Map<string, EventFilterPlan>();
  if (options.filter !== undefined && options.filter.trim() !== '') {
    for (const c of classes) plans.set(c.name, planEventFilter(options.filter, c));
  }
  createOutputDir(options.dir);
  let inst: Instance | undefined;
  const readers: CpuReader[] = [];
  let started = false;
  let raised: { set: number; before: number } | undefined;
  try {
    inst = createInstance(tracefs);
    const p = inst.path;
    write(join(p, 'tracing_on'), '0', 'cannot stop tracing in the instance', 'ERR_TRACEFS_IO');
    if (options.subbufKb !== undefined) {
      write(
        join(p, 'buffer_subbuf_size_kb'),
        String(options.subbufKb),
        'the kernel refused the sub-buffer size',
        'ERR_TRACEFS_SETTING',
      );
    }
    if (options.bufferKb !== undefined) {
      write(
        join(p, 'buffer_size_kb'),
        String(options.bufferKb),
        'the kernel refused the buffer size',
        'ERR_TRACEFS_SETTING',
      );
    }
    if (options.clock !== undefined) {
      write(join(p, 'trace_clock'), options.clock, 'the kernel refused the trace clock', 'ERR_TRACEFS_SETTING');
    }
    // Keep the oldest events when the reader falls behind: the stats then count what was dropped.
    write(join(p, 'options', 'overwrite'), '0', 'cannot set non-overwrite mode', 'ERR_TRACEFS_SETTING');
    writeMetadata(tracefs, p, options.dir, selected);
    for (const [name, plan] of plans) {
      if (plan.kernel === undefined) continue;
      const [system, event] = [name.slice(0, name.indexOf(':')), name.slice(name.indexOf(':') + 1)];
      writeKernelFilter(p, join(p, 'events', system, event), plan.kernel);
    }
    for (const e of selected) {
      write(
        join(p, 'events', e.system, e.event, 'enable'),
        '1',
        `cannot enable ${e.system}:${e.event}`,
        'ERR_TRACEFS_IO',
      );
    }
    const pageSize = Number(readFileSync(join(p, 'buffer_subbuf_size_kb'), 'utf8').trim()) * 1024;
    const layout: PageLayout = parseHeaderPage(readFileSync(join(p, 'events', 'header_page'), 'utf8'), { pageSize });
    const bufferKb = Number(readFileSync(join(p, 'buffer_size_kb'), 'utf8').match(/\d+/)?.[0] ?? 1408);
    for (const name of readdirSync(join(p, 'per_cpu'))) {
      const m = /^cpu(\d+)$/.exec(name);
      if (m === null) continue;
      const cpu = Number(m[1]);
      const file = join(p, 'per_cpu', name, 'trace_pipe_raw');
      let fd: number;
      try {
        fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
      } catch (error) {
        throw ioError(file, error, 'cannot open the raw pipe');
      }
      readers.push({ cpu, fd, out: openSync(join(options.dir, `cpu${cpu}.raw`), 'w'), missedPages: 0 });
    }
    readers.sort((a, b) => a.cpu - b.cpu);
    const byType = new Float64Array(65536);
    const count: PageCount = { records: 0, dataBytes: 0, missed: false, corruptAt: -1 };
    const buf = Buffer.allocUnsafe(pageSize * BATCH_PAGES);
    let pages = 0;
    let dataBytes = 0;
    let rawBytes = 0;
    const pageCap = Math.max(1, Math.floor((bufferKb * 1024) / pageSize));
    /** Reads one CPU until it is empty (or one buffer's worth); returns the record bytes read. */
    const drain = (r: CpuReader): number => {
      let off = 0;
      let bytes = 0;
      const flush = () => {
        let done = 0;
        while (done < off) done += writeSync(r.out, buf, done, off - done);
        rawBytes += off;
        off = 0;
      };
      for (let n = 0; n < pageCap; n++) {
        let got: number;
        try {
          got = readSync(r.fd, buf, off, pageSize, null);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
          throw ioError(`per_cpu/cpu${r.cpu}/trace_pipe_raw`, error, 'reading the raw pipe failed');
        }
        if (got === 0) break;
        if (got < pageSize) buf.fill(0, off + got, off + pageSize);
        countPageRecords(buf, off, layout, byType, count);
        if (count.missed) r.missedPages++;
        bytes += count.dataBytes;
        dataBytes += count.dataBytes;
        pages++;
        off += pageSize;
        if (off === buf.length) flush();
      }
      if (off > 0) flush();
      return bytes;
    };
    const t0 = performance.now();
    const deadline = options.durationMs === undefined ? Number.POSITIVE_INFINITY : t0 + options.durationMs;
    write(join(p, 'tracing_on'), '1', 'cannot start tracing', 'ERR_TRACEFS_IO');
    started = true;
    options.onStart?.();
    // Raised after the workload started, so that it keeps its own priority.
    raised = raisePriority(options.priority);
    let interval = MIN_POLL_MS * 4;
    let last = performance.now();
    const bufferBytes = bufferKb * 1024;
    while (!options.signal?.aborted && performance.now() < deadline) {
      let fastest = 0;
      for (const r of readers) fastest = Math.max(fastest, drain(r));
      const now = performance.now();
      const rate = fastest / Math.max(now - last, 0.1); // bytes per ms on the busiest CPU
      last = now;
      const target = rate > 0 ? (bufferBytes * FILL_BETWEEN_PASSES) / rate : MAX_POLL_MS;
      // Shorten at once when data arrives faster, lengthen gently when it slows down.
      interval = Math.max(MIN_POLL_MS, Math.min(MAX_POLL_MS, target, interval * 2));
      await sleep(Math.max(0, Math.min(interval, deadline - performance.now())), options.signal);
    }
    write(join(p, 'tracing_on'), '0', 'cannot stop tracing', 'ERR_TRACEFS_IO');
    for (const r of readers) while (drain(r) > 0);
    const durationMs = performance.now() - t0;
    const lost: CpuLoss[] = readers.map((r) => {
      const s = parseCpuStats(readFileSync(join(p, 'per_cpu', `cpu${r.cpu}`, 'stats'), 'utf8'));
      return {
        cpu: r.cpu,
        overrun: s.overrun ?? 0,
        dropped: s['dropped events'] ?? 0,
        commitOverrun: s['commit overrun'] ?? 0,
        missedPages: r.missedPages,
      };
    });
    writeFileSync(join(options.dir, 'saved_cmdlines'), readFileSync(join(tracefs, 'saved_cmdlines')));
    const events = new Map<string, number>();
    let total = 0;
    for (const c of classes) {
      const n = byType[c.id] ?? 0;
      events.set(c.name, n);
      total += n;
    }
    return {
      dir: options.dir,
      instance: inst.name,
      pageSize,
      events,
      total,
      lost,
      pages,
      dataBytes,
      rawBytes,
      eventClasses: classes,
      userSpaceFilters: new Map([...plans].filter(([, plan]) => plan.userSpace !== undefined)),
      priority: raised?.set,
      durationMs,
    };
  } catch (error) {
    // A recording that never started leaves nothing; one that failed mid-way keeps its pages.
    if (!started) rmSync(options.dir, { recursive: true, force: true });
    throw error;
  } finally {
    for (const r of readers) {
      closeSync(r.fd);
      closeSync(r.out);
    }
    inst?.remove();
    if (raised !== undefined) {
      try {
        setPriority(raised.before);
      } catch {}
    }
  }
}

/** Raises the calling thread's priority to `wanted` when allowed; returns the value set, or undefined. */
function raisePriority(wanted: number | false | undefined): { set: number; before: number } | undefined {
  if (wanted === false) return undefined;
  const target = wanted ?? -20;
  try {
    const before = getPriority();
    if (before <= target) return undefined;
    setPriority(target);
    return { set: target, before };
  } catch {
    return undefined;
  }
}
