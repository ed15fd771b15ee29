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
