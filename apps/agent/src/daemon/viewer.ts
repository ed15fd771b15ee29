/**
 * One viewer of a session: a bounded queue of event lines between the session and the viewer's connection. The
 * session offers every event; a full queue (the viewer reads too slowly, its socket does not drain) refuses it and
 * counts it as this viewer's loss, reported in a `loss` message once there is room again. Nothing a viewer does
 * slows the session or costs more memory than its queue ({@link MAX_VIEWER_QUEUE_BYTES} at most, whatever number of
 * events it asked for) plus its connection's buffer; a viewer that leaves gives its queue up at once.
 */
import { readFileSync } from 'node:fs';
import { endMessage, eventsMessage, liveMessage, lossMessage } from '@evtrace/agent-protocol';
import { CommTracker } from '@evtrace/filters';
import { createJsonEventEncoder, type TraceEvent } from '@evtrace/trace-format';

/** What a viewer writes to: the client's connection. */
export interface ViewerOutput {
  /** Writes one line; false when the connection's buffer is over its mark (wait for `drained`). */
  write(line: string): boolean;
  /** True while the connection can take more. */
  readonly writable: boolean;
}

/** Bytes of event text (one per character of JSON) a viewer's queue holds at most. */
export const MAX_VIEWER_QUEUE_BYTES = 16 << 20;
/**
 * Bytes of event text per `events` message: one message (one socket write, one line for the viewer to split) carries
 * hundreds of events, and stays far below the 4 MiB protocol limit (an event longer than this goes alone).
 */
const BATCH_BYTES = 256 << 10;
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
  #bytes = 0;
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

  /** Bytes of event text queued, bounded by {@link MAX_VIEWER_QUEUE_BYTES}. */
  get queuedBytes(): number {
    return this.#bytes;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Queues one event (its JSON object text); counts it lost when the queue is full. */
  offer(json: string): void {
    if (this.#ended) return;
    if (this.queued >= this.capacity || this.#bytes + json.length > MAX_VIEWER_QUEUE_BYTES) {
      this.lost++;
      this.#lostSinceNotice++;
      return;
    }
    this.#queue.push(json);
    this.#bytes += json.length;
  }

  /** Marks the end of the recent window: `live` is sent after what is queued now. */
  markLive(): void {
    this.#queue.push(LIVE);
    this.flush();
  }

  /** Sends what the connection takes now (everything queued when `all`). */
  flush(all = false): void {
    if (this.#ended) return;
    while ((all || this.#out.writable) && this.queued > 0) {
      if (this.#queue[this.#head] === LIVE) {
        this.#head++;
        this.#out.write(liveMessage(this.stream));
        continue;
      }
      let end = this.#head;
      let bytes = 0;
      while (end < this.#queue.length && this.#queue[end] !== LIVE && (end === this.#head || bytes < BATCH_BYTES))
        bytes += this.#queue[end++]!.length;
      const events = this.#queue.slice(this.#head, end);
      this.#bytes -= bytes;
      this.#head = end;
      this.#out.write(eventsMessage(this.stream, events));
    }
    if (this.#head > 4096 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    if (this.queued > 0 || (!all && !this.#out.writable)) return;
    if (this.#lostSinceNotice > 0) {
      this.#out.write(lossMessage(this.stream, this.#lostSinceNotice, this.lost));
      this.#lostSinceNotice = 0;
    }
  }

  /**
   * Ends the stream with `end`; nothing follows. `deliver`: first send everything still queued and the loss notice,
   * so that a reader that was behind when the session stopped still gets the events it was promised (the queue is
   * bounded, so handing it all to the connection at once keeps memory bounded). Without it (the viewer left: it
   * unsubscribed or its connection closed) the queue is dropped at once, not parked in a socket nobody reads.
   */
  end(reason: string, deliver = true): void {
    if (this.#ended) return;
    if (deliver) this.flush(true);
    this.#ended = true;
    this.#queue = [];
    this.#head = 0;
    this.#bytes = 0;
    this.#out.write(endMessage(this.stream, reason));
  }
}

/**
 * The names of the tasks events belong to, for viewers: seeded from the session's `saved_cmdlines`, kept current
 * from the sched and task events that pass (a rename or an exec changes a name mid-session), and for a kernel
 * session read from `/proc/PID/comm` for a task neither names (one that started after the session did).
 */
export class TaskNames {
  readonly #tracker = new CommTracker();
  readonly #proc: boolean;
  /** Pids /proc did not know (exited): not looked up again. */
  readonly #gone = new Set<number>();

  /** Events as JSON lines (with the newline), each with its task's name when it fired. */
  readonly json = createJsonEventEncoder({ comm: (pid, e) => this.#comm(pid, e) });

  constructor(cmdlines: ReadonlyMap<number, string>, readProc: boolean) {
    for (const [pid, comm] of cmdlines) this.#tracker.seed(pid, comm);
    this.#proc = readProc;
  }

  /** Takes up the names an event carries (a switch, a fork, an exec, a rename); after it was written. */
  learn(e: TraceEvent): void {
    this.#tracker.observe(e);
  }

  #comm(pid: number, e: TraceEvent): string | undefined {
    // What the event itself says of its task (a switch's prev_comm) comes first: a task first seen in its own switch
    // may be gone from /proc by the time it is looked up.
    let comm = this.#tracker.resolve(e) ?? this.#tracker.commOf(pid, e.cpu ?? undefined);
    if (comm === undefined && this.#proc && !this.#gone.has(pid)) {
      try {
        comm = readFileSync(`/proc/${pid}/comm`, 'utf8').replace(/\n$/, '');
        this.#tracker.seed(pid, comm);
      } catch {
        this.#gone.add(pid);
      }
    }
    return comm;
  }
}

/**
 * One event as viewers get it: the object of `evtrace cat --json` (its task's `pid` and `comm` included), without
 * the newline. `learn`: the event is new (not a re-read of the recent window), so names it carries are taken up.
 */
export function liveEventJson(e: TraceEvent, tasks: TaskNames, learn = true): string {
  const line = tasks.json(e);
  if (learn) tasks.learn(e);
  return line.slice(0, -1);
}
