import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { located } from '@evtrace/errors';
import { BitReader } from '../codec/bit-reader.ts';
import { compileScope, type FieldDecoder } from '../codec/decoder.ts';
import { TraceFormatError } from '../errors.ts';
import {
  type TraceDatFileResult,
  type TraceDatWriteOptions,
  writeTraceDatWith,
} from '../ftrace/tracedat/write-events.ts';
import { readInput } from '../input.ts';
import type { FieldValue, TraceClass, TraceEvent, TraceReader } from '../model/types.ts';
import { type OutputAccess, type OutputDirOptions, writeDirAtomically } from '../output/atomic.ts';
import { type ByteSource, CHUNK, fileSource, MAX_HEADERS, memorySource } from './byte-source.ts';
import type { CyclesToNs } from './clock.ts';
import { copiesAsWritten, copyCtfPackets } from './copy.ts';
import { isCtf2Metadata, parseCtf2Metadata } from './ctf2.ts';
import { CtfEvent } from './event.ts';
import { type IndexedCtfTrace, indexCtfStreams } from './indexed.ts';
import type { EventLineWriter, LineSource, LineTarget } from './line-target.ts';
import { type CtfLinesOptions, writeCtfLines } from './lines.ts';
import { type LttngIndexEntry, parseLttngIndex } from './lttng-index.ts';
import { Merger } from './merge.ts';
import { readMetadataText } from './metadata.ts';
import type { PacketCursor, PacketStart } from './packet-cursor.ts';
import { writeCtfRecords } from './records.ts';
import {
  asNumber,
  type CompiledEvent,
  type CompiledStream,
  compileStream,
  emptyRoots,
  type Scopes,
  type StreamState,
  type Struct,
} from './stream-class.ts';
import { parseTsdl } from './tsdl/parser.ts';

export type { ByteSource } from './byte-source.ts';
export { isPacketContextSpecial, PACKET_CONTEXT_SPECIAL } from './stream-class.ts';

/** Magic number at the start of every CTF packet that has a `magic` field. */
export const CTF_PACKET_MAGIC = 0xc1fc1fc1;

export interface OpenCtfOptions {
  /** Report a corrupt packet in `warnings` and continue with the next one instead of throwing. */
  readonly lenient?: boolean;
}

/** A CTF trace opened for reading. */
export interface CtfTraceReader extends TraceReader {
  readonly kind: 'ctf';
  readonly trace: TraceClass;
  /** The data stream files, in the order ties between equal timestamps are broken. */
  readonly streamFiles: readonly string[];
  /** False when events carry no timestamp (no `timestamp` in the event header): `tsNs` is then 0. */
  readonly timestamped: boolean;
  /**
   * Events in time order. Each is an object whose `tsNs` is computed on first read (a prototype getter): copy one
   * with `{ ...event, tsNs: event.tsNs }`, as a spread alone does not carry getters.
   */
  events(): Iterable<TraceEvent>;
  /**
   * Random access to the same events, in the same order, indexed as far as asked ({@link IndexedCtfTrace.advance}):
   * the first rows of a large trace are there long before its end has been read.
   */
  index(): IndexedCtfTrace;
  /**
   * The same events written as lines of text (as `createBabeltraceTextFormatter` formats them) or JSON (as
   * `createJsonFormatter` does), decoded straight into the output bytes (see lines.ts); returns the number of lines.
   */
  writeLines(write: (bytes: Uint8Array) => void, options: CtfLinesOptions): number;
  /**
   * Copies the trace to `dir` as it is (metadata and every packet, each once its events were read; a corrupt one
   * throws, or read `lenient` is left out), built beside it and swapped in as `writeCtfTrace` does; returns the number
   * of events. Undefined, having written nothing, when the copy would differ from what `writeCtfTrace` writes (it adds
   * a time and a CPU to streams without them).
   */
  copy(dir: string, options?: OutputDirOptions): number | undefined;
  /**
   * Writes the events to a trace.dat file as `writeTraceDat(file, eventClasses, events(), options)` does, byte for
   * byte, with the records of classes whose synthesized format holds only integers written straight from the packet
   * bytes (see records.ts).
   */
  writeTraceDat(file: string, options?: TraceDatWriteOptions & OutputAccess): TraceDatFileResult;
}

function uuidOf(value: FieldValue | undefined): string | undefined {
  if (!Array.isArray(value) || value.length !== 16) return undefined;
  const hex = (value as number[]).map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Reads the events of one data stream file, packet by packet, in file order. */
export class StreamFileCursor implements PacketCursor, LineSource {
  private readonly source: ByteSource;
  private chunk: Uint8Array = new Uint8Array(0);
  private chunkStart = 0;
  private readonly file: string;
  private readonly trace: TraceClass;
  private readonly packetHeader?: FieldDecoder;
  private readonly streams: Map<number, CompiledStream>;
  private readonly lenient: boolean;
  private readonly warnings: string[];
  private readonly state: StreamState;
  private stream?: CompiledStream;
  private packetOffset = 0;
  private nextPacketOffset = 0;
  private inPacket = false;
  private packetNumber = 0;
  private lastDiscarded = 0;
  private lastSeqNum = -1;
  private scopes: Scopes = {};
  private cpu: number | null = null;
  private uuidWarned = false;
  private uuidBytes: number[] | undefined;
  private context: Struct | undefined;
  private readonly index?: readonly LttngIndexEntry[];
  private openedAt: PacketStart = { offset: 0, number: 0, clock: 0 };
  done = false;
  /**
   * Called with a packet's bytes (valid during the call) once all its events were read: a packet read `lenient`
   * that proved corrupt is never given.
   */
  onPacket: ((bytes: Uint8Array) => void) | undefined;

  constructor(
    source: ByteSource,
    file: string,
    trace: TraceClass,
    packetHeader: FieldDecoder | undefined,
    streams: Map<number, CompiledStream>,
    lenient: boolean,
    warnings: string[],
    index?: readonly LttngIndexEntry[],
  ) {
    this.index = index;
    this.source = source;
    this.file = file;
    this.trace = trace;
    this.packetHeader = packetHeader;
    this.streams = streams;
    this.lenient = lenient;
    this.warnings = warnings;
    this.state = {
      r: new BitReader(new Uint8Array(0), file, 0),
      stack: [],
      roots: emptyRoots(),
      clock: 0,
      eventId: -1,
      magic: -1,
      streamId: -1,
      packetSize: -1,
      contentSize: -1,
      eventsDiscarded: 0,
      packetSeqNum: -1,
      cpuId: -1,
    };
  }

  /** The packet the last event returned by {@link next} belongs to. */
  get packet(): PacketStart {
    return this.openedAt;
  }

  /** Bytes of the file behind the reader (for progress). */
  get position(): number {
    return this.inPacket ? this.packetOffset + (this.state.r.pos >> 3) : this.nextPacketOffset;
  }

  /** The file's size in bytes. */
  get size(): number {
    return this.source.size;
  }

  /** Positions the cursor at the start of a packet met before, so that {@link next} decodes it again. */
  seek(packet: PacketStart): void {
    this.done = false;
    this.inPacket = false;
    this.nextPacketOffset = packet.offset;
    this.packetNumber = packet.number - 1;
    this.state.clock = packet.clock;
  }

  /** The next event of this file, or undefined at its end. */
  next(): CtfEvent | undefined {
    return this.advance(undefined) as CtfEvent | undefined;
  }

  /**
   * The next event of this file, or undefined at its end: `true` when its class has a line writer in `lines`, which
   * wrote its line's body to `lines.out` (see {@link cycles} for its time), else the decoded event.
   */
  nextLine(lines: LineTarget): CtfEvent | true | undefined {
    return this.advance(lines);
  }

  /** The clock, in cycles, of the last event {@link nextLine} wrote; 0 for streams without timestamps. */
  get cycles(): number | bigint {
    return this.stream!.timestamped ? this.state.clock : 0;
  }

  /** The clock conversion of the last event's stream. */
  get toNs(): CyclesToNs {
    return this.stream!.toNs;
  }

  /** The current packet's context, as decoded (a new object per packet), or undefined. */
  get packetContext(): Struct | undefined {
    return this.context;
  }

  /** The CPU of the current packet (its `cpu_id`), or null. */
  get packetCpu(): number | null {
    return this.cpu;
  }

  private advance(lines: LineTarget | undefined): CtfEvent | true | undefined {
    for (;;) {
      if (this.done) return undefined;
      try {
        if (!this.inPacket) {
          if (this.nextPacketOffset >= this.source.size) {
            this.done = true;
            return undefined;
          }
          this.openPacket();
          continue;
        }
        const r = this.state.r;
        if (r.pos >= r.limit) {
          this.inPacket = false;
          if (this.onPacket !== undefined) {
            const size = this.nextPacketOffset - this.packetOffset;
            this.onPacket(this.bytesAt(this.packetOffset, size).subarray(0, size));
          }
          continue;
        }
        if (lines?.placed === true) {
          // Lines that go where they go by themselves: the packet's events are read in one loop.
          const event = this.readPlaced(lines);
          if (event !== undefined) return event;
          continue;
        }
        const event = this.readEvent(lines);
        // An event a filter left out: on to the next.
        if (event !== false) return event;
      } catch (error) {
        if (!this.lenient || !(error instanceof TraceFormatError)) throw error;
        this.warnings.push(
          `skipped corrupt packet ${this.packetNumber} at byte ${this.packetOffset}: ${error.message}`,
        );
        this.inPacket = false;
        // Without a trustworthy packet size, resynchronise on the next packet magic, if packets have one.
        if (this.nextPacketOffset <= this.packetOffset) {
          const indexed = this.index?.[this.packetNumber]?.offset;
          const next =
            indexed !== undefined && indexed > this.packetOffset ? indexed : this.findMagic(this.packetOffset + 1);
          if (next < 0) this.done = true;
          else this.nextPacketOffset = next;
        }
      }
    }
  }

  /** Whether a packet header's `uuid` holds the trace's UUID. */
  private sameUuid(value: FieldValue | undefined): boolean {
    const uuid = this.trace.uuid;
    if (uuid === undefined || !Array.isArray(value) || value.length !== 16) return false;
    this.uuidBytes ??=
      uuid
        .replace(/-/g, '')
        .match(/../g)
        ?.map((h) => Number.parseInt(h, 16)) ?? [];
    const bytes = this.uuidBytes;
    return bytes.length === 16 && bytes.every((b, i) => value[i] === b);
  }

  /** Offset of the next packet magic at or after `from`, or -1 (also when packets carry no magic). */
  private findMagic(from: number): number {
    const first = this.trace.packetHeader?.members[0];
    if (first?.name !== 'magic' || first.type.kind !== 'int' || first.type.size !== 32) return -1;
    const le = first.type.byteOrder === 'le';
    const pattern = le ? [0xc1, 0x1f, 0xfc, 0xc1] : [0xc1, 0xfc, 0x1f, 0xc1];
    for (let at = from; at + 4 <= this.source.size; at += CHUNK - 3) {
      const data = this.source.read(at, CHUNK);
      for (let i = data.indexOf(pattern[0]!); i >= 0 && i + 4 <= data.length; i = data.indexOf(pattern[0]!, i + 1)) {
        if (data[i + 1] === pattern[1] && data[i + 2] === pattern[2] && data[i + 3] === pattern[3]) return at + i;
      }
    }
    return -1;
  }

  /** At least `length` bytes from `offset` (fewer only at the end of the file), from the read-ahead window. */
  private bytesAt(offset: number, length: number): Uint8Array {
    const end = Math.min(offset + length, this.source.size);
    if (offset < this.chunkStart || end > this.chunkStart + this.chunk.length) {
      // The last window's bytes are read again: nothing decoded from them refers to them (values are copies).
      const spare = this.chunk.buffer.byteLength >= CHUNK ? new Uint8Array(this.chunk.buffer) : undefined;
      this.chunk = this.source.read(offset, Math.max(CHUNK, length), spare);
      this.chunkStart = offset;
    }
    return this.chunk.subarray(offset - this.chunkStart);
  }

  /** Decodes the packet header and context at the reader's start; returns the header's value. */
  private readPacketHeaders(): Struct | undefined {
    const s = this.state;
    const r = s.r;
    s.stack.length = 0;
    s.roots = emptyRoots();
    s.magic = -1;
    s.streamId = -1;
    s.packetSize = -1;
    s.contentSize = -1;
    s.cpuId = -1;
    s.packetSeqNum = -1;
    let header: Struct | undefined;
    if (this.packetHeader) {
      header = this.packetHeader(s) as Struct;
      if (s.magic !== -1 && s.magic !== CTF_PACKET_MAGIC) {
        r.fail(`bad packet magic 0x${s.magic.toString(16)} (expected 0xc1fc1fc1)`, 0);
      }
    }
    let stream: CompiledStream | undefined;
    if (s.streamId >= 0) stream = this.streams.get(s.streamId);
    else if (this.streams.size === 1) stream = this.streams.values().next().value;
    if (!stream) {
      r.fail(
        s.streamId >= 0
          ? `packet refers to unknown stream class ${s.streamId}`
          : `packet header has no stream_id but the trace has ${this.streams.size} stream classes`,
        0,
      );
    }
    this.stream = stream;
    this.context = stream!.packetContext?.(s) as Struct | undefined;
    return header;
  }

  private openPacket(): void {
    const s = this.state;
    const r = s.r;
    this.packetOffset = this.nextPacketOffset;
    this.packetNumber++;
    const left = this.source.size - this.packetOffset;
    let window = this.bytesAt(this.packetOffset, Math.min(left, 65536));
    r.reset(window, this.packetOffset);
    let header: Struct | undefined;
    try {
      header = this.readPacketHeaders();
    } catch (error) {
      // Headers running past the window (not past the file): decode them again over a larger one.
      const truncated = error instanceof TraceFormatError && /truncated|unterminated/.test(error.message);
      if (!truncated || window.length >= Math.min(left, MAX_HEADERS)) throw error;
      window = this.bytesAt(this.packetOffset, Math.min(left, MAX_HEADERS));
      r.reset(window, this.packetOffset);
      header = this.readPacketHeaders();
    }
    // Formatted only when its bytes differ from the trace's.
    const uuid = this.uuidWarned || this.sameUuid(header?.uuid) ? undefined : uuidOf(header?.uuid);
    // babeltrace2 reads such packets; say so once per file rather than reject them.
    if (uuid !== undefined && this.trace.uuid !== undefined && uuid !== this.trace.uuid && !this.uuidWarned) {
      this.uuidWarned = true;
      this.warnings.push(
        located(`packet UUID ${uuid} differs from the trace's ${this.trace.uuid}`, { file: this.file }),
      );
    }
    const context = this.context;
    const remaining = left * 8;
    let packetBits = s.packetSize >= 0 ? s.packetSize : s.contentSize >= 0 ? s.contentSize : remaining;
    const contentBits = s.contentSize >= 0 ? s.contentSize : packetBits;
    if (packetBits === 0 && contentBits === 0 && s.packetSize >= 0) packetBits = remaining;
    if (contentBits > packetBits) r.fail(`content size ${contentBits} bits exceeds packet size ${packetBits} bits`, 0);
    if (packetBits % 8 !== 0) r.fail(`packet size ${packetBits} bits is not a whole number of bytes`, 0);
    if (packetBits > remaining) {
      r.fail(`packet size ${packetBits / 8} bytes runs past the end of the file (${remaining / 8} bytes left)`, 0);
    }
    if (contentBits < r.pos) r.fail(`content size ${contentBits} bits is smaller than the packet's header`, 0);
    if (packetBits === 0) r.fail('packet of size 0', 0);
    const entry = this.index?.[this.packetNumber - 1];
    if (
      entry &&
      (entry.offset !== this.packetOffset || entry.packetSize !== packetBits || entry.contentSize !== contentBits)
    ) {
      r.fail(
        `packet ${this.packetNumber} (${packetBits} bits, content ${contentBits}) disagrees with the index ` +
          `(offset ${entry.offset}, ${entry.packetSize} bits, content ${entry.contentSize})`,
        0,
      );
    }
    this.nextPacketOffset = this.packetOffset + packetBits / 8;
    if (window.length < packetBits / 8) {
      // The packet is larger than the window: read all of it and go on decoding where the headers ended.
      const pos = r.pos;
      r.reset(this.bytesAt(this.packetOffset, packetBits / 8), this.packetOffset);
      r.pos = pos;
    }
    r.limit = contentBits;
    this.inPacket = true;
    this.openedAt = { offset: this.packetOffset, number: this.packetNumber, clock: s.clock };
    this.scopes = context ? { 'stream.packet.context': context } : {};
    this.cpu = s.cpuId >= 0 ? s.cpuId : null;
    if (s.eventsDiscarded > this.lastDiscarded) {
      const n = s.eventsDiscarded - this.lastDiscarded;
      this.warnings.push(
        located(`tracer discarded ${n} event${n === 1 ? '' : 's'} before packet ${this.packetNumber}`, {
          file: this.file,
        }),
      );
    }
    this.lastDiscarded = s.eventsDiscarded;
    if (s.packetSeqNum >= 0) {
      if (this.lastSeqNum >= 0 && s.packetSeqNum > this.lastSeqNum + 1) {
        const n = s.packetSeqNum - this.lastSeqNum - 1;
        this.warnings.push(
          located(`tracer discarded ${n} packet${n === 1 ? '' : 's'} before packet ${this.packetNumber}`, {
            file: this.file,
          }),
        );
      }
      this.lastSeqNum = s.packetSeqNum;
    }
  }

  /** Decodes the header of the event at `start` (the reader's position); returns its class. */
  private eventClassAt(stream: CompiledStream, start: number): CompiledEvent {
    const s = this.state;
    s.eventId = -1;
    if (stream.eventHeader) stream.eventHeader(s);
    const id = s.eventId;
    const ev = id >= 0 ? stream.byId[id] : undefined;
    return ev ?? this.eventClassOf(stream, id, start);
  }

  /** The class of an event whose header gave `id` (-1: no id) and that is not in the stream's table by id. */
  private eventClassOf(stream: CompiledStream, id: number, start: number): CompiledEvent {
    const r = this.state.r;
    if (id < 0) {
      if (stream.events.size !== 1) r.fail('event header has no id and the stream has several event classes', start);
      id = stream.events.keys().next().value!;
    }
    const ev = stream.byId[id] ?? stream.events.get(id);
    if (!ev) r.fail(`unknown event id ${id} in stream class ${stream.cls.id}`, start);
    return ev!;
  }

  /**
   * Reads the rest of the packet through `lines`, whose writers put each line where it goes (see
   * {@link LineTarget.placed}); returns the first event whose class has no writer, decoded, or undefined at the
   * packet's end.
   */
  private readPlaced(lines: LineTarget): CtfEvent | undefined {
    const stream = this.stream!;
    const s = this.state;
    const r = s.r;
    const { plan, out } = lines;
    // Left empty by the writers, but for the bytes of an event that proved corrupt.
    out.length = 0;
    let ev: CompiledEvent | undefined;
    let write: EventLineWriter | undefined;
    while (r.pos < r.limit) {
      const start = r.pos;
      const next = this.eventClassAt(stream, start);
      if (next !== ev) {
        ev = next;
        write = plan.writer(stream, ev);
      }
      if (write === undefined) return this.decodeEvent(stream, ev, start);
      write(s, out, this, undefined);
      if (r.pos === start) r.fail('event of size zero', start);
    }
    return undefined;
  }

  private readEvent(lines: LineTarget | undefined): CtfEvent | boolean {
    const s = this.state;
    const stream = this.stream!;
    const start = s.r.pos;
    const ev = this.eventClassAt(stream, start);
    const write = lines?.plan.writer(stream, ev);
    if (write !== undefined) {
      const out = lines!.out;
      const head = lines!.head;
      const mark = out.length;
      let kept: boolean;
      head?.mark();
      try {
        kept = write(s, out, this, head);
        if (s.r.pos === start) s.r.fail('event of size zero', start);
      } catch (error) {
        // Nothing of a corrupt event is written.
        out.length = mark;
        head?.undo();
        throw error;
      }
      if (!kept) {
        out.length = mark;
        head?.undo();
      }
      return kept;
    }
    return this.decodeEvent(stream, ev, start);
  }

  /** Decodes the scopes of the event of class `ev` whose header was read from `start`. */
  private decodeEvent(stream: CompiledStream, ev: CompiledEvent, start: number): CtfEvent {
    const s = this.state;
    let scopes = this.scopes;
    if (stream.eventContext) {
      scopes = { ...scopes, 'stream.event.context': stream.eventContext(s) as Struct };
    }
    if (ev.context) {
      if (scopes === this.scopes) scopes = { ...scopes };
      scopes['event.context'] = ev.context(s) as Struct;
    }
    const fields = ev.payload(s) as Struct;
    // An event that takes no bits would repeat forever: CTF events always hold at least one bit.
    if (s.r.pos === start) s.r.fail('event of size zero', start);
    return new CtfEvent(stream.timestamped ? s.clock : 0, stream.toNs, this.cpu, ev.cls, fields, scopes);
  }
}

/** Lists the data stream files of a trace directory: every regular file but `metadata` and hidden files. */
function streamFilesOf(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name !== 'metadata' && !name.startsWith('.'))
    .filter((name) => statSync(join(dir, name)).isFile())
    .sort();
}

/** A CTF trace held in memory: the metadata file's bytes and each data stream file's bytes. */
export interface CtfTraceData {
  readonly metadata: Uint8Array;
  /** Data stream files; `path` names them in errors and warnings and orders ties. */
  readonly streams: readonly {
    readonly path: string;
    readonly data: Uint8Array | ByteSource;
    /** The stream's LTTng index, when there is one: every packet is checked against it. */
    readonly index?: readonly LttngIndexEntry[];
  }[];
  /** Name of the metadata file in errors. */
  readonly metadataPath?: string;
}

/**
 * Reads a CTF 1.8 trace from bytes (see {@link openCtfTrace} for a directory). Malformed metadata throws at once; a
 * corrupt packet throws while iterating, or with `lenient` is reported in `warnings` and skipped.
 */
export function readCtfTrace(input: CtfTraceData, options: OpenCtfOptions = {}): CtfTraceReader {
  const metadataFile = input.metadataPath ?? 'metadata';
  const warnings: string[] = [];
  const trace = isCtf2Metadata(input.metadata)
    ? parseCtf2Metadata(Buffer.from(input.metadata).toString('utf8'), metadataFile)
    : parseTsdl(readMetadataText(input.metadata, metadataFile).text, { file: metadataFile, warnings });
  const streams = new Map<number, CompiledStream>();
  for (const [id, cls] of trace.streams) streams.set(id, compileStream(trace, cls, metadataFile));
  const packetHeader =
    trace.packetHeader &&
    compileScope(trace.packetHeader, {
      scope: 'trace.packet.header',
      rootClasses: { 'trace.packet.header': trace.packetHeader },
      hook: (name, type) => {
        const meaning = type.role ?? name;
        return meaning === 'magic' || meaning === 'stream_id'
          ? (ctx, v) => {
              (ctx as StreamState)[meaning === 'magic' ? 'magic' : 'streamId'] = asNumber(v);
            }
          : undefined;
      },
    });
  const eventClasses = [...trace.streams.values()].flatMap((s) => [...s.eventClasses.values()]);
  const lenient = options.lenient ?? false;
  const byCycles = new Set([...streams.values()].map((st) => st.clockName)).size <= 1;
  const cursorsOver = (sink: string[]) =>
    input.streams.map(({ path, data, index }) => {
      const source = data instanceof Uint8Array ? memorySource(data) : data;
      return new StreamFileCursor(source, path, trace, packetHeader, streams, lenient, sink, index);
    });
  return {
    kind: 'ctf',
    trace,
    streamFiles: input.streams.map((f) => f.path),
    timestamped: [...streams.values()].some((s) => s.timestamped),
    eventClasses,
    warnings,
    *events() {
      const cursors = cursorsOver(warnings);
      if (cursors.length === 1) {
        // One stream: its events are already in order.
        const cursor = cursors[0]!;
        for (let e = cursor.next(); e; e = cursor.next()) yield e;
        return;
      }
      const merger = new Merger(byCycles);
      cursors.forEach((cursor, order) => {
        merger.push(cursor, order);
      });
      for (let e = merger.pop(); e; e = merger.pop()) yield e;
    },
    writeLines(write, lineOptions) {
      return writeCtfLines(cursorsOver(warnings), byCycles, trace, write, {
        timestamps: [...streams.values()].some((st) => st.timestamped),
        ...lineOptions,
      });
    },
    copy(dir, outputOptions = {}) {
      if (!copiesAsWritten(trace)) return undefined;
      const files = input.streams.map((f) => f.path);
      return writeDirAtomically(
        dir,
        (temp) => copyCtfPackets(cursorsOver(warnings), files, trace, input.metadata, temp),
        outputOptions,
      );
    },
    writeTraceDat(file, options = {}) {
      return writeTraceDatWith(file, eventClasses, options, (encoder) => {
        writeCtfRecords(cursorsOver(warnings), byCycles, encoder);
      });
    },
    index() {
      // Re-decoding repeats what indexing already reported: its warnings go nowhere.
      return indexCtfStreams(cursorsOver(warnings), () => cursorsOver([]), eventClasses, byCycles);
    },
  };
}

/**
 * Opens a CTF 1.8 trace directory (`metadata` plus one file per data stream; `index/` and hidden files are
 * ignored). Events of every stream are merged in timestamp order. Stream files are read when iteration starts.
 */
export function openCtfTrace(dir: string, options: OpenCtfOptions = {}): CtfTraceReader {
  const metadataPath = join(dir, 'metadata');
  let metadata: Uint8Array;
  let names: string[];
  try {
    metadata = readInput(metadataPath);
    names = streamFilesOf(dir);
  } catch (error) {
    if (error instanceof TraceFormatError) throw error;
    throw new TraceFormatError('ERR_TRACE_INPUT', `cannot read CTF trace: ${(error as Error).message}`, {
      file: metadataPath,
    });
  }
  const streams = names.map((name) => {
    const path = join(dir, name);
    const indexPath = join(dir, 'index', `${name}.idx`);
    const index = existsSync(indexPath) ? parseLttngIndex(readInput(indexPath), indexPath) : undefined;
    return { path, data: fileSource(path), index };
  });
  return readCtfTrace({ metadata, metadataPath, streams }, options);
}
