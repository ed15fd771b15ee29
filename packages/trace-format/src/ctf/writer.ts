import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { BitWriter } from '../codec/bit-writer.ts';
import { compileEncoder, type FieldEncoder, integerEncoder } from '../codec/encoder.ts';
import { TraceFormatError } from '../errors.ts';
import { hexFields } from '../ftrace/hex-fields.ts';
import type {
  ByteOrder,
  ClockClass,
  EventClass,
  FieldClass,
  FieldValue,
  IntegerClass,
  StructClass,
  StructMember,
  TraceEvent,
  TraceReader,
} from '../model/types.ts';
import { type OutputDirOptions, writeDirAtomically } from '../output/atomic.ts';
import { CTF_PACKET_MAGIC } from './reader.ts';
import { clockText, eventText, structText, tsdlString } from './tsdl/emit.ts';

/** LTTng's event header layouts: `compact` (5-bit id, 27-bit time) and `large` (16-bit id, 32-bit time). */
export type EventHeaderKind = 'compact' | 'large';

export interface CtfWriterOptions {
  /** Byte order of every field. Default `le`. */
  readonly byteOrder?: ByteOrder;
  /** Event header layout; both fall back to the extended form (32-bit id, 64-bit time) when needed. Default compact. */
  readonly eventHeader?: EventHeaderKind;
  /** Target packet size in bytes (a packet grows to hold an event that is larger). Default 64 KiB. */
  readonly packetSize?: number;
  /** Trace UUID; a random one by default. */
  readonly uuid?: string;
  /** TSDL `env` entries (babeltrace2 prints `hostname`, `procname`, `vpid`). */
  readonly env?: Readonly<Record<string, string | number | bigint>>;
  /**
   * The clock of `tsNs`. Default: `monotonic`, 1 GHz, its origin the whole second before the first event (so cycles
   * stay small); times read back are the nanoseconds written either way.
   */
  readonly clock?: Partial<ClockClass>;
  /**
   * The stream event context every event carries (LTTng's `vtid`, `vpid`...): its values are taken from each event's
   * `scopes['stream.event.context']`. Event classes with a `context` likewise write `scopes['event.context']`.
   */
  readonly eventContext?: StructClass;
}

/** An event to write: its class, time, payload and CPU (one stream file per CPU). */
export interface CtfEventInput {
  readonly eventClass: EventClass;
  readonly tsNs: bigint;
  readonly fields: { readonly [name: string]: FieldValue };
  readonly cpu?: number | null;
  /** Context scopes, by CTF scope name (`stream.event.context`, `event.context`). */
  readonly scopes?: { readonly [scope: string]: { readonly [name: string]: FieldValue } };
}

export interface CtfWriter {
  /** Appends an event. Events of one CPU must come in non-decreasing time. */
  writeEvent(event: CtfEventInput): void;
  /** Flushes every stream and writes the metadata; the trace is complete only after this. */
  close(): void;
  /** Bytes written to stream files so far (packets flushed). */
  readonly bytesWritten: number;
}

interface WriterClass {
  readonly cls: EventClass;
  readonly encode: FieldEncoder;
  /** Encoder of the class's own context, when it has one. */
  readonly encodeContext?: FieldEncoder;
  /** Rewrites ftrace `__data_loc` arrays into a length member and a sequence. */
  readonly prepare?: (fields: { readonly [name: string]: FieldValue }) => { [name: string]: FieldValue };
}

function u(size: number, order: ByteOrder, mappedClock?: string): IntegerClass {
  return { kind: 'int', size, signed: false, align: 8, byteOrder: order, base: 10, encoding: 'none', mappedClock };
}

function bits(size: number, order: ByteOrder, mappedClock?: string): IntegerClass {
  return { ...u(size, order, mappedClock), align: 1 };
}

/** The LTTng-style event header of the given kind, as a structure class. */
function eventHeaderClass(kind: EventHeaderKind, order: ByteOrder, clock: string): StructClass {
  const compactIds = kind === 'compact' ? 31 : 65535;
  const idType = kind === 'compact' ? bits(5, order) : u(16, order);
  const tsType = kind === 'compact' ? bits(27, order, clock) : u(32, order, clock);
  return {
    kind: 'struct',
    minAlign: 8,
    members: [
      {
        name: 'id',
        type: {
          kind: 'enum',
          container: idType,
          mappings: [
            { label: 'compact', ranges: [[0, compactIds - 1]] },
            { label: 'extended', ranges: [[compactIds, compactIds]] },
          ],
        },
      },
      {
        name: 'v',
        type: {
          kind: 'variant',
          tagRef: 'id',
          options: [
            { name: 'compact', type: { kind: 'struct', minAlign: 1, members: [{ name: 'timestamp', type: tsType }] } },
            {
              name: 'extended',
              type: {
                kind: 'struct',
                minAlign: 1,
                members: [
                  { name: 'id', type: u(32, order) },
                  { name: 'timestamp', type: u(64, order, clock) },
                ],
              },
            },
          ],
        },
      },
    ],
  };
}

/**
 * ftrace dynamic arrays become `NAME_length` + sequence; dynamic strings become strings. Integers the event's print fmt
 * shows as addresses or in hex (`hex`) get TSDL base 16, so readers of the CTF show them as the ftrace source does.
 */
function ctfPayload(payload: StructClass, hex: ReadonlySet<string>): { type: StructClass; dynamic: string[] } {
  const members: StructMember[] = [];
  const dynamic: string[] = [];
  for (const m of payload.members) {
    const t = m.type;
    if (t.kind !== 'dynamic') {
      members.push(
        t.kind === 'int' && t.base !== 16 && hex.has(m.name) ? { name: m.name, type: { ...t, base: 16 } } : m,
      );
      continue;
    }
    if (t.isString) {
      members.push({ name: m.name, type: { kind: 'string', encoding: 'utf8' } });
      continue;
    }
    dynamic.push(m.name);
    const lengthType: FieldClass = {
      kind: 'int',
      size: 32,
      signed: false,
      align: 8,
      byteOrder: 'le',
      base: 10,
      encoding: 'none',
    };
    members.push({ name: `${m.name}_length`, type: lengthType });
    members.push({ name: m.name, type: { kind: 'sequence', element: t.element, lengthRef: `${m.name}_length` } });
  }
  return { type: { ...payload, members }, dynamic };
}

function randomUuid(): string {
  return globalThis.crypto.randomUUID();
}

/** One stream file (one CPU): the packet being filled and the clock state its compact timestamps depend on. */
class StreamFile {
  readonly fd: number;
  readonly cpu: number;
  readonly w = new BitWriter(1 << 16);
  open = false;
  begin = 0n;
  clock = 0n;
  seq = 0;
  contextEnd = 0;

  constructor(fd: number, cpu: number) {
    this.fd = fd;
    this.cpu = cpu;
  }
}

/**
 * Creates a CTF 1.8 trace in `dir` (created if needed): one stream file per CPU, packets with LTTng's packet header
 * and context (begin/end timestamps, content and packet size, packet_seq_num, events_discarded, cpu_id) and event
 * header, and the TSDL metadata, written on close. Event classes are registered on first use; ids are reassigned.
 */
export function createCtfWriter(dir: string, options: CtfWriterOptions = {}): CtfWriter {
  const order = options.byteOrder ?? 'le';
  const headerKind = options.eventHeader ?? 'compact';
  const packetBytes = options.packetSize ?? 1 << 16;
  const uuid = options.uuid ?? randomUuid();
  const ns = 1_000_000_000n;
  let clock: ClockClass = {
    name: 'monotonic',
    freq: ns,
    offsetSeconds: 0n,
    offsetCycles: 0n,
    absolute: false,
    ...options.clock,
  };
  let originNs = 0n;
  let clockFixed = false;
  /**
   * Fixes the clock origin at the first event when the caller gave none: the whole second before it, so cycle values
   * stay small (exact JavaScript numbers for readers, like LTTng's boot-relative clocks) whatever the epoch.
   */
  function fixClock(firstNs: bigint): void {
    clockFixed = true;
    if (options.clock?.offsetSeconds === undefined && options.clock?.offsetCycles === undefined && firstNs > 0n) {
      clock = { ...clock, offsetSeconds: firstNs / ns };
    }
    originNs = clock.offsetSeconds * ns + (clock.offsetCycles * ns) / clock.freq;
  }
  const toCycles = (t: bigint) => (clock.freq === ns ? t - originNs : ((t - originNs) * clock.freq) / ns);
  mkdirSync(dir, { recursive: true });

  const uuidBytes = Uint8Array.from(Buffer.from(uuid.replace(/-/g, ''), 'hex'));
  const packetHeader: StructClass = {
    kind: 'struct',
    minAlign: 8,
    members: [
      { name: 'magic', type: u(32, order) },
      { name: 'uuid', type: { kind: 'array', element: u(8, order), length: 16 } },
      { name: 'stream_id', type: u(32, order) },
    ],
  };
  const packetContext: StructClass = {
    kind: 'struct',
    minAlign: 8,
    members: [
      { name: 'timestamp_begin', type: u(64, order, clock.name) },
      { name: 'timestamp_end', type: u(64, order, clock.name) },
      { name: 'content_size', type: u(64, order) },
      { name: 'packet_size', type: u(64, order) },
      { name: 'packet_seq_num', type: u(64, order) },
      { name: 'events_discarded', type: u(64, order) },
      { name: 'cpu_id', type: u(32, order) },
    ],
  };
  const eventHeader = eventHeaderClass(headerKind, order, clock.name);
  const compactLimit = headerKind === 'compact' ? 31 : 65535;
  const compactBits = headerKind === 'compact' ? 27 : 32;
  const compactRange = 1n << BigInt(compactBits);
  const encodeHeader = compileEncoder(packetHeader);
  const encodeContext = compileEncoder(packetContext);
  const idEnc = integerEncoder(headerKind === 'compact' ? bits(5, order) : u(16, order), 'event id');
  const extId = integerEncoder(u(32, order), 'event id');
  const extTs = integerEncoder(u(64, order), 'timestamp');

  const classes = new Map<EventClass, WriterClass>();
  const written: string[] = [];
  const streams = new Map<number, StreamFile>();
  let bytesWritten = 0;
  let closed = false;

  function classFor(cls: EventClass): WriterClass {
    let wc = classes.get(cls);
    if (wc) return wc;
    const { type, dynamic } = ctfPayload(cls.payload, hexFields(cls.printFormat));
    const ctfClass: EventClass = {
      ...cls,
      id: written.length,
      streamId: 0,
      payload: type,
      ftrace: undefined,
    };
    const prepare =
      dynamic.length === 0
        ? undefined
        : (fields: { readonly [name: string]: FieldValue }) => {
            const out: { [name: string]: FieldValue } = { ...fields };
            for (const name of dynamic) {
              const v = fields[name];
              out[`${name}_length`] = Array.isArray(v) ? v.length : 0;
            }
            return out;
          };
    // Emitting the TSDL now rejects unwritable names before any event of the class is written.
    const text = eventText(ctfClass);
    wc = {
      cls: ctfClass,
      encode: compileEncoder(type, cls.name),
      encodeContext: cls.context && compileEncoder(cls.context, `${cls.name} context`),
      prepare,
    };
    classes.set(cls, wc);
    written.push(text);
    return wc;
  }

  function streamFor(cpu: number): StreamFile {
    let s = streams.get(cpu);
    if (!s) {
      s = new StreamFile(openSync(join(dir, `stream_${cpu}`), 'w'), cpu);
      streams.set(cpu, s);
    }
    return s;
  }

  function writePacketStart(s: StreamFile, end: bigint, contentBits: number, packetBits: number): void {
    const w = s.w;
    const pos = w.pos;
    w.pos = 0;
    encodeHeader(w, { magic: CTF_PACKET_MAGIC, uuid: Array.from(uuidBytes), stream_id: 0 });
    encodeContext(w, {
      timestamp_begin: s.begin,
      timestamp_end: end,
      content_size: BigInt(contentBits),
      packet_size: BigInt(packetBits),
      packet_seq_num: BigInt(s.seq),
      events_discarded: 0n,
      cpu_id: s.cpu,
    });
    s.contextEnd = w.pos;
    w.pos = pos;
  }

  function openPacket(s: StreamFile, cycles: bigint): void {
    s.w.pos = 0;
    s.begin = cycles;
    s.clock = cycles;
    writePacketStart(s, cycles, 0, 0);
    s.w.pos = s.contextEnd;
    s.open = true;
  }

  function flush(s: StreamFile): void {
    if (!s.open) return;
    const w = s.w;
    const contentBits = w.pos;
    const bytes = Math.ceil(contentBits / 8);
    writePacketStart(s, s.clock, contentBits, bytes * 8);
    writeSync(s.fd, w.bytes, 0, bytes);
    bytesWritten += bytes;
    w.clear();
    s.seq++;
    s.open = false;
  }

  const le = order === 'le';
  const compactRangeNum = Number(compactRange);
  const encodeStreamContext = options.eventContext && compileEncoder(options.eventContext, 'stream event context');
  function encodeEvent(
    s: StreamFile,
    id: number,
    cycles: bigint,
    wc: WriterClass,
    fields: FieldValue,
    scopes: CtfEventInput['scopes'],
  ): void {
    const w = s.w;
    const delta = Number(cycles - s.clock);
    if (id < compactLimit && delta < compactRangeNum) {
      const low = Number(cycles & (compactRange - 1n));
      // The whole compact header in one store: 5-bit id and 27-bit time in a word, or 16-bit id then 32-bit time.
      if (headerKind === 'compact') {
        const p = w.at(8, 32);
        w.view.setUint32(p / 8, le ? low * 32 + id : id * 2 ** 27 + low, le);
        w.pos = p + 32;
      } else {
        const p = w.at(8, 48);
        w.view.setUint16(p / 8, id, le);
        w.view.setUint32(p / 8 + 2, low, le);
        w.pos = p + 48;
      }
    } else {
      idEnc(w, compactLimit);
      extId(w, id);
      extTs(w, cycles);
    }
    if (encodeStreamContext) encodeStreamContext(w, scopes?.['stream.event.context']);
    if (wc.encodeContext) wc.encodeContext(w, scopes?.['event.context']);
    wc.encode(w, fields);
    s.clock = cycles;
  }

  return {
    get bytesWritten() {
      return bytesWritten;
    },
    writeEvent(event) {
      if (closed) throw new TraceFormatError('ERR_TRACE_CTF_WRITE', 'writer is closed');
      const wc = classFor(event.eventClass);
      if (!clockFixed) fixClock(event.tsNs);
      const cycles = toCycles(event.tsNs);
      if (cycles < 0n || cycles >= 1n << 64n) {
        throw new TraceFormatError('ERR_TRACE_CTF_WRITE', `timestamp ${event.tsNs} ns is outside the clock's range`);
      }
      const s = streamFor(event.cpu ?? 0);
      if (s.open && cycles < s.clock) {
        throw new TraceFormatError(
          'ERR_TRACE_CTF_WRITE',
          `event ${event.eventClass.name} at ${event.tsNs} ns is earlier than the previous event of CPU ${s.cpu}`,
        );
      }
      const fields = wc.prepare ? wc.prepare(event.fields) : event.fields;
      if (!s.open) openPacket(s, cycles);
      const start = s.w.pos;
      const clockBefore = s.clock;
      try {
        encodeEvent(s, wc.cls.id, cycles, wc, fields, event.scopes);
      } catch (error) {
        s.w.pos = start;
        s.clock = clockBefore;
        throw error;
      }
      if (s.w.pos > packetBytes * 8 && start > s.contextEnd) {
        // The event overflows the packet: end the packet before it and write it again at the start of a new one.
        s.w.pos = start;
        s.clock = clockBefore;
        flush(s);
        openPacket(s, cycles);
        encodeEvent(s, wc.cls.id, cycles, wc, fields, event.scopes);
      }
    },
    close() {
      if (closed) return;
      closed = true;
      // Every stream is closed even when a flush fails (a full disk): an open descriptor would keep the space of
      // the removed output.
      let failure: unknown;
      for (const s of streams.values()) {
        try {
          flush(s);
        } catch (error) {
          failure ??= error;
        }
        closeSync(s.fd);
      }
      if (failure !== undefined) throw failure;
      writeFileSync(join(dir, 'metadata'), metadataText());
    },
  };

  function metadataText(): string {
    const parts = [
      '/* CTF 1.8 */\n',
      `trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = ${tsdlString(uuid)};\n\tbyte_order = ${order};\n\tpacket.header := ${structText(packetHeader, '\t')};\n};\n`,
    ];
    const env = Object.entries(options.env ?? {});
    if (env.length > 0) {
      const lines = env.map(([k, v]) => `\t${k} = ${typeof v === 'string' ? tsdlString(v) : String(v)};`);
      parts.push(`env {\n${lines.join('\n')}\n};\n`);
    }
    parts.push(clockText(clock));
    parts.push(
      `stream {\n\tid = 0;\n\tevent.header := ${structText(eventHeader, '\t')};\n\tpacket.context := ${structText(packetContext, '\t')};\n${
        options.eventContext ? `\tevent.context := ${structText(options.eventContext, '\t')};\n` : ''
      }};\n`,
    );
    parts.push(...written);
    return parts.join('\n');
  }
}

/**
 * Writes every event of a reader as a CTF trace in `dir`; returns the number of events written. The trace is built
 * in a new directory beside `dir` and renamed to it once complete (see {@link writeDirAtomically}): an existing
 * non-empty `dir` is refused unless `force`, and replaced only by a complete trace. The directory is readable by its
 * owner only unless `share` or `mode` says otherwise.
 *
 * @throws TraceFormatError `ERR_TRACE_OUTPUT` naming `dir` (or a file in it) when it cannot be written; the reader's errors.
 */
export function writeCtfTrace(
  reader: TraceReader,
  dir: string,
  options: CtfWriterOptions & OutputDirOptions = {},
): number {
  return writeDirAtomically(dir, (temp) => writeCtfEvents(reader, temp, options), options);
}

function writeCtfEvents(reader: TraceReader, dir: string, options: CtfWriterOptions): number {
  // A CTF source keeps its environment (host name, tracer) unless the caller gives one.
  const source = (reader as { trace?: { env?: ReadonlyMap<string, string | number | bigint> } }).trace?.env;
  const env = options.env ?? (source ? Object.fromEntries(source) : undefined);
  // It also keeps the stream event context, when every stream class of the source has the same one.
  const streams = (reader as { trace?: { streams?: ReadonlyMap<number, { eventContext?: StructClass }> } }).trace
    ?.streams;
  const key = (v: unknown) => JSON.stringify(v ?? null, (_k, x) => (typeof x === 'bigint' ? `${x}n` : x));
  const contexts = new Set([...(streams?.values() ?? [])].map((st) => key(st.eventContext)));
  const first = streams?.values().next().value?.eventContext;
  const eventContext = options.eventContext ?? (contexts.size === 1 && first ? first : undefined);
  const writer = createCtfWriter(dir, { ...options, env, eventContext });
  let n = 0;
  try {
    for (const event of reader.events() as Iterable<TraceEvent>) {
      try {
        writer.writeEvent(event);
      } catch (error) {
        // Say which input event could not be written: the reader's events need not be in the order CTF requires.
        if (!(error instanceof TraceFormatError) || error.code !== 'ERR_TRACE_CTF_WRITE') throw error;
        const cpu = event.cpu === undefined ? '' : `, CPU ${event.cpu}`;
        throw new TraceFormatError(
          'ERR_TRACE_CTF_WRITE',
          `event ${n + 1} (${event.eventClass.name}${cpu}, ${event.tsNs} ns): ${error.message}`,
        );
      }
      n++;
    }
  } finally {
    writer.close();
  }
  return n;
}
