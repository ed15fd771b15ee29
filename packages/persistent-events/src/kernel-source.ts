/**
 * A kernel persistent buffer (a tracefs instance `evtrace.p.*`, or a boot-time one) as an event source: its per-CPU
 * raw pipes are drained as @evtrace/tracefs's kernel source drains a session's own instance (reading consumes what
 * a pipe hands over, as any trace_pipe reader does). Its settings, tracing switch and the instance itself are the
 * buffer's: never changed, never removed.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type EventClass,
  FTRACE_PAGE_RECORD,
  type PageSink,
  parseHeaderPage,
  type SourceCpuCounters,
} from '@evtrace/trace-format';
import {
  closeRawPipes,
  findTracefs,
  kernelLoss,
  openRawPipe,
  type RawPipe,
  RawPipeDrain,
  rawPipeCpus,
  readEventFormat,
  withoutStackTraces,
} from '@evtrace/tracefs';
import { PersistentError } from './errors.ts';
import { type KernelBuffer, openKernelBuffer } from './kernel.ts';
import type { PersistentSource, PersistentTarget } from './source.ts';

/** One CPU's raw pipe and what its sink got. */
interface KernelCpu {
  readonly pipe: RawPipe;
  events: number;
  refused: number;
  bytes: number;
  /** The kernel's loss counter when the source was prepared: only what is lost since counts. */
  lostBefore: number;
}

/** A kernel persistent buffer, read through its raw pipes; see the module's comment. */
export class KernelBufferSource implements PersistentSource {
  readonly kind = 'persistent';
  readonly demo = false;
  readonly target: PersistentTarget;
  cpus: readonly number[] = [];
  pageSize = 4096;
  eventClasses: readonly EventClass[] = [];
  path = '';
  size = 0;
  mode: 'overwrite' | 'discard' = 'overwrite';
  readonly #tracefs: string | undefined;
  #root = '';
  #kb: KernelBuffer | undefined;
  #events: { system: string; event: string }[] = [];
  #drain: RawPipeDrain | undefined;
  #cpus: KernelCpu[] = [];
  #sinks: readonly PageSink[] = [];

  /** `tracefs`: the tracefs mount point, when not found. */
  constructor(target: PersistentTarget, tracefs?: string) {
    this.target = target;
    this.#tracefs = tracefs;
  }

  /**
   * Opens the instance's raw pipes; a second call does nothing.
   *
   * @throws PersistentError as {@link openKernelBuffer} does, `ERR_PERSISTENT_UNSUPPORTED` for a buffer that records no events,
   * `ERR_PERSISTENT_IO` when no raw pipe opens; TracefsError when tracefs or an event format cannot be read.
   */
  prepare(): void {
    if (this.#cpus.length > 0) return;
    try {
      this.#root = this.#tracefs ?? findTracefs();
      this.#kb = openKernelBuffer(this.target.buffer, { tracefs: this.#root });
      const kb = this.#kb;
      const info = kb.info();
      this.path = kb.path;
      this.size = info.size;
      this.mode = info.mode;
      this.#events = kb.events().map((e) => {
        const colon = e.indexOf(':');
        return { system: e.slice(0, colon), event: e.slice(colon + 1) };
      });
      if (this.#events.length === 0)
        throw new PersistentError(
          'ERR_PERSISTENT_UNSUPPORTED',
          `kernel buffer ${this.target.buffer} records no events (its set_event is empty)`,
          { path: kb.path },
        );
      this.eventClasses = this.#events.map((e) => readEventFormat(this.#root, e).eventClass);
      this.pageSize = Number(readFileSync(join(kb.path, 'buffer_subbuf_size_kb'), 'utf8').trim()) * 1024;
      const layout = parseHeaderPage(readFileSync(join(kb.path, 'events', 'header_page'), 'utf8'), {
        pageSize: this.pageSize,
      });
      this.#drain = new RawPipeDrain(layout);
      let failure: unknown;
      for (const cpu of rawPipeCpus(kb.path)) {
        let pipe: RawPipe;
        try {
          pipe = openRawPipe(kb.path, cpu);
        } catch (error) {
          failure = error;
          continue;
        }
        this.#cpus.push({ pipe, events: 0, refused: 0, bytes: 0, lostBefore: kernelLoss(kb.path, cpu) });
      }
      if (this.#cpus.length === 0)
        throw new PersistentError('ERR_PERSISTENT_IO', `cannot open the raw pipes of ${kb.path}`, {
          path: kb.path,
          cause: failure,
        });
      this.cpus = this.#cpus.map((c) => c.pipe.cpu);
    } catch (error) {
      this.close();
      throw error;
    }
  }

  writeMetadata(dir: string): void {
    const p = this.#kb!.path;
    mkdirSync(join(dir, 'events'), { recursive: true });
    for (const f of ['header_page', 'header_event'])
      writeFileSync(join(dir, 'events', f), readFileSync(join(p, 'events', f)));
    for (const e of this.#events) {
      mkdirSync(join(dir, 'events', e.system, e.event), { recursive: true });
      writeFileSync(
        join(dir, 'events', e.system, e.event, 'format'),
        readFileSync(join(this.#root, 'events', e.system, e.event, 'format')),
      );
    }
    writeFileSync(join(dir, 'buffer_subbuf_size_kb'), readFileSync(join(p, 'buffer_subbuf_size_kb')));
    writeFileSync(join(dir, 'trace_clock'), readFileSync(join(p, 'trace_clock')));
    writeFileSync(join(dir, 'saved_cmdlines'), readFileSync(join(this.#root, 'saved_cmdlines')));
    try {
      writeFileSync(join(dir, 'kallsyms'), readFileSync('/proc/kallsyms'));
    } catch {}
  }

  start(sinks: readonly PageSink[]): void {
    this.#sinks = sinks;
  }

  /** Hands each CPU's sink the pages its pipe has ready; returns the most record bytes one CPU gave. */
  poll(): number {
    return withoutStackTraces(() => {
      let fastest = 0;
      for (let i = 0; i < this.#cpus.length && i < this.#sinks.length; i++)
        fastest = Math.max(fastest, this.#drainCpu(this.#cpus[i]!, this.#sinks[i]!));
      return fastest;
    });
  }

  #drainCpu(c: KernelCpu, sink: PageSink): number {
    const bytes = this.#drain!.drain(c.pipe, (page, ts, count) => {
      if (sink.writeBytes(FTRACE_PAGE_RECORD, page, ts)) {
        c.events += count.records;
        c.bytes += count.dataBytes;
      } else c.refused += count.records;
    });
    if (bytes > 0) sink.flush();
    return bytes;
  }

  /** Delivers what is left; the buffer keeps recording (its tracing switch is its own). */
  stop(): void {
    while (this.#sinks.length > 0 && this.poll() > 0);
    this.#sinks = [];
  }

  counters(): readonly SourceCpuCounters[] {
    return this.#cpus.map((c) => ({
      cpu: c.pipe.cpu,
      events: c.events,
      lost: Math.max(0, kernelLoss(this.path, c.pipe.cpu) - c.lostBefore) + c.refused,
      bytes: c.bytes,
    }));
  }

  /** Closes the pipes; the instance stays. */
  close(): void {
    closeRawPipes(this.#cpus.map((c) => c.pipe));
    this.#cpus = [];
    this.#sinks = [];
  }
}
