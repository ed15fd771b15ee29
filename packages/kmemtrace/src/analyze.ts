/**
 * One pass over allocator events answering kmemtrace's questions: per call site and per pointer tables with the
 * columns and semantics of `perf kmem --caller --alloc` (hits, total and per-hit allocated and requested bytes,
 * cross-CPU frees, fragmentation), a summary, the page allocator, allocations still outstanding at the end, misuse,
 * and a time series. Memory grows with distinct pointers and call sites, not with events.
 */
import {
  ALLOCATOR_CODE,
  KmemColumns,
  type KmemEvent,
  KmemEventStream,
  OP_ALLOC,
  OP_CODE,
  OP_FREE,
  OP_PAGE_ALLOC,
} from './event.ts';
import { KeyTable } from './key-table.ts';
import { type SlabColumns, type SlabStat, slabStats } from './slab-columns.ts';

export type { SlabStat } from './slab-columns.ts';

/** Fragmentation in percent: the share of allocated bytes not requested (perf kmem's formula). */
export function fragmentation(req: number, alloc: number): number {
  return alloc === 0 ? 0 : 100 - (100 * req) / alloc;
}

export interface Summary {
  readonly events: number;
  readonly allocs: number;
  readonly frees: number;
  /** Allocations that returned NULL. */
  readonly failedAllocs: number;
  readonly totalReq: number;
  readonly totalAlloc: number;
  /** Bytes freed: each free of a pointer seen allocated counts that allocation's size (as perf kmem). */
  readonly totalFreed: number;
  readonly wasted: number;
  readonly fragPct: number;
  /** Frees on another CPU than their allocation's. */
  readonly crossCpuFrees: number;
  /** First and last timestamp (ns), undefined for an empty window. */
  readonly firstNs?: number;
  readonly lastNs?: number;
}

export interface PageStats {
  readonly allocs: number;
  readonly frees: number;
  readonly failed: number;
  readonly pagesAllocated: number;
  readonly pagesFreed: number;
  /** Frees of pages allocated in the window (perf kmem's alloc+freed). */
  readonly allocFreed: number;
  /** Requests not matched by a free in the window: allocs - allocFreed, as perf kmem counts them. */
  readonly allocOnly: number;
  /** Freed in the window without their allocation in it. */
  readonly freeOnly: number;
  /** Allocation counts by order, by migrate type, by both (order, then migrate type) and by gfp flags. */
  readonly byOrder: ReadonlyMap<number, number>;
  readonly byOrderMigratetype: ReadonlyMap<number, ReadonlyMap<number, number>>;
  readonly byMigratetype: ReadonlyMap<number, number>;
  readonly byGfp: ReadonlyMap<number, number>;
}

/** Allocations still live at the end of the window, by call site. */
export interface LeakSite {
  readonly callSite: number;
  readonly count: number;
  readonly bytes: number;
  /** Age of the oldest and the mean age at the end of the window, ns. */
  readonly oldestNs: number;
  readonly meanAgeNs: number;
}

/**
 * `wrong_free`: freed through the wrong interface for its allocator; `wrong_cache`: freed to another cache than it
 * came from; `double_free`: freed again with no allocation in between; `unknown_free`: a pointer never allocated in
 * the window (also objects allocated before the recording began); `short_alloc`: fewer bytes allocated than
 * requested; `missed_free`: allocated again while live, so its free was not seen (lost events, an untraced path).
 */
export type KmemErrorKind =
  | 'wrong_free'
  | 'wrong_cache'
  | 'double_free'
  | 'unknown_free'
  | 'short_alloc'
  | 'missed_free';

/** A classified misuse; only the first examples of each kind are kept. */
export interface KmemIssue {
  readonly kind: KmemErrorKind;
  readonly tsNs: number;
  readonly cpu: number;
  readonly ptr: number;
  readonly callSite: number;
  /** The allocation's call site, when known. */
  readonly allocSite?: number;
  readonly detail: string;
}

export interface TimePoint {
  readonly startNs: number;
  readonly allocs: number;
  readonly frees: number;
  readonly bytesAllocated: number;
  readonly bytesFreed: number;
  /** Bytes allocated in the window and not yet freed, at the end of this interval. */
  readonly liveBytes: number;
}

export interface KmemAnalysis {
  readonly summary: Summary;
  readonly callers: readonly SlabStat[];
  readonly allocs: readonly SlabStat[];
  /** The same tables in columns (what the report sorts and prints). */
  readonly callerColumns: SlabColumns;
  readonly allocColumns: SlabColumns;
  readonly pages: PageStats;
  readonly leaks: readonly LeakSite[];
  readonly outstanding: { readonly count: number; readonly bytes: number };
  readonly errors: {
    readonly counts: Readonly<Record<KmemErrorKind, number>>;
    readonly examples: readonly KmemIssue[];
  };
  readonly timeseries: readonly TimePoint[];
  readonly intervalNs: number;
}

export interface AnalyzeOptions {
  /** Time series interval in ns; default 100 ms. */
  readonly intervalNs?: number;
  /**
   * Whether kfree() of a kmem_cache object is an error. Linux 6.4 and later accept it (a cache object may be passed
   * to kfree); older kernels did not. Default false.
   */
  readonly kfreeOfCacheObjectIsError?: boolean;
  /** Examples kept per error kind; default 20. */
  readonly examplesPerKind?: number;
}

const KMALLOC = ALLOCATOR_CODE.kmalloc;
const CACHE = ALLOCATOR_CODE.cache;

export interface Bucket {
  allocs: number;
  frees: number;
  allocBytes: number;
  freeBytes: number;
  /** Change of the bytes live (allocated in the window, not freed or replaced since). */
  liveDelta: number;
}

const ZERO_SIZE_PTR = 16;

// A pointer's row: its call site (of the last allocation), hits, bytes allocated and requested, cross-CPU frees, the
// last allocation's bytes, CPU (-1 after a free) and time.
const P = 8;
const P_SITE = 0;
const P_HIT = 1;
const P_ALLOC = 2;
const P_REQ = 3;
const P_PING = 4;
const P_LAST = 5;
const P_CPU = 6;
const P_NS = 7;
/** A pointer's state bit: allocated and not freed since (the low bits hold its allocator's code). */
const LIVE = 4;

/** Incremental analysis: `push` events in time order, then `result()`. */
export class KmemAnalyzer {
  // Per pointer and per call site, in columns indexed by the tables' dense ids.
  readonly #ptrs = new KeyTable();
  /**
   * Per pointer, a row of P figures (see P_SITE...): an event reads and writes one row, where a column per figure
   * cost a cache miss per figure among many pointers.
   */
  #p = new Float64Array(1024 * P);
  /** Per pointer: whether it is live (LIVE) and its allocator's code. */
  #pState = new Uint8Array(1024);
  readonly #pCache: (string | undefined)[] = [];
  readonly #sites = new KeyTable();
  #sHit = new Float64Array(256);
  #sAlloc = new Float64Array(256);
  #sReq = new Float64Array(256);
  #sPing = new Float64Array(256);
  readonly #pages = new Map<number, { order: number }>();
  readonly #intervalNs: number;
  readonly #strictKfree: boolean;
  readonly #examplesPerKind: number;
  #events = 0;
  #allocs = 0;
  #frees = 0;
  #failed = 0;
  #req = 0;
  #alloc = 0;
  #freed = 0;
  #crossCpu = 0;
  // Always numbers (valid once #events > 0): a field that may hold undefined boxes every double stored in it.
  #first = 0;
  #last = 0;
  #pageAllocs = 0;
  #pageFrees = 0;
  #pageFailed = 0;
  #pagesAllocated = 0;
  #pagesFreed = 0;
  #freeOnly = 0;
  #allocFreed = 0;
  readonly #byOrderMigratetype = new Map<number, Map<number, number>>();
  readonly #byOrder = new Map<number, number>();
  readonly #byMigratetype = new Map<number, number>();
  readonly #byGfp = new Map<number, number>();
  readonly #errorCounts: Record<KmemErrorKind, number> = {
    wrong_free: 0,
    wrong_cache: 0,
    double_free: 0,
    unknown_free: 0,
    short_alloc: 0,
    missed_free: 0,
  };
  readonly #examples: KmemIssue[] = [];
  /** `push`'s event, as a batch of one. */
  readonly #one = new KmemColumns(1);
  // Time series: sparse (a gap in time costs nothing), by interval index from the first event.
  readonly #buckets = new Map<number, Bucket>();
  #slot = -1;
  #bucket: Bucket = { allocs: 0, frees: 0, allocBytes: 0, freeBytes: 0, liveDelta: 0 };

  constructor(options: AnalyzeOptions = {}) {
    this.#intervalNs = options.intervalNs ?? 100_000_000;
    this.#strictKfree = options.kfreeOfCacheObjectIsError === true;
    this.#examplesPerKind = options.examplesPerKind ?? 20;
  }

  /** Adds every event of `events`; a {@link KmemEventStream} a batch of columns at a time. */
  pushAll(events: Iterable<KmemEvent>): this {
    if (events instanceof KmemEventStream) for (const batch of events.batches()) this.pushColumns(batch);
    else if (Array.isArray(events)) for (let i = 0; i < events.length; i++) this.push(events[i]);
    else for (const e of events) this.push(e);
    return this;
  }

  push(e: KmemEvent): void {
    const c = this.#one;
    c.op[0] = OP_CODE[e.op];
    c.allocator[0] = ALLOCATOR_CODE[e.allocator];
    c.tsNs[0] = e.tsNs;
    c.cpu[0] = e.cpu;
    c.callSite[0] = e.callSite;
    c.ptr[0] = e.ptr;
    c.bytesReq[0] = e.bytesReq;
    c.bytesAlloc[0] = e.bytesAlloc;
    c.gfpFlags[0] = e.gfpFlags;
    c.order[0] = e.order ?? 0;
    c.migratetype[0] = e.migratetype ?? Number.NaN;
    c.cache[0] = e.cache;
    c.length = 1;
    this.pushColumns(c);
  }

  /**
   * Adds the events of a batch of columns, in their order. The handlers read an event's figures from the columns
   * themselves: a 64-bit double passed to a method not inlined would be boxed, an allocation per figure per event.
   */
  pushColumns(c: KmemColumns): void {
    const op = c.op;
    for (let i = 0; i < c.length; i++) {
      this.#tick(c.tsNs, i);
      switch (op[i]) {
        case OP_ALLOC:
          this.#onAlloc(c, i);
          break;
        case OP_FREE:
          this.#onFree(c, i);
          break;
        case OP_PAGE_ALLOC:
          this.#onPageAlloc(c, i);
          break;
        default:
          this.#onPageFree(c, i);
      }
    }
  }

  /** Counts an event at `tsNs[i]` and finds its time series interval. */
  #tick(tsNs: Float64Array, i: number): void {
    const ts = tsNs[i]!;
    if (this.#events++ === 0) this.#first = ts;
    this.#last = ts;
    let slot = Math.floor((ts - this.#first) / this.#intervalNs);
    if (!(slot >= 0)) slot = 0;
    if (slot !== this.#slot) {
      this.#slot = slot;
      let b = this.#buckets.get(slot);
      if (b === undefined)
        this.#buckets.set(slot, (b = { allocs: 0, frees: 0, allocBytes: 0, freeBytes: 0, liveDelta: 0 }));
      this.#bucket = b;
    }
  }

  #onAlloc(c: KmemColumns, i: number): void {
    const ts = c.tsNs[i]!;
    const cpu = c.cpu[i]!;
    const callSite = c.callSite[i]!;
    const ptr = c.ptr[i]!;
    const bytesReq = c.bytesReq[i]!;
    const bytesAlloc = c.bytesAlloc[i]!;
    const allocator = c.allocator[i]!;
    const cache = c.cache[i];
    this.#allocs++;
    this.#req += bytesReq;
    this.#alloc += bytesAlloc;
    const bucket = this.#bucket;
    bucket.allocs++;
    bucket.allocBytes += bytesAlloc;
    if (ptr === 0) this.#failed++;
    else {
      bucket.liveDelta += bytesAlloc;
      if (bytesAlloc < bytesReq)
        this.#issue(
          'short_alloc',
          ts,
          cpu,
          ptr,
          callSite,
          undefined,
          `${bytesAlloc} bytes allocated for ${bytesReq} requested`,
        );
    }
    // perf kmem keys NULL results too; so do the tables, not the outstanding set.
    const before = this.#ptrs.size;
    const p = this.#ptrs.intern(ptr);
    if (p === before && p >= this.#pState.length) this.#growPtrs();
    const rows = this.#p;
    const r = p * P;
    if (p === before) {
      rows[r + P_HIT] = 1;
      rows[r + P_ALLOC] = bytesAlloc;
      rows[r + P_REQ] = bytesReq;
      rows[r + P_PING] = 0;
      this.#pCache.push(cache);
    } else {
      if (this.#pState[p]! & LIVE) {
        this.#issue(
          'missed_free',
          ts,
          cpu,
          ptr,
          callSite,
          rows[r + P_SITE],
          'allocated again while live: its free was not seen',
        );
        bucket.liveDelta -= rows[r + P_LAST]!;
      }
      rows[r + P_HIT]! += 1;
      rows[r + P_ALLOC]! += bytesAlloc;
      rows[r + P_REQ]! += bytesReq;
      this.#pCache[p] = cache;
    }
    rows[r + P_SITE] = callSite;
    rows[r + P_LAST] = bytesAlloc;
    rows[r + P_CPU] = cpu;
    rows[r + P_NS] = ts;
    this.#pState[p] = (ptr !== 0 ? LIVE : 0) | allocator;
    const sites = this.#sites;
    const n = sites.size;
    const s = sites.intern(callSite);
    if (s === n) {
      if (s >= this.#sHit.length) this.#growSites();
      this.#sHit[s] = 1;
      this.#sAlloc[s] = bytesAlloc;
      this.#sReq[s] = bytesReq;
      this.#sPing[s] = 0;
    } else {
      this.#sHit[s]! += 1;
      this.#sAlloc[s]! += bytesAlloc;
      this.#sReq[s]! += bytesReq;
    }
  }

  #growPtrs(): void {
    const rows = new Float64Array(this.#p.length * 2);
    rows.set(this.#p);
    this.#p = rows;
    const state = new Uint8Array(this.#pState.length * 2);
    state.set(this.#pState);
    this.#pState = state;
  }

  #growSites(): void {
    const grow = (a: Float64Array) => {
      const b = new Float64Array(a.length * 2);
      b.set(a);
      return b;
    };
    this.#sHit = grow(this.#sHit);
    this.#sAlloc = grow(this.#sAlloc);
    this.#sReq = grow(this.#sReq);
    this.#sPing = grow(this.#sPing);
  }

  #onFree(c: KmemColumns, i: number): void {
    const ts = c.tsNs[i]!;
    const cpu = c.cpu[i]!;
    const callSite = c.callSite[i]!;
    const ptr = c.ptr[i]!;
    const allocator = c.allocator[i]!;
    const cache = c.cache[i];
    this.#frees++;
    this.#bucket.frees++;
    // kfree(NULL) and kfree(ZERO_SIZE_PTR) are legal no-ops the kernel still traces.
    if (ptr === 0 || ptr === ZERO_SIZE_PTR) return;
    const p = this.#ptrs.get(ptr);
    if (p < 0) {
      this.#issue('unknown_free', ts, cpu, ptr, callSite, undefined, 'free of a pointer not allocated in the window');
      return;
    }
    const rows = this.#p;
    const r = p * P;
    const last = rows[r + P_LAST]!;
    const site = rows[r + P_SITE]!;
    this.#freed += last;
    // Frees pair with allocations by pointer alone, whatever task or context (an interrupt) runs them.
    if (cpu !== rows[r + P_CPU]) {
      rows[r + P_PING]! += 1;
      this.#crossCpu++;
      const s = this.#sites.get(site);
      if (s >= 0) this.#sPing[s]! += 1;
    }
    // perf kmem resets the CPU after a free.
    rows[r + P_CPU] = -1;
    const state = this.#pState[p]!;
    if ((state & LIVE) === 0) {
      this.#issue('double_free', ts, cpu, ptr, callSite, site, 'freed again without an allocation in between');
      return;
    }
    this.#pState[p] = state & ~LIVE;
    this.#bucket.freeBytes += last;
    this.#bucket.liveDelta -= last;
    const allocated = state & ~LIVE;
    const allocatedIn = this.#pCache[p];
    if (allocator === CACHE && allocated === KMALLOC)
      this.#issue('wrong_free', ts, cpu, ptr, callSite, site, 'kmalloc object freed with kmem_cache_free');
    else if (allocator === KMALLOC && allocated === CACHE && this.#strictKfree)
      this.#issue(
        'wrong_free',
        ts,
        cpu,
        ptr,
        callSite,
        site,
        `kmem_cache object${allocatedIn ? ` (${allocatedIn})` : ''} freed with kfree`,
      );
    else if (allocator === CACHE && allocated === CACHE && cache && allocatedIn && cache !== allocatedIn)
      this.#issue('wrong_cache', ts, cpu, ptr, callSite, site, `allocated from ${allocatedIn}, freed to ${cache}`);
  }

  #onPageAlloc(c: KmemColumns, i: number): void {
    const ptr = c.ptr[i]!;
    const order = c.order[i]!;
    const migratetype = c.migratetype[i]!;
    const gfpFlags = c.gfpFlags[i]!;
    this.#pageAllocs++;
    if (ptr === -1) {
      this.#pageFailed++;
      return;
    }
    this.#pagesAllocated += 2 ** order;
    this.#byOrder.set(order, (this.#byOrder.get(order) ?? 0) + 1);
    if (!Number.isNaN(migratetype)) {
      this.#byMigratetype.set(migratetype, (this.#byMigratetype.get(migratetype) ?? 0) + 1);
      let row = this.#byOrderMigratetype.get(order);
      if (row === undefined) this.#byOrderMigratetype.set(order, (row = new Map()));
      row.set(migratetype, (row.get(migratetype) ?? 0) + 1);
    }
    this.#byGfp.set(gfpFlags, (this.#byGfp.get(gfpFlags) ?? 0) + 1);
    this.#pages.set(ptr, { order });
  }

  #onPageFree(c: KmemColumns, i: number): void {
    const ptr = c.ptr[i]!;
    const order = c.order[i]!;
    this.#pageFrees++;
    this.#pagesFreed += 2 ** order;
    if (this.#pages.delete(ptr)) this.#allocFreed++;
    else this.#freeOnly++;
  }

  #issue(
    kind: KmemErrorKind,
    tsNs: number,
    cpu: number,
    ptr: number,
    callSite: number,
    allocSite: number | undefined,
    detail: string,
  ): void {
    this.#errorCounts[kind]++;
    if (this.#errorCounts[kind] > this.#examplesPerKind) return;
    this.#examples.push({ kind, tsNs, cpu, ptr, callSite, ...(allocSite !== undefined ? { allocSite } : {}), detail });
  }

  /** The analysis of everything pushed so far. */
  result(): KmemAnalysis {
    const n = this.#sites.size;
    return analysisOf({
      siteKeys: this.#sites.keys(),
      siteHit: this.#sHit.subarray(0, n),
      siteAlloc: this.#sAlloc.subarray(0, n),
      siteReq: this.#sReq.subarray(0, n),
      sitePing: this.#sPing.subarray(0, n),
      ptrKeys: this.#ptrs.keys(),
      rows: this.#p,
      states: this.#pState,
      buckets: this.#buckets,
      counts: {
        events: this.#events,
        allocs: this.#allocs,
        frees: this.#frees,
        failed: this.#failed,
        req: this.#req,
        alloc: this.#alloc,
        freed: this.#freed,
        crossCpu: this.#crossCpu,
        first: this.#first,
        last: this.#last,
      },
      pages: {
        allocs: this.#pageAllocs,
        frees: this.#pageFrees,
        failed: this.#pageFailed,
        pagesAllocated: this.#pagesAllocated,
        pagesFreed: this.#pagesFreed,
        allocFreed: this.#allocFreed,
        allocOnly: this.#pageAllocs - this.#allocFreed,
        freeOnly: this.#freeOnly,
        byOrderMigratetype: this.#byOrderMigratetype,
        byOrder: this.#byOrder,
        byMigratetype: this.#byMigratetype,
        byGfp: this.#byGfp,
      },
      errorCounts: this.#errorCounts,
      examples: this.#examples,
      intervalNs: this.#intervalNs,
    });
  }
}

/**
 * What an analysis has gathered, as {@link KmemAnalyzer} holds it (and the WebAssembly reader of perf-data-wasm.ts,
 * which analyses as it reads): sites by dense id (in the order first allocated from), pointers by dense id with their
 * rows of P figures (see P_SITE...) and state bytes, the time series buckets by slot, the counters.
 */
export interface AnalysisState {
  readonly siteKeys: Float64Array;
  readonly siteHit: Float64Array;
  readonly siteAlloc: Float64Array;
  readonly siteReq: Float64Array;
  readonly sitePing: Float64Array;
  readonly ptrKeys: Float64Array;
  readonly rows: Float64Array;
  readonly states: Uint8Array;
  readonly buckets: Iterable<readonly [number, Bucket]>;
  readonly counts: {
    readonly events: number;
    readonly allocs: number;
    readonly frees: number;
    readonly failed: number;
    readonly req: number;
    readonly alloc: number;
    readonly freed: number;
    readonly crossCpu: number;
    readonly first: number;
    readonly last: number;
  };
  readonly pages: PageStats;
  readonly errorCounts: Readonly<Record<KmemErrorKind, number>>;
  readonly examples: readonly KmemIssue[];
  readonly intervalNs: number;
}

/** The analysis of `s`: its tables as copies of the columns; their rows as objects only when read. */
export function analysisOf(s: AnalysisState): KmemAnalysis {
  const n = s.siteKeys.length;
  const siteKeys = s.siteKeys;
  const callerColumns: SlabColumns = {
    length: n,
    key: siteKeys,
    callSite: siteKeys,
    hit: s.siteHit.slice(0, n),
    totalAlloc: s.siteAlloc.slice(0, n),
    totalReq: s.siteReq.slice(0, n),
    pingPong: s.sitePing.slice(0, n),
  };
  const m = s.ptrKeys.length;
  const rows = s.rows;
  const column = (figure: number) => {
    const c = new Float64Array(m);
    for (let i = 0, r = figure; i < m; i++, r += P) c[i] = rows[r]!;
    return c;
  };
  const allocColumns: SlabColumns = {
    length: m,
    key: s.ptrKeys,
    callSite: column(P_SITE),
    hit: column(P_HIT),
    totalAlloc: column(P_ALLOC),
    totalReq: column(P_REQ),
    pingPong: column(P_PING),
  };
  let callers: SlabStat[] | undefined;
  let allocs: SlabStat[] | undefined;
  const leakSites = new Map<number, { count: number; bytes: number; oldest: number; ageSum: number }>();
  const c = s.counts;
  const end = c.last;
  let outCount = 0;
  let outBytes = 0;
  for (let i = 0; i < m; i++) {
    if ((s.states[i]! & LIVE) === 0) continue;
    const callSite = rows[i * P + P_SITE]!;
    const last = rows[i * P + P_LAST]!;
    outCount++;
    outBytes += last;
    const age = end - rows[i * P + P_NS]!;
    const l = leakSites.get(callSite);
    if (l === undefined) leakSites.set(callSite, { count: 1, bytes: last, oldest: age, ageSum: age });
    else {
      l.count++;
      l.bytes += last;
      l.ageSum += age;
      if (age > l.oldest) l.oldest = age;
    }
  }
  const leaks = [...leakSites].map(
    ([callSite, l]): LeakSite => ({
      callSite,
      count: l.count,
      bytes: l.bytes,
      oldestNs: l.oldest,
      meanAgeNs: l.ageSum / l.count,
    }),
  );
  leaks.sort((a, b) => b.bytes - a.bytes || b.count - a.count || a.callSite - b.callSite);
  const timeseries: TimePoint[] = [];
  let live = 0;
  for (const [slot, b] of [...s.buckets].sort((x, y) => x[0] - y[0])) {
    if (b.allocs === 0 && b.frees === 0) continue;
    live += b.liveDelta;
    timeseries.push({
      startNs: c.first + slot * s.intervalNs,
      allocs: b.allocs,
      frees: b.frees,
      bytesAllocated: b.allocBytes,
      bytesFreed: b.freeBytes,
      liveBytes: live,
    });
  }
  return {
    summary: {
      events: c.events,
      allocs: c.allocs,
      frees: c.frees,
      failedAllocs: c.failed,
      totalReq: c.req,
      totalAlloc: c.alloc,
      totalFreed: c.freed,
      wasted: c.alloc - c.req,
      fragPct: fragmentation(c.req, c.alloc),
      crossCpuFrees: c.crossCpu,
      ...(c.events > 0 ? { firstNs: c.first, lastNs: c.last } : {}),
    },
    get callers() {
      callers ??= slabStats(callerColumns);
      return callers;
    },
    get allocs() {
      allocs ??= slabStats(allocColumns);
      return allocs;
    },
    callerColumns,
    allocColumns,
    pages: s.pages,
    leaks,
    outstanding: { count: outCount, bytes: outBytes },
    errors: { counts: { ...s.errorCounts }, examples: [...s.examples] },
    timeseries,
    intervalNs: s.intervalNs,
  };
}

/** Analyses a whole event sequence. */
export function analyze(events: Iterable<KmemEvent>, options: AnalyzeOptions = {}): KmemAnalysis {
  return new KmemAnalyzer(options).pushAll(events).result();
}
