/**
 * A session: one event source (for the kernel a tracefs instance, shared by sessions of the same configuration), one @evtrace/ringbuf buffer per CPU in
 * overwrite or discard mode, and what consumes them: the rotating output, viewers, event triggers. Trace-shots are
 * non-consuming snapshots of the buffers, taken while recording continues.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type {
  OutputFormat,
  SessionSpec,
  SessionState,
  SessionStatus,
  SnapshotResult,
  TriggerSpec,
} from '@evtrace/agent-protocol';
import { compileFilter, type EventPredicate, FilterError } from '@evtrace/filters';
import { EXTENDED_HEADER_SIZE, PAGE_HEADER_SIZE, type Reader, RingBuffer, type Writer } from '@evtrace/ringbuf';
import {
  decodeCpuPages,
  type EventClass,
  type EventSource,
  type FtraceMetadata,
  mergeByTime,
  openRawPagesDir,
  type PageLayout,
  type PageSink,
  type TraceEvent,
} from '@evtrace/trace-format';
import {
  countPageRecords,
  type EventFilterPlan,
  KernelSource,
  KernelTap,
  type PageCount,
  planEventFilter,
} from '@evtrace/tracefs';
import type { Caller } from './caller.ts';
import { AgentError, asAgentError } from './errors.ts';
import { RotatingOutput, writeTraceShot } from './files.ts';
import { persistentStatus } from './persistent.ts';
import { liveEventJson, MAX_VIEWER_QUEUE_BYTES, TaskNames, type Viewer } from './viewer.ts';

/** Default per-CPU buffer: 1 MiB. */
export const DEFAULT_BUFFER_SIZE = 1 << 20;

/** Ring-buffer pages big enough for several 4 KiB ftrace pages each, so little of the buffer is headers. */
function ringGeometry(bufferSize: number, recordSize: number): { pageSize: number; pageCount: number } {
  let pageSize = 1 << 16;
  while (pageSize > 16384 && bufferSize / pageSize < 8) pageSize >>= 1;
  while (pageSize < recordSize + 64) pageSize <<= 1;
  return { pageSize, pageCount: Math.max(2, Math.floor(bufferSize / pageSize)) };
}

interface CpuState {
  readonly cpu: number;
  readonly ring: RingBuffer;
  readonly writer: Writer;
  readonly reader: Reader;
  /** What the source writes into: the writer, drained to the outputs before the ring can fill. */
  readonly sink: PageSink;
}

/**
 * Pages a session's ring takes between two drains: half of what it holds, so that a source delivering a burst in
 * one poll (up to a whole kernel buffer) never fills a discard-mode ring (refused) or laps an overwrite-mode one
 * (pages the output never sees) before the session's own reader had its turn.
 */
function drainEvery(geometry: { pageSize: number; pageCount: number }, recordSize: number): number {
  const perPage = Math.max(1, Math.floor((geometry.pageSize - PAGE_HEADER_SIZE) / (recordSize + EXTENDED_HEADER_SIZE)));
  return Math.max(1, Math.floor((perPage * geometry.pageCount) / 2));
}

/** Data bytes of an ftrace page: the length in its header's commit word, without the missed-events flags. */
function pageDataBytes(layout: PageLayout): (page: Uint8Array) => number {
  const le = layout.byteOrder === 'le';
  // A big-endian 8-byte commit keeps its low half in the second word.
  const at = layout.commitOffset + (layout.commitSize === 8 && !le ? 4 : 0);
  const room = layout.pageSize - layout.dataOffset;
  return (page) =>
    page.byteLength < at + 4
      ? 0
      : Math.min(room, new DataView(page.buffer, page.byteOffset + at, 4).getUint32(0, le) & 0x3fffffff);
}

/** What a session tells the agent. */
export interface SessionHooks {
  /** A trigger fired: the agent takes a trace-shot. */
  readonly triggered: (session: Session, why: string) => void;
  /** The session failed (a full disk, a source error) and stopped. */
  readonly failed: (session: Session, error: AgentError) => void;
  /** Its state changed (for the state file). */
  readonly changed: (session: Session) => void;
  /** The other sessions reading the same tracefs instance. */
  readonly sharing?: (session: Session) => string[];
}

export class Session {
  readonly name: string;
  readonly spec: SessionSpec;
  readonly source: EventSource;
  readonly dir: string;
  readonly metaDir: string;
  /** Who created the session: its output directory is written with their rights (the agent's when undefined). */
  readonly owner: Caller | undefined;
  state: SessionState = 'created';
  error: { code: string; message: string } | undefined;
  snapshots = 0;
  readonly viewers = new Set<Viewer>();
  /** Who else takes the session's events (after its filter) as `evtrace cat --json` lines: the fleet export. */
  readonly exports = new Set<(json: string) => void>();
  viewerLostEnded = 0;
  triggers: TriggerSpec[];
  readonly #hooks: SessionHooks;
  readonly #snapshotDir: string;
  #cpus: CpuState[] = [];
  #output: RotatingOutput | undefined;
  #files: string[] = [];
  #filters: ReadonlyMap<string, EventFilterPlan> = new Map();
  #meta: FtraceMetadata | undefined;
  #tasks: TaskNames | undefined;
  #keep = new Map<EventClass, EventPredicate | undefined>();
  #eventTriggers: { expr: string; compiled: Map<EventClass, EventPredicate | undefined> }[] = [];
  #overwrittenPages = 0;
  /** Pages delivered from the buffers so far: the recent window changes with it. */
  #delivered = 0;
  /** The window decoded in this pass, shared by the viewers that subscribe in it. */
  #window: { readonly delivered: number; readonly limit: number; readonly lines: string[] } | undefined;
  /** An error met while draining into the outputs during a source's poll, reported by this session's next poll. */
  #sinkError: AgentError | undefined;
  readonly #byType = new Float64Array(65536);
  readonly #count: PageCount = { records: 0, dataBytes: 0, missed: false, corruptAt: -1 };
  /** Classes the filter does not fit (sources without a kernel): left out, as the kernel would refuse them. */
  readonly #excluded = new Set<string>();
  /** Page data each CPU's sink took since the last note, and the most taken between two notes (one read of the source). */
  #polled: number[] = [];
  #readPeaks: number[] = [];

  constructor(
    spec: SessionSpec,
    source: EventSource,
    dir: string,
    snapshotDir: string,
    hooks: SessionHooks,
    owner?: Caller,
  ) {
    this.name = spec.name;
    this.owner = owner;
    this.spec = spec;
    this.source = source;
    this.dir = dir;
    this.metaDir = join(dir, 'meta');
    this.#snapshotDir = snapshotDir;
    this.#hooks = hooks;
    this.triggers = [...(spec.triggers ?? [])];
  }

  /** Prepares the source, writes the metadata, creates the buffers. Closes the source when anything fails. */
  async open(): Promise<void> {
    try {
      await this.source.prepare();
      mkdirSync(this.metaDir, { recursive: true });
      this.source.writeMetadata(this.metaDir);
      // An empty page file per CPU makes the metadata directory a valid (empty) raw-pages directory to decode by.
      for (const cpu of this.source.cpus) writeFileSync(join(this.metaDir, `cpu${cpu}.raw`), '');
      this.#meta = openRawPagesDir(this.metaDir).metadata;
      this.#tasks = new TaskNames(this.#meta.cmdlines, this.source.kind === 'kernel');
      this.#filters = this.#sessionFilters();
      for (const t of this.triggers) if (t.kind === 'event') this.#addEventTrigger(t.filter);
      const size = this.spec.bufferSize ?? DEFAULT_BUFFER_SIZE;
      const geometry = ringGeometry(size, this.source.pageSize);
      const every = drainEvery(geometry, this.source.pageSize);
      const dataBytes = pageDataBytes(this.#meta.page);
      this.#polled = this.source.cpus.map(() => 0);
      this.#readPeaks = this.source.cpus.map(() => 0);
      this.#cpus = this.source.cpus.map((cpu, i) => {
        const ring = RingBuffer.create({ ...geometry, mode: this.spec.mode, clock: { name: 'trace_clock' } });
        const writer = ring.writer({ streamId: cpu });
        let written = 0;
        const sink: PageSink = {
          writeBytes: (type, payload, ts) => {
            this.#polled[i]! += dataBytes(payload);
            const ok = writer.writeBytes(type, payload, ts);
            if (++written >= every && this.#sinkError === undefined) {
              written = 0;
              writer.flush();
              // The source may be polled for another session sharing it: this session's failure stays its own.
              try {
                this.#pumpCpu(i);
              } catch (error) {
                this.#sinkError = asAgentError(error);
              }
            }
            return ok;
          },
          flush: () => writer.flush(),
        };
        return { cpu, ring, writer, reader: ring.reader(), sink };
      });
      if (this.spec.output !== undefined) {
        this.#output = new RotatingOutput({
          dir: this.spec.output.dir,
          format: this.spec.output.format,
          prefix: this.name,
          metaDir: this.metaDir,
          cpus: this.source.cpus,
          pageSize: this.source.pageSize,
          ...(this.spec.rotate !== undefined ? { rotate: this.spec.rotate } : {}),
          filters: this.#filters,
          onChange: () => this.#hooks.changed(this),
          ...(this.owner !== undefined ? { caller: this.owner } : {}),
        });
      }
    } catch (error) {
      this.source.close();
      rmSync(this.dir, { recursive: true, force: true });
      throw asAgentError(error);
    }
  }

  /** The filter's parts applied while decoding and writing: all of it for sources without a kernel. */
  #sessionFilters(): ReadonlyMap<string, EventFilterPlan> {
    const filter = this.spec.filter;
    if (filter === undefined || filter.trim() === '') return new Map();
    if (this.source instanceof KernelSource || this.source instanceof KernelTap) return this.source.userSpaceFilters;
    const plans = new Map<string, EventFilterPlan>();
    let applies = 0;
    let first: unknown;
    for (const c of this.source.eventClasses) {
      try {
        plans.set(c.name, { ...planEventFilter(filter, c), kernel: undefined, userSpace: filter });
        applies++;
      } catch (error) {
        first ??= error;
        this.#excluded.add(c.name);
      }
    }
    if (applies === 0)
      throw new AgentError('ERR_AGENT_FILTER', `--filter fits none of the events: ${(first as Error).message}`);
    return plans;
  }

  #addEventTrigger(expr: string): void {
    const compiled = new Map<EventClass, EventPredicate | undefined>();
    let applies = 0;
    let first: unknown;
    // The classes decoded events carry (the metadata directory's).
    for (const c of this.#meta!.eventClasses) {
      try {
        compiled.set(c, compileFilter(expr, c));
        applies++;
      } catch (error) {
        if (!(error instanceof FilterError)) throw error;
        first ??= error;
        compiled.set(c, undefined);
      }
    }
    if (applies === 0)
      throw new AgentError('ERR_AGENT_FILTER', `trigger filter fits none of the events: ${(first as Error).message}`);
    this.#eventTriggers.push({ expr, compiled });
  }

  /** Adds a trigger to a live session. */
  addTrigger(t: TriggerSpec): void {
    if (t.kind === 'event') {
      try {
        this.#addEventTrigger(t.filter);
      } catch (error) {
        throw asAgentError(error);
      }
    }
    this.triggers.push(t);
    this.#hooks.changed(this);
  }

  start(): void {
    if (this.state === 'running')
      throw new AgentError('ERR_AGENT_SESSION_STATE', `session ${this.name} is running already`);
    if (this.state === 'failed')
      throw new AgentError(
        'ERR_AGENT_SESSION_STATE',
        `session ${this.name} failed: ${this.error?.message}; destroy it`,
      );
    try {
      this.source.start(this.#cpus.map((c) => c.sink));
    } catch (error) {
      throw asAgentError(error);
    }
    this.state = 'running';
    this.#hooks.changed(this);
  }

  /** One pass of the agent's loop: source to buffers, buffers to output, viewers and triggers. */
  poll(now: number): number {
    if (this.state !== 'running') return 0;
    let fastest = 0;
    try {
      // A source shared with another session may have been read in that session's poll: its pages count as one read.
      this.#notePolled();
      fastest = this.source.poll();
      this.#notePolled();
      if (this.#sinkError !== undefined) throw this.#sinkError;
      this.#pump();
      this.#output?.tick(now);
    } catch (error) {
      this.fail(asAgentError(error));
    }
    for (const v of this.viewers) v.flush();
    this.#window = undefined;
    return fastest;
  }

  /** Moves every page the buffers have not delivered yet to the output, viewers and triggers. */
  #pump(): void {
    for (let i = 0; i < this.#cpus.length; i++) this.#pumpCpu(i);
    this.#output?.flush();
  }

  #pumpCpu(i: number): void {
    const decode = this.viewers.size > 0 || this.exports.size > 0 || this.#eventTriggers.length > 0;
    const c = this.#cpus[i]!;
    const r = c.reader;
    const lostBefore = r.lost;
    while (r.next()) {
      this.#delivered++;
      const page = r.bytes.subarray(r.offset, r.offset + r.length);
      this.#output?.append(i, page);
      if (decode) this.#decode(c.cpu, page);
    }
    this.#overwrittenPages += r.lost - lostBefore;
  }

  #decode(cpu: number, page: Uint8Array): void {
    const bytes = Buffer.from(page.buffer, page.byteOffset, page.byteLength);
    for (const e of decodeCpuPages(this.#meta!, { cpu, bytes }).events) {
      if (!this.#kept(e)) continue;
      if (this.viewers.size > 0 || this.exports.size > 0) {
        const json = liveEventJson(e, this.#tasks!);
        for (const v of this.viewers) v.offer(json);
        for (const x of this.exports) x(json);
      }
      for (const t of this.#eventTriggers) {
        if (t.compiled.get(e.eventClass)?.(e) === true) this.#hooks.triggered(this, `event matched ${t.expr}`);
      }
    }
  }

  #kept(e: TraceEvent): boolean {
    if (this.#filters.size === 0) return true;
    let p = this.#keep.get(e.eventClass);
    if (p === undefined && !this.#keep.has(e.eventClass)) {
      const plan = this.#filters.get(e.eventClass.name);
      p = plan?.userSpace !== undefined ? compileFilter(plan.userSpace, e.eventClass) : undefined;
      this.#keep.set(e.eventClass, p);
    }
    return p === undefined ? !this.#excluded.has(e.eventClass.name) : p(e);
  }

  /**
   * The recent window (what the buffers hold, already delivered), in time order: the newest `limit` events, and no
   * more than a viewer's queue holds ({@link MAX_VIEWER_QUEUE_BYTES}). Viewers that subscribe in the same pass share
   * one decoding of the buffers and its strings, which is dropped at the next pass.
   */
  window(limit: number): string[] {
    if (this.state === 'running') this.#pump();
    const cached = this.#window;
    const full =
      cached !== undefined && cached.delivered === this.#delivered && cached.limit >= limit
        ? cached
        : (this.#window = { delivered: this.#delivered, limit, lines: this.#decodeWindow(limit) });
    let from = full.lines.length;
    let bytes = 0;
    while (from > 0 && full.lines.length - from < limit) {
      bytes += full.lines[from - 1]!.length;
      if (bytes > MAX_VIEWER_QUEUE_BYTES) break;
      from--;
    }
    return full.lines.slice(from);
  }

  #decodeWindow(limit: number): string[] {
    const streams = this.#cpus.map((c) => {
      const snap = c.ring.snapshot();
      const pages: Buffer[] = [];
      while (snap.next()) pages.push(Buffer.from(snap.payload()));
      return decodeCpuPages(this.#meta!, { cpu: c.cpu, bytes: Buffer.concat(pages) }).events;
    });
    // The newest events within both limits: older ones leave from the front (a head index, not shift()).
    const out: string[] = [];
    let head = 0;
    let bytes = 0;
    for (const e of mergeByTime(streams)) {
      if (!this.#kept(e)) continue;
      const line = liveEventJson(e, this.#tasks!, false);
      out.push(line);
      bytes += line.length;
      while (out.length - head > limit || bytes > MAX_VIEWER_QUEUE_BYTES) bytes -= out[head++]!.length;
      if (head > 4096 && head * 2 > out.length) {
        out.splice(0, head);
        head = 0;
      }
    }
    return out.slice(head);
  }

  /**
   * Writes a trace-shot of the buffers as they are now; recording continues. A directory a client names is written
   * with that client's rights (`caller`), the agent's own snapshot directory with the agent's.
   */
  snapshot(dir: string | undefined, format: OutputFormat | undefined, caller?: Caller): SnapshotResult {
    if (this.state === 'created')
      throw new AgentError('ERR_AGENT_SESSION_STATE', `session ${this.name} has not started`);
    if (this.state === 'running') this.#pump();
    const fmt = format ?? this.spec.output?.format ?? 'tracedat';
    let recorded = 0;
    const pages = this.#cpus.map((c) => {
      const snap = c.ring.snapshot();
      const parts: Buffer[] = [];
      while (snap.next()) {
        const page = Buffer.from(snap.payload());
        recorded += countPageRecords(page, 0, this.#meta!.page, this.#byType, this.#count).records;
        parts.push(page);
      }
      return Buffer.concat(parts);
    });
    const written = writeTraceShot({
      metaDir: this.metaDir,
      cpus: this.source.cpus,
      pages,
      dir: dir ?? this.#snapshotDir,
      prefix: `${this.name}-shot`,
      format: fmt,
      filters: this.#filters,
      recorded,
      ...(dir !== undefined && caller !== undefined ? { caller } : {}),
    });
    this.snapshots++;
    return { path: written.path, format: fmt, events: written.events, bytes: written.bytes };
  }

  /** Stops recording: the source drains into the buffers, the output file is finished, viewers get `end`. */
  stop(reason = 'session stopped'): void {
    if (this.state !== 'running')
      throw new AgentError('ERR_AGENT_SESSION_STATE', `session ${this.name} is not running`);
    try {
      this.source.stop();
      if (this.#sinkError !== undefined) throw this.#sinkError;
      this.#pump();
      this.state = 'stopped';
      const file = this.#output?.rotate();
      if (file !== undefined) this.#files.push(file);
    } catch (error) {
      this.fail(asAgentError(error));
      throw asAgentError(error);
    } finally {
      this.#endViewers(reason);
    }
    this.#hooks.changed(this);
  }

  /** Stops for good after an error; what was written stays. */
  fail(error: AgentError): void {
    if (this.state === 'failed') return;
    this.state = 'failed';
    this.error = { code: error.code, message: error.message };
    this.#output?.abandon();
    try {
      this.source.stop();
    } catch {}
    this.#endViewers(`session failed: ${error.message}`);
    this.#hooks.failed(this, error);
    this.#hooks.changed(this);
  }

  #endViewers(reason: string): void {
    for (const v of this.viewers) {
      this.viewerLostEnded += v.lost;
      v.end(reason);
    }
    this.viewers.clear();
  }

  /** Releases the source (its tracefs instance) and the session's directory; outputs and trace-shots stay. */
  destroy(): void {
    if (this.state === 'running') {
      try {
        this.stop('session destroyed');
      } catch {}
    }
    this.#endViewers('session destroyed');
    this.#output?.abandon();
    this.source.close();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The classes of the session's events (its format files), which type them for viewers. */
  get eventClasses(): readonly EventClass[] {
    return this.#meta?.eventClasses ?? [];
  }

  #notePolled(): void {
    for (let i = 0; i < this.#polled.length; i++) {
      if (this.#polled[i]! > this.#readPeaks[i]!) this.#readPeaks[i] = this.#polled[i]!;
      this.#polled[i] = 0;
    }
  }

  /**
   * The most page data one read of the source gave each CPU since the last call (by CPU index): how full the source's
   * buffer was when the agent read it, for the gauges (buffer-stats.ts).
   */
  takeReadPeaks(): number[] {
    this.#notePolled();
    const peaks = this.#readPeaks;
    this.#readPeaks = peaks.map(() => 0);
    return peaks;
  }

  /** Each CPU's ring buffer, for the gauges (buffer-stats.ts). */
  get rings(): readonly { readonly cpu: number; readonly ring: RingBuffer }[] {
    return this.#cpus;
  }

  /** Output files finished so far and the `.part` being written. */
  get files(): readonly string[] {
    return [...(this.#output?.files ?? this.#files)];
  }

  get part(): string | undefined {
    return this.#output?.part;
  }

  status(): SessionStatus {
    const counters = this.source.counters();
    const cpus = counters.map((c) => ({ cpu: c.cpu, events: c.events, lost: c.lost, bytes: c.bytes }));
    const sum = (k: 'events' | 'lost' | 'bytes') => cpus.reduce((a, c) => a + c[k], 0);
    let viewerLost = this.viewerLostEnded;
    for (const v of this.viewers) viewerLost += v.lost;
    return {
      name: this.name,
      state: this.state,
      mode: this.spec.mode,
      source: this.source.kind,
      demo: this.source.demo,
      events: sum('events'),
      lost: sum('lost'),
      overwrittenPages: this.#overwrittenPages,
      bytes: sum('bytes'),
      cpus,
      viewers: this.viewers.size,
      viewerLost,
      snapshots: this.snapshots,
      files: this.files,
      ...(this.source.resource !== undefined
        ? { instance: this.source.resource, sharedWith: this.#hooks.sharing?.(this) ?? [] }
        : {}),
      ...persistentStatus(this.source),
      ...(this.error !== undefined ? { error: this.error } : {}),
      spec: { ...this.spec, triggers: this.triggers },
    };
  }
}
