/**
 * Random access to the events of a CTF trace, built as it is read: the streams are merged in time order a slice at a
 * time and each event leaves only a few numbers behind (time, class, packet, ordinal in the packet; about 24 bytes)
 * while the packet table keeps where each packet starts and the clock it starts from. An event is decoded again,
 * with the rest of its packet, when asked for. A viewer can so show the first rows of a trace of any size at once
 * and let the index grow behind it.
 */
import { takeWithin } from '../model/budget.ts';
import type { EventClass, TraceEvent } from '../model/types.ts';
import type { CtfEvent } from './event.ts';
import { Merger } from './merge.ts';
import type { PacketCursor, PacketStart } from './packet-cursor.ts';

/** Events of a CTF trace in the order `events()` yields them, addressed by position, indexed progressively. */
export interface IndexedCtfTrace {
  /** Events indexed so far (all of them once {@link done}). */
  readonly length: number;
  /** True when every stream has been read to its end. */
  readonly done: boolean;
  /** Share of the streams' bytes read, in [0, 1]. */
  readonly progress: number;
  /** Packets indexed so far, over all streams. */
  readonly packets: number;
  /**
   * Indexes further: at least `minEvents` more events (fewer only at the end) and then until `budgetMs` of wall
   * time has passed. Returns {@link done}.
   * @throws TraceFormatError on a corrupt packet unless the reader is lenient.
   */
  advance(budgetMs: number, minEvents?: number): boolean;
  /** Indexes to the end. */
  finish(): this;
  /** Timestamp of the event at `i`, in ns. */
  tsNs(i: number): bigint;
  cpu(i: number): number | null;
  eventClass(i: number): EventClass;
  /** Decodes the event at `i` (with the rest of its packet, kept in a small cache). */
  event(i: number): TraceEvent;
}

/** Packets whose decoded events are kept for {@link IndexedCtfTrace.event}. */
const CACHED_PACKETS = 32;

class Column<T extends BigInt64Array | Uint32Array | Int32Array> {
  data: T;
  length = 0;
  readonly #make: (n: number) => T;
  constructor(make: (n: number) => T) {
    this.#make = make;
    this.data = make(4096);
  }
  push(v: T[number]): void {
    if (this.length === this.data.length) {
      const bigger = this.#make(this.data.length * 2);
      bigger.set(this.data as never);
      this.data = bigger;
    }
    this.data[this.length++] = v;
  }
}

interface Packet extends PacketStart {
  readonly stream: number;
}

/** What the events of one cursor left behind, in the order the cursor returned them (at most two wait). */
type Pending = { packet: number; ordinal: number }[];

/**
 * Builds the progressive index over fresh cursors (one per stream file, in tie-breaking order). `seekers` makes a
 * second set of cursors, used to decode packets again.
 */
export function indexCtfStreams(
  cursors: readonly PacketCursor[],
  seekers: () => readonly PacketCursor[],
  eventClasses: readonly EventClass[],
  byCycles: boolean,
): IndexedCtfTrace {
  const classIndex = new Map(eventClasses.map((c, i) => [c, i]));
  const classes = [...eventClasses];
  const ts = new Column((n) => new BigInt64Array(n));
  const cpus = new Column((n) => new Int32Array(n));
  const cls = new Column((n) => new Uint32Array(n));
  const packetOf = new Column((n) => new Uint32Array(n));
  const ordinalOf = new Column((n) => new Uint32Array(n));
  const packets: Packet[] = [];
  const total = cursors.reduce((a, c) => a + c.size, 0) || 1;
  // Per cursor: its current packet (index into `packets`) and events returned from it so far.
  const current = cursors.map(() => ({ packet: -1, number: -1, ordinal: 0 }));
  const pending: Pending[] = cursors.map(() => []);
  const observed = cursors.map((cursor, k) => ({
    next(): CtfEvent | undefined {
      const e = cursor.next();
      if (e === undefined) return undefined;
      const c = current[k]!;
      const p = cursor.packet;
      if (p.number !== c.number) {
        c.packet = packets.length;
        c.number = p.number;
        c.ordinal = 0;
        packets.push({ ...p, stream: k });
      }
      pending[k]!.push({ packet: c.packet, ordinal: c.ordinal++ });
      return e;
    },
  }));
  const merger = new Merger(byCycles);
  let started = false;
  let done = false;

  const take = (): boolean => {
    if (!started) {
      started = true;
      observed.forEach((c, k) => {
        merger.push(c, k);
      });
    }
    const e = merger.pop();
    if (e === undefined) {
      done = true;
      return false;
    }
    const where = pending[merger.lastOrder]!.shift()!;
    ts.push(e.tsNs);
    cpus.push(e.cpu ?? -1);
    let c = classIndex.get(e.eventClass);
    if (c === undefined) {
      c = classes.length;
      classes.push(e.eventClass);
      classIndex.set(e.eventClass, c);
    }
    cls.push(c);
    packetOf.push(where.packet);
    ordinalOf.push(where.ordinal);
    return true;
  };

  let seekerSet: readonly PacketCursor[] | undefined;
  /** Decoded packets, most recently used last. */
  const cache = new Map<number, CtfEvent[]>();
  const decodePacket = (id: number): CtfEvent[] => {
    let events = cache.get(id);
    if (events !== undefined) {
      cache.delete(id);
      cache.set(id, events);
      return events;
    }
    seekerSet ??= seekers();
    const p = packets[id]!;
    const cursor = seekerSet[p.stream]!;
    cursor.seek(p);
    events = [];
    for (let e = cursor.next(); e !== undefined && cursor.packet.number === p.number; e = cursor.next()) events.push(e);
    cache.set(id, events);
    if (cache.size > CACHED_PACKETS) cache.delete(cache.keys().next().value!);
    return events;
  };

  const check = (i: number) => {
    if (!Number.isInteger(i) || i < 0 || i >= ts.length)
      throw new RangeError(`event ${i} is outside the ${ts.length} indexed events`);
  };

  const index: IndexedCtfTrace = {
    get length() {
      return ts.length;
    },
    get done() {
      return done;
    },
    get progress() {
      if (done) return 1;
      return cursors.reduce((a, c) => a + Math.min(c.position, c.size), 0) / total;
    },
    get packets() {
      return packets.length;
    },
    advance(budgetMs, minEvents = 0) {
      if (!done) takeWithin(take, budgetMs, minEvents);
      return done;
    },
    finish() {
      while (take());
      return this;
    },
    tsNs(i) {
      check(i);
      return ts.data[i]!;
    },
    cpu(i) {
      check(i);
      const c = cpus.data[i]!;
      return c < 0 ? null : c;
    },
    eventClass(i) {
      check(i);
      return classes[cls.data[i]!]!;
    },
    event(i) {
      check(i);
      const e = decodePacket(packetOf.data[i]!)[ordinalOf.data[i]!];
      if (e === undefined) throw new RangeError(`event ${i} could not be decoded again`);
      return e;
    },
  };
  return index;
}
