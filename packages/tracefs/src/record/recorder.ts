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
import { closeSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { EventClass } from '@evtrace/trace-format';
import { TracefsError } from '../errors.ts';
import { planEventFilters } from '../filter/event-filters.ts';
import { readEventFormat, selectEvents } from '../instance/catalog.ts';
import { cleanStaleInstances, createInstance, type Instance } from '../instance/instance.ts';
import { findTracefs } from '../instance/mount.ts';
import { parseCpuStats } from '../pages/pages.ts';
import { rawPipeCpus } from '../pages/raw-pipe.ts';
import { updateCmdlines, writeMetadata } from './metadata.ts';
import type { CpuLoss, RecordOptions, RecordResult } from './options.ts';
import { restorePriority } from './priority.ts';
import { createOutputDir, headRoom } from './raw-dir.ts';
import type { CpuFds, ReaderTotals } from './reader.ts';
import { openCpuOutputs, type ReadState, readInThread, readPerCpu } from './readers.ts';
import { configureBuffer, enableEvents, pageGeometry } from './setup.ts';

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
  // The raw pipes and the outputs (one shared by every CPU in the regions layout), closed whatever happens.
  const descriptors: number[] = [];
  const state: ReadState = { started: false, raised: undefined, threadPriority: undefined };
  try {
    inst = createInstance(tracefs);
    const p = inst.path;
    const woken = configureBuffer(p, options);
    writeMetadata(tracefs, p, options.dir, selected);
    enableEvents(p, selected, plans);
    const geometry = pageGeometry(p);
    const cpuList = rawPipeCpus(p);
    const room = options.headRoom === true ? headRoom(tracefs, options.dir, geometry.pageSize, cpuList) : 0;
    const cpus = openCpuOutputs(p, options.dir, cpuList, room, geometry.pageSize, descriptors);
    const t0 = performance.now();
    const deadline = options.durationMs === undefined ? Number.POSITIVE_INFINITY : t0 + options.durationMs;
    const plan = { p, cpus, geometry, deadline, options };
    const totals =
      options.threads === 'per-cpu' ? await readPerCpu(plan, state) : await readInThread(plan, woken, state);
    const sums = sumTotals(totals);
    const durationMs = performance.now() - t0;
    const lost = kernelLosses(p, cpus, sums.missedPages);
    updateCmdlines(tracefs, options.dir);
    const { events, total } = eventCounts(classes, totals);
    const { raised, threadPriority } = state;
    return {
      dir: options.dir,
      instance: inst.name,
      pageSize: geometry.pageSize,
      events,
      total,
      lost,
      pages: sums.pages,
      dataBytes: sums.dataBytes,
      rawBytes: sums.rawBytes,
      eventClasses: classes,
      userSpaceFilters: new Map([...plans].filter(([, plan]) => plan.userSpace !== undefined)),
      priority: raised?.kind === 'nice' ? raised.nice : raised === undefined ? threadPriority : undefined,
      realtime: raised?.kind === 'realtime' ? raised.priority : undefined,
      durationMs,
    };
  } catch (error) {
    // A recording that never started leaves nothing; one that failed mid-way keeps its pages.
    if (!state.started) rmSync(options.dir, { recursive: true, force: true });
    throw error;
  } finally {
    for (const fd of descriptors) closeSync(fd);
    inst?.remove();
    if (state.raised !== undefined) restorePriority(state.raised);
  }
}

/** The readers' totals summed; pages with the missed-events flag by CPU. */
function sumTotals(totals: readonly ReaderTotals[]) {
  let pages = 0;
  let dataBytes = 0;
  let rawBytes = 0;
  const missedPages: Record<number, number> = {};
  for (const t of totals) {
    pages += t.pages;
    dataBytes += t.dataBytes;
    rawBytes += t.rawBytes;
    Object.assign(missedPages, t.missedPages);
  }
  return { pages, dataBytes, rawBytes, missedPages };
}

/** Each CPU's loss as its `per_cpu/cpuN/stats` counts it, with the pages read with the missed-events flag. */
function kernelLosses(p: string, cpus: readonly CpuFds[], missedPages: Record<number, number>): CpuLoss[] {
  return cpus.map((c) => {
    const s = parseCpuStats(readFileSync(join(p, 'per_cpu', `cpu${c.cpu}`, 'stats'), 'utf8'));
    return {
      cpu: c.cpu,
      overrun: s.overrun ?? 0,
      dropped: s['dropped events'] ?? 0,
      commitOverrun: s['commit overrun'] ?? 0,
      missedPages: missedPages[c.cpu] ?? 0,
    };
  });
}

/** Records read, by `system:event`, and in all. */
function eventCounts(classes: readonly EventClass[], totals: readonly ReaderTotals[]) {
  const events = new Map<string, number>();
  let total = 0;
  for (const c of classes) {
    let n = 0;
    for (const t of totals) n += t.byType[c.id] ?? 0;
    events.set(c.name, n);
    total += n;
  }
  return { events, total };
}
