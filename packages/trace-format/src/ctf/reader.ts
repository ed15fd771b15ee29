import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { BitReader } from '../codec/bit-reader.ts';
import {
  alignmentOf,
  compileScope,
  type DecodeContext,
  type FieldDecoder,
  type IntegerHook,
  integerReader,
  type ScopeName,
} from '../codec/decoder.ts';
import { TraceFormatError } from '../errors.ts';
import type {
  ClockClass,
  EventClass,
  FieldValue,
  IntegerClass,
  StreamClass,
  StructClass,
  StructMember,
  TraceClass,
  TraceEvent,
  TraceReader,
} from '../model/types.ts';
import { type CyclesToNs, clockUpdater, cyclesToNs, DEFAULT_CLOCK } from './clock.ts';
import { isCtf2Metadata, parseCtf2Metadata } from './ctf2.ts';
import { type LttngIndexEntry, parseLttngIndex } from './lttng-index.ts';
import { readMetadataText } from './metadata.ts';
import { parseTsdl } from './tsdl/parser.ts';

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
}

type Struct = Record<string, FieldValue>;
type Scopes = { [scope: string]: Struct };

interface CompiledEvent {
  readonly cls: EventClass;
  readonly context?: FieldDecoder;
  readonly payload: FieldDecoder;
}

interface CompiledStream {
  readonly cls: StreamClass;
  readonly packetContext?: FieldDecoder;
  readonly eventHeader?: FieldDecoder;
  readonly eventContext?: FieldDecoder;
  readonly events: Map<number, CompiledEvent>;
  readonly toNs: CyclesToNs;
  readonly clockName: string;
  readonly timestamped: boolean;
  /** Event classes by id, for ids below 65536 (the common case), beside the map for the rest. */
  readonly byId: (CompiledEvent | undefined)[];
}

/** Decoding state of one stream file; the integer hooks write the meaningful fields here. */
interface StreamState extends DecodeContext {
  clock: number | bigint;
  eventId: number;
  magic: number;
  streamId: number;
  packetSize: number;
  contentSize: number;
  eventsDiscarded: number;
  packetSeqNum: number;
  cpuId: number;
}

/** Packet context members babeltrace2 consumes and does not show as event data. */
export const PACKET_CONTEXT_SPECIAL: ReadonlySet<string> = new Set([
  'timestamp_begin',
  'timestamp_end',
  'content_size',
  'packet_size',
  'events_discarded',
  'packet_seq_num',
]);

/** Random access to the bytes of one data stream file. */
export interface ByteSource {
  readonly size: number;
  /** The bytes from `offset`, at most `length` of them (fewer at the end). */
  read(offset: number, length: number): Uint8Array;
}

function memorySource(data: Uint8Array): ByteSource {
  return { size: data.length, read: (offset, length) => data.subarray(offset, offset + length) };
}

/** Reads a file in chunks on demand, so a trace of any size is decoded in bounded memory. */
function fileSource(path: string): ByteSource {
  const size = statSync(path).size;
  return {
    size,
    read(offset, length) {
      const n = Math.max(0, Math.min(length, size - offset));
      const out = Buffer.allocUnsafe(n);
      const fd = openSync(path, 'r');
      try {
        let done = 0;
        while (done < n) {
          const got = readSync(fd, out, done, n - done, offset + done);
          if (got === 0) break;
          done += got;
        }
        return out.subarray(0, done);
      } finally {
        closeSync(fd);
      }
    },
  };
}

/** Bytes read ahead from a stream file: packets are decoded in place within this window. */
const CHUNK = 4 << 20;
/** Packet header and context together never need more bytes than this (a bound on hostile metadata). */
const MAX_HEADERS = 64 << 20;

/** Scope values with every key present, so the object keeps one shape. */
function emptyRoots(): Partial<Record<ScopeName, Struct>> {
  return {
    'trace.packet.header': undefined,
    'stream.packet.context': undefined,
    'stream.event.header': undefined,
    'stream.event.context': undefined,
    'event.context': undefined,
    'event.fields': undefined,
  };
}

/** True for a packet context member a reader consumes (sizes, times, counters) rather than shows as data. */
export function isPacketContextSpecial(member: StructMember): boolean {
  const t = member.type;
  const int = t.kind === 'int' ? t : t.kind === 'enum' ? t.container : undefined;
  if (int?.role !== undefined) return int.role !== '';
  return PACKET_CONTEXT_SPECIAL.has(member.name);
}

function asNumber(v: number | bigint): number {
  return typeof v === 'bigint' ? (v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : Number.MAX_SAFE_INTEGER) : v;
}

function clockFor(trace: TraceClass, type: IntegerClass, file: string): ClockClass {
  if (type.mappedClock !== undefined) {
    const clock = trace.clocks.get(type.mappedClock);
    if (!clock) throw new TraceFormatError('ERR_TSDL', `timestamp maps to unknown clock ${type.mappedClock}`, { file });
    return clock;
  }
  if (trace.clocks.size === 1) return trace.clocks.values().next().value!;
  if (trace.clocks.size === 0) return DEFAULT_CLOCK;
  throw new TraceFormatError('ERR_TSDL', 'timestamp maps to no clock and the trace declares several', { file });
}

function hasMember(type: StructClass | undefined, name: string): IntegerClass | undefined {
  if (!type) return undefined;
  for (const m of type.members) {
    const t = m.type;
    if (t.kind === 'int' || t.kind === 'enum') {
      const int = t.kind === 'int' ? t : t.container;
      if ((int.role === 'timestamp' && name === 'timestamp_begin') || (int.role ?? m.name) === name) return int;
    }
    if (t.kind === 'struct') {
      const inner = hasMember(t, name);
      if (inner) return inner;
    }
    if (t.kind === 'variant') {
      for (const o of t.options) {
        if (o.type.kind === 'struct') {
          const inner = hasMember(o.type, name);
          if (inner) return inner;
        }
      }
    }
  }
  return undefined;
}

/**
 * A decoder for the LTTng event header shape (`enum id; variant <id> { struct { timestamp } compact; struct { id;
 * timestamp } extended } v;`, compact or large) that sets the event id and clock without building the header's value.
 * Returns undefined for any other header, which then takes the generic path.
 */
function lttngHeaderDecoder(type: StructClass | undefined): FieldDecoder | undefined {
  if (type?.members.length !== 2) return undefined;
  const [idMember, vMember] = type.members as [StructMember, StructMember];
  if (idMember.name !== 'id' || idMember.type.kind !== 'enum') return undefined;
  const v = vMember.type;
  if (v.kind !== 'variant' || v.tagRef !== 'id' || v.options.length !== 2) return undefined;
  const compact = v.options.find((o) => o.name === 'compact')?.type;
  const extended = v.options.find((o) => o.name === 'extended')?.type;
  if (compact?.kind !== 'struct' || extended?.kind !== 'struct') return undefined;
  const ints = (t: StructClass): IntegerClass[] | undefined =>
    t.members.every((m) => m.type.kind === 'int') ? t.members.map((m) => m.type as IntegerClass) : undefined;
  const c = ints(compact);
  const e = ints(extended);
  if (c?.length !== 1 || compact.members[0]!.name !== 'timestamp') return undefined;
  if (e?.length !== 2 || extended.members[0]!.name !== 'id' || extended.members[1]!.name !== 'timestamp') {
    return undefined;
  }
  const mappings = idMember.type.mappings;
  const ext = mappings.find((m) => m.label === 'extended');
  const cmp = mappings.find((m) => m.label === 'compact');
  if (mappings.length !== 2 || ext?.ranges.length !== 1 || cmp?.ranges.length !== 1) return undefined;
  const [extLow, extHigh] = ext.ranges[0]!;
  const [cmpLow, cmpHigh] = cmp.ranges[0]!;
  if (extLow !== extHigh || typeof extLow !== 'number' || typeof cmpLow !== 'number' || typeof cmpHigh !== 'number') {
    return undefined;
  }
  const headerAlign = alignmentOf(type);
  const readId = integerReader(idMember.type.container);
  const compactAlign = alignmentOf(compact);
  const extendedAlign = alignmentOf(extended);
  const readTs = integerReader(c[0]!);
  const compactClock = clockUpdater(c[0]!.size);
  const readExtId = integerReader(e[0]!);
  const readExtTs = integerReader(e[1]!);
  const extendedClock = clockUpdater(e[1]!.size);
  const idType = idMember.type.container;
  const tsType = c[0]!;
  // LTTng's compact header packs a 5-bit id and a 27-bit time in one 32-bit word: read it with one load.
  const packed = idType.size + tsType.size === 32 && idType.align <= 8 && tsType.align === 1 && headerAlign % 8 === 0;
  const le = idType.byteOrder === 'le';
  const idBits = idType.size;
  const idMask = 2 ** idBits - 1;
  const tsMask = 2 ** tsType.size - 1;
  return (ctx) => {
    const s = ctx as StreamState;
    const r = s.r;
    r.pos = r.at(headerAlign, 0);
    if (packed && idType.byteOrder === tsType.byteOrder) {
      const p = r.at(8, 32);
      const word = r.view.getUint32(p / 8, le);
      const id = le ? word & idMask : word >>> (32 - idBits);
      if (id !== extLow) {
        if (id < cmpLow || id > cmpHigh) r.fail(`event header id ${id} selects no variant option`);
        r.pos = p + 32;
        s.eventId = id;
        s.clock = compactClock(s.clock, le ? word >>> idBits : word & tsMask);
        return null;
      }
    }
    const id = readId(r) as number;
    if (id === extLow) {
      r.pos = r.at(extendedAlign, 0);
      s.eventId = asNumber(readExtId(r));
      s.clock = extendedClock(s.clock, readExtTs(r));
    } else if (id >= cmpLow && id <= cmpHigh) {
      r.pos = r.at(compactAlign, 0);
      s.eventId = id;
      s.clock = compactClock(s.clock, readTs(r));
    } else {
      r.fail(`event header id ${id} selects no variant option`);
    }
    return null;
  };
}

function compileStream(trace: TraceClass, cls: StreamClass, file: string): CompiledStream {
  const rootClasses: Partial<Record<ScopeName, StructClass>> = {
    'trace.packet.header': trace.packetHeader,
    'stream.packet.context': cls.packetContext,
    'stream.event.header': cls.eventHeader,
    'stream.event.context': cls.eventContext,
  };
  const tsType = hasMember(cls.eventHeader, 'timestamp') ?? hasMember(cls.packetContext, 'timestamp_begin');
  const clock = tsType ? clockFor(trace, tsType, file) : DEFAULT_CLOCK;
  const set =
    <K extends keyof StreamState>(key: K): IntegerHook =>
    (ctx, v) => {
      (ctx as StreamState)[key] = asNumber(v) as StreamState[K];
    };
  const packetContext =
    cls.packetContext &&
    compileScope(cls.packetContext, {
      scope: 'stream.packet.context',
      rootClasses,
      hook: (name, type) => {
        // CTF 2's `default-clock-timestamp` role in a packet context is the packet's beginning time.
        switch (type.role === 'timestamp' ? 'timestamp_begin' : (type.role ?? name)) {
          case 'timestamp_begin':
            return (ctx, v) => {
              (ctx as StreamState).clock = v;
            };
          case 'content_size':
            return set('contentSize');
          case 'packet_size':
            return set('packetSize');
          case 'events_discarded':
            return set('eventsDiscarded');
          case 'packet_seq_num':
            return set('packetSeqNum');
          case 'cpu_id':
            return set('cpuId');
        }
        return undefined;
      },
    });
  const eventHeader =
    lttngHeaderDecoder(cls.eventHeader) ??
    (cls.eventHeader &&
      compileScope(cls.eventHeader, {
        scope: 'stream.event.header',
        rootClasses,
        hook: (name, type) => {
          if (name === 'id') return set('eventId');
          if (name === 'timestamp') {
            const update = clockUpdater(type.size);
            return (ctx, v) => {
              const s = ctx as StreamState;
              s.clock = update(s.clock, v);
            };
          }
          return undefined;
        },
      }));
  const eventContext =
    cls.eventContext && compileScope(cls.eventContext, { scope: 'stream.event.context', rootClasses });
  const events = new Map<number, CompiledEvent>();
  for (const [id, ev] of cls.eventClasses) {
    const eventRoots = { ...rootClasses, 'event.context': ev.context, 'event.fields': ev.payload };
    events.set(id, {
      cls: ev,
      context: ev.context && compileScope(ev.context, { scope: 'event.context', rootClasses: eventRoots }),
      payload: compileScope(ev.payload, { scope: 'event.fields', rootClasses: eventRoots }),
    });
  }
  return {
    cls,
    packetContext,
    eventHeader,
    eventContext,
    events,
    toNs: cyclesToNs(clock),
    clockName: clock.name,
    byId: [...events]
      .filter(([id]) => id < 65536)
      .reduce<(CompiledEvent | undefined)[]>((a, [id, e]) => {
        a[id] = e;
        return a;
      }, []),
    timestamped: hasMember(cls.eventHeader, 'timestamp') !== undefined,
  };
}

function uuidOf(value: FieldValue | undefined): string | undefined {
  if (!Array.isArray(value) || value.length !== 16) return undefined;
  const hex = (value as number[]).map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Reads the events of one data stream file, packet by packet, in file order. */
class StreamFileCursor {
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
  private context: Struct | undefined;
  private readonly index?: readonly LttngIndexEntry[];
  done = false;

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

  /** The next event of this file, or undefined at its end. */
  next(): CtfEvent | undefined {
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
          continue;
        }
        return this.readEvent();
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
      this.chunk = this.source.read(offset, Math.max(CHUNK, length));
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
    if (!stream) r.fail(`packet refers to unknown stream class ${s.streamId}`, 0);
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
    const uuid = uuidOf(header?.uuid);
    // babeltrace2 reads such packets; say so once per file rather than reject them.
    if (uuid !== undefined && this.trace.uuid !== undefined && uuid !== this.trace.uuid && !this.uuidWarned) {
      this.uuidWarned = true;
      this.warnings.push(`${this.file}: packet UUID ${uuid} differs from the trace's ${this.trace.uuid}`);
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
    this.scopes = context ? { 'stream.packet.context': context } : {};
    this.cpu = s.cpuId >= 0 ? s.cpuId : null;
    if (s.eventsDiscarded > this.lastDiscarded) {
      const n = s.eventsDiscarded - this.lastDiscarded;
      this.warnings.push(
        `${this.file}: tracer discarded ${n} event${n === 1 ? '' : 's'} before packet ${this.packetNumber}`,
      );
    }
    this.lastDiscarded = s.eventsDiscarded;
    if (s.packetSeqNum >= 0) {
      if (this.lastSeqNum >= 0 && s.packetSeqNum > this.lastSeqNum + 1) {
        const n = s.packetSeqNum - this.lastSeqNum - 1;
        this.warnings.push(
          `${this.file}: tracer discarded ${n} packet${n === 1 ? '' : 's'} before packet ${this.packetNumber}`,
        );
      }
      this.lastSeqNum = s.packetSeqNum;
    }
  }

  private readEvent(): CtfEvent {
    const s = this.state;
    const stream = this.stream!;
    s.eventId = -1;
    const start = s.r.pos;
    if (stream.eventHeader) stream.eventHeader(s);
    let id = s.eventId;
    if (id < 0) {
      if (stream.events.size !== 1) s.r.fail('event header has no id and the stream has several event classes', start);
      id = stream.events.keys().next().value!;
    }
    const ev = stream.byId[id] ?? stream.events.get(id);
    if (!ev) s.r.fail(`unknown event id ${id} in stream class ${stream.cls.id}`, start);
    let scopes = this.scopes;
    if (stream.eventContext) {
      scopes = { ...scopes, 'stream.event.context': stream.eventContext(s) as Struct };
    }
    if (ev!.context) {
      if (scopes === this.scopes) scopes = { ...scopes };
      scopes['event.context'] = ev!.context(s) as Struct;
    }
    const fields = ev!.payload(s) as Struct;
    // An event that takes no bits would repeat forever: CTF events always hold at least one bit.
    if (s.r.pos === start) s.r.fail('event of size zero', start);
    return new CtfEvent(stream.timestamped ? s.clock : 0, stream.toNs, this.cpu, ev!.cls, fields, scopes);
  }
}

/**
 * A decoded event. Its time is kept in clock cycles and converted to nanoseconds (a bigint) only when read, which
 * spares two bigint allocations per event for consumers that never look.
 */
class CtfEvent implements TraceEvent {
  /** Clock value in cycles: what the merge compares when every stream shares one clock. */
  readonly cycles: number | bigint;
  readonly cpu: number | null;
  readonly eventClass: EventClass;
  readonly fields: Struct;
  readonly scopes: Scopes;
  readonly #toNs: CyclesToNs;
  #ns: bigint | undefined;

  constructor(
    cycles: number | bigint,
    toNs: CyclesToNs,
    cpu: number | null,
    cls: EventClass,
    fields: Struct,
    scopes: Scopes,
  ) {
    this.cycles = cycles;
    this.#toNs = toNs;
    this.cpu = cpu;
    this.eventClass = cls;
    this.fields = fields;
    this.scopes = scopes;
    this.#ns = undefined;
  }

  get tsNs(): bigint {
    if (this.#ns === undefined) this.#ns = this.#toNs(this.cycles);
    return this.#ns;
  }
}

type Pending = { cursor: StreamFileCursor; event: CtfEvent; key: number | bigint; order: number };

/**
 * A binary min-heap of cursors keyed by their pending event's time, ties broken by file order. The key is the clock
 * value in cycles when every stream shares one clock, else nanoseconds.
 */
class Merger {
  private readonly heap: Pending[] = [];
  private readonly byCycles: boolean;

  constructor(byCycles: boolean) {
    this.byCycles = byCycles;
  }

  private key(event: CtfEvent): number | bigint {
    return this.byCycles ? event.cycles : event.tsNs;
  }

  push(cursor: StreamFileCursor, order: number): void {
    const event = cursor.next();
    if (event) this.insert({ cursor, event, key: this.key(event), order });
  }

  private less(a: Pending, b: Pending): boolean {
    return a.key < b.key || (!(b.key < a.key) && a.order < b.order);
  }

  private insert(item: Pending): void {
    const h = this.heap;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  pop(): CtfEvent | undefined {
    const h = this.heap;
    if (h.length === 0) return undefined;
    const top = h[0]!;
    const event = top.event;
    const next = top.cursor.next();
    if (next) {
      top.event = next;
      top.key = this.key(next);
      if (h.length === 1) return event;
    } else {
      const last = h.pop()!;
      if (h.length === 0) return event;
      h[0] = last;
    }
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
      if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
    return event;
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
  return {
    kind: 'ctf',
    trace,
    streamFiles: input.streams.map((f) => f.path),
    timestamped: [...streams.values()].some((s) => s.timestamped),
    eventClasses,
    warnings,
    *events() {
      const cursors = input.streams.map(({ path, data, index }) => {
        const source = data instanceof Uint8Array ? memorySource(data) : data;
        return new StreamFileCursor(source, path, trace, packetHeader, streams, lenient, warnings, index);
      });
      if (cursors.length === 1) {
        // One stream: its events are already in order.
        const cursor = cursors[0]!;
        for (let e = cursor.next(); e; e = cursor.next()) yield e;
        return;
      }
      const clocks = new Set([...streams.values()].map((st) => st.clockName));
      const merger = new Merger(clocks.size <= 1);
      cursors.forEach((cursor, order) => {
        merger.push(cursor, order);
      });
      for (let e = merger.pop(); e; e = merger.pop()) yield e;
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
    metadata = readFileSync(metadataPath);
    names = streamFilesOf(dir);
  } catch (error) {
    throw new TraceFormatError('ERR_TRACE_INPUT', `cannot read CTF trace: ${(error as Error).message}`, {
      file: metadataPath,
    });
  }
  const streams = names.map((name) => {
    const path = join(dir, name);
    const indexPath = join(dir, 'index', `${name}.idx`);
    const index = existsSync(indexPath) ? parseLttngIndex(readFileSync(indexPath), indexPath) : undefined;
    return { path, data: fileSource(path), index };
  });
  return readCtfTrace({ metadata, metadataPath, streams }, options);
}
