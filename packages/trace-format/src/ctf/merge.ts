// Merging per-stream event sequences into one in time order.
import type { CtfEvent } from './event.ts';

/** What the merge orders by: a clock value in cycles, or the time in nanoseconds. */
export interface MergeItem {
  readonly cycles: number | bigint;
  readonly tsNs: bigint;
}

/** A source of events in time order (one data stream file). */
export interface EventCursor<E extends MergeItem = CtfEvent> {
  next(): E | undefined;
}

type Pending<E extends MergeItem> = { cursor: EventCursor<E>; event: E; key: number | bigint; order: number };

/**
 * A binary min-heap of cursors keyed by their pending event's time, ties broken by file order. The key is the clock
 * value in cycles when every stream shares one clock, else nanoseconds.
 */
export class Merger<E extends MergeItem = CtfEvent> {
  private readonly heap: Pending<E>[] = [];
  private readonly byCycles: boolean;
  /** The `order` of the cursor the last {@link pop} took its event from. */
  lastOrder = -1;

  constructor(byCycles: boolean) {
    this.byCycles = byCycles;
  }

  private key(event: E): number | bigint {
    return this.byCycles ? event.cycles : event.tsNs;
  }

  push(cursor: EventCursor<E>, order: number): void {
    const event = cursor.next();
    if (event) this.insert({ cursor, event, key: this.key(event), order });
  }

  private less(a: Pending<E>, b: Pending<E>): boolean {
    return a.key < b.key || (!(b.key < a.key) && a.order < b.order);
  }

  private insert(item: Pending<E>): void {
    const h = this.heap;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  pop(): E | undefined {
    const h = this.heap;
    if (h.length === 0) return undefined;
    const top = h[0]!;
    const event = top.event;
    this.lastOrder = top.order;
    const next = top.cursor.next();
    if (next) {
      top.event = next;
      top.key = this.key(next);
      if (h.length === 1) return event;
    } else {
      const last = h.pop()!;
      if (h.length === 0) return event;
      h[0] = last;
    }
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
      if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
    return event;
  }
}
