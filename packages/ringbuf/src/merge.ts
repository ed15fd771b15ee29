/** What {@link Merge} needs from a source: a record cursor with a timestamp and an end. */
export interface MergeSource {
  /** Moves to the next record; false when none is available now (or ever, once `ended`). */
  next(): boolean;
  /** Timestamp of the current record. */
  readonly timestamp: number;
  /** True once the source will never return another record. */
  readonly ended: boolean;
}

/**
 * k-way merge of record sources by timestamp (one buffer per thread or CPU). Each source must be ordered by
 * timestamp itself. next() positions on the oldest current record of all sources; read it through `current` (the
 * source's cursor fields). For live sources the merge never runs ahead: when a source that has not ended has nothing
 * yet, next() returns false so a later record of that source cannot be overtaken; wait and call again. Ties go to
 * the lower source index. A binary heap keyed by (timestamp, index): O(log k) per record, no allocation.
 */
export class Merge<S extends MergeSource> {
  declare readonly sources: readonly S[];
  /** Index in `sources` of the current record's source. */
  index = -1;
  /** Heap of source indices that hold a record, ordered by (ts, index). */
  declare private readonly heap: Int32Array;
  declare private readonly ts: Float64Array;
  private size = 0;
  /** Sources with no record that have not ended: they must be polled before anything is returned. */
  declare private readonly idle: Int32Array;
  declare private idleCount: number;
  private emitted = -1;

  constructor(sources: readonly S[]) {
    this.sources = sources;
    this.heap = new Int32Array(sources.length);
    this.ts = new Float64Array(sources.length);
    this.idle = Int32Array.from(sources.keys());
    this.idleCount = sources.length;
  }

  /** The source holding the current record. */
  get current(): S {
    return this.sources[this.index]!;
  }

  /** Positions on the next record in timestamp order. */
  next(): boolean {
    const sources = this.sources;
    if (this.emitted >= 0) {
      const i = this.emitted;
      this.emitted = -1;
      const s = sources[i]!;
      if (s.next()) this.push(i, s.timestamp);
      else if (!s.ended) this.idle[this.idleCount++] = i;
    }
    for (let k = 0; k < this.idleCount; ) {
      const i = this.idle[k]!;
      const s = sources[i]!;
      if (s.next()) this.push(i, s.timestamp);
      else if (!s.ended) {
        k++;
        continue;
      }
      this.idle[k] = this.idle[--this.idleCount]!;
    }
    if (this.idleCount > 0 || this.size === 0) return false;
    const top = this.pop();
    this.index = top;
    this.emitted = top;
    return true;
  }

  /** True when every source has ended and every record was returned. */
  get ended(): boolean {
    if (this.emitted >= 0 || this.size > 0) return false;
    for (let k = 0; k < this.idleCount; k++) if (!this.sources[this.idle[k]!]!.ended) return false;
    return true;
  }

  private less(a: number, b: number): boolean {
    const ta = this.ts[a]!;
    const tb = this.ts[b]!;
    return ta < tb || (ta === tb && a < b);
  }

  private push(i: number, timestamp: number): void {
    const h = this.heap;
    this.ts[i] = timestamp;
    let at = this.size++;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!this.less(i, h[parent]!)) break;
      h[at] = h[parent]!;
      at = parent;
    }
    h[at] = i;
  }

  private pop(): number {
    const h = this.heap;
    const top = h[0]!;
    const last = h[--this.size]!;
    let at = 0;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= this.size) break;
      if (child + 1 < this.size && this.less(h[child + 1]!, h[child]!)) child++;
      if (!this.less(h[child]!, last)) break;
      h[at] = h[child]!;
      at = child;
    }
    if (this.size > 0) h[at] = last;
    return top;
  }
}
