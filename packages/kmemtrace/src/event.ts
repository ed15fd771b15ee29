import type { ByteOut } from '@evtrace/trace-format';

/**
 * One allocator event, whatever it was decoded from (a kmemtrace v1 record, a kmem tracepoint, a `perf script` line).
 * Addresses are keys from {@link AddressKeys} (exact numbers); `callSite` may instead be a key of a source's own site
 * names (perf script prints call sites symbolized), which its {@link KmemSource.siteName} turns back into text.
 */
export interface KmemEvent {
  readonly op: KmemOp;
  readonly allocator: Allocator;
  /** Nanoseconds on the source's clock (exact below 2^53: 104 days of uptime). */
  readonly tsNs: number;
  /** CPU the event was recorded on; -1 when unknown. */
  readonly cpu: number;
  /** Call site key; 0 when the source has none (page events). */
  readonly callSite: number;
  /** Object address key; for page events the page frame number. */
  readonly ptr: number;
  readonly bytesReq: number;
  readonly bytesAlloc: number;
  readonly gfpFlags: number;
  /** NUMA node asked for; -1 for any. */
  readonly node: number;
  /** Page events: the allocation order (2^order pages). */
  readonly order?: number;
  /** mm_page_alloc: the migrate type. */
  readonly migratetype?: number;
  /** kmem_cache_* events of newer kernels: the cache's name. */
  readonly cache?: string;
  /** The event fired in hard or soft interrupt context (ftrace's common_flags), when known. */
  readonly interrupt?: boolean;
  /** gfp flags as the source printed them, when it printed names rather than the value (perf script). */
  readonly gfpText?: string;
}

/** What happened: a slab object allocated or freed, pages allocated or freed. */
export type KmemOp = 'alloc' | 'free' | 'page_alloc' | 'page_free';

/** Which interface: kmalloc/kfree, a kmem cache, the page allocator. */
export type Allocator = 'kmalloc' | 'cache' | 'page';

/** Events plus what is needed to name their addresses. */
export interface KmemSource {
  readonly events: Iterable<KmemEvent>;
  /** The call site's name: `symbol+0xoff` when symbols are known, else its address in hex. */
  readonly siteName: (key: number) => string;
  /** The object's address in hex (or the pfn for pages). */
  readonly ptrName: (key: number) => string;
  /** Writes `ptrName(key)` (ASCII: hex) to `out`, when the source can without making the string (big tables). */
  readonly ptrBytes?: (key: number, out: ByteOut) => void;
  /** The call site as a sortable value (its address when known, else its name). */
  readonly siteOrder?: (key: number) => number | string;
  /** gfp flags as names, when the source can decode them (a flag table from a format file). */
  readonly gfpNames?: (flags: number) => string;
  /** Problems met that did not stop decoding (lenient mode). */
  readonly diagnostics: string[];
}

/**
 * An event with every field present, in one order: decoders build events through this so the analysis sees a
 * single object shape (its property reads stay monomorphic, faster than over mixed shapes: analyze.bench.ts).
 */
export function kmemEvent(
  fields: Pick<
    KmemEvent,
    'op' | 'allocator' | 'tsNs' | 'cpu' | 'callSite' | 'ptr' | 'bytesReq' | 'bytesAlloc' | 'gfpFlags' | 'node'
  > &
    Partial<KmemEvent>,
): KmemEvent {
  return {
    op: fields.op,
    allocator: fields.allocator,
    tsNs: fields.tsNs,
    cpu: fields.cpu,
    callSite: fields.callSite,
    ptr: fields.ptr,
    bytesReq: fields.bytesReq,
    bytesAlloc: fields.bytesAlloc,
    gfpFlags: fields.gfpFlags,
    node: fields.node,
    order: fields.order,
    migratetype: fields.migratetype,
    cache: fields.cache,
    interrupt: fields.interrupt,
    gfpText: fields.gfpText,
  };
}

/** Allocators by number, as {@link KmemColumns} hold them. */
export const ALLOCATORS: readonly Allocator[] = ['kmalloc', 'cache', 'page'];
export const ALLOCATOR_CODE: Readonly<Record<Allocator, number>> = { kmalloc: 0, cache: 1, page: 2 };
/** Ops by number, as {@link KmemColumns} hold them. */
export const OPS: readonly KmemOp[] = ['alloc', 'free', 'page_alloc', 'page_free'];
export const OP_CODE: Readonly<Record<KmemOp, number>> = { alloc: 0, free: 1, page_alloc: 2, page_free: 3 };
export const OP_ALLOC = 0;
export const OP_FREE = 1;
export const OP_PAGE_ALLOC = 2;
export const OP_PAGE_FREE = 3;

/**
 * Events in columns, a batch of up to `capacity`: what a decoder of many events fills instead of an object per event,
 * and `KmemAnalyzer.pushColumns` reads. Event `i` has the fields of a {@link KmemEvent} at index `i` (`op` and
 * `allocator` as their numbers in {@link OPS} and {@link ALLOCATORS}; a missing `migratetype` is NaN).
 */
export class KmemColumns {
  length = 0;
  readonly op: Uint8Array;
  readonly allocator: Uint8Array;
  readonly tsNs: Float64Array;
  readonly cpu: Float64Array;
  readonly callSite: Float64Array;
  readonly ptr: Float64Array;
  readonly bytesReq: Float64Array;
  readonly bytesAlloc: Float64Array;
  readonly gfpFlags: Float64Array;
  readonly node: Float64Array;
  readonly order: Float64Array;
  readonly migratetype: Float64Array;
  readonly cache: (string | undefined)[];
  readonly gfpText: (string | undefined)[];

  readonly capacity: number;
  /** The buffer every numeric column lies in. */
  readonly buffer: ArrayBuffer;

  /**
   * Columns for `capacity` events, the numeric ones in `buffer` (of {@link KmemColumns.bytes} of `capacity`, a new
   * one by default: one buffer a batch can be handed to another thread in), the texts in `texts` (new arrays by
   * default: a consumer of many batches may give the same arrays to each).
   */
  constructor(
    capacity: number,
    buffer?: ArrayBuffer,
    texts?: { readonly cache: (string | undefined)[]; readonly gfpText: (string | undefined)[] },
  ) {
    this.capacity = capacity;
    const b = buffer ?? new ArrayBuffer(KmemColumns.bytes(capacity));
    if (b.byteLength < KmemColumns.bytes(capacity))
      throw new RangeError(`a buffer of ${b.byteLength} bytes is short of ${capacity} events' columns`);
    let at = 0;
    const f64 = () => {
      const a = new Float64Array(b, at, capacity);
      at += capacity * 8;
      return a;
    };
    this.tsNs = f64();
    this.cpu = f64();
    this.callSite = f64();
    this.ptr = f64();
    this.bytesReq = f64();
    this.bytesAlloc = f64();
    this.gfpFlags = f64();
    this.node = f64();
    this.order = f64();
    this.migratetype = f64();
    this.op = new Uint8Array(b, at, capacity);
    this.allocator = new Uint8Array(b, at + capacity, capacity);
    this.buffer = b;
    this.cache = texts?.cache ?? new Array<string | undefined>(capacity).fill(undefined);
    this.gfpText = texts?.gfpText ?? new Array<string | undefined>(capacity).fill(undefined);
  }

  /** Bytes of the buffer that holds the numeric columns of `capacity` events. */
  static bytes(capacity: number): number {
    return capacity * (10 * 8 + 2);
  }

  /** Event `i` as an object. */
  event(i: number): KmemEvent {
    const page = this.allocator[i] === ALLOCATOR_CODE.page;
    const migratetype = this.migratetype[i]!;
    return kmemEvent({
      op: OPS[this.op[i]!]!,
      allocator: ALLOCATORS[this.allocator[i]!]!,
      tsNs: this.tsNs[i]!,
      cpu: this.cpu[i]!,
      callSite: this.callSite[i]!,
      ptr: this.ptr[i]!,
      bytesReq: this.bytesReq[i]!,
      bytesAlloc: this.bytesAlloc[i]!,
      gfpFlags: this.gfpFlags[i]!,
      node: this.node[i]!,
      order: page ? this.order[i] : undefined,
      migratetype: Number.isNaN(migratetype) ? undefined : migratetype,
      cache: this.cache[i],
      gfpText: this.gfpText[i],
    });
  }
}

/**
 * Events a decoder delivers in batches of columns (`batches`, one {@link KmemColumns} refilled: each batch is valid
 * until the next is asked for), or as objects when iterated. Read once, either way.
 */
export class KmemEventStream implements Iterable<KmemEvent> {
  readonly #batches: () => Iterator<KmemColumns>;

  constructor(batches: () => Iterator<KmemColumns>) {
    this.#batches = batches;
  }

  /** The batches. */
  batches(): Iterable<KmemColumns> {
    return { [Symbol.iterator]: this.#batches };
  }

  *[Symbol.iterator](): Iterator<KmemEvent> {
    for (const batch of this.batches()) for (let i = 0; i < batch.length; i++) yield batch.event(i);
  }
}
