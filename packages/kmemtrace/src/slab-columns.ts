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
 * Row indexes ordered by `keys`, each descending, ties by ascending `tie`; stable. A merge sort written out here over
 * each row's sort values gathered side by side (one row's in one cache line): it compares inline, where a comparator
 * handed to the built-in sort is a call per comparison.
 */
export function sortedRows(length: number, keys: readonly Float64Array[], tie: Float64Array): Int32Array {
  // Row i's values at i * stride: the keys, then the tie negated, so that every value sorts descending.
  const stride = keys.length + 1;
  const values = new Float64Array(length * stride);
  for (let k = 0; k < keys.length; k++) {
    const c = keys[k]!;
    for (let i = 0, at = k; i < length; i++, at += stride) values[at] = c[i]!;
  }
  for (let i = 0, at = stride - 1; i < length; i++, at += stride) values[at] = -tie[i]!;
  let from = new Int32Array(length);
  for (let i = 0; i < length; i++) from[i] = i;
  let to = new Int32Array(length);
  // Runs of RUN rows by insertion sort, then merged pairwise.
  const RUN = 16;
  for (let lo = 0; lo < length; lo += RUN) {
    const hi = Math.min(lo + RUN, length);
    for (let i = lo + 1; i < hi; i++) {
      const x = from[i]!;
      let j = i - 1;
      while (j >= lo && before(values, stride, x, from[j]!)) {
        from[j + 1] = from[j]!;
        j--;
      }
      from[j + 1] = x;
    }
  }
  for (let width = RUN; width < length; width *= 2) {
    for (let lo = 0; lo < length; lo += 2 * width) {
      const mid = Math.min(lo + width, length);
      const hi = Math.min(lo + 2 * width, length);
      let i = lo;
      let j = mid;
      let o = lo;
      while (i < mid && j < hi) {
        const b = from[j]!;
        const a = from[i]!;
        if (before(values, stride, b, a)) {
          to[o++] = b;
          j++;
        } else {
          to[o++] = a;
          i++;
        }
      }
      while (i < mid) to[o++] = from[i++]!;
      while (j < hi) to[o++] = from[j++]!;
    }
    const t = from;
    from = to;
    to = t;
  }
  return from;
}

/** Whether row `a` sorts strictly before row `b`: the first of their values that differ is larger in `a`. */
function before(values: Float64Array, stride: number, a: number, b: number): boolean {
  let x = a * stride;
  let y = b * stride;
  for (const end = x + stride; x < end; x++, y++) {
    const u = values[x]!;
    const v = values[y]!;
    if (u !== v) return u > v;
  }
  return false;
}
