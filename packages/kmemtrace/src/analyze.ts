/**
 * One pass over allocator events answering kmemtrace's questions: per call site and per pointer tables with the
 * columns and semantics of `perf kmem --caller --alloc` (hits, total and per-hit allocated and requested bytes,
 * cross-CPU frees, fragmentation), a summary, the page allocator, allocations still outstanding at the end, misuse,
 * and a time series. Memory grows with distinct pointers and call sites, not with events.
 */
import type { Allocator, KmemEvent } from './event.ts';

/** Per call site or per pointer, as perf kmem counts them. */
export interface SlabStat {
  /** Call site key (caller table) or pointer key (alloc table). */
  readonly key: number;
  /** Pointer table: the call site of the pointer's latest allocation. */
  readonly callSite: number;
  readonly hit: number;
  readonly totalAlloc: number;
  readonly totalReq: number;
  /** Frees on another CPU than the allocation's (perf's ping-pong). */
  readonly pingPong: number;
}

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
  /** Allocated in the window and not freed in it. */
  readonly allocOnly: number;
  /** Freed in the window without their allocation in it. */
  readonly freeOnly: number;
  /** Allocation counts by order, by migrate type and by gfp flags. */
  readonly byOrder: ReadonlyMap<number, number>;
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

interface PtrState {
  callSite: number;
  hit: number;
  totalAlloc: number;
  totalReq: number;
  pingPong: number;
  lastAlloc: number;
  /** -1 after a free, as perf kmem resets it. */
  allocCpu: number;
  live: boolean;
  allocNs: number;
  allocator: Allocator;
  cache: string | undefined;
}

interface SiteState {
  hit: number;
  totalAlloc: number;
  totalReq: number;
  pingPong: number;
}

interface Bucket {
  allocs: number;
  frees: number;
  allocBytes: number;
  freeBytes: number;
  /** Change of the bytes live (allocated in the window, not freed or replaced since). */
  liveDelta: number;
}

const ZERO_SIZE_PTR = 16;

/** Incremental analysis: `push` events in time order, then `result()`. */
export class KmemAnalyzer {
  readonly #ptrs = new Map<number, PtrState>();
  readonly #sites = new Map<number, SiteState>();
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
  #first: number | undefined;
  #last: number | undefined;
  #pageAllocs = 0;
  #pageFrees = 0;
  #pageFailed = 0;
  #pagesAllocated = 0;
  #pagesFreed = 0;
  #freeOnly = 0;
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
  // Time series: sparse (a gap in time costs nothing), by interval index from the first event.
  readonly #buckets = new Map<number, Bucket>();
  #slot = -1;
  #bucket: Bucket = { allocs: 0, frees: 0, allocBytes: 0, freeBytes: 0, liveDelta: 0 };

  constructor(options: AnalyzeOptions = {}) {
    this.#intervalNs = options.intervalNs ?? 100_000_000;
    this.#strictKfree = options.kfreeOfCacheObjectIsError === true;
    this.#examplesPerKind = options.examplesPerKind ?? 20;
  }

  /** Adds every event of `events`. */
  pushAll(events: Iterable<KmemEvent>): this {
    for (const e of events) this.push(e);
    return this;
  }

  push(e: KmemEvent): void {
    this.#events++;
    const ts = e.tsNs;
    if (this.#first === undefined) this.#first = ts;
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
    switch (e.op) {
      case 'alloc':
        this.#onAlloc(e);
        break;
      case 'free':
        this.#onFree(e);
        break;
      case 'page_alloc':
        this.#onPageAlloc(e);
        break;
      case 'page_free':
        this.#onPageFree(e);
        break;
    }
  }

  #onAlloc(e: KmemEvent): void {
    this.#allocs++;
    this.#req += e.bytesReq;
    this.#alloc += e.bytesAlloc;
    this.#bucket.allocs++;
    this.#bucket.allocBytes += e.bytesAlloc;
    if (e.ptr === 0) this.#failed++;
    else if (e.bytesAlloc < e.bytesReq)
      this.#issue('short_alloc', e, undefined, `${e.bytesAlloc} bytes allocated for ${e.bytesReq} requested`);
    if (e.ptr !== 0) this.#bucket.liveDelta += e.bytesAlloc;
    // perf kmem keys NULL results too; so do the tables, not the outstanding set.
    let p = this.#ptrs.get(e.ptr);
    if (p === undefined) {
      p = {
        callSite: e.callSite,
        hit: 1,
        totalAlloc: e.bytesAlloc,
        totalReq: e.bytesReq,
        pingPong: 0,
        lastAlloc: e.bytesAlloc,
        allocCpu: e.cpu,
        live: e.ptr !== 0,
        allocNs: e.tsNs,
        allocator: e.allocator,
        cache: e.cache,
      };
      this.#ptrs.set(e.ptr, p);
    } else {
      if (p.live) {
        this.#issue('missed_free', e, p.callSite, 'allocated again while live: its free was not seen');
        this.#bucket.liveDelta -= p.lastAlloc;
      }
      p.hit++;
      p.totalAlloc += e.bytesAlloc;
      p.totalReq += e.bytesReq;
      p.callSite = e.callSite;
      p.lastAlloc = e.bytesAlloc;
      p.allocCpu = e.cpu;
      p.live = e.ptr !== 0;
      p.allocNs = e.tsNs;
      p.allocator = e.allocator;
      p.cache = e.cache;
    }
    const s = this.#sites.get(e.callSite);
    if (s === undefined)
      this.#sites.set(e.callSite, { hit: 1, totalAlloc: e.bytesAlloc, totalReq: e.bytesReq, pingPong: 0 });
    else {
      s.hit++;
      s.totalAlloc += e.bytesAlloc;
      s.totalReq += e.bytesReq;
    }
  }

  #onFree(e: KmemEvent): void {
    this.#frees++;
    this.#bucket.frees++;
    const ptr = e.ptr;
    // kfree(NULL) and kfree(ZERO_SIZE_PTR) are legal no-ops the kernel still traces.
    if (ptr === 0 || ptr === ZERO_SIZE_PTR) return;
    const p = this.#ptrs.get(ptr);
    if (p === undefined) {
      this.#issue('unknown_free', e, undefined, 'free of a pointer not allocated in the window');
      return;
    }
    this.#freed += p.lastAlloc;
    // Frees pair with allocations by pointer alone, whatever task or context (an interrupt) runs them.
    if (e.cpu !== p.allocCpu) {
      p.pingPong++;
      this.#crossCpu++;
      const s = this.#sites.get(p.callSite);
      if (s !== undefined) s.pingPong++;
    }
    p.allocCpu = -1;
    if (!p.live) {
      this.#issue('double_free', e, p.callSite, 'freed again without an allocation in between');
      return;
    }
    p.live = false;
    this.#bucket.freeBytes += p.lastAlloc;
    this.#bucket.liveDelta -= p.lastAlloc;
    if (e.allocator === 'cache' && p.allocator === 'kmalloc')
      this.#issue('wrong_free', e, p.callSite, 'kmalloc object freed with kmem_cache_free');
    else if (e.allocator === 'kmalloc' && p.allocator === 'cache' && this.#strictKfree)
      this.#issue('wrong_free', e, p.callSite, `kmem_cache object${p.cache ? ` (${p.cache})` : ''} freed with kfree`);
    else if (e.allocator === 'cache' && p.allocator === 'cache' && e.cache && p.cache && e.cache !== p.cache)
      this.#issue('wrong_cache', e, p.callSite, `allocated from ${p.cache}, freed to ${e.cache}`);
  }

  #onPageAlloc(e: KmemEvent): void {
    this.#pageAllocs++;
    if (e.ptr === -1) {
      this.#pageFailed++;
      return;
    }
    const order = e.order ?? 0;
    this.#pagesAllocated += 2 ** order;
    this.#byOrder.set(order, (this.#byOrder.get(order) ?? 0) + 1);
    if (e.migratetype !== undefined)
      this.#byMigratetype.set(e.migratetype, (this.#byMigratetype.get(e.migratetype) ?? 0) + 1);
    this.#byGfp.set(e.gfpFlags, (this.#byGfp.get(e.gfpFlags) ?? 0) + 1);
    this.#pages.set(e.ptr, { order });
  }

  #onPageFree(e: KmemEvent): void {
    this.#pageFrees++;
    this.#pagesFreed += 2 ** (e.order ?? 0);
    if (!this.#pages.delete(e.ptr)) this.#freeOnly++;
  }

  #issue(kind: KmemErrorKind, e: KmemEvent, allocSite: number | undefined, detail: string): void {
    this.#errorCounts[kind]++;
    if (this.#errorCounts[kind] > this.#examplesPerKind) return;
    this.#examples.push({
      kind,
      tsNs: e.tsNs,
      cpu: e.cpu,
      ptr: e.ptr,
      callSite: e.callSite,
      ...(allocSite !== undefined ? { allocSite } : {}),
      detail,
    });
  }

  /** The analysis of everything pushed so far. */
  result(): KmemAnalysis {
    const callers: SlabStat[] = [];
    for (const [key, s] of this.#sites) callers.push({ key, callSite: key, ...s });
    const allocs: SlabStat[] = [];
    const leakSites = new Map<number, { count: number; bytes: number; oldest: number; ageSum: number }>();
    const end = this.#last ?? 0;
    let outCount = 0;
    let outBytes = 0;
    for (const [key, p] of this.#ptrs) {
      allocs.push({
        key,
        callSite: p.callSite,
        hit: p.hit,
        totalAlloc: p.totalAlloc,
        totalReq: p.totalReq,
        pingPong: p.pingPong,
      });
      if (!p.live) continue;
      outCount++;
      outBytes += p.lastAlloc;
      const age = end - p.allocNs;
      const l = leakSites.get(p.callSite);
      if (l === undefined) leakSites.set(p.callSite, { count: 1, bytes: p.lastAlloc, oldest: age, ageSum: age });
      else {
        l.count++;
        l.bytes += p.lastAlloc;
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
    for (const [slot, b] of [...this.#buckets].sort((x, y) => x[0] - y[0])) {
      if (b.allocs === 0 && b.frees === 0) continue;
      live += b.liveDelta;
      timeseries.push({
        startNs: (this.#first ?? 0) + slot * this.#intervalNs,
        allocs: b.allocs,
        frees: b.frees,
        bytesAllocated: b.allocBytes,
        bytesFreed: b.freeBytes,
        liveBytes: live,
      });
    }
    return {
      summary: {
        events: this.#events,
        allocs: this.#allocs,
        frees: this.#frees,
        failedAllocs: this.#failed,
        totalReq: this.#req,
        totalAlloc: this.#alloc,
        totalFreed: this.#freed,
        wasted: this.#alloc - this.#req,
        fragPct: fragmentation(this.#req, this.#alloc),
        crossCpuFrees: this.#crossCpu,
        ...(this.#first !== undefined ? { firstNs: this.#first, lastNs: this.#last! } : {}),
      },
      callers,
      allocs,
      pages: {
        allocs: this.#pageAllocs,
        frees: this.#pageFrees,
        failed: this.#pageFailed,
        pagesAllocated: this.#pagesAllocated,
        pagesFreed: this.#pagesFreed,
        allocOnly: this.#pages.size,
        freeOnly: this.#freeOnly,
        byOrder: this.#byOrder,
        byMigratetype: this.#byMigratetype,
        byGfp: this.#byGfp,
      },
      leaks,
      outstanding: { count: outCount, bytes: outBytes },
      errors: { counts: { ...this.#errorCounts }, examples: [...this.#examples] },
      timeseries,
      intervalNs: this.#intervalNs,
    };
  }
}

/** Analyses a whole event sequence. */
export function analyze(events: Iterable<KmemEvent>, options: AnalyzeOptions = {}): KmemAnalysis {
  return new KmemAnalyzer(options).pushAll(events).result();
}
