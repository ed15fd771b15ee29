/**
 * The tracefs recorder: configures a private instance, reads every CPU's `trace_pipe_raw` without blocking and
 * appends the sub-buffers verbatim to `cpuN.raw` files (or to each CPU's region of one `cpus.raw`) of a raw-pages
 * directory (the layouts @evtrace/trace-format's `openRawPagesDir` reads). The metadata (header_page, header_event,
 * formats, sub-buffer size, clock, kallsyms, saved_cmdlines) is written before tracing starts, so a recorder killed
 * at any moment leaves a directory readable up to its last complete page.
 *
 * One loop reads all CPUs (or, on request, one worker thread per CPU): a read returns one sub-buffer, EAGAIN when
 * the CPU's buffer is empty. Between passes the reader sleeps for as long as the busiest CPU needs to fill an eighth
 * of its buffer at the rate just measured (2-20 ms), so a busy trace is read early and an idle one rarely.
 */
import {
  closeSync,
  constants,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import {
  type EventClass,
  errnoText,
  type PageLayout,
  parseHeaderPage,
  RAW_HEAD_ROOM_FILE,
  RAW_REGIONS_FILE,
  RAW_REGIONS_PAGES_FILE,
  regionsText,
} from '@evtrace/trace-format';
import { ioError, outputError, TracefsError, type TracefsErrorCode } from '../errors.ts';
import { planEventFilters, type ScopedFilter } from '../filter/event-filters.ts';
import { type EventFilterPlan, writeKernelFilter } from '../filter/filter.ts';
import { type EventName, readEventFormat, selectEvents } from '../instance/catalog.ts';
import { cleanStaleInstances, createInstance, type Instance } from '../instance/instance.ts';
import { findTracefs } from '../instance/mount.ts';
import { largestFileSize, planRegions, type Region, regionsSupported } from '../output/regions.ts';
import { traceDatHeadRoom } from '../output/tracedat.ts';
import { parseCpuStats } from '../pages/pages.ts';
import { PipeWaiter, WAKE_PERCENT } from './pipe-wait.ts';
import { DEFAULT_NICE, type Raised, raisePriority, restorePriority } from './priority.ts';
import { type CpuFds, MIN_POLL_MS, nextInterval, PageReader, type ReaderTotals } from './reader.ts';
import type { ReaderWorkerData } from './reader-worker.ts';

/** Options of {@link record}. */
export interface RecordOptions {
  /** Event patterns: `system:event`, globs allowed (`sched:*`), or a bare system. */
  readonly events: readonly string[];
  /** The raw-pages directory to create. Its parent must exist; the directory itself must not. */
  readonly dir: string;
  /**
   * The directory is readable by every user (0755 less the umask). Default false: its owner only (0700), since
   * recordings hold kernel addresses.
   */
  readonly share?: boolean;
  /** An ftrace filter applied to every selected event (kernel part pushed down, the rest left to the reader). */
  readonly filter?: string;
  /**
   * Filters for some of the selected events (trace-cmd's `-e EVENT -f FILTER`). An event named by several filters,
   * or by one and `filter`, gets all of them joined with `&&`.
   */
  readonly filters?: readonly ScopedFilter[];
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
  /**
   * How the recorder raises its threads once tracing is on (only where allowed; put back afterwards, see
   * priority.ts): by default to SCHED_FIFO priority 1, or nice -20 where real-time scheduling is refused; a number
   * asks for that nice value instead; false keeps the priority as it is.
   */
  readonly priority?: number | false;
  /**
   * Readers: `single` (default) reads all CPUs in one loop on the calling thread; `per-cpu` reads each CPU in its
   * own worker thread, sleeping on an Atomics wait. Measured under a hackbench load on 2 CPUs (record.bench.ts), both
   * lose about as much; the single loop uses less CPU (no thread start-up).
   */
  readonly threads?: 'per-cpu' | 'single';
  /**
   * How the single reader sleeps between passes. `event-loop` (default): on a timer, so the calling thread keeps
   * serving its other work. `blocking`: in `Atomics.wait` on the calling thread, returning to the event loop every
   * 100 ms so that signals, child exits and the abort signal are still seen (that late at most). A
   * futex wake-up costs a third of a timer's under load (measured here: about 0.1 ms of CPU against 0.3 ms), so a
   * program with nothing else to do on that thread (the `evtrace record` command) records for less CPU. Where
   * poll(2) can be called, `blocking` waits in it instead: the kernel wakes the reader when a CPU's buffer is 18%
   * full (the instance's `buffer_percent`), so an idle recording wakes ten times a second, not fifty, and a
   * burst is read at once rather than at the next timer.
   */
  readonly sleep?: 'event-loop' | 'blocking';
  /** Called once tracing is on, before the reader raises its priority (so a workload started here keeps its own). */
  readonly onStart?: () => void;
  /**
   * Leave room for a trace.dat head (a sparse hole, noted in `head_room`) before the pages, so that
   * `finalizeRecording` to trace.dat builds the file where the pages lie instead of copying them. On ext4 and XFS
   * every CPU then writes into its own region of one `cpus.raw` (`cpu_regions`), whose holes finalizing closes;
   * elsewhere each `cpuN.raw` gets the room and the largest becomes the file. Default false.
   */
  readonly headRoom?: boolean;
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
  /** Bytes of pages written (to the `cpuN.raw` files or the regions of `cpus.raw`). */
  readonly rawBytes: number;
  /** The selected events' classes. */
  readonly eventClasses: readonly EventClass[];
  /** User-space remainders of the filter, by `system:event` (empty when the kernel applies all of it). */
  readonly userSpaceFilters: ReadonlyMap<string, EventFilterPlan>;
  /** The nice value the reader ran at, when it changed it. */
  readonly priority: number | undefined;
  /** The SCHED_FIFO priority the recorder's threads ran at, when it raised them to it. */
  readonly realtime: number | undefined;
  /** Wall time of the recording in ms. */
  readonly durationMs: number;
  /** Synthetic events from the demo source, not from the kernel. */
  readonly demo?: boolean;
}

const write = (file: string, value: string, what: string, code: 'ERR_TRACEFS_SETTING' | 'ERR_TRACEFS_IO') => {
  try {
    writeFileSync(file, value);
  } catch (error) {
    const e = ioError(file, error, what);
    throw e.code === 'ERR_TRACEFS_PERMISSION' ? e : new TracefsError(code, `${what} (${value}): ${e.message}`, e);
  }
};

/** Writes an optional setting; false when this kernel lacks it or refuses the value. */
function trySetting(file: string, value: string): boolean {
  try {
    writeFileSync(file, value);
    return true;
  } catch {
    return false;
  }
}

/** The longest a `blocking` reader goes without turning to the event loop. */
const YIELD_MS = 100;

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

/** Creates the output directory, private unless shared; its parent must exist. */
export function createOutputDir(dir: string, share = false): void {
  try {
    mkdirSync(dir, share ? 0o755 : 0o700);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? `directory ${dirname(dir)} does not exist`
        : code === 'EEXIST'
          ? 'already exists'
          : errnoText(error);
    throw new TracefsError('ERR_TRACEFS_OUTPUT', `cannot create ${dir}: ${why}`, {
      path: dir,
      errno: code,
      cause: error,
    });
  }
}

/** Runs a write of the output directory, turning its failure (a full disk) into an `ERR_TRACEFS_OUTPUT` naming `file`. */
function output<T>(file: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw outputError(file, error);
  }
}

/** Reads a tracefs file whole (they report size 0, so they are read, never copied with copy_file_range). */
function readTracefs(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw ioError(file, error, 'cannot read');
  }
}

/**
 * Copies a file whose size is unknown (procfs, tracefs) as bytes, gathering reads into `chunk` before each write:
 * procfs hands out /proc/kallsyms (5 MB, 120k symbols) a page per read, and writing each page out cost a thousand
 * write calls (measured: a fifth of a short recording's system time). A failed read is an `ERR_TRACEFS_IO`, a failed
 * write an `ERR_TRACEFS_OUTPUT`.
 */
function copyUnsized(from: string, to: string, chunk: Buffer): void {
  let input: number;
  try {
    input = openSync(from, 'r');
  } catch (error) {
    throw ioError(from, error, 'cannot read');
  }
  try {
    const out = output(to, () => openSync(to, 'w'));
    const flush = (n: number) =>
      output(to, () => {
        for (let done = 0; done < n; ) done += writeSync(out, chunk, done, n - done);
      });
    try {
      let filled = 0;
      for (;;) {
        let n: number;
        try {
          n = readSync(input, chunk, filled, chunk.length - filled, null);
        } catch (error) {
          throw ioError(from, error, 'cannot read');
        }
        filled += n;
        if (n === 0 || filled === chunk.length) {
          flush(filled);
          if (n === 0) break;
          filled = 0;
        }
      }
    } finally {
      closeSync(out);
    }
  } finally {
    closeSync(input);
  }
}

/** Copies the instance's metadata into the raw-pages directory. */
function writeMetadata(tracefs: string, inst: string, dir: string, selected: readonly EventName[]): void {
  const put = (file: string, data: Buffer) => output(file, () => writeFileSync(file, data));
  output(join(dir, 'events'), () => mkdirSync(join(dir, 'events')));
  for (const f of ['header_page', 'header_event']) put(join(dir, 'events', f), readTracefs(join(inst, 'events', f)));
  for (const e of selected) {
    const to = join(dir, 'events', e.system, e.event);
    output(to, () => mkdirSync(to, { recursive: true }));
    put(join(to, 'format'), readTracefs(join(inst, 'events', e.system, e.event, 'format')));
  }
  put(join(dir, 'buffer_subbuf_size_kb'), readTracefs(join(inst, 'buffer_subbuf_size_kb')));
  put(join(dir, 'trace_clock'), readTracefs(join(inst, 'trace_clock')));
  // 256 KiB, not 1 MiB: each new page of the buffer costs a page fault on first use, and 1 MiB took 1 ms more CPU
  // for the same copy of /proc/kallsyms (measured here: 26.1-27.6 ms against 27.1-29.3, four runs each).
  const chunk = Buffer.allocUnsafe(256 << 10);
  copyUnsized(join(tracefs, 'saved_cmdlines'), join(dir, 'saved_cmdlines'), chunk);
  // The kernel's printk strings, which some fields point into (rcu_utilization's): readers print them as trace-cmd.
  copyUnsized(join(tracefs, 'printk_formats'), join(dir, 'printk_formats'), chunk);
  try {
    copyUnsized('/proc/kallsyms', join(dir, 'kallsyms'), chunk);
  } catch (error) {
    rmSync(join(dir, 'kallsyms'), { force: true });
    // Symbols are optional when they cannot be read (readers print addresses); a full disk fails the recording
    // now, before tracing starts, rather than after its first pages.
    if ((error as TracefsError).code === 'ERR_TRACEFS_OUTPUT') throw error;
  }
}

/**
 * The head room of a recording that will become a trace.dat, written to `head_room`: the head as the metadata
 * stands, with the kernel's whole saved-cmdlines table (the one copied at the end may have grown). 0, and no file,
 * when the table's size cannot be read.
 */
function headRoom(tracefs: string, dir: string, pageSize: number, cpus: readonly number[]): number {
  let entries: number;
  try {
    entries = Number(readFileSync(join(tracefs, 'saved_cmdlines_size'), 'utf8').trim());
  } catch {
    return 0;
  }
  if (!Number.isSafeInteger(entries) || entries <= 0) return 0;
  const room = traceDatHeadRoom(dir, pageSize, Math.max(0, ...cpus) + 1, entries);
  output(join(dir, RAW_HEAD_ROOM_FILE), () => writeFileSync(join(dir, RAW_HEAD_ROOM_FILE), `${room}\n`));
  return room;
}

/** Opens a new `cpuN.raw` whose pages start after `room` bytes of hole: appends land at the end. */
function openRaw(path: string, room: number): number {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_APPEND, 0o644);
  if (room > 0) {
    try {
      ftruncateSync(fd, room);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }
  return fd;
}

/**
 * Opens the regions layout's pages file where the file system allows it (see regions.ts), with `cpu_regions` saying
 * where each CPU's pages go; undefined elsewhere (each CPU then gets its own `cpuN.raw`).
 */
function openRegions(
  dir: string,
  cpus: readonly number[],
  room: number,
  pageSize: number,
): { fd: number; path: string; regions: Region[] } | undefined {
  if (cpus.length === 0 || !regionsSupported(dir)) return undefined;
  const path = join(dir, RAW_REGIONS_PAGES_FILE);
  const fd = output(path, () => openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_TRUNC, 0o644));
  try {
    const max = largestFileSize(fd, room);
    const align = Math.max(pageSize, 1 << 20);
    const regions = max === undefined ? [] : planRegions(cpus, room, max, align);
    if (regions.length === 0 || regions[0]!.end - regions[0]!.start < align) {
      closeSync(fd);
      rmSync(path, { force: true });
      return undefined;
    }
    const file = join(dir, RAW_REGIONS_FILE);
    output(file, () => {
      writeFileSync(`${file}.next`, regionsText(regions));
      renameSync(`${file}.next`, file);
    });
    return { fd, path, regions };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/**
 * Replaces the saved_cmdlines copied at the start with the final table (commands seen while recording) through a
 * temporary file, so a full disk keeps the first table instead of truncating it.
 */
function updateCmdlines(tracefs: string, dir: string): void {
  const file = join(dir, 'saved_cmdlines');
  const next = `${file}.next`;
  try {
    output(file, () => writeFileSync(next, readTracefs(join(tracefs, 'saved_cmdlines'))));
    renameSync(next, file);
  } catch (error) {
    rmSync(next, { force: true });
    throw error;
  }
}

interface CpuReader {
  readonly cpu: number;
  readonly fd: number;
  readonly out: number;
  readonly outPath: string;
  readonly region?: Region;
  missedPages: number;
}

/**
 * Records the selected events until `signal` aborts or `durationMs` passes, into a new raw-pages directory.
 * Nothing is left in tracefs afterwards, whatever happens; when configuration fails, the output directory is
 * removed too. When writing fails once tracing has started (a full disk), the recording stops and the directory is
 * kept, every `cpuN.raw` cut back to its last whole page: what was recorded stays readable and convertible.
 *
 * @throws TracefsError for unknown events (`ERR_TRACEFS_EVENT`), invalid filters (`ERR_TRACEFS_FILTER`), an output
 * that cannot be created or written, e.g. a full disk (`ERR_TRACEFS_OUTPUT`, with `path` and `errno`), refused
 * settings (`ERR_TRACEFS_SETTING`), or missing privileges.
 */
export async function record(options: RecordOptions): Promise<RecordResult> {
  checkOptions(options);
  const tracefs = options.tracefs ?? findTracefs();
  cleanStaleInstances(tracefs);
  const selected = selectEvents(tracefs, options.events);
  const classes = selected.map((e) => readEventFormat(tracefs, e).eventClass);
  const plans = planEventFilters(classes, options);
  createOutputDir(options.dir, options.share === true);
  let inst: Instance | undefined;
  const readers: CpuReader[] = [];
  // Descriptors to close: the raw pipes, and the outputs (one shared by every CPU in the regions layout).
  const pipes: number[] = [];
  const outputs: number[] = [];
  let started = false;
  let raised: Raised | undefined;
  let threadPriority: number | undefined;
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
    // The fill at which poll(2) on a raw pipe returns (kernels without the file wake on any data: not used then).
    const woken = trySetting(join(p, 'buffer_percent'), String(WAKE_PERCENT));
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
    const cpus = readdirSync(join(p, 'per_cpu'))
      .map((name) => /^cpu(\d+)$/.exec(name))
      .filter((m) => m !== null)
      .map((m) => Number(m[1]));
    const room = options.headRoom === true ? headRoom(tracefs, options.dir, pageSize, cpus) : 0;
    const shared =
      room > 0
        ? openRegions(
            options.dir,
            [...cpus].sort((a, b) => a - b),
            room,
            pageSize,
          )
        : undefined;
    if (shared !== undefined) outputs.push(shared.fd);
    for (const cpu of cpus) {
      const file = join(p, 'per_cpu', `cpu${cpu}`, 'trace_pipe_raw');
      let fd: number;
      try {
        fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
      } catch (error) {
        throw ioError(file, error, 'cannot open the raw pipe');
      }
      pipes.push(fd);
      const region = shared?.regions.find((r) => r.cpu === cpu);
      if (shared !== undefined && region !== undefined) {
        readers.push({ cpu, fd, out: shared.fd, outPath: shared.path, region, missedPages: 0 });
        continue;
      }
      const outPath = join(options.dir, `cpu${cpu}.raw`);
      const out = output(outPath, () => openRaw(outPath, room));
      outputs.push(out);
      readers.push({ cpu, fd, out, outPath, missedPages: 0 });
    }
    readers.sort((a, b) => a.cpu - b.cpu);
    const fds: CpuFds[] = readers.map((r) => ({
      cpu: r.cpu,
      pipe: r.fd,
      out: r.out,
      outPath: r.outPath,
      ...(r.region !== undefined ? { region: { start: r.region.start, end: r.region.end } } : {}),
    }));
    const bufferBytes = bufferKb * 1024;
    const t0 = performance.now();
    const deadline = options.durationMs === undefined ? Number.POSITIVE_INFINITY : t0 + options.durationMs;
    const stopTracing = () => write(join(p, 'tracing_on'), '0', 'cannot stop tracing', 'ERR_TRACEFS_IO');
    let totals: ReaderTotals[];
    if (options.threads === 'per-cpu') {
      const threads = fds.map((cpu) => startReaderThread(cpu, layout, bufferBytes, options.priority));
      threadPriority = options.priority === false ? undefined : (options.priority ?? DEFAULT_NICE);
      try {
        // A thread that fails before it is ready rejects `done`: wait for whichever comes first.
        await Promise.race([Promise.all(threads.map((t) => t.ready)), ...threads.map((t) => t.done)]);
        write(join(p, 'tracing_on'), '1', 'cannot start tracing', 'ERR_TRACEFS_IO');
        started = true;
        options.onStart?.();
        raised = raisePriority(options.priority);
        // A thread that fails (a full disk) ends the recording at once, not at the deadline.
        const running = new AbortController();
        const end = () => running.abort();
        options.signal?.addEventListener('abort', end, { once: true });
        for (const t of threads) t.done.catch(end);
        try {
          while (!options.signal?.aborted && !running.signal.aborted && performance.now() < deadline) {
            await sleep(Math.min(250, deadline - performance.now()), running.signal);
          }
        } finally {
          options.signal?.removeEventListener('abort', end);
        }
        stopTracing();
      } finally {
        for (const t of threads) t.stop();
      }
      totals = await Promise.all(threads.map((t) => t.done));
    } else {
      const reader = new PageReader(fds, layout, bufferBytes);
      write(join(p, 'tracing_on'), '1', 'cannot start tracing', 'ERR_TRACEFS_IO');
      started = true;
      options.onStart?.();
      // Raised after the workload started, so that it keeps its own priority.
      raised = raisePriority(options.priority);
      let interval = MIN_POLL_MS * 4;
      let last = performance.now();
      const nap = options.sleep === 'blocking' ? new Int32Array(new SharedArrayBuffer(4)) : undefined;
      let waiter = nap !== undefined && woken ? PipeWaiter.open(fds.map((f) => f.pipe)) : undefined;
      let yielded = last;
      while (!options.signal?.aborted && performance.now() < deadline) {
        const fastest = reader.drainAll();
        const now = performance.now();
        interval = nextInterval(interval, fastest, now - last, bufferBytes);
        last = now;
        const ms = Math.max(0, Math.min(interval, deadline - now));
        if (nap !== undefined && now - yielded < YIELD_MS) {
          if (waiter?.wait(Math.min(YIELD_MS - (now - yielded), deadline - now)) === false) waiter = undefined;
          if (waiter === undefined) Atomics.wait(nap, 0, 0, ms);
        } else {
          // Woken by the kernel, the reader only needs one turn of the event loop here, not a nap; it then waits
          // again rather than draining pipes it drained just before the turn (an idle recording drained twice a wake).
          await sleep(waiter !== undefined ? 0 : ms, options.signal);
          yielded = performance.now();
          if (waiter !== undefined && !options.signal?.aborted && yielded < deadline) {
            if (!waiter.wait(Math.min(YIELD_MS, deadline - yielded))) waiter = undefined;
          }
        }
      }
      stopTracing();
      reader.drainToEnd();
      totals = [reader.totals];
    }
    let pages = 0;
    let dataBytes = 0;
    let rawBytes = 0;
    const missed: Record<number, number> = {};
    for (const t of totals) {
      pages += t.pages;
      dataBytes += t.dataBytes;
      rawBytes += t.rawBytes;
      Object.assign(missed, t.missedPages);
    }
    for (const r of readers) r.missedPages = missed[r.cpu] ?? 0;
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
    updateCmdlines(tracefs, options.dir);
    const events = new Map<string, number>();
    let total = 0;
    for (const c of classes) {
      let n = 0;
      for (const t of totals) n += t.byType[c.id] ?? 0;
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
      priority: raised?.kind === 'nice' ? raised.nice : raised === undefined ? threadPriority : undefined,
      realtime: raised?.kind === 'realtime' ? raised.priority : undefined,
      durationMs,
    };
  } catch (error) {
    // A recording that never started leaves nothing; one that failed mid-way keeps its pages.
    if (!started) rmSync(options.dir, { recursive: true, force: true });
    throw error;
  } finally {
    for (const fd of [...pipes, ...outputs]) closeSync(fd);
    inst?.remove();
    if (raised !== undefined) restorePriority(raised);
  }
}

/** A reader thread for one CPU: `stop()` after tracing is off; `done` resolves to what it read. */
function startReaderThread(
  cpu: CpuFds,
  layout: PageLayout,
  bufferBytes: number,
  priority: number | false | undefined,
): { stop: () => void; ready: Promise<void>; done: Promise<ReaderTotals> } {
  const control = new Int32Array(new SharedArrayBuffer(4));
  const data: ReaderWorkerData = {
    cpus: [cpu],
    layout,
    bufferBytes,
    priority: priority === false ? undefined : (priority ?? DEFAULT_NICE),
    control,
  };
  // Sources run as .ts (type stripping); the built package ships reader-worker.js beside index.js.
  const file = import.meta.url.endsWith('.ts') ? './reader-worker.ts' : './reader-worker.js';
  // Loaded here: the default single reader never needs node:worker_threads.
  const { Worker } = process.getBuiltinModule('node:worker_threads') as typeof import('node:worker_threads');
  const worker = new Worker(new URL(file, import.meta.url), { workerData: data });
  let onReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  const done = new Promise<ReaderTotals>((resolve, reject) => {
    type Failure = { message: string; code?: string; path?: string; errno?: string };
    worker.on('message', (m: { ready?: true; totals?: ReaderTotals; error?: Failure }) => {
      if (m.ready) onReady();
      else if (m.totals !== undefined) resolve(m.totals);
      else {
        const code = (m.error?.code?.startsWith('ERR_TRACEFS_') ? m.error.code : 'ERR_TRACEFS_IO') as TracefsErrorCode;
        const { path, errno } = m.error ?? {};
        reject(
          new TracefsError(code, m.error?.message ?? 'reader thread failed', {
            ...(path !== undefined ? { path } : {}),
            ...(errno !== undefined ? { errno } : {}),
          }),
        );
      }
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new TracefsError('ERR_TRACEFS_IO', `reader thread exited (${code})`)));
  });
  return {
    stop: () => {
      Atomics.store(control, 0, 1);
      Atomics.notify(control, 0);
    },
    ready,
    done,
  };
}
