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
 * timestamp itself. next() positions on the oldest current record of all sources; the record is read through
 * `current` (the source's cursor fields). For live sources the merge never runs ahead: when a source that has not
 * ended has nothing yet, next() returns false so a later record of that source cannot be overtaken; wait and call
 * again. Ties go to the lower source index. O(k) per record, no allocation.
 */
export class Merge<S extends MergeSource> {
  readonly sources: readonly S[];
  /** Index in `sources` of the current record's source. */
  index = -1;
  private readonly has: Uint8Array;
  private emitted = -1;

  constructor(sources: readonly S[]) {
    this.sources = sources;
    this.has = new Uint8Array(sources.length);
  }

  /** The source holding the current record. */
  get current(): S {
    return this.sources[this.index]!;
  }

  /** Positions on the next record in timestamp order. */
  next(): boolean {
    const sources = this.sources;
    const has = this.has;
    if (this.emitted >= 0) {
      has[this.emitted] = 0;
      this.emitted = -1;
    }
    let best = -1;
    let bestTs = Number.POSITIVE_INFINITY;
    let waiting = false;
    for (let i = 0; i < sources.length; i++) {
      const s = sources[i]!;
      if (has[i] === 0) {
        if (s.next()) has[i] = 1;
        else if (!s.ended) waiting = true;
      }
      if (has[i] === 1 && s.timestamp < bestTs) {
        bestTs = s.timestamp;
        best = i;
      }
    }
    if (waiting || best < 0) return false;
    this.index = best;
    this.emitted = best;
    return true;
  }

  /** True when every source has ended and every record was returned. */
  get ended(): boolean {
    if (this.emitted >= 0) return false;
    for (let i = 0; i < this.sources.length; i++) {
      if (this.has[i] === 1 || !this.sources[i]!.ended) return false;
    }
    return true;
  }
}
