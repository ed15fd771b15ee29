/**
 * A user-space persistent buffer as an event source: mapped read-only and followed without consuming (the writer
 * never notices), each record becomes one event of a synthetic ftrace class (`type`, `length`, `payload` bytes), so
 * a session's pipeline (pages, decoding, trace.dat/CTF) carries it unchanged.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  compileRecordEncoder,
  type EventClass,
  FTRACE_COMMON_FIELDS_TEXT,
  FTRACE_PAGE_RECORD,
  HEADER_EVENT_TEXT,
  headerPageText,
  kernelPageLayout,
  type PageLayout,
  type PageSink,
  packPages,
  parseFormatFile,
  type RecordEncoder,
  type SourceCpuCounters,
  type TimedRecord,
} from '@evtrace/trace-format';
import { countPageRecords, type PageCount } from '@evtrace/tracefs';
import type { Follower } from './follow.ts';
import type { PersistentSource, PersistentTarget } from './source.ts';
import { bufferPath, openPersistent, type PersistentBuffer } from './user.ts';

/** The format file of one record class of a user-space buffer. */
function recordFormat(event: string, id: number): string {
  return `name: ${event}\nID: ${id}\nformat:\n${FTRACE_COMMON_FIELDS_TEXT}
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
 * looked at no more often than copying it costs COPY_BYTES_PER_MS, within MIN_POLL_MS and MAX_POLL_MS: a small
 * buffer often, a large one seldom.
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
export class UserBufferSource implements PersistentSource {
  readonly kind = 'persistent';
  readonly demo = false;
  readonly target: PersistentTarget;
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

  /** @throws PersistentError `ERR_PERSISTENT_NAME` for a buffer name that is not allowed. */
  constructor(target: PersistentTarget) {
    this.target = target;
    this.path = bufferPath(target.buffer, target.dir);
  }

  /**
   * Opens the buffer read-only and derives the classes; a second call does nothing.
   *
   * @throws PersistentError as {@link openPersistent} does (`ERR_PERSISTENT_NOT_FOUND`, `ERR_PERSISTENT_PERMISSION`, `ERR_PERSISTENT_CORRUPT`...).
   */
  prepare(): void {
    if (this.#buf !== undefined) return;
    this.#buf = openPersistent(this.target.buffer, {
      readOnly: true,
      ...(this.target.dir !== undefined ? { dir: this.target.dir } : {}),
    });
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
