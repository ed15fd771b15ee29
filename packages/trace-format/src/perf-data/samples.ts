/**
 * PERF_RECORD_SAMPLEs in time order, as perf's ordered-events queue delivers them to `perf script` and `perf kmem`:
 * samples are queued as read; at each FINISHED_ROUND those not later than the newest time of the rounds before are
 * delivered, the rest at the next round or at the end. Equal times keep file order. Each CPU's samples come in time
 * order from its ring buffer, so delivery merges per-CPU runs (a run found out of order is sorted first).
 */
import type { ByteSource } from '../ctf/byte-source.ts';
import { fail, RecordType, SampleBits } from './header.ts';
import { type PerfChunk, type RecordCursor, type SampleLayout, sampleRaw } from './records.ts';

/**
 * A batch of samples in columns: sample `i` has its time (ns), CPU, pid, tid (-1 when not recorded), its event (the
 * index of its attribute), its record's file offset, and its RAW data as `rawAt`/`rawSize` in `chunk[i]` (`rawAt` -1
 * without RAW data). Valid until the next batch is asked for.
 */
export class PerfSamples {
  length = 0;
  readonly capacity: number;
  readonly time: Float64Array;
  readonly cpu: Int32Array;
  readonly pid: Int32Array;
  readonly tid: Int32Array;
  readonly attr: Int32Array;
  readonly offset: Float64Array;
  readonly rawAt: Int32Array;
  readonly rawSize: Int32Array;
  readonly chunk: PerfChunk[];

  constructor(capacity: number) {
    this.capacity = capacity;
    this.time = new Float64Array(capacity);
    this.cpu = new Int32Array(capacity);
    this.pid = new Int32Array(capacity);
    this.tid = new Int32Array(capacity);
    this.attr = new Int32Array(capacity);
    this.offset = new Float64Array(capacity);
    this.rawAt = new Int32Array(capacity);
    this.rawSize = new Int32Array(capacity);
    this.chunk = new Array<PerfChunk>(capacity);
  }
}

/** Bytes of the data read at once for one CPU's samples while they are delivered. */
const WINDOW = 1 << 20;

/**
 * Samples of one CPU waiting for their round to be delivered, in arrival order from `head`: their time, file offset
 * (which also orders equal times, as perf's queue does) and event. Their bytes are read again when delivered, through
 * a window of the file, so that a round as long as the file (perf kmem record's large buffers make few rounds) costs
 * 20 bytes a sample, not the sample.
 */
class Queue {
  time: Float64Array<ArrayBuffer>;
  offset: Float64Array<ArrayBuffer>;
  layout: Int32Array<ArrayBuffer>;
  head = 0;
  tail = 0;
  sorted = true;
  /** The delivery window: a chunk of the data section holding the next samples. */
  window: PerfChunk = NONE;
  /** The window's buffers, each stamped with the last batch that points into it. */
  readonly spare: { bytes: Buffer; stamp: number }[] = [];
  windowBuffer: { bytes: Buffer; stamp: number } | undefined;

  /**
   * A queue with room for `capacity` entries before it grows. The arrays are not zeroed (only what lies between head
   * and tail is read): a page of them costs memory once an entry is written in it, so room for as many samples as the
   * file could hold costs no more than the samples it does hold, and no copying as the queue fills.
   */
  constructor(capacity = 1024) {
    this.time = float64s(capacity);
    this.offset = float64s(capacity);
    this.layout = int32s(capacity);
  }

  /** Appends an entry of `offset` and `layout`: its index, whose time the caller stores. */
  add(offset: number, layout: number): number {
    if (this.tail === this.time.length) this.#grow();
    const i = this.tail++;
    this.offset[i] = offset;
    this.layout[i] = layout;
    return i;
  }

  /** Moves the waiting entries to the front of arrays twice their count (at least as large as now). */
  #grow(): void {
    const n = this.tail - this.head;
    const size = Math.max(this.time.length, n * 2);
    const h = this.head;
    const t = this.tail;
    const f64 = (a: Float64Array<ArrayBuffer>) => {
      const b = float64s(size);
      b.set(a.subarray(h, t));
      return b;
    };
    const i32 = int32s(size);
    i32.set(this.layout.subarray(h, t));
    this.time = f64(this.time);
    this.offset = f64(this.offset);
    this.layout = i32;
    this.head = 0;
    this.tail = n;
  }

  /** Sorts the waiting entries by time, equal times in file order. */
  sort(): void {
    const h = this.head;
    const idx = Array.from({ length: this.tail - h }, (_, k) => h + k);
    idx.sort((a, b) => this.time[a]! - this.time[b]! || this.offset[a]! - this.offset[b]!);
    this.time.set(
      idx.map((i) => this.time[i]!),
      h,
    );
    this.offset.set(
      idx.map((i) => this.offset[i]!),
      h,
    );
    this.layout.set(
      idx.map((i) => this.layout[i]!),
      h,
    );
    this.sorted = true;
  }
}

/** Arrays whose memory is not zeroed (see Queue). */
const float64s = (n: number) => new Float64Array(Buffer.allocUnsafeSlow(n * 8).buffer as ArrayBuffer, 0, n);
const int32s = (n: number) => new Int32Array(Buffer.allocUnsafeSlow(n * 4).buffer as ArrayBuffer, 0, n);

/** The most entries a queue is made with room for (80 MiB of address space, not of memory: see Queue). */
const ROOM = 1 << 22;

/** What a sample reader needs from its file: the cursor, each attribute's layout, and where to report. */
export interface SampleSourceState {
  readonly cursor: RecordCursor;
  readonly source: ByteSource;
  /** Where the data section ends (a window is never read past it). */
  readonly dataEnd: number;
  readonly layouts: readonly SampleLayout[];
  /** Layout index by sample id. */
  readonly byId: ReadonlyMap<number, number>;
  readonly file: string | undefined;
  readonly lenient: boolean;
  /** Samples that are damaged or of no known event (lenient), and lost events the kernel counted. */
  readonly counts: { skipped: number; lost: number; lostSamples: number };
  readonly warnings: string[];
  /** Batches yielded so far (a window buffer is reused once the batches pointing into it are done with). */
  batches: number;
  /** Decodes each sample in its consumer's own columns (the batches then carry only their length). */
  readonly visit?: SampleVisitor;
}

/**
 * Decodes a sample as it is delivered, in place of a row of {@link PerfSamples}: the record at `at` of `chunk` (valid
 * until the batch is done with), the index of its event's attribute, its RAW data at `rawAt` of the chunk (`rawSize`
 * bytes; `rawAt` -1 when the sample has none). Its fixed fields are where its attribute's {@link SampleLayout} says.
 */
export type SampleVisitor = (chunk: PerfChunk, at: number, attr: number, rawAt: number, rawSize: number) => void;

/** CPUs a sample's number must be below (Linux's NR_CPUS is at most 8192): queues are an array indexed by it. */
const MAX_CPUS = 1 << 16;

/** What {@link walk} stopped at. */
const ROUND = 0;
const END = 1;
const FULL = 2;

/**
 * Where delivery stands: samples queued per CPU, and in `times` the newest time queued (MAX) and the limit of the
 * next round's delivery (NEXT). Times are kept in an array, not in variables of the generator: a double held across a
 * yield, or passed to a call, is boxed, an allocation per sample.
 */
class Ordering {
  readonly queues: Queue[] = [];
  readonly times = new Float64Array(2);
  readonly timed: boolean;
  /** Layout index + 1 by sample id - `idBase`, when the ids lie close together (cheaper than a Map lookup). */
  readonly idBase: number;
  readonly byId: Int32Array;
  /** As many samples as the data could hold. */
  readonly samples: number;
  /** Queues made so far. */
  made = 0;
  constructor(s: SampleSourceState) {
    this.timed = s.layouts.length > 0 && s.layouts.every((l) => l.time >= 0);
    const smallest = Math.max(8, Math.min(...s.layouts.map((l) => l.fixed)));
    this.samples = Math.ceil(s.dataEnd / smallest);
    let low = Number.POSITIVE_INFINITY;
    let high = -1;
    for (const id of s.byId.keys()) {
      low = Math.min(low, id);
      high = Math.max(high, id);
    }
    const span = high - low + 1;
    this.idBase = span > 0 ? low : 0;
    this.byId = new Int32Array(span > 0 && span <= 4096 ? span : 0);
    if (this.byId.length > 0) for (const [id, li] of s.byId) this.byId[id - low] = li + 1;
  }
}
const MAX = 0;
const NEXT = 1;

/**
 * The order a reader delivers a file's samples in, found without reading their data: every sample's time, file
 * offset and event per CPU, and at each round how far each CPU's samples go, the round's time limit and the warnings
 * met. Its arrays can be handed to another thread, whose reader of the same file then delivers the samples.
 */
export interface SampleWalk {
  /** Each CPU's samples (CPUs in ascending order): their time, file offset and layout (event) index. */
  readonly queues: readonly {
    readonly cpu: number;
    readonly time: Float64Array<ArrayBuffer>;
    readonly offset: Float64Array<ArrayBuffer>;
    readonly layout: Int32Array<ArrayBuffer>;
    readonly count: number;
  }[];
  readonly rounds: readonly {
    /** Samples of each queue (in the order of `queues`) queued by the round's end. */
    readonly tails: readonly number[];
    /** Delivered this round: those not later than this (all of them at the end). */
    readonly limit: number;
    readonly all: boolean;
    /** Warnings the round's walk met (lenient). */
    readonly warnings: readonly string[];
  }[];
  readonly counts: { readonly skipped: number; readonly lost: number; readonly lostSamples: number };
  /** Where the walk stopped at damage (lenient). */
  readonly damage: { readonly offset: number; readonly message: string } | undefined;
}

/** Walks the data section as {@link orderedSamples} would, queuing and delivering nothing: undefined when untimed. */
export function walkSamples(s: SampleSourceState): SampleWalk | undefined {
  const o = new Ordering(s);
  if (!o.timed) return undefined;
  const rounds: { tails: number[]; limit: number; all: boolean; warnings: string[] }[] = [];
  const none = new PerfSamples(0);
  for (;;) {
    const before = s.warnings.length;
    const all = walk(s, o, none) === END;
    const warnings = s.warnings.splice(before);
    // By CPU number, holes where no sample came yet (CPU numbers are bounded: see MAX_CPUS).
    rounds.push({ tails: o.queues.map((q) => q.tail), limit: o.times[NEXT]!, all, warnings });
    if (all) break;
    o.times[NEXT] = o.times[MAX]!;
  }
  // The CPUs present, in ascending order (forEach visits no hole).
  const cpus: number[] = [];
  o.queues.forEach((_, cpu) => {
    cpus.push(cpu);
  });
  return {
    queues: cpus.map((cpu) => {
      const q = o.queues[cpu]!;
      return { cpu, time: q.time, offset: q.offset, layout: q.layout, count: q.tail };
    }),
    rounds: rounds.map((r) => ({ ...r, tails: cpus.map((cpu) => r.tails[cpu] ?? 0) })),
    counts: { ...s.counts },
    damage: s.cursor.damage,
  };
}

/** Yields the samples of the data section in batches of `capacity`, in time order (file order without times). */
export function* orderedSamples(s: SampleSourceState, capacity: number, walked?: SampleWalk): Generator<PerfSamples> {
  if (walked !== undefined) {
    yield* replayedSamples(s, capacity, walked);
    return;
  }
  const out = new PerfSamples(capacity);
  const o = new Ordering(s);
  for (;;) {
    const stop = walk(s, o, out);
    if (stop === FULL) {
      yield out;
      s.batches++;
      out.length = 0;
      continue;
    }
    // A round delivers what is not later than the newest time of the rounds before it; the end, everything.
    const all = stop === END;
    const active = o.queues.filter((q) => q !== undefined && q.tail > q.head);
    for (const q of active) if (!q.sorted) q.sort();
    const merge = new Merge(active, all, o.times[NEXT]!);
    while (deliver(s, merge, all, o.times, out)) {
      yield out;
      s.batches++;
      out.length = 0;
    }
    for (const q of active) if (q.head === q.tail) q.head = q.tail = 0;
    if (all) break;
    o.times[NEXT] = o.times[MAX]!;
  }
  if (s.cursor.damage !== undefined)
    s.warnings.push(
      `${s.file ?? 'perf.data'}: byte ${s.cursor.damage.offset}: ${s.cursor.damage.message}; the records after it are not read`,
    );
  if (out.length > 0) yield out;
}

/** {@link orderedSamples} of a walk made by another reader: each round's deliveries as that walk found them. */
function* replayedSamples(s: SampleSourceState, capacity: number, walked: SampleWalk): Generator<PerfSamples> {
  const out = new PerfSamples(capacity);
  const times = new Float64Array(2);
  const queues = walked.queues.map((w) => {
    const q = new Queue(0);
    q.time = w.time;
    q.offset = w.offset;
    q.layout = w.layout;
    return q;
  });
  for (const round of walked.rounds) {
    s.warnings.push(...round.warnings);
    const active: Queue[] = [];
    queues.forEach((q, k) => {
      q.tail = round.tails[k] ?? 0;
      if (q.tail <= q.head) return;
      active.push(q);
      // Sorted when out of order, as the walk that queued them would have found and sorted them.
      for (let i = q.head + 1; i < q.tail; i++)
        if (q.time[i]! < q.time[i - 1]!) {
          q.sort();
          break;
        }
    });
    times[NEXT] = round.limit;
    const merge = new Merge(active, round.all, round.limit);
    while (deliver(s, merge, round.all, times, out)) {
      yield out;
      s.batches++;
      out.length = 0;
    }
  }
  if (walked.damage !== undefined)
    s.warnings.push(
      `${s.file ?? 'perf.data'}: byte ${walked.damage.offset}: ${walked.damage.message}; the records after it are not read`,
    );
  if (out.length > 0) yield out;
}

/** Reads records up to a FINISHED_ROUND or the end, queuing samples by CPU (emitting them into `out` when untimed). */
function walk(s: SampleSourceState, o: Ordering, out: PerfSamples): number {
  const cursor = s.cursor;
  const single = s.layouts.length === 1 ? 0 : -1;
  while (cursor.next()) {
    const type = cursor.type;
    if (type === RecordType.SAMPLE) {
      const v = cursor.chunk.view;
      const at = cursor.at;
      let li = single;
      if (s.layouts.length === 0) {
        skip(s, cursor.offset, 'a sample in a file without event attributes');
        continue;
      }
      if (li < 0) {
        const idAt = s.layouts[0]!.id;
        if (idAt >= 0 && idAt + 8 <= cursor.size) {
          const id = v.getUint32(at + idAt, true);
          const d = id - o.idBase;
          li = d >= 0 && d < o.byId.length ? o.byId[d]! - 1 : (s.byId.get(id) ?? -1);
        }
        if (li < 0) {
          skip(s, cursor.offset, 'a sample of no event in the attribute section');
          continue;
        }
      }
      const l = s.layouts[li]!;
      if (cursor.size < l.fixed) {
        skip(s, cursor.offset, `sample of ${cursor.size} bytes, shorter than its fields (${l.fixed})`);
        continue;
      }
      if (!o.timed) {
        emit(s, out, cursor.chunk, at, li);
        if (out.length === out.capacity) return FULL;
        continue;
      }
      const cpu = l.cpu >= 0 ? v.getUint32(at + l.cpu, true) : 0;
      if (cpu >= MAX_CPUS) {
        skip(s, cursor.offset, `sample of CPU ${cpu}, more than a machine has`);
        continue;
      }
      let q = o.queues[cpu];
      // The k-th CPU met has room for a k-th of the samples the data could hold (one that needs more grows): for many
      // CPUs, room that adds up to a few times the data's samples, not once per CPU.
      if (q === undefined)
        q = o.queues[cpu] = new Queue(Math.min(ROOM, Math.max(1024, Math.ceil(o.samples / ++o.made))));
      const i = q.add(cursor.offset, li);
      q.time[i] = v.getUint32(at + l.time, true) + v.getUint32(at + l.time + 4, true) * 4294967296;
      if (i > q.head && q.time[i]! < q.time[i - 1]!) q.sorted = false;
      if (q.time[i]! > o.times[MAX]!) o.times[MAX] = q.time[i]!;
    } else if (type === RecordType.FINISHED_ROUND) {
      return ROUND;
    } else if (type === RecordType.LOST && cursor.size >= 24) {
      s.counts.lost += Number(cursor.chunk.view.getBigUint64(cursor.at + 16, true));
    } else if (type === RecordType.LOST_SAMPLES && cursor.size >= 16) {
      s.counts.lostSamples += Number(cursor.chunk.view.getBigUint64(cursor.at + 8, true));
    }
  }
  return END;
}

function skip(s: SampleSourceState, offset: number, message: string): void {
  if (!s.lenient) fail(message, s.file, offset);
  s.counts.skipped++;
  if (s.counts.skipped <= 10) s.warnings.push(`${s.file ?? 'perf.data'}: byte ${offset}: ${message}; skipped`);
}

/**
 * The queues whose next sample is due this round, in a binary heap ordered by that sample's time, then file offset:
 * a sample costs a few comparisons whatever the number of CPUs.
 */
class Merge {
  readonly queues: Queue[];
  readonly heap: Int32Array;
  size = 0;

  constructor(queues: Queue[], all: boolean, limit: number) {
    this.queues = queues;
    this.heap = new Int32Array(queues.length);
    for (let k = 0; k < queues.length; k++) {
      const q = queues[k]!;
      if (q.head < q.tail && (all || q.time[q.head]! <= limit)) this.heap[this.size++] = k;
    }
    for (let i = (this.size >> 1) - 1; i >= 0; i--) this.down(i);
  }

  /** Whether queue `a`'s next sample comes before queue `b`'s. */
  before(a: number, b: number): boolean {
    const qa = this.queues[a]!;
    const qb = this.queues[b]!;
    const ta = qa.time[qa.head]!;
    const tb = qb.time[qb.head]!;
    return ta < tb || (ta === tb && qa.offset[qa.head]! < qb.offset[qb.head]!);
  }

  /** Restores the heap below `i`. */
  down(i: number): void {
    const h = this.heap;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= this.size) return;
      const c = l + 1 < this.size && this.before(h[l + 1]!, h[l]!) ? l + 1 : l;
      if (!this.before(h[c]!, h[i]!)) return;
      const t = h[c]!;
      h[c] = h[i]!;
      h[i] = t;
      i = c;
    }
  }
}

/**
 * Delivers the queued samples not later than `times[NEXT]` (all of them when `all`), oldest first, into `out`: true
 * when it stopped because `out` is full (call again once it is taken), false when done.
 */
function deliver(s: SampleSourceState, m: Merge, all: boolean, times: Float64Array, out: PerfSamples): boolean {
  while (m.size > 0) {
    const best = m.queues[m.heap[0]!]!;
    const bh = best.head++;
    // The window is checked here, not in a call per sample: that call allocated per sample (the heap profile shows
    // it), where this check allocates nothing.
    let w = best.window;
    const rel = best.offset[bh]! - w.base;
    const within = w.bytes.length;
    if (rel >= 0 && rel + 8 <= within && (rel | 0) + w.view.getUint16((rel | 0) + 6, true) <= within)
      best.windowBuffer!.stamp = s.batches;
    else w = moveWindow(s, best, bh);
    // Within a window: an int, so that no double is boxed on the way (offsets are passed, not stored).
    emit(s, out, w, (best.offset[bh]! - w.base) | 0, best.layout[bh]!);
    // The queue stays in the heap while its next sample is due this round (its samples are in time order).
    if (best.head === best.tail || (!all && best.time[best.head]! > times[NEXT]!)) m.heap[0] = m.heap[--m.size]!;
    m.down(0);
    if (out.length === out.capacity) return true;
  }
  return false;
}

/** The queue's window, moved to start at the record of its entry `h` (which it must hold whole). */
function moveWindow(s: SampleSourceState, q: Queue, h: number): PerfChunk {
  const offset = q.offset[h]!;
  const length = Math.min(WINDOW, s.dataEnd - offset);
  // A buffer no sample of the batch being filled points into (batches before it are done with) is read into again.
  let buffer = q.spare.find((b) => b.stamp < s.batches && b.bytes.length >= length);
  if (buffer === undefined) {
    buffer = { bytes: Buffer.allocUnsafeSlow(length), stamp: s.batches };
    q.spare.push(buffer);
  }
  buffer.stamp = s.batches;
  const read = s.source.read(offset, length, buffer.bytes);
  const bytes = Buffer.isBuffer(read) ? read : Buffer.from(read.buffer, read.byteOffset, read.byteLength);
  const w = { bytes, view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), base: offset };
  if (bytes.length < 8 || bytes.length < w.view.getUint16(6, true))
    fail('the file changed while it was read: a sample is no longer where it was', s.file, offset);
  q.window = w;
  q.windowBuffer = buffer;
  return w;
}

/** No window yet. */
const NONE: PerfChunk = { bytes: Buffer.alloc(0), view: new DataView(new ArrayBuffer(0)), base: 0 };

/** Decodes the sample at `at` of `chunk` into the next row of `out` (or has the visitor decode it: see `visit`). */
function emit(s: SampleSourceState, out: PerfSamples, chunk: PerfChunk, at: number, li: number): void {
  const l = s.layouts[li]!;
  const v = chunk.view;
  const size = v.getUint16(at + 6, true);
  const i = out.length;
  let raw = -1;
  if (l.attr.sampleType & SampleBits.RAW) {
    raw = sampleRaw(v, at, size, l);
    if (raw === -2) {
      skip(s, chunk.base + at, 'sample shorter than its RAW data says');
      return;
    }
  }
  if (s.visit !== undefined) {
    s.visit(chunk, at, l.attr.index, raw < 0 ? -1 : at + raw + 4, raw < 0 ? 0 : v.getUint32(at + raw, true));
    out.length++;
    return;
  }
  out.time[i] = l.time >= 0 ? v.getUint32(at + l.time, true) + v.getUint32(at + l.time + 4, true) * 4294967296 : 0;
  out.cpu[i] = l.cpu >= 0 ? v.getInt32(at + l.cpu, true) : -1;
  out.pid[i] = l.tid >= 0 ? v.getInt32(at + l.tid, true) : -1;
  out.tid[i] = l.tid >= 0 ? v.getInt32(at + l.tid + 4, true) : -1;
  out.attr[i] = l.attr.index;
  out.offset[i] = chunk.base + at;
  out.chunk[i] = chunk;
  if (raw >= 0) {
    out.rawAt[i] = at + raw + 4;
    out.rawSize[i] = v.getUint32(at + raw, true);
  } else {
    out.rawAt[i] = -1;
    out.rawSize[i] = 0;
  }
  out.length++;
}
