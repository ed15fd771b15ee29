// Compiled decoders of a stream class and its event classes, and the hooks that give fields their meaning.
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
} from '../model/types.ts';
import { type CyclesToNs, clockUpdater, cyclesToNs, DEFAULT_CLOCK } from './clock.ts';

/** A decoded structure. */
export type Struct = Record<string, FieldValue>;
export type Scopes = { [scope: string]: Struct };

export interface CompiledEvent {
  readonly cls: EventClass;
  readonly context?: FieldDecoder;
  readonly payload: FieldDecoder;
}

export interface CompiledStream {
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
export interface StreamState extends DecodeContext {
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

/** Scope values with every key present, so the object keeps one shape. */
export function emptyRoots(): Partial<Record<ScopeName, Struct>> {
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

export function asNumber(v: number | bigint): number {
  return typeof v === 'bigint' ? (v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : Number.MAX_SAFE_INTEGER) : v;
}

function clockFor(trace: TraceClass, type: IntegerClass, file: string): ClockClass {
  if (type.mappedClock !== undefined) {
    const clock = trace.clocks.get(type.mappedClock);
    if (!clock)
      throw new TraceFormatError('ERR_TRACE_TSDL', `timestamp maps to unknown clock ${type.mappedClock}`, { file });
    return clock;
  }
  if (trace.clocks.size === 1) return trace.clocks.values().next().value!;
  if (trace.clocks.size === 0) return DEFAULT_CLOCK;
  throw new TraceFormatError('ERR_TRACE_TSDL', 'timestamp maps to no clock and the trace declares several', { file });
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
  const oneWord = packed && idType.byteOrder === tsType.byteOrder;
  return (ctx) => {
    const s = ctx as StreamState;
    const r = s.r;
    r.pos = r.at(headerAlign, 0);
    if (oneWord) {
      const p = r.at(8, 32);
      const word = r.view.getUint32(p / 8, le);
      const id = le ? word & idMask : word >>> (32 - idBits);
      if (id !== extLow && id >= cmpLow && id <= cmpHigh) {
        r.pos = p + 32;
        s.eventId = id;
        s.clock = compactClock(s.clock, le ? word >>> idBits : word & tsMask);
        return null;
      }
    }
    return fieldByField(s);
  };
  /** The header read a field at a time (the extended header, one not packed in a word, or a bad id). */
  function fieldByField(s: StreamState): null {
    const r = s.r;
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
  }
}

export function compileStream(trace: TraceClass, cls: StreamClass, file: string): CompiledStream {
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
    timestamped: streamTimestamped(cls),
  };
}

/** Whether a stream's events carry a time (a `timestamp` in their header). */
export function streamTimestamped(cls: StreamClass): boolean {
  return hasMember(cls.eventHeader, 'timestamp') !== undefined;
}
