/**
 * One viewer of a session: a bounded queue of event lines between the session and the viewer's connection. The
 * session offers every event; a full queue (the viewer reads too slowly, its socket does not drain) refuses it and
 * counts it as this viewer's loss, reported in a `loss` message once there is room again. Nothing a viewer does
 * slows the session or costs more memory than its queue.
 */

/** What a viewer writes to: the client's connection. */
export interface ViewerOutput {
  /** Writes one line; false when the connection's buffer is over its mark (wait for `drained`). */
  write(line: string): boolean;
  /** True while the connection can take more. */
  readonly writable: boolean;
}

/** Events sent per `events` message at most (keeps lines far below the 4 MiB protocol limit). */
const BATCH = 256;
/** The queue entry that stands for the end of the recent window. */
const LIVE = '';

export class Viewer {
  readonly stream: number;
  readonly capacity: number;
  /** Events this viewer lost in all. */
  lost = 0;
  #lostSinceNotice = 0;
  #queue: string[] = [];
  #head = 0;
  #ended = false;
  readonly #out: ViewerOutput;

  constructor(stream: number, capacity: number, out: ViewerOutput) {
    this.stream = stream;
    this.capacity = capacity;
    this.#out = out;
  }

  get queued(): number {
    return this.#queue.length - this.#head;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Queues one event (its JSON object text); counts it lost when the queue is full. */
  offer(json: string): void {
    if (this.#ended) return;
    if (this.queued >= this.capacity) {
      this.lost++;
      this.#lostSinceNotice++;
      return;
    }
    this.#queue.push(json);
  }

  /** Marks the end of the recent window: `live` is sent after what is queued now. */
  markLive(): void {
    this.#queue.push(LIVE);
    this.flush();
  }

  /** Sends what the connection takes now. */
  flush(): void {
    if (this.#ended) return;
    while (this.#out.writable && this.queued > 0) {
      if (this.#queue[this.#head] === LIVE) {
        this.#head++;
        this.#out.write(`{"stream":${this.stream},"kind":"live"}\n`);
        continue;
      }
      let end = this.#head;
      const limit = Math.min(this.#queue.length, this.#head + BATCH);
      while (end < limit && this.#queue[end] !== LIVE) end++;
      const events = this.#queue.slice(this.#head, end);
      this.#head = end;
      this.#out.write(`{"stream":${this.stream},"kind":"events","events":[${events.join(',')}]}\n`);
    }
    if (this.#head > 4096 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    if (this.queued > 0 || !this.#out.writable) return;
    if (this.#lostSinceNotice > 0) {
      this.#out.write(
        `${JSON.stringify({ stream: this.stream, kind: 'loss', lost: this.#lostSinceNotice, total: this.lost })}\n`,
      );
      this.#lostSinceNotice = 0;
    }
  }

  /** Sends what is queued if the connection takes it, then `end`; nothing follows. */
  end(reason: string): void {
    if (this.#ended) return;
    this.flush();
    this.#ended = true;
    this.#queue = [];
    this.#head = 0;
    this.#out.write(`${JSON.stringify({ stream: this.stream, kind: 'end', reason })}\n`);
  }
}
