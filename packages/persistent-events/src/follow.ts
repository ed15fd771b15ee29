/**
 * Following a buffer without consuming it: each poll takes a snapshot (reads only, so it works on a read-only
 * mapping and never slows or blocks the writer) and hands over the records not seen before, by their position in
 * the stream (a page's records_before plus the record's index in the page). Records the writer recycled between two
 * polls are counted as lost, never returned torn.
 */
import { type RecordCursor, Snapshot } from '@evtrace/ringbuf';

/** What one {@link Follower.poll} delivered. */
export interface PollResult {
  /** Records handed to the callback. */
  records: number;
  /** Records committed since the previous poll that were overwritten before this one could copy them. */
  lost: number;
}

/** A non-consuming reader of a single-writer buffer, from any process. */
export class Follower {
  private nextIndex = 0;
  private readonly take: () => Snapshot;

  /** @param take takes a snapshot of the buffer (e.g. `() => buf.snapshot()`); `from` the first stream index wanted. */
  constructor(take: () => Snapshot, from = 0) {
    this.take = take;
    this.nextIndex = from;
  }

  /** Stream index of the next record to deliver (records delivered or lost so far). */
  get position(): number {
    return this.nextIndex;
  }

  /** Calls `onRecord` with the cursor on each record committed since the last poll, oldest first. */
  poll(onRecord: (record: RecordCursor) => void): PollResult {
    const snap = this.take();
    let records = 0;
    let lost = 0;
    for (let i = 0; i < snap.pageCount; i++) {
      const header = snap.pageHeader(i);
      const end = header.recordsBefore + header.recordCount;
      if (end <= this.nextIndex) continue;
      if (header.recordsBefore > this.nextIndex) {
        lost += header.recordsBefore - this.nextIndex;
        this.nextIndex = header.recordsBefore;
      }
      const page = new Snapshot(snap.page(i), snap.pageSize, 0);
      for (let index = header.recordsBefore; page.next(); index++) {
        if (index < this.nextIndex) continue;
        onRecord(page);
        records++;
        this.nextIndex = index + 1;
      }
    }
    return { records, lost };
  }
}
