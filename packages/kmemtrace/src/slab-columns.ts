/**
 * Slab tables (per call site, per pointer) as columns of figures, one row per index, and their sort. A pointer table
 * runs to tens of thousands of rows: columns cost a few copies where an object per row cost an allocation each, and an
 * index sort over typed arrays compares without reading objects.
 */

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

/** A slab table in columns: row `i` is `key[i]`, `callSite[i]`, ... (the fields of {@link SlabStat}). */
export interface SlabColumns {
  readonly length: number;
  readonly key: Float64Array;
  readonly callSite: Float64Array;
  readonly hit: Float64Array;
  readonly totalAlloc: Float64Array;
  readonly totalReq: Float64Array;
  readonly pingPong: Float64Array;
}

/** Columns of `stats`' rows, in their order. */
export function slabColumns(stats: readonly SlabStat[]): SlabColumns {
  const n = stats.length;
  const c = {
    length: n,
    key: new Float64Array(n),
    callSite: new Float64Array(n),
    hit: new Float64Array(n),
    totalAlloc: new Float64Array(n),
    totalReq: new Float64Array(n),
    pingPong: new Float64Array(n),
  };
  for (let i = 0; i < n; i++) {
    const s = stats[i]!;
    c.key[i] = s.key;
    c.callSite[i] = s.callSite;
    c.hit[i] = s.hit;
    c.totalAlloc[i] = s.totalAlloc;
    c.totalReq[i] = s.totalReq;
    c.pingPong[i] = s.pingPong;
  }
  return c;
}

/** The rows of `columns` as objects, in their order. */
export function slabStats(columns: SlabColumns): SlabStat[] {
  const stats: SlabStat[] = [];
  for (let i = 0; i < columns.length; i++)
    stats.push({
      key: columns.key[i]!,
      callSite: columns.callSite[i]!,
      hit: columns.hit[i]!,
      totalAlloc: columns.totalAlloc[i]!,
      totalReq: columns.totalReq[i]!,
      pingPong: columns.pingPong[i]!,
    });
  return stats;
}

const cmp = (a: number | string, b: number | string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * `values` as numbers in the same order: themselves when all are numbers, else each value's rank among the distinct
 * values (call sites named by text), so that the sort compares numbers only.
 */
export function orderColumn(values: readonly (number | string)[]): Float64Array {
  if (values.every((v) => typeof v === 'number')) return Float64Array.from(values as number[]);
  const distinct = [...new Set(values)].sort(cmp);
  const rank = new Map<number | string, number>();
  for (let i = 0; i < distinct.length; i++) rank.set(distinct[i]!, i);
  return Float64Array.from(values, (v) => rank.get(v)!);
}

/**
 * Row indexes ordered by `keys`, each descending, ties by ascending `tie`, then by row. The built-in sort with a
 * comparator: a table is sorted once per run, and V8 optimizes that comparator within the first few thousand of its
 * calls, where a sort written out here ran its first passes unoptimized, about half again longer over tens of
 * thousands of rows.
 */
export function sortedRows(length: number, keys: readonly Float64Array[], tie: Float64Array): Int32Array {
  const order = new Int32Array(length);
  for (let i = 0; i < length; i++) order[i] = i;
  return order.sort((a, b) => {
    for (let k = 0; k < keys.length; k++) {
      const u = keys[k]![a]!;
      const v = keys[k]![b]!;
      if (u !== v) return u > v ? -1 : 1;
    }
    const u = tie[a]!;
    const v = tie[b]!;
    return u !== v ? (u < v ? -1 : 1) : a - b;
  });
}
