/**
 * Persistent buffers (@evtrace/persistent-events) as session sources: `attach` makes a named buffer the source of a
 * session, so viewers, trace-shots, status and metrics work on it as on any session, and `detach` (or `destroy`)
 * lets go of it without deleting it. Both backends:
 *
 * - a user-space buffer is mapped READ-ONLY and followed without consuming (the writer never notices the agent);
 *   each record becomes one event of a synthetic ftrace class (`type`, `length`, `payload` bytes) so the session's
 *   pipeline (pages, decoding, trace.dat/CTF) carries it unchanged;
 * - a kernel buffer (tracefs instance `evtrace.p.*`, or a boot-time one) is read through its per-CPU
 *   `trace_pipe_raw` as a session's own instance is, but its tracing switch, events and existence are left alone.
 */
import { closeSync, constants, mkdirSync, openSync, readFileSync, readSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type {
  AttachSpec,
  BufferList,
  PersistentBackend,
  PersistentBufferStatus,
  SessionSpec,
} from '@evtrace/agent-protocol';
import { SESSION_NAME } from '@evtrace/agent-protocol';
import {
  bufferPath,
  type Follower,
  type KernelBuffer,
  listPersistent,
  openKernelBuffer,
  openPersistent,
  type PersistentBuffer,
  PersistentError,
} from '@evtrace/persistent-events';
import {
  compileRecordEncoder,
  type EventClass,
  type EventSource,
  FTRACE_PAGE_RECORD,
  HEADER_EVENT_TEXT,
  headerPageText,
  kernelPageLayout,
  type PageLayout,
  type PageSink,
  packPages,
  parseFormatFile,
  parseHeaderPage,
  type RecordEncoder,
  type SourceCpuCounters,
  type TimedRecord,
} from '@evtrace/trace-format';
import { countPageRecords, findTracefs, type PageCount, parseCpuStats, readEventFormat } from '@evtrace/tracefs';
import { AgentError, asAgentError } from './errors.ts';

/** Which buffer a session is attached to (kept in its state file, so a restarted agent attaches again). */
export interface AttachTarget {
  readonly buffer: string;
  readonly backend: PersistentBackend;
  /** Directory of user-space buffers, when not the default. */
  readonly dir?: string;
}

/** A source reading a persistent buffer. */
export interface AttachedSource extends EventSource {
  readonly target: AttachTarget;
  /** The buffer file or tracefs instance directory. */
  readonly path: string;
  /** Data bytes the buffer holds at most and its mode, known after `prepare`. */
  readonly size: number;
  readonly mode: 'overwrite' | 'discard';
}

export const isAttached = (source: EventSource): source is AttachedSource => 'target' in source;

/** What `status` adds for an attached session. */
export function persistentStatus(source: EventSource) {
  if (!isAttached(source)) return {};
  return { persistent: { buffer: source.target.buffer, backend: source.target.backend, path: source.path } };
}

/** PersistentErrors as the protocol's codes: a missing buffer, a bad name, a buffer the caller may not read. */
export function attachError(error: unknown): AgentError {
  if (!(error instanceof PersistentError)) return asAgentError(error);
  const message = `${error.code}: ${error.message}`;
  switch (error.code) {
    case 'ERR_PERSISTENT_NOT_FOUND':
      return new AgentError('ERR_AGENT_NO_BUFFER', message, { cause: error });
    case 'ERR_PERSISTENT_NAME':
    case 'ERR_PERSISTENT_ARGUMENT':
      return new AgentError('ERR_AGENT_BAD_MESSAGE', message, { cause: error });
    case 'ERR_PERSISTENT_PERMISSION':
      // The message of opening the buffer directly, under the agent's code for it.
      return new AgentError('ERR_AGENT_PERMISSION', error.message, { cause: error });
    default:
      return new AgentError('ERR_AGENT_SOURCE', message, { cause: error });
  }
}

/** The session name of an attach: given, or the buffer's name with `/` as `.`. */
export function attachName(spec: AttachSpec): string {
  if (spec.name !== undefined) return spec.name;
  const name = spec.buffer.split('/').join('.');
  if (!SESSION_NAME.test(name))
    throw new AgentError('ERR_AGENT_BAD_MESSAGE', `${spec.buffer} makes no session name (${name}): give one with name`);
  return name;
}

/** The unprepared source for a target (the session's `open` prepares it). */
export function attachedSource(target: AttachTarget, tracefs?: string): AttachedSource {
  try {
    return target.backend === 'kernel' ? new KernelBufferSource(target, tracefs) : new UserBufferSource(target);
  } catch (error) {
    throw attachError(error);
  }
}

/**
 * The session spec of an attached source (after `prepare`): its classes, the buffer's mode, and session buffers of
 * four times the buffer's size (at least 4 MiB), so they keep what the buffer holds though pages travel part full.
 */
export function attachedSpec(name: string, source: AttachedSource): SessionSpec {
  const classes = source.eventClasses.map((c) => c.name);
  return {
    name,
    events: classes.length > 0 ? classes : ['*'],
    mode: source.mode,
    bufferSize: Math.min(1 << 30, Math.max(4 << 20, 4 * Math.ceil(source.size / source.cpus.length))),
  };
}

/** The `buffers` reply: every buffer the agent sees, with the session attached to it; the agent's read counted. */
export function listBuffers(
  attached: ReadonlyMap<string, { session: string; user: boolean }>,
  options: { dir?: string; tracefs?: string },
): BufferList {
  const listing = listPersistent({
    ...(options.dir !== undefined ? { dir: options.dir } : {}),
    ...(options.tracefs !== undefined ? { tracefs: options.tracefs } : {}),
  });
  const buffers: PersistentBufferStatus[] = listing.buffers.map((b) => {
    const a = attached.get(b.path);
    if (a === undefined) return b;
    // The listing does not count this process's own read-only mapping; the attached session is a reader.
    return { ...b, session: a.session, ...(a.user && b.readers !== null ? { readers: b.readers + 1 } : {}) };
  });
  return {
    buffers,
    unreadable: listing.unreadable,
    ...(listing.kernelUnavailable !== undefined ? { kernelUnavailable: listing.kernelUnavailable } : {}),
    ...(listing.bootAbsent !== undefined ? { bootAbsent: listing.bootAbsent } : {}),
  };
}

const COMMON = `\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
`;

/** The format file of one record class of a user-space buffer. */
function recordFormat(event: string, id: number): string {
  return `name: ${event}\nID: ${id}\nformat:\n${COMMON}
\tfield:unsigned int type;\toffset:8;\tsize:4;\tsigned:0;
\tfield:unsigned int length;\toffset:12;\tsize:4;\tsigned:0;
\tfield:__data_loc u8[] payload;\toffset:16;\tsize:4;\tsigned:0;

print fmt: "type=%u length=%u payload=%s", REC->type, REC->length, __print_hex(__get_dynamic_array(payload), __get_dynamic_array_len(payload))
`;
}

/** Records wait at most this long for a page to fill: every delivery is a whole page of the session's buffers. */
const FLUSH_MS = 250;
/**
 * Following copies the whole buffer (a snapshot: the only read that never disturbs the writer), so a buffer is
 * looked at no more often than copying it costs 32 MiB a second: every 25 ms up to 800 KiB, every 2 s at most.
 */
const COPY_BYTES_PER_MS = 32 * 1024;
const MIN_POLL_MS = 25;
const MAX_POLL_MS = 2000;

/** `system:event` of a buffer's class name, made of the characters tracefs names use. */
function ftraceName(name: string, taken: Set<string>, type: number): { system: string; event: string } {
  const clean = (s: string) => s.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 64) || '_';
  const colon = name.indexOf(':');
  const system = colon > 0 ? clean(name.slice(0, colon)) : 'persistent';
  let event = clean(colon > 0 ? name.slice(colon + 1) : name);
  if (taken.has(`${system}:${event}`)) event = `${event}_${type}`;
  taken.add(`${system}:${event}`);
  return { system, event };
}

/** A user-space buffer, followed read-only: records committed since the last poll become events on stream 0. */
export class UserBufferSource implements AttachedSource {
  readonly kind = 'persistent';
  readonly demo = false;
  readonly target: AttachTarget;
  readonly cpus: readonly number[] = [0];
  pageSize = 4096;
  eventClasses: readonly EventClass[] = [];
  path: string;
  size = 0;
  mode: 'overwrite' | 'discard' = 'overwrite';
  #buf: PersistentBuffer | undefined;
  #follower: Follower | undefined;
  #layout: PageLayout = kernelPageLayout(4096);
  #formats: { system: string; event: string; text: string }[] = [];
  #byType = new Map<number, { encode: RecordEncoder }>();
  #other: { encode: RecordEncoder } | undefined;
  #sink: PageSink | undefined;
  /** The writing process (found in /proc, since the buffer does not record it); -1 while unknown. */
  #writer = -1;
  #writerScanned = 0;
  #every = MIN_POLL_MS;
  #polled = 0;
  #pending: TimedRecord[] = [];
  #pendingBytes = 0;
  #pendingSince = 0;
  #counters = { events: 0, lost: 0, bytes: 0, lastTs: 0 };
  readonly #count: PageCount = { records: 0, dataBytes: 0, missed: false, corruptAt: -1 };
  readonly #countByType = new Float64Array(65536);

  constructor(target: AttachTarget) {
    this.target = target;
    this.path = bufferPath(target.buffer, target.dir);
  }

  /** Opens the buffer read-only and derives the classes; a second call does nothing. */
  prepare(): void {
    if (this.#buf !== undefined) return;
    try {
      this.#buf = openPersistent(this.target.buffer, {
        readOnly: true,
        ...(this.target.dir !== undefined ? { dir: this.target.dir } : {}),
      });
    } catch (error) {
      throw attachError(error);
    }
    const buf = this.#buf;
    this.path = buf.path;
    this.size = buf.pageSize * buf.pageCount;
    this.mode = buf.mode;
    this.#every = Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, Math.ceil(this.size / COPY_BYTES_PER_MS)));
    // A page holds the largest record: page header, event header, time extend, 16 bytes of fields, the payload.
    let pageSize = 4096;
    while (pageSize - 16 - 8 - 8 - 16 < buf.maxPayload) pageSize *= 2;
    this.pageSize = pageSize;
    this.#layout = kernelPageLayout(pageSize);
    const taken = new Set<string>();
    const classes: EventClass[] = [];
    const add = (name: string, type: number) => {
      const { system, event } = ftraceName(name, taken, type);
      const text = recordFormat(event, classes.length + 1);
      const c = parseFormatFile(text, { system });
      this.#formats.push({ system, event, text });
      classes.push(c);
      return { encode: compileRecordEncoder(c) };
    };
    for (const c of buf.meta.classes) this.#byType.set(c.type, add(c.name, c.type));
    // Types the metadata does not name (a writer may use any) keep their number in the `type` field.
    this.#other = add('persistent:record', -1);
    this.eventClasses = classes;
    this.#findWriter();
    this.#follower = buf.follow();
  }

  /** Looks for the live process mapping the buffer for writing (at most once a second). */
  #findWriter(): void {
    const now = Date.now();
    if (now - this.#writerScanned < 1000) return;
    this.#writerScanned = now;
    try {
      this.#writer = this.#buf?.mappers().writers[0] ?? -1;
    } catch {
      this.#writer = -1;
    }
  }

  /** True while the writer found last is alive. */
  #writerAlive(): boolean {
    if (this.#writer <= 0) return false;
    try {
      process.kill(this.#writer, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  }

  writeMetadata(dir: string): void {
    mkdirSync(join(dir, 'events'), { recursive: true });
    writeFileSync(join(dir, 'events', 'header_page'), headerPageText(this.#layout));
    writeFileSync(join(dir, 'events', 'header_event'), HEADER_EVENT_TEXT);
    for (const f of this.#formats) {
      mkdirSync(join(dir, 'events', f.system, f.event), { recursive: true });
      writeFileSync(join(dir, 'events', f.system, f.event, 'format'), f.text);
    }
    writeFileSync(join(dir, 'buffer_subbuf_size_kb'), `${this.pageSize / 1024}\n`);
    writeFileSync(join(dir, 'trace_clock'), '[mono]\n');
    // The writer's name, as the kernel's saved_cmdlines names tasks: readers show `node-4118` for its records.
    let comm = '';
    try {
      if (this.#writer > 0) comm = `${this.#writer} ${readFileSync(`/proc/${this.#writer}/comm`, 'utf8').trim()}\n`;
    } catch {}
    writeFileSync(join(dir, 'saved_cmdlines'), comm);
  }

  start(sinks: readonly PageSink[]): void {
    this.#sink = sinks[0];
  }

  /**
   * Takes the records committed since the last poll; delivers them once they fill a page or the oldest has waited
   * {@link FLUSH_MS} (a slow writer does not cost a page per poll). Returns the bytes delivered.
   */
  poll(force = false): number {
    const sink = this.#sink;
    const follower = this.#follower;
    if (sink === undefined || follower === undefined) return 0;
    const now = Date.now();
    if (!force && now - this.#polled < this.#every) return 0;
    this.#polled = now;
    let writer = this.#writer;
    let checked = false;
    const r = follower.poll((rec) => {
      // New records and no live writer known: one took over since, or the one that wrote them died meanwhile (its
      // pid stays theirs). Checked once a poll.
      if (!checked) {
        checked = true;
        if (!this.#writerAlive()) {
          this.#findWriter();
          if (this.#writer !== -1) writer = this.#writer;
        }
      }
      const payload = rec.bytes.subarray(rec.offset, rec.offset + rec.length);
      const p = this.#byType.get(rec.type) ?? this.#other!;
      const data = p.encode({ type: rec.type, length: rec.length, payload: [...payload] }, { common_pid: writer });
      // Ring-buffer timestamps never decrease; a writer that took over keeps its stream's clock.
      const ts = Math.max(this.#counters.lastTs, rec.timestamp);
      this.#counters.lastTs = ts;
      if (this.#pending.length === 0) this.#pendingSince = Date.now();
      this.#pending.push({ tsNs: BigInt(Math.round(ts)), data });
      this.#pendingBytes += data.length + 8;
    });
    this.#counters.lost += r.lost;
    if (this.#pending.length === 0) return 0;
    const full = this.#pendingBytes >= this.pageSize - this.#layout.dataOffset;
    if (!force && !full && Date.now() - this.#pendingSince < FLUSH_MS) return 0;
    const pages = packPages(this.#pending, this.#layout);
    for (let at = 0; at < pages.length; at += this.pageSize) {
      const page = pages.subarray(at, at + this.pageSize);
      const n = countPageRecords(page, 0, this.#layout, this.#countByType, this.#count).records;
      if (sink.writeBytes(FTRACE_PAGE_RECORD, page, Number(page.readBigUInt64LE(0)))) this.#counters.events += n;
      else this.#counters.lost += n;
    }
    const delivered = this.#pendingBytes;
    this.#counters.bytes += delivered;
    this.#pending = [];
    this.#pendingBytes = 0;
    sink.flush();
    return delivered;
  }

  stop(): void {
    this.poll(true);
    this.#sink = undefined;
  }

  counters(): readonly SourceCpuCounters[] {
    const c = this.#counters;
    return [{ cpu: 0, events: c.events, lost: c.lost, bytes: c.bytes }];
  }

  /** Unmaps the buffer; the buffer and its writer are untouched. */
  close(): void {
    this.#sink = undefined;
    this.#buf?.close();
    this.#buf = undefined;
    this.#follower = undefined;
  }
}

interface KernelCpu {
  readonly cpu: number;
  readonly fd: number;
  events: number;
  refused: number;
  bytes: number;
  lastTs: number;
  /** The kernel's loss counters when attached: only what is lost since counts. */
  lostBefore: number;
}

/** Pages one poll takes from a CPU at most. */
const MAX_PAGES_PER_POLL = 256;

function kernelLost(instance: string, cpu: number): number {
  try {
    const s = parseCpuStats(readFileSync(join(instance, 'per_cpu', `cpu${cpu}`, 'stats'), 'utf8'));
    return (s.overrun ?? 0) + (s['dropped events'] ?? 0) + (s['commit overrun'] ?? 0);
  } catch {
    return 0;
  }
}

/**
 * A kernel persistent buffer: its per-CPU raw pipes read as the kernel source reads a session's own instance
 * (reading consumes what the pipe hands over, as any trace_pipe reader does). Its settings, tracing switch and the
 * instance itself are the buffer's: never changed, never removed.
 */
export class KernelBufferSource implements AttachedSource {
  readonly kind = 'persistent';
  readonly demo = false;
  readonly target: AttachTarget;
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
  #layout: PageLayout = kernelPageLayout(4096);
  #cpus: KernelCpu[] = [];
  #sinks: readonly PageSink[] = [];
  #page = Buffer.alloc(0);
  readonly #count: PageCount = { records: 0, dataBytes: 0, missed: false, corruptAt: -1 };
  readonly #byType = new Float64Array(65536);

  constructor(target: AttachTarget, tracefs?: string) {
    this.target = target;
    this.#tracefs = tracefs;
  }

  /** Opens the instance's raw pipes; a second call does nothing. */
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
        throw new AgentError(
          'ERR_AGENT_SOURCE',
          `kernel buffer ${this.target.buffer} records no events (its set_event is empty)`,
        );
      this.eventClasses = this.#events.map((e) => readEventFormat(this.#root, e).eventClass);
      this.pageSize = Number(readFileSync(join(kb.path, 'buffer_subbuf_size_kb'), 'utf8').trim()) * 1024;
      this.#layout = parseHeaderPage(readFileSync(join(kb.path, 'events', 'header_page'), 'utf8'), {
        pageSize: this.pageSize,
      });
      this.#page = Buffer.alloc(this.pageSize);
      const cpus = readFileSync('/sys/devices/system/cpu/possible', 'utf8');
      for (const cpu of cpuList(cpus)) {
        const file = join(kb.path, 'per_cpu', `cpu${cpu}`, 'trace_pipe_raw');
        let fd: number;
        try {
          fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
        } catch {
          continue;
        }
        const lostBefore = kernelLost(kb.path, cpu);
        this.#cpus.push({ cpu, fd, events: 0, refused: 0, bytes: 0, lastTs: 0, lostBefore });
      }
      if (this.#cpus.length === 0) throw new AgentError('ERR_AGENT_SOURCE', `cannot open the raw pipes of ${kb.path}`);
      this.cpus = this.#cpus.map((c) => c.cpu);
    } catch (error) {
      this.close();
      throw attachError(error);
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

  poll(): number {
    const limit = Error.stackTraceLimit;
    // A drained pipe answers EAGAIN, which Node throws: without a stack trace that is cheap.
    Error.stackTraceLimit = 0;
    try {
      let fastest = 0;
      for (let i = 0; i < this.#cpus.length && i < this.#sinks.length; i++)
        fastest = Math.max(fastest, this.#drain(this.#cpus[i]!, this.#sinks[i]!));
      return fastest;
    } finally {
      Error.stackTraceLimit = limit;
    }
  }

  #drain(c: KernelCpu, sink: PageSink): number {
    const page = this.#page;
    let bytes = 0;
    for (let n = 0; n < MAX_PAGES_PER_POLL; n++) {
      let got: number;
      try {
        got = readSync(c.fd, page, 0, page.length, null);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
        throw new AgentError('ERR_AGENT_SOURCE', `reading ${this.path}/per_cpu/cpu${c.cpu}/trace_pipe_raw failed`, {
          cause: error,
        });
      }
      if (got === 0) break;
      if (got < page.length) page.fill(0, got);
      const count = countPageRecords(page, 0, this.#layout, this.#byType, this.#count);
      const ts = Math.max(c.lastTs, Number(page.readBigUInt64LE(0)));
      c.lastTs = ts;
      if (sink.writeBytes(FTRACE_PAGE_RECORD, page, ts)) {
        c.events += count.records;
        c.bytes += count.dataBytes;
      } else c.refused += count.records;
      bytes += count.dataBytes;
      if (count.dataBytes < (page.length - this.#layout.dataOffset) / 2) break;
    }
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
      cpu: c.cpu,
      events: c.events,
      lost: Math.max(0, kernelLost(this.path, c.cpu) - c.lostBefore) + c.refused,
      bytes: c.bytes,
    }));
  }

  /** Closes the pipes; the instance stays. */
  close(): void {
    for (const c of this.#cpus) {
      try {
        closeSync(c.fd);
      } catch {}
    }
    this.#cpus = [];
    this.#sinks = [];
  }
}

/** `0-3,8` as numbers. */
function cpuList(text: string): number[] {
  const out: number[] = [];
  for (const part of text.trim().split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (m === null) continue;
    for (let c = Number(m[1]); c <= Number(m[2] ?? m[1]); c++) out.push(c);
  }
  return out;
}
