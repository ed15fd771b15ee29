/**
 * A CTF trace's events written as trace.dat records straight from the packet bytes: per event class, the decoder
 * compiled with a sink ({@link compileScopeWriter}, as for lines) puts each payload value where the class's
 * synthesized ftrace format places it, so that no event or payload object is made per event. Classes whose records
 * hold more than integers (strings, arrays) or take values from the event context are decoded as events and encoded
 * by the trace.dat writer, whose records these equal byte for byte.
 */
import { ByteOut } from '../codec/byte-out.ts';
import { alignmentOf, type DecodeContext, refersOutward, type ValueSink } from '../codec/decoder.ts';
import { type PagePacker, putInt } from '../ftrace/encode.ts';
import { synthesizeFtraceClass } from '../ftrace/tracedat/synthesize.ts';
import type { TraceDatEncoder } from '../ftrace/tracedat/write-events.ts';
import type { EventClass, FtraceFieldInfo } from '../model/types.ts';
import type { CyclesToNs } from './clock.ts';
import type { CtfEvent } from './event.ts';
import type { EventLineWriter, LinePacket, LineSource, LineTarget, LineWriters } from './line-target.ts';
import { EMPTY, LineCursor, type LineEntry, payloadLayout, silentSink, writerOf } from './lines.ts';
import { Merger } from './merge.ts';
import type { CompiledEvent, CompiledStream } from './stream-class.ts';

/** Where a record's values go: the view over the buffer being written and the record's start in it. */
interface RecordPlace {
  view: DataView;
  base: number;
}

/** Whether an ftrace field is a plain integer of 1, 2, 4 or 8 bytes (not an array, a string or a `__data_loc`). */
function isScalar(f: FtraceFieldInfo): boolean {
  return !f.cType.includes('[') && !f.cType.startsWith('__') && [1, 2, 4, 8].includes(f.size);
}

/** The layout of a class's records: its own ftrace fields, or those the trace.dat writer synthesizes for it. */
function layoutOf(cls: EventClass): readonly FtraceFieldInfo[] {
  return (cls.ftrace !== undefined ? cls : synthesizeFtraceClass(cls, 0)).ftrace!.fields;
}

/**
 * The writer of one class's records, or undefined when its events are to be encoded whole: writes the record (its
 * fixed part, every field a plain integer) at the end of `out` as the payload is read, `common_type` holding `index`
 * until the record is placed (ids are given in the order records are placed, as for events).
 */
function recordWriter(
  stream: CompiledStream,
  cls: EventClass,
  index: number,
  placer: Placer | undefined,
): EventLineWriter | undefined {
  const streamType = stream.cls.eventContext;
  if ([streamType, cls.context, cls.payload].some((t) => t !== undefined && refersOutward(t))) return undefined;
  // Common fields come from the event context, and a payload member named as one is written as the class id or a
  // common value: such classes keep the encoder's way.
  if (cls.context?.members.some((m) => m.name.startsWith('common_')) === true) return undefined;
  if (cls.payload.members.some((m) => m.name.startsWith('common_') || m.name === '__proto__')) return undefined;
  // A payload that may take no bits is decoded whole: a record placed as it is read must be of an event the reader
  // keeps, and it refuses one of size zero. An integer takes at least a bit.
  if (!cls.payload.members.some((m) => ['int', 'enum', 'float'].includes(m.type.kind))) return undefined;
  const fields = layoutOf(cls);
  const typeField = fields.find((f) => f.name === 'common_type');
  if (!fields.every(isScalar) || typeField?.offset !== 0 || typeField.size !== 2 || index > 0xffff) return undefined;
  const own = new Map(fields.filter((f) => !f.common).map((f) => [f.name, f]));
  const fixed = Math.max(...fields.map((f) => f.offset + f.size));
  const place: RecordPlace = { view: new DataView(new ArrayBuffer(0)), base: 0 };
  const sinks: ValueSink[] = cls.payload.members.map((m) => {
    const f = own.get(m.name);
    if (f === undefined) return () => {};
    const { offset, size } = f;
    return (_out, v) => putInt(place.view, place.base + offset, size, v, true);
  });
  const payload = writerOf(cls.payload, 'event.fields', {
    before: cls.payload.members.map(() => EMPTY),
    write: sinks,
    after: EMPTY,
  });
  const streamContext = streamType && writerOf(streamType, 'stream.event.context', silentSink(streamType));
  const eventContext = cls.context && writerOf(cls.context, 'event.context', silentSink(cls.context));
  const copy = payloadCopy(cls, own);
  const align = alignmentOf(cls.payload);
  let bytes: Uint8Array | undefined;
  let view = place.view;
  /** The ftrace id of the class, once its first record is placed in a page here. */
  let id = -1;
  if (copy === undefined) return (s, out, packet) => valueByValue(s, out, packet, true);
  const { move, bits } = copy;
  if (placer !== undefined) {
    return (s, out, packet) => {
      const p = payloadAt(s, out);
      if (p < 0) return valueByValue(s, out, packet, false);
      // Straight into its CPU's page, which holds zeros where the record goes: common_type and the payload.
      const at = placer.place(cls, packet.packetCpu, packet.cycles, packet.toNs, fixed);
      const to = placer.view;
      to.setUint16(at, id < 0 ? (id = placer.idOf(cls)) : id, true);
      const r = s.r;
      move(to, at, r.view, p / 8);
      r.pos = p + bits;
      return true;
    };
  }
  return (s, out, packet) => {
    const p = payloadAt(s, out);
    if (p < 0) return valueByValue(s, out, packet, false);
    const at = record(out);
    const r = s.r;
    move(viewOf(out.bytes), at, r.view, p / 8);
    r.pos = p + bits;
    return true;
  };
  /**
   * Passes over the contexts (their sinks write nothing) and returns where the payload starts, aligned as its decoder
   * aligns it (to whole bytes at least), when the packet holds all of it; else -1, the reader left after the contexts.
   */
  function payloadAt(s: DecodeContext, out: ByteOut): number {
    streamContext?.(s, out);
    eventContext?.(s, out);
    const r = s.r;
    let p = r.pos;
    const m = p % align;
    if (m !== 0) p += align - m;
    return p + bits <= r.limit ? p : -1;
  }
  /**
   * Reads the payload a value at a time (unaligned, or past the packet's end, which the decoder names), the contexts
   * passed over first unless `payloadAt` did.
   */
  function valueByValue(s: DecodeContext, out: ByteOut, packet: LinePacket, contexts: boolean): boolean {
    if (contexts) {
      streamContext?.(s, out);
      eventContext?.(s, out);
    }
    const at = record(out);
    const b = out.bytes;
    place.view = viewOf(b);
    place.base = at;
    payload(s, out);
    if (placer !== undefined) {
      // Read whole: placed as the copied ones are, `out` left as it was.
      if (id < 0) id = placer.idOf(cls);
      placer.put(cls, packet.packetCpu, packet.cycles, packet.toNs, b, at, fixed, id);
      out.length = at;
    }
    return true;
  }
  /** A view of `out`'s bytes, made again only when they moved. */
  function viewOf(b: Uint8Array): DataView {
    if (b !== bytes) {
      bytes = b;
      view = new DataView(b.buffer, b.byteOffset, b.byteLength);
    }
    return view;
  }
  /** Adds the record's bytes to `out`, zeros but for `common_type` (which holds `index`); returns where they start. */
  function record(out: ByteOut): number {
    out.reserve(fixed);
    const at = out.length;
    const b = out.bytes;
    for (let i = at, end = at + fixed; i < end; i++) b[i] = 0;
    b[at] = index & 0xff;
    b[at + 1] = index >> 8;
    out.length = at + fixed;
    return at;
  }
}

/**
 * Where a payload's bytes go in the record when its integers are its fields as they lie (little-endian, byte-aligned,
 * each as wide as its field): copied, not read. Undefined otherwise.
 */
function payloadCopy(
  cls: EventClass,
  own: ReadonlyMap<string, FtraceFieldInfo>,
): { readonly move: PayloadMove; readonly bits: number } | undefined {
  const layout = payloadLayout(cls.payload);
  if (layout === undefined || layout.byteOrder !== 'le') return undefined;
  // Generated moves, a statement per 4 bytes of a field (or fewer, at its end): only numbers go into the source.
  const lines: string[] = [];
  for (const m of cls.payload.members) {
    const int = m.type.kind === 'int' ? m.type : m.type.kind === 'enum' ? m.type.container : undefined;
    const f = own.get(m.name);
    if (int === undefined || f === undefined || int.size !== f.size * 8) return undefined;
    const from = Number(layout.offsets.get(m.name));
    for (let i = 0; i < f.size; ) {
      const n = Math.min(4, f.size - i);
      const kind = n === 4 ? 'Uint32' : n >= 2 ? 'Uint16' : 'Uint8';
      const w = n === 4 ? 4 : n >= 2 ? 2 : 1;
      lines.push(`to.set${kind}(at + ${Number(f.offset) + i}, from.get${kind}(start + ${from + i}, true), true);`);
      i += w;
    }
  }
  const move = new Function('to', 'at', 'from', 'start', lines.join('\n')) as PayloadMove;
  return { move, bits: layout.size * 8 };
}

/** Copies a payload's bytes from `from` at `start` into the record at `at` in `to`. */
type PayloadMove = (to: DataView, at: number, from: DataView, start: number) => void;

/** The record writers, compiled per event class on its first event, and the classes by the index their records hold. */
class RecordPlan implements LineWriters {
  readonly classes: EventClass[] = [];
  readonly #writers = new Map<CompiledEvent, EventLineWriter | undefined>();
  readonly #placer: Placer | undefined;
  #lastEvent: CompiledEvent | undefined;
  #last: EventLineWriter | undefined;

  /** With `placer`, records are placed as they are read (one stream: read order is time order), none left in `out`. */
  constructor(placer?: Placer) {
    this.#placer = placer;
  }

  writer(stream: CompiledStream, event: CompiledEvent): EventLineWriter | undefined {
    // Events of one class often follow each other: the last one's writer is at hand.
    if (event === this.#lastEvent) return this.#last;
    let w = this.#writers.get(event);
    if (w === undefined && !this.#writers.has(event)) {
      w = recordWriter(stream, event.cls, this.classes.length, this.#placer);
      if (w !== undefined) this.classes.push(event.cls);
      this.#writers.set(event, w);
    }
    this.#lastEvent = event;
    this.#last = w;
    return w;
  }
}

/** One CPU's packer, and the time of the record last placed in it (for deltas made without a bigint). */
interface CpuSlot {
  readonly packer: PagePacker;
  cycles: number | bigint;
  /** The clock of the last record when it counts nanoseconds and its cycles were a number, else undefined. */
  exact: CyclesToNs | undefined;
  /** `packer.placerAfter(length)`, for the length of the record last placed after another. */
  after: (deltaNs: number) => number;
  length: number;
}

/**
 * An error of the trace.dat writer (a CPU a file cannot hold) met as a record was placed: placed inside the reader
 * (one stream), it would pass for a corrupt packet, which a lenient read skips. Carried past that as this, and thrown
 * as it was by {@link writeCtfRecords}.
 */
class PlacingError extends Error {
  readonly error: unknown;

  constructor(error: unknown) {
    super('a record could not be placed');
    this.error = error;
  }
}

/** `fn()`, its errors carried as {@link PlacingError}. */
function placing<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw new PlacingError(error);
  }
}

/** Places records in the encoder's pages, per CPU, in the order it is given them. */
class Placer {
  readonly #encoder: TraceDatEncoder;
  readonly #slots: (CpuSlot | undefined)[] = [];
  /** The CPU of the record last placed, and its slot: records of one CPU come in runs (a packet's). */
  #cpu = -1;
  #slot: CpuSlot | undefined;
  /** The page of the record last placed (its CPU's, the same buffer for every page), and a view of it. */
  page: Uint8Array = EMPTY;
  view: DataView = new DataView(EMPTY.buffer);

  constructor(encoder: TraceDatEncoder) {
    this.#encoder = encoder;
  }

  /** The ftrace id the encoder gives `cls` (on its first call, the next free one). */
  idOf(cls: EventClass): number {
    return placing(() => this.#encoder.format(cls).ftraceClass.id);
  }

  /** Makes room for a record of `n` bytes of an event of `cls` on `cpu`; returns where in {@link page} it goes. */
  place(cls: EventClass, cpu: number | null, cycles: number | bigint, toNs: CyclesToNs, n: number): number {
    const c = cpu ?? 0;
    const slot = c === this.#cpu ? this.#slot! : this.#slotOf(cls, c);
    let at = -1;
    // A nanosecond clock's times differ by their cycles' difference.
    if (toNs === slot.exact && typeof cycles === 'number') {
      const delta = cycles - (slot.cycles as number);
      // Records of one length follow each other (one class's, or classes alike): their placer is at hand.
      if (n === slot.length) at = slot.after(delta);
      else {
        slot.length = n;
        slot.after = slot.packer.placerAfter(n);
        at = slot.after(delta);
      }
    }
    if (at < 0) return this.#placeAt(slot, cycles, toNs, n);
    slot.cycles = cycles;
    this.#encoder.events++;
    return at;
  }

  /** {@link place} by the record's time: a new page, a time extend, another clock, or cycles that are a bigint. */
  #placeAt(slot: CpuSlot, cycles: number | bigint, toNs: CyclesToNs, n: number): number {
    const at = placing(() => slot.packer.place(toNs(cycles), n));
    slot.exact = toNs.nanoseconds && typeof cycles === 'number' ? toNs : undefined;
    slot.cycles = cycles;
    this.#encoder.events++;
    return at;
  }

  #slotOf(cls: EventClass, cpu: number): CpuSlot {
    const slot = (this.#slots[cpu] ??= {
      packer: placing(() => this.#encoder.packer(cpu, () => cls.name)),
      cycles: 0,
      exact: undefined,
      after: () => -1,
      length: -1,
    });
    this.#cpu = cpu;
    this.#slot = slot;
    this.page = slot.packer.page;
    this.view = slot.packer.view;
    return slot;
  }

  /** Places the record `data[from, from + n)`, its `common_type` set to `id` when given. */
  put(
    cls: EventClass,
    cpu: number | null,
    cycles: number | bigint,
    toNs: CyclesToNs,
    data: Uint8Array,
    from: number,
    n: number,
    id?: number,
  ): void {
    const at = this.place(cls, cpu, cycles, toNs, n);
    const page = this.page;
    for (let i = 0; i < n; i++) page[at + i] = data[from + i]!;
    if (id !== undefined) {
      page[at] = id & 0xff;
      page[at + 1] = (id >> 8) & 0xff;
    }
  }
}

/**
 * Places the records of the events `cursors` read into `encoder`, merged in time order as `writeCtfLines` merges
 * lines (so that each CPU's records come in the order the events do); returns the number of events.
 */
export function writeCtfRecords(cursors: readonly LineSource[], byCycles: boolean, encoder: TraceDatEncoder): number {
  const placer = new Placer(encoder);
  // One stream: the plan's writers place most records themselves, as they read them.
  const plan = new RecordPlan(cursors.length === 1 ? placer : undefined);
  /** The ftrace id of each class of the plan, once its first record is placed. */
  const ids: number[] = [];
  /** A record a plan's writer wrote: its class's id put in place of the index it holds. */
  const putRecord = (cpu: number | null, cycles: number | bigint, toNs: CyclesToNs, data: Uint8Array, n: number) => {
    const index = data[0]! | (data[1]! << 8);
    const cls = plan.classes[index]!;
    const id = (ids[index] ??= placer.idOf(cls));
    placer.put(cls, cpu, cycles, toNs, data, 0, n, id);
  };
  const putEvent = (e: CtfEvent, toNs: CyclesToNs) => {
    const record = encoder.encode(e);
    placer.put(e.eventClass, e.cpu, e.cycles, toNs, record, 0, record.length);
  };
  const start = encoder.events;
  try {
    placeAll(cursors, byCycles, plan, putRecord, putEvent);
  } catch (error) {
    throw error instanceof PlacingError ? error.error : error;
  }
  return encoder.events - start;
}

/** Reads `cursors` through `plan`, one stream's records placed by its writers, the others' by `putRecord`. */
function placeAll(
  cursors: readonly LineSource[],
  byCycles: boolean,
  plan: RecordPlan,
  putRecord: (cpu: number | null, cycles: number | bigint, toNs: CyclesToNs, data: Uint8Array, n: number) => void,
  putEvent: (e: CtfEvent, toNs: CyclesToNs) => void,
): void {
  if (cursors.length === 1) {
    const cursor = cursors[0]!;
    // The plan's writers place their records themselves: the cursor hands over only the events decoded whole.
    const target: LineTarget = { out: new ByteOut(256), plan, placed: true };
    for (let got = cursor.nextLine(target); got !== undefined; got = cursor.nextLine(target)) {
      if (got !== true) putEvent(got, cursor.toNs);
    }
  } else {
    const merger = new Merger<LineEntry>(byCycles);
    cursors.forEach((c, order) => {
      merger.push(new LineCursor(c, plan), order);
    });
    for (let entry = merger.pop(); entry !== undefined; entry = merger.pop()) {
      if (entry.event === undefined) putRecord(entry.cpu, entry.cycles, entry.toNs, entry.out.bytes, entry.out.length);
      else putEvent(entry.event, entry.toNs);
    }
  }
}
