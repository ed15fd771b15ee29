/**
 * A CTF trace's events written as lines of text (babeltrace2's) or JSON (the event contract) straight from the packet
 * bytes: per event class, the decoder compiled with a sink ({@link compileScopeWriter}) writes each value as it reads
 * it into a reused byte buffer, so that no event, payload object or string is made per event. Classes whose fields
 * refer to others (sequences, variants) and classes a caller wants whole are decoded as events and formatted by the
 * event formatters, which the written lines equal byte for byte.
 */
import { ByteOut, utf8 } from '../codec/byte-out.ts';
import {
  alignmentOf,
  compileScopeWriter,
  refersOutward,
  type ScopeWriter,
  type StructSink,
  type ValueSink,
} from '../codec/decoder.ts';
import { hexFields } from '../ftrace/hex-fields.ts';
import type {
  ByteOrder,
  EventClass,
  FieldClass,
  FieldValue,
  StructClass,
  TraceClass,
  TraceEvent,
} from '../model/types.ts';
import { createJsonWriter, type JsonLineWriter, valueWriter } from '../output/json.ts';
import type { CyclesToNs } from './clock.ts';
import type { CtfEvent } from './event.ts';
import type { EventLineWriter, LineSource, LineStart, LineTarget, LineWriters } from './line-target.ts';
import { type EventCursor, Merger } from './merge.ts';
import type { CompiledEvent, CompiledStream, Struct } from './stream-class.ts';
import { clockTime, createBabeltraceTextFormatter, formatValue, packetContextText, tracePrefix } from './text.ts';

/** Options of {@link CtfTraceReader.writeLines}. */
export interface CtfLinesOptions {
  /** `text`: as `babeltrace2 --clock-gmt` prints (`createBabeltraceTextFormatter`); `json`: `createJsonFormatter`'s lines. */
  readonly format: 'text' | 'json';
  /** Stop after this many lines. */
  readonly limit?: number;
  /** Text: time of day in the local zone (plain `babeltrace2`). */
  readonly localTime?: boolean;
  /** Text: print `[time] (+delta)`; default true. */
  readonly timestamps?: boolean;
  /** JSON: the writer of the line of an event decoded whole (default `createJsonWriter()`'s). */
  readonly jsonLine?: JsonLineWriter;
  /** Classes whose events are decoded whole and written by `jsonLine` (or the text formatter): those a caller learns from. */
  readonly decoded?: (eventClass: EventClass) => boolean;
  /** Receives each decoded event once its line is written or it is left out (a task-name tracker). */
  readonly observe?: (event: TraceEvent) => void;
  /**
   * Only the events this keeps are written: judged on their decoded values (64-bit integers as bigints) before a
   * line is kept. With several streams it judges decoded events in time order (it may depend on the events before).
   */
  readonly keep?: (event: TraceEvent) => boolean;
  /**
   * With `keep`: for a class whose payload lies at the same offsets in every event (integers only), a test of its
   * bytes that decides as `keep` does, or undefined. The class's first event, and events of packets without a CPU,
   * are still judged by `keep`.
   */
  readonly keepRecord?: (eventClass: EventClass, payload: PayloadLayout) => PayloadTest | undefined;
}

/** Where a payload's members lie when every event lays them out alike: byte offsets from its (aligned) start. */
export interface PayloadLayout {
  readonly offsets: ReadonlyMap<string, number>;
  /** Bytes from the first member's start to the last one's end. */
  readonly size: number;
  readonly byteOrder: ByteOrder;
}

/** Judges one event by its payload's bytes: `view` holds them at `start`, `length` bytes; `cpu` is the packet's. */
export type PayloadTest = (view: DataView, start: number, length: number, cpu: number) => boolean;

/** The layout of a payload of byte-aligned integers of one byte order, or undefined. */
export function payloadLayout(payload: StructClass): PayloadLayout | undefined {
  const offsets = new Map<string, number>();
  let at = 0;
  let byteOrder: ByteOrder | undefined;
  for (const m of payload.members) {
    const int = m.type.kind === 'int' ? m.type : m.type.kind === 'enum' ? m.type.container : undefined;
    if (int === undefined || int.varint || int.size % 8 !== 0 || int.align % 8 !== 0) return undefined;
    if (byteOrder !== undefined && int.byteOrder !== byteOrder) return undefined;
    byteOrder = int.byteOrder;
    const align = int.align / 8;
    at = Math.ceil(at / align) * align;
    offsets.set(m.name, at);
    at += int.size / 8;
  }
  return byteOrder === undefined ? undefined : { offsets, size: at, byteOrder };
}

export const EMPTY: Uint8Array = new Uint8Array(0);
const COMMA = utf8(', ');
const NS = 1_000_000_000;
const NS_BIG = 1_000_000_000n;

/** A sink that writes nothing but `end`: scopes decoded only to be passed over. */
export function silentSink(type: StructClass, end = ''): StructSink {
  return {
    before: type.members.map(() => EMPTY),
    write: type.members.map(() => () => {}),
    after: utf8(end),
    values: false,
  };
}

function textValue(type: FieldClass): ValueSink {
  if (type.kind === 'int' && type.base === 10) return (out, v) => out.int(v as number | bigint);
  return (out, v) => out.text(formatValue(v, type));
}

/** `{ name = value, ... }`, as text.ts's compiled structs print a decoded struct, and `end` after it. */
function textSink(type: StructClass, end = ''): StructSink {
  return {
    before: type.members.map((m, i) => utf8(`${i === 0 ? '{ ' : ', '}${m.name} = `)),
    write: type.members.map((m) => textValue(m.type)),
    after: utf8(`${type.members.length === 0 ? '{ }' : ' }'}${end}`),
  };
}

/** `{"name":value,...}`, as json.ts's struct writer prints a decoded struct, and `end` after it. */
function jsonSink(type: StructClass, hex: ReadonlySet<string>, end: string): StructSink {
  return {
    before: type.members.map((m, i) => utf8(`${i === 0 ? '{' : ','}${JSON.stringify(m.name)}:`)),
    write: type.members.map((m) => valueWriter(m.type, hex.has(m.name))),
    after: utf8(`${type.members.length === 0 ? '{}' : '}'}${end}`),
  };
}

/** A scope's writer: its decoder compiled with `sink`. */
export function writerOf(
  type: StructClass,
  scope: 'stream.event.context' | 'event.context' | 'event.fields',
  sink: StructSink,
) {
  return compileScopeWriter(type, { scope, rootClasses: {} }, sink);
}

/** Values as the event decoder gives them: integers wider than 53 bits as bigints. */
function asDecoded(type: FieldClass): (v: FieldValue) => FieldValue {
  const int = type.kind === 'int' ? type : type.kind === 'enum' ? type.container : undefined;
  return int !== undefined && int.size > 53 ? (v) => (typeof v === 'number' ? BigInt(v) : v) : (v) => v;
}

/**
 * A sink that writes nothing and keeps each value: in `raw` as read, for the line written once a filter kept the
 * event, and in `into` as the event decoder gives it, for the filter.
 */
function recording(type: StructClass, into: Struct, raw: FieldValue[]): StructSink {
  return {
    before: type.members.map(() => EMPTY),
    write: type.members.map((m, i) => {
      const name = m.name;
      const value = asDecoded(m.type);
      return (_out, v) => {
        raw[i] = v;
        into[name] = value(v);
      };
    }),
    after: EMPTY,
  };
}

/** Writes a scope's values kept by {@link recording} as `sink` writes them while reading. */
function replay(sink: StructSink, raw: readonly FieldValue[]): ScopeWriter {
  const { before, write, after } = sink;
  const n = before.length;
  return (_s, out) => {
    for (let i = 0; i < n; i++) {
      out.raw(before[i]!);
      write[i]!(out, raw[i]!);
    }
    out.raw(after);
  };
}

/**
 * The event a filter judges when no event is decoded: one per class, its scopes' objects reused from event to event
 * (the filter reads them before the next event is read).
 */
class JudgedEvent implements TraceEvent {
  readonly eventClass: EventClass;
  readonly fields: Struct = {};
  readonly scopes: { [scope: string]: Struct } = {};
  cpu: number | null = null;
  cycles: number | bigint = 0;
  toNs!: CyclesToNs;

  constructor(eventClass: EventClass) {
    this.eventClass = eventClass;
  }

  get tsNs(): bigint {
    return this.toNs(this.cycles);
  }
}

/** Writes a scope, and keeps its values where a filter finds them (`scopes[scope]`, or `fields`). */
type SinkOf = (
  type: StructClass,
  scope: 'stream.event.context' | 'event.context' | 'event.fields',
  sink: StructSink,
) => ScopeWriter;

/** The line writers of one output format, compiled per event class on its first event. */
export class LinePlan implements LineWriters {
  private readonly writers_ = new Map<CompiledEvent, EventLineWriter | undefined>();
  private readonly compile_: (stream: CompiledStream, event: CompiledEvent) => EventLineWriter | undefined;
  private lastEvent_: CompiledEvent | undefined;
  private last_: EventLineWriter | undefined;

  constructor(
    format: 'text' | 'json' | 'check',
    trace: TraceClass,
    decoded: ((eventClass: EventClass) => boolean) | undefined,
    keep: ((event: TraceEvent) => boolean) | undefined,
    keepRecord?: CtfLinesOptions['keepRecord'],
  ) {
    const prefix = tracePrefix(trace);
    this.compile_ = (stream, event) => {
      const cls = event.cls;
      const streamCtx = stream.cls.eventContext;
      if (decoded?.(cls) === true) return undefined;
      const scopes = [streamCtx, cls.context, cls.payload];
      if (scopes.some((t) => t !== undefined && refersOutward(t))) return undefined;
      // A filter's values are kept in plain objects: a hostile member name is left to the event decoder.
      if (keep && scopes.some((t) => t?.members.some((m) => m.name === '__proto__'))) return undefined;
      const judged = keep && new JudgedEvent(cls);
      // The scopes in the order a decoded event has them: the packet's context first (a stream has one or never).
      if (judged && stream.packetContext !== undefined) judged.scopes['stream.packet.context'] = {};
      // With a filter, the scopes are read first (their values kept), and written once the event is kept.
      const reads: ScopeWriter[] = [];
      const sinkOf: SinkOf = judged
        ? (type, scope, sink) => {
            const into = scope === 'event.fields' ? judged.fields : (judged.scopes[scope] = {});
            const raw: FieldValue[] = new Array(type.members.length);
            reads.push(writerOf(type, scope, recording(type, into, raw)));
            return replay(sink, raw);
          }
        : writerOf;
      let line: EventLineWriter;
      if (format === 'check') line = checkWriter(stream, cls, sinkOf);
      else if (format === 'json') {
        // The JSON line names a task and its flags from these members: such events go through the event formatter.
        const names = (t: StructClass | undefined, of: readonly string[]) =>
          t?.members.some((m) => of.includes(m.name)) === true;
        if (names(cls.context, ['common_pid', 'common_flags']) || names(streamCtx, ['tid', 'vtid'])) return undefined;
        line = jsonLineWriter(stream, cls, sinkOf);
      } else line = textLineWriter(prefix, stream, cls, sinkOf);
      if (!judged) return line;
      const judge: EventLineWriter = (s, out, cursor, head) => {
        for (const read of reads) read(s, out);
        const context = cursor.packetContext;
        if (context !== undefined) judged.scopes['stream.packet.context'] = context;
        judged.cpu = cursor.packetCpu;
        judged.cycles = cursor.cycles;
        judged.toNs = cursor.toNs;
        return keep!(judged) && line(s, out, cursor, head);
      };
      const layout = format === 'check' ? undefined : payloadLayout(cls.payload);
      const test = layout && keepRecord?.(cls, layout);
      if (test === undefined) return judge;
      return payloadJudge(
        stream,
        cls,
        judge,
        test,
        layout!,
        format === 'json' ? jsonLineWriter : (st, c, of) => textLineWriter(prefix, st, c, of),
      );
    };
  }

  writer(stream: CompiledStream, event: CompiledEvent): EventLineWriter | undefined {
    if (event === this.lastEvent_) return this.last_;
    let w = this.writers_.get(event);
    if (w === undefined && !this.writers_.has(event)) {
      w = this.compile_(stream, event);
      this.writers_.set(event, w);
    }
    this.lastEvent_ = event;
    this.last_ = w;
    return w;
  }
}

/**
 * Judges events by their payload's bytes (`test`) before anything is decoded from it: the contexts are passed over,
 * the payload's place found, and only a kept event is read again and written. The class's first event (which has
 * `keep` learn the class), events of packets without a CPU, and payloads that do not fit what is left of the packet
 * (whose decoder names the damage) go through `judge`.
 */
function payloadJudge(
  stream: CompiledStream,
  cls: EventClass,
  judge: EventLineWriter,
  test: PayloadTest,
  layout: PayloadLayout,
  lineWriter: (stream: CompiledStream, cls: EventClass, sinkOf: SinkOf) => EventLineWriter,
): EventLineWriter {
  const line = lineWriter(stream, cls, writerOf);
  const streamType = stream.cls.eventContext;
  const streamContext = streamType && writerOf(streamType, 'stream.event.context', silentSink(streamType));
  const eventContext = cls.context && writerOf(cls.context, 'event.context', silentSink(cls.context));
  const align = alignmentOf(cls.payload);
  const bits = layout.size * 8;
  let first = true;
  return (s, out, cursor, head) => {
    const cpu = cursor.packetCpu;
    if (first || cpu === null) {
      first = false;
      return judge(s, out, cursor, head);
    }
    const r = s.r;
    const start = r.pos;
    streamContext?.(s, out);
    eventContext?.(s, out);
    let p = r.pos;
    const m = p % align;
    if (m !== 0) p += align - m;
    if (p + bits > r.limit || p % 8 !== 0) {
      r.pos = start;
      return judge(s, out, cursor, head);
    }
    if (!test(r.view, p / 8, layout.size, cpu)) {
      r.pos = p + bits;
      return false;
    }
    r.pos = start;
    return line(s, out, cursor, head);
  };
}

/** Reads an event's scopes and writes nothing: for a copy that checks every event of a packet it copies. */
function checkWriter(stream: CompiledStream, cls: EventClass, sinkOf: SinkOf): EventLineWriter {
  const streamType = stream.cls.eventContext;
  const streamContext = streamType && sinkOf(streamType, 'stream.event.context', silentSink(streamType));
  const eventContext = cls.context && sinkOf(cls.context, 'event.context', silentSink(cls.context));
  const payload = sinkOf(cls.payload, 'event.fields', silentSink(cls.payload));
  return (s, out) => {
    streamContext?.(s, out);
    eventContext?.(s, out);
    payload(s, out);
    return true;
  };
}

/** `host name: { packet context }, { stream event context }, { event context }, { payload }` and the newline. */
function textLineWriter(prefix: string, stream: CompiledStream, cls: EventClass, sinkOf: SinkOf): EventLineWriter {
  const name = `${prefix}${cls.name}: `;
  const packetText = packetContextText(stream.cls);
  const streamType = stream.cls.eventContext;
  const streamContext = streamType && sinkOf(streamType, 'stream.event.context', textSink(streamType));
  const eventContext = cls.context && sinkOf(cls.context, 'event.context', textSink(cls.context));
  const shown = cls.payload.members.length > 0;
  const payload = sinkOf(
    cls.payload,
    'event.fields',
    shown ? textSink(cls.payload, '\n') : silentSink(cls.payload, '\n'),
  );
  // The scopes after the packet's context, each after a `, ` but the first.
  const scopes = [streamContext, eventContext].filter((w) => w !== undefined);
  const [first, second] = scopes;
  const after = scopes.length > 0 || shown;
  // What comes before the first scope: the name and a packet's context, whose text is made once per packet.
  const plain = utf8(name);
  let packet: object | undefined;
  let lead: Uint8Array = plain;
  return (s, out, cursor, head) => {
    head?.write(out, cursor.cycles, cursor.toNs);
    if (packetText !== undefined) {
      const context = cursor.packetContext;
      if (context === undefined) lead = plain;
      else if (context !== packet) {
        packet = context;
        lead = utf8(`${name}${packetText(context)}${after ? ', ' : ''}`);
      }
    }
    out.raw(lead);
    if (first !== undefined) {
      first(s, out);
      if (second !== undefined) {
        out.raw(COMMA);
        second(s, out);
      }
      if (shown) out.raw(COMMA);
    }
    payload(s, out);
    return true;
  };
}

/** `","cpu":N,"event":NAME,"pid":null,"comm":null,"flags":null,"fields":{...}}` and the newline: after `ts_ns`. */
function jsonLineWriter(stream: CompiledStream, cls: EventClass, sinkOf: SinkOf): EventLineWriter {
  const rest = `,"event":${JSON.stringify(cls.name)},"pid":null,"comm":null,"flags":null,"fields":`;
  const streamType = stream.cls.eventContext;
  const streamContext = streamType && sinkOf(streamType, 'stream.event.context', silentSink(streamType));
  const eventContext = cls.context && sinkOf(cls.context, 'event.context', silentSink(cls.context));
  const payload = sinkOf(cls.payload, 'event.fields', jsonSink(cls.payload, hexFields(cls.printFormat), '}\n'));
  // The text between the time and the fields, per CPU.
  let cpu: number | null | undefined;
  let lead: Uint8Array = EMPTY;
  return (s, out, cursor, head) => {
    head?.write(out, cursor.cycles, cursor.toNs);
    const c = cursor.packetCpu;
    if (c !== cpu) {
      cpu = c;
      lead = utf8(`","cpu":${c}${rest}`);
    }
    out.raw(lead);
    streamContext?.(s, out);
    eventContext?.(s, out);
    payload(s, out);
    return true;
  };
}

/** One event in the merge: its time, and its line's body written (or the event, decoded whole). */
export class LineEntry {
  cycles: number | bigint = 0;
  /** Its packet's CPU. */
  cpu: number | null = null;
  toNs!: CyclesToNs;
  event: CtfEvent | undefined;
  readonly out = new ByteOut(256);

  get tsNs(): bigint {
    return this.toNs(this.cycles);
  }
}

/**
 * A stream file cursor seen as a source of line entries, for the merge of several streams. Two entries alternate:
 * the one the merge holds for this stream, and the one handed out last, which stays whole until the merge asks for
 * the next.
 */
export class LineCursor implements EventCursor<LineEntry> {
  readonly #cursor: LineSource;
  readonly #target: LineTarget;
  readonly #entries = [new LineEntry(), new LineEntry()] as const;
  #flip = 0;

  constructor(cursor: LineSource, plan: LineWriters) {
    this.#cursor = cursor;
    this.#target = { out: this.#entries[0].out, plan };
  }

  next(): LineEntry | undefined {
    this.#flip ^= 1;
    const entry = this.#entries[this.#flip]!;
    this.#target.out = entry.out;
    entry.out.length = 0;
    const got = this.#cursor.nextLine(this.#target);
    if (got === undefined) return undefined;
    entry.event = got === true ? undefined : got;
    entry.cycles = got === true ? this.#cursor.cycles : got.cycles;
    entry.toNs = this.#cursor.toNs;
    entry.cpu = this.#cursor.packetCpu;
    return entry;
  }
}

/**
 * An event's time as seconds and nanoseconds in numbers (`big` undefined) while it is at or after the epoch and a
 * nanosecond clock's cycles are exact numbers, else as a bigint.
 */
class LineTime {
  secs = 0;
  frac = 0;
  big: bigint | undefined;
  // Plain fields rather than private ones: this runs once per event.
  private toNs_: CyclesToNs | undefined;
  private baseSecs_ = 0;
  private baseFrac_ = 0;
  private exact_ = false;
  /** The cycles at which the current second began, or NaN. */
  private second_ = Number.NaN;

  set(cycles: number | bigint, toNs: CyclesToNs): void {
    if (toNs !== this.toNs_) {
      this.toNs_ = toNs;
      this.second_ = Number.NaN;
      const base = toNs(0);
      this.exact_ = toNs.nanoseconds && base >= 0n && base < 2n ** 62n;
      this.baseSecs_ = Number(base / NS_BIG);
      this.baseFrac_ = Number(base % NS_BIG);
    }
    if (this.exact_ && typeof cycles === 'number' && cycles < 2 ** 52) {
      // Within the second of the last time: only the nanoseconds change.
      const within = cycles - this.second_;
      if (within >= 0 && within < NS) {
        this.frac = within;
        return;
      }
      const frac = this.baseFrac_ + cycles;
      const carry = Math.floor(frac / NS);
      this.secs = this.baseSecs_ + carry;
      this.frac = frac - carry * NS;
      this.big = undefined;
      this.second_ = cycles - this.frac;
      return;
    }
    this.second_ = Number.NaN;
    const ns = toNs(cycles);
    if (ns >= 0n) {
      this.secs = Number(ns / NS_BIG);
      this.frac = Number(ns % NS_BIG);
      this.big = this.secs <= Number.MAX_SAFE_INTEGER ? undefined : ns;
    } else this.big = ns;
  }

  get ns(): bigint {
    return this.big ?? BigInt(this.secs) * NS_BIG + BigInt(this.frac);
  }
}

const UNKNOWN_DELTA = utf8('] (+?.?????????) ');
const TS_KEY = utf8('{"ts_ns":"');

/**
 * What starts a line: babeltrace2's `[hh:mm:ss.nnnnnnnnn] (+s.nnnnnnnnn) `, the delta from the line before, or the
 * JSON line's `{"ts_ns":"N`. The time of day is made once per second, a repeated delta once.
 */
class LineHead implements LineStart {
  private readonly json_: boolean;
  private readonly localTime_: boolean;
  private readonly time_ = new LineTime();
  private second_ = -1;
  private secondText_: Uint8Array = EMPTY;
  private lastStep_ = Number.NaN;
  private lastStepText_: Uint8Array = EMPTY;
  // The previous line's time, and the one before it (to take a line back).
  private first_ = true;
  private prevSecs_ = 0;
  private prevFrac_ = 0;
  private prevBig_: bigint | undefined;
  private undo_: [boolean, number, number, bigint | undefined] = [true, 0, 0, undefined];

  constructor(json: boolean, localTime: boolean) {
    this.json_ = json;
    this.localTime_ = localTime;
  }

  write(out: ByteOut, cycles: number | bigint, toNs: CyclesToNs): void {
    const time = this.time_;
    time.set(cycles, toNs);
    if (this.json_) {
      if (time.big !== undefined) out.text(`{"ts_ns":"${time.big}`);
      else if (time.secs === 0) {
        out.raw(TS_KEY);
        out.uint(time.frac);
      } else {
        if (time.secs !== this.second_) {
          this.second_ = time.secs;
          this.secondText_ = utf8(`{"ts_ns":"${time.secs}`);
        }
        out.raw(this.secondText_);
        out.nine(time.frac);
      }
      return;
    }
    if (time.big === undefined) {
      if (time.secs !== this.second_) {
        this.second_ = time.secs;
        this.secondText_ = utf8(`[${clockTime(BigInt(time.secs) * NS_BIG, this.localTime_).slice(0, -9)}`);
      }
      out.raw(this.secondText_);
      out.nine(time.frac);
    } else out.text(`[${clockTime(time.big, this.localTime_)}`);
    if (this.first_) out.raw(UNKNOWN_DELTA);
    else if (time.big === undefined && this.prevBig_ === undefined && Math.abs(time.secs - this.prevSecs_) < 4e6) {
      const d = (time.secs - this.prevSecs_) * NS + (time.frac - this.prevFrac_);
      // Steps repeat (periodic events): the last one's text is kept.
      if (d === this.lastStep_) out.raw(this.lastStepText_);
      else {
        this.lastStep_ = d;
        const at = out.length;
        const n = d < 0 ? -d : d;
        out.raw(OPEN_DELTA);
        out.byte(d < 0 ? 45 : 43);
        const whole = Math.floor(n / NS);
        out.uint(whole);
        out.byte(46);
        out.nine(n - whole * NS);
        out.raw(CLOSE_DELTA);
        this.lastStepText_ = out.bytes.slice(at, out.length);
      }
    } else {
      let d = time.ns - (this.prevBig_ ?? BigInt(this.prevSecs_) * NS_BIG + BigInt(this.prevFrac_));
      const sign = d < 0n ? '-' : '+';
      if (d < 0n) d = -d;
      out.text(`] (${sign}${d / NS_BIG}.${String(d % NS_BIG).padStart(9, '0')}) `);
    }
    this.first_ = false;
    this.prevSecs_ = time.secs;
    this.prevFrac_ = time.frac;
    this.prevBig_ = time.big;
  }

  /** Remembers the previous line's time, for {@link undo}. */
  mark(): void {
    const undo = this.undo_;
    undo[0] = this.first_;
    undo[1] = this.prevSecs_;
    undo[2] = this.prevFrac_;
    undo[3] = this.prevBig_;
  }

  /** Takes back the lines started since {@link mark}: they were not finished (the event was corrupt). */
  undo(): void {
    [this.first_, this.prevSecs_, this.prevFrac_, this.prevBig_] = this.undo_;
  }
}

const OPEN_DELTA = utf8('] (');
const CLOSE_DELTA = utf8(') ');

/**
 * Writes the events of a trace's stream files, merged in time order as {@link Merger} orders events, as lines to
 * `write` (in chunks of about 64 KiB; each chunk is only valid during the call). Returns the number of lines.
 */
export function writeCtfLines(
  cursors: readonly LineSource[],
  byCycles: boolean,
  trace: TraceClass,
  write: (bytes: Uint8Array) => void,
  options: CtfLinesOptions,
): number {
  const json = options.format === 'json';
  const keep = options.keep;
  // Several streams with a filter: events are judged in time order, decoded.
  const plan =
    keep !== undefined && cursors.length > 1
      ? new LinePlan(options.format, trace, () => true, undefined)
      : new LinePlan(options.format, trace, options.decoded, keep, options.keepRecord);
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const timestamps = json || (options.timestamps ?? true);
  const head = timestamps ? new LineHead(json, options.localTime ?? false) : undefined;
  const decodedLine: JsonLineWriter = json
    ? (options.jsonLine ?? createJsonWriter())
    : (() => {
        const body = createBabeltraceTextFormatter({ trace, timestamps: false });
        return (e, to) => to.text(`${body(e)}\n`);
      })();
  const observe = options.observe;
  const out = new ByteOut(1 << 17);
  // A decoded event's line: its head, unless the JSON formatter writes the whole line.
  const decodedEvent = (event: CtfEvent, cycles: number | bigint, toNs: CyclesToNs): boolean => {
    if (keep !== undefined && !keep(event)) {
      observe?.(event);
      return false;
    }
    if (head !== undefined && !json) head.write(out, cycles, toNs);
    decodedLine(event, out);
    observe?.(event);
    return true;
  };
  const flush = () => {
    if (out.length >= 1 << 16) {
      write(out.bytes.subarray(0, out.length));
      out.length = 0;
    }
  };
  let lines = 0;
  try {
    if (cursors.length === 1) {
      // One stream: each line is written in place, its head as soon as the event's header is read.
      const cursor = cursors[0]!;
      const target: LineTarget = { out, plan, ...(head !== undefined ? { head } : {}) };
      while (lines < limit) {
        const got = cursor.nextLine(target);
        if (got === undefined) break;
        if (got === true || decodedEvent(got, got.cycles, cursor.toNs)) lines++;
        flush();
      }
    } else {
      const merger = new Merger<LineEntry>(byCycles);
      cursors.forEach((c, order) => {
        merger.push(new LineCursor(c, plan), order);
      });
      while (lines < limit) {
        const entry = merger.pop();
        if (entry === undefined) break;
        if (entry.event === undefined) {
          head?.write(out, entry.cycles, entry.toNs);
          out.copy(entry.out.bytes, 0, entry.out.length);
          lines++;
        } else if (decodedEvent(entry.event, entry.cycles, entry.toNs)) lines++;
        flush();
      }
    }
  } finally {
    if (out.length > 0) write(out.bytes.subarray(0, out.length));
  }
  return lines;
}
