// Merging per-stream event sequences into one in time order.
import type { CtfEvent } from './event.ts';

/** A source of events in time order (one data stream file). */
export interface EventCursor {
  next(): CtfEvent | undefined;
}

type Pending = { cursor: EventCursor; event: CtfEvent; key: number | bigint; order: number };

/**
 * A binary min-heap of cursors keyed by their pending event's time, ties broken by file order. The key is the clock
 * value in cycles when every stream shares one clock, else nanoseconds.
 */
export class Merger {
  private readonly heap: Pending[] = [];
  private readonly byCycles: boolean;
  /** The `order` of the cursor the last {@link pop} took its event from. */
  lastOrder = -1;

  constructor(byCycles: boolean) {
    this.byCycles = byCycles;
  }

  private key(event: CtfEvent): number | bigint {
    return this.byCycles ? event.cycles : event.tsNs;
  }

  push(cursor: EventCursor, order: number): void {
    const event = cursor.next();
    if (event) this.insert({ cursor, event, key: this.key(event), order });
  }

  private less(a: Pending, b: Pending): boolean {
    return a.key < b.key || (!(b.key < a.key) && a.order < b.order);
  }

  private insert(item: Pending): void {
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

  pop(): CtfEvent | undefined {
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
