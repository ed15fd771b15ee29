/**
 * The publisher's local persistent buffer: append-only segment files in a directory, written before anything is sent,
 * so that what the agent accepted survives NATS being away, the agent's restart and SIGKILL. Sending reads the
 * segments in order; acknowledged entries advance a cursor (a fixed 32-byte file rewritten in place) and whole
 * acknowledged segments are deleted. The spool is bounded: an entry that does not fit is dropped and counted, and
 * the count (kept in the cursor file) survives restarts until it is reported.
 *
 * Each record is framed as `u32 length, u32 CRC-32 of the payload, payload`, so a record torn by a kill is found at
 * open and cut off. Every segment starts with a checkpoint of the next sequence number per channel: sequence numbers
 * continue across restarts, and message ids never repeat.
 */
import {
  closeSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { FleetError } from './errors.ts';
import type { Channel } from './subjects.ts';

/** One message waiting to be sent. */
export interface SpoolEntry {
  readonly host: string;
  readonly channel: Channel;
  /** Sequence number of its first record. */
  readonly seq: number;
  /** Records it holds. */
  readonly count: number;
  /** The message body (an envelope). */
  readonly body: Uint8Array;
}

/** Where an entry ends: acknowledging it moves the cursor there. */
export interface SpoolPosition {
  readonly segment: number;
  readonly offset: number;
}

/** Options of {@link Spool.open}. */
export interface SpoolOptions {
  /** Most bytes the segments hold (acknowledged entries not counted). Default 256 MiB. */
  readonly maxBytes?: number;
  /** Bytes after which a new segment starts. Default 4 MiB (or an eighth of maxBytes when smaller). */
  readonly segmentBytes?: number;
}

/** What the spool dropped because it was full, since it was created. */
export interface SpoolDropped {
  readonly records: number;
  readonly messages: number;
}

const FRAME = 8;
const KIND_MESSAGE = 1;
const KIND_CHECKPOINT = 2;
const CURSOR_BYTES = 32;
const SEGMENT = /^(\d{16})\.seg$/;
const segmentName = (id: number) => `${String(id).padStart(16, '0')}.seg`;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function spoolError(what: string, path: string, error: unknown): FleetError {
  const code = (error as NodeJS.ErrnoException).code;
  return new FleetError('ERR_FLEET_SPOOL', `cannot ${what} ${path}: ${code ?? (error as Error).message}`, {
    cause: error,
  });
}

function frame(payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(FRAME + payload.length);
  out.writeUInt32LE(payload.length, 0);
  out.writeUInt32LE(crc32(payload), 4);
  out.set(payload, FRAME);
  return out;
}

function messagePayload(e: SpoolEntry): Uint8Array {
  const host = encoder.encode(e.host);
  const channel = encoder.encode(e.channel);
  const out = Buffer.allocUnsafe(1 + 2 + host.length + 2 + channel.length + 8 + 4 + e.body.length);
  let o = out.writeUInt8(KIND_MESSAGE, 0);
  o = out.writeUInt16LE(host.length, o);
  out.set(host, o);
  o = out.writeUInt16LE(channel.length, o + host.length);
  out.set(channel, o);
  o = out.writeDoubleLE(e.seq, o + channel.length);
  o = out.writeUInt32LE(e.count, o);
  out.set(e.body, o);
  return out;
}

function parseMessage(p: Buffer): SpoolEntry {
  let o = 1;
  const hostLen = p.readUInt16LE(o);
  const host = decoder.decode(p.subarray(o + 2, o + 2 + hostLen));
  o += 2 + hostLen;
  const chLen = p.readUInt16LE(o);
  const channel = decoder.decode(p.subarray(o + 2, o + 2 + chLen)) as Channel;
  o += 2 + chLen;
  const seq = p.readDoubleLE(o);
  const count = p.readUInt32LE(o + 8);
  return { host, channel, seq, count, body: p.subarray(o + 12) };
}

/** A directory of segments; see the module comment. One process at a time. */
export class Spool {
  readonly dir: string;
  /** What opening found and repaired (a torn record cut off), one line each. */
  readonly notes: string[] = [];
  readonly #maxBytes: number;
  readonly #segmentBytes: number;
  /** Live segments, oldest first, with their sizes. */
  readonly #segments: { id: number; size: number }[] = [];
  readonly #next = new Map<string, number>();
  #writeFd = -1;
  #cursorFd = -1;
  #acked: SpoolPosition;
  #send: SpoolPosition;
  #readFd: { id: number; fd: number } | undefined;
  #dropped = { records: 0, messages: 0 };
  #closed = false;

  private constructor(dir: string, options: SpoolOptions) {
    this.dir = dir;
    this.#maxBytes = options.maxBytes ?? 256 * 1024 * 1024;
    this.#segmentBytes = options.segmentBytes ?? Math.min(4 * 1024 * 1024, Math.max(4096, this.#maxBytes >> 3));
    this.#acked = { segment: 0, offset: 0 };
    this.#send = this.#acked;
  }

  /**
   * Opens (or creates) the spool in `dir`, checking every record after the cursor and cutting off a torn tail.
   * @throws FleetError `ERR_FLEET_SPOOL` when the directory or its files cannot be used.
   */
  static open(dir: string, options: SpoolOptions = {}): Spool {
    const s = new Spool(dir, options);
    s.#load();
    return s;
  }

  #load(): void {
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw spoolError('create the spool directory', this.dir, error);
    }
    const cursorPath = join(this.dir, 'cursor');
    try {
      // Rewritten in place (pwrite), which an O_APPEND descriptor would turn into appends.
      this.#cursorFd = openSync(cursorPath, 'r+');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw spoolError('open', cursorPath, error);
      try {
        this.#cursorFd = openSync(cursorPath, 'w+', 0o600);
      } catch (error) {
        throw spoolError('create', cursorPath, error);
      }
    }
    const cursor = Buffer.alloc(CURSOR_BYTES);
    if (readSync(this.#cursorFd, cursor, 0, CURSOR_BYTES, 0) === CURSOR_BYTES) {
      this.#acked = { segment: Number(cursor.readBigUInt64LE(0)), offset: Number(cursor.readBigUInt64LE(8)) };
      this.#dropped = { records: Number(cursor.readBigUInt64LE(16)), messages: Number(cursor.readBigUInt64LE(24)) };
    }
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (error) {
      throw spoolError('read', this.dir, error);
    }
    const ids = names
      .map((n) => SEGMENT.exec(n)?.[1])
      .filter((m) => m !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
    for (const id of ids) {
      const path = join(this.dir, segmentName(id));
      // Segments wholly before the cursor were acknowledged; a kill between the cursor write and the delete leaves them.
      if (id < this.#acked.segment) {
        rmSync(path, { force: true });
        continue;
      }
      this.#segments.push({ id, size: this.#scan(path) });
    }
    if (this.#segments.length === 0 || this.#acked.segment < this.#segments[0]!.id)
      this.#acked = { segment: this.#segments[0]?.id ?? this.#acked.segment, offset: 0 };
    const first = this.#segments[0];
    if (first !== undefined && first.id === this.#acked.segment && this.#acked.offset > first.size) {
      this.notes.push(
        `spool cursor ${this.#acked.offset} is past the end of ${segmentName(first.id)}; resending it whole`,
      );
      this.#acked = { segment: first.id, offset: 0 };
    }
    this.#send = this.#acked;
    const last = this.#segments.at(-1);
    if (last === undefined) this.#roll(this.#acked.segment);
    else this.#openForWrite(last.id);
  }

  /** Checks a segment's records, learns the sequence numbers they hold, cuts a torn tail; returns its valid size. */
  #scan(path: string): number {
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch (error) {
      throw spoolError('read', path, error);
    }
    let o = 0;
    while (o < bytes.length) {
      const why =
        o + FRAME > bytes.length
          ? 'a torn frame header'
          : o + FRAME + bytes.readUInt32LE(o) > bytes.length
            ? 'a torn record'
            : crc32(bytes.subarray(o + FRAME, o + FRAME + bytes.readUInt32LE(o))) !== bytes.readUInt32LE(o + 4)
              ? 'a record whose checksum does not match'
              : undefined;
      if (why !== undefined) {
        this.notes.push(
          `spool ${path}: ${why} at byte ${o} (an interrupted write); the ${bytes.length - o} bytes from there are cut off`,
        );
        try {
          const fd = openSync(path, 'r+');
          ftruncateSync(fd, o);
          closeSync(fd);
        } catch (error) {
          throw spoolError('truncate', path, error);
        }
        return o;
      }
      const payload = bytes.subarray(o + FRAME, o + FRAME + bytes.readUInt32LE(o));
      if (payload[0] === KIND_CHECKPOINT) {
        const cp = JSON.parse(decoder.decode(payload.subarray(1))) as Record<string, number>;
        for (const [k, v] of Object.entries(cp)) this.#next.set(k, Math.max(this.#next.get(k) ?? 1, v));
      } else if (payload[0] === KIND_MESSAGE) {
        const e = parseMessage(payload);
        const key = `${e.host}\0${e.channel}`;
        this.#next.set(key, Math.max(this.#next.get(key) ?? 1, e.seq + e.count));
      }
      o += FRAME + payload.length;
    }
    return o;
  }

  #openForWrite(id: number): void {
    const path = join(this.dir, segmentName(id));
    try {
      if (this.#writeFd >= 0) closeSync(this.#writeFd);
      this.#writeFd = openSync(path, 'a', 0o600);
    } catch (error) {
      throw spoolError('open', path, error);
    }
  }

  /** Starts segment `id` with a checkpoint of the sequence numbers. */
  #roll(id: number): void {
    this.#openForWrite(id);
    const cp = frame(
      Buffer.concat([Buffer.of(KIND_CHECKPOINT), encoder.encode(JSON.stringify(Object.fromEntries(this.#next)))]),
    );
    this.#write(cp);
    this.#segments.push({ id, size: cp.length });
  }

  #write(bytes: Uint8Array): void {
    try {
      let done = 0;
      while (done < bytes.length) done += writeSync(this.#writeFd, bytes, done, bytes.length - done);
    } catch (error) {
      throw spoolError('write to', this.dir, error);
    }
  }

  /** Reserves `count` sequence numbers of a host's channel; returns the first. */
  reserve(host: string, channel: Channel, count: number): number {
    const key = `${host}\0${channel}`;
    const seq = this.#next.get(key) ?? 1;
    this.#next.set(key, seq + count);
    return seq;
  }

  /** Bytes the spool holds that are not acknowledged yet. */
  get bytes(): number {
    let n = 0;
    for (const s of this.#segments) n += s.size;
    return n - (this.#segments[0]?.id === this.#acked.segment ? this.#acked.offset : 0);
  }

  /** What was dropped because the spool was full, over the spool's whole life. */
  get dropped(): SpoolDropped {
    return { ...this.#dropped };
  }

  /** Whether every entry was acknowledged. */
  get empty(): boolean {
    const last = this.#segments.at(-1)!;
    return this.#acked.segment === last.id && this.#acked.offset >= last.size;
  }

  /**
   * Appends an entry. Returns false, counting its records as dropped, when it does not fit under the spool's bound.
   * @throws FleetError `ERR_FLEET_SPOOL` when the write fails.
   */
  append(entry: SpoolEntry): boolean {
    if (this.#closed) throw new FleetError('ERR_FLEET_SPOOL', `the spool in ${this.dir} is closed`);
    const record = frame(messagePayload(entry));
    if (this.bytes + record.length > this.#maxBytes) {
      this.#dropped = { records: this.#dropped.records + entry.count, messages: this.#dropped.messages + 1 };
      this.#saveCursor();
      return false;
    }
    let last = this.#segments.at(-1)!;
    if (last.size + record.length > this.#segmentBytes && last.size > FRAME + 2) {
      this.#roll(last.id + 1);
      last = this.#segments.at(-1)!;
    }
    this.#write(record);
    last.size += record.length;
    return true;
  }

  /** The next entry to send after the send cursor, and where it ends; undefined when all were handed out. */
  next(): { entry: SpoolEntry; end: SpoolPosition } | undefined {
    for (;;) {
      const seg =
        this.#segments.find((s) => s.id === this.#send.segment) ??
        this.#segments.find((s) => s.id > this.#send.segment);
      if (seg === undefined) return undefined;
      if (seg.id !== this.#send.segment) this.#send = { segment: seg.id, offset: 0 };
      if (this.#send.offset >= seg.size) {
        const later = this.#segments.find((s) => s.id > seg.id);
        if (later === undefined) return undefined;
        this.#send = { segment: later.id, offset: 0 };
        continue;
      }
      const fd = this.#reader(seg.id);
      const head = Buffer.allocUnsafe(FRAME);
      readSync(fd, head, 0, FRAME, this.#send.offset);
      const payload = Buffer.allocUnsafe(head.readUInt32LE(0));
      readSync(fd, payload, 0, payload.length, this.#send.offset + FRAME);
      this.#send = { segment: seg.id, offset: this.#send.offset + FRAME + payload.length };
      if (payload[0] === KIND_MESSAGE) return { entry: parseMessage(payload), end: this.#send };
    }
  }

  #reader(id: number): number {
    if (this.#readFd?.id === id) return this.#readFd.fd;
    if (this.#readFd !== undefined) closeSync(this.#readFd.fd);
    const path = join(this.dir, segmentName(id));
    try {
      this.#readFd = { id, fd: openSync(path, 'r') };
    } catch (error) {
      throw spoolError('open', path, error);
    }
    return this.#readFd.fd;
  }

  /** Marks everything up to `end` acknowledged (entries are acknowledged in order); deletes finished segments. */
  ack(end: SpoolPosition): void {
    this.#acked = end;
    while (this.#segments.length > 1 && this.#segments[0]!.id < end.segment) {
      const gone = this.#segments.shift()!;
      if (this.#readFd?.id === gone.id) {
        closeSync(this.#readFd.fd);
        this.#readFd = undefined;
      }
      this.#saveCursor();
      rmSync(join(this.dir, segmentName(gone.id)), { force: true });
    }
    this.#saveCursor();
  }

  /** Sends again from the first entry not acknowledged (after a failed send). */
  rewind(): void {
    this.#send = this.#acked;
  }

  #saveCursor(): void {
    const b = Buffer.allocUnsafe(CURSOR_BYTES);
    b.writeBigUInt64LE(BigInt(this.#acked.segment), 0);
    b.writeBigUInt64LE(BigInt(this.#acked.offset), 8);
    b.writeBigUInt64LE(BigInt(this.#dropped.records), 16);
    b.writeBigUInt64LE(BigInt(this.#dropped.messages), 24);
    try {
      writeSync(this.#cursorFd, b, 0, CURSOR_BYTES, 0);
    } catch (error) {
      throw spoolError('write', join(this.dir, 'cursor'), error);
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const fd of [this.#writeFd, this.#cursorFd, this.#readFd?.fd ?? -1]) if (fd >= 0) closeSync(fd);
  }
}
