// A session's stream off the drawing thread: this thread reads the subscription (socket, lines, the JSON event
// codec), merges the CPUs in time order and posts the viewer what it needs of each event (time, CPU, pid, class and
// the event's JSON text, decoded again only for the rows drawn), a batch per flush. Drawing a frame then never stops
// the socket from being read.
import { parentPort, workerData } from 'node:worker_threads';
import { connectAgent, subscribeResult } from '@evtrace/agent-protocol';
import { type EventClass, encodeJsonEvent, eventComm, LiveMerge } from '@evtrace/trace-format';
import type { StreamRow, StreamStart, WorkerMessage, WorkerSetup } from './agent-stream.ts';

const setup = workerData as WorkerSetup;
const post = (m: WorkerMessage, transfer: ArrayBuffer[] = []) => parentPort!.postMessage(m, transfer);
/** Batches posted and not yet taken by the drawing thread, at most. */
const MAX_UNACKED = 4;
/** Events merged but not posted, at most, while the drawing thread lags. */
const MAX_PENDING = 100_000;

async function follow(): Promise<void> {
  const client = await connectAgent(setup.socket, { client: 'evtrace-view' });
  const sub = await client.subscribe(setup.session, { queue: setup.queue });
  // Batches the drawing thread has not taken yet: while it lags, this thread stops reading, so the agent's queue for
  // this viewer (bounded, its loss counted) holds the backlog rather than this process's memory.
  let unacked = 0;
  let acked: (() => void) | undefined;
  parentPort!.on('message', (m) => {
    if (m === 'close') void sub.close().finally(() => client.close());
    else if (m === 'ack') {
      unacked--;
      acked?.();
    }
  });
  const start: StreamStart = {
    kind: 'start',
    // An agent of protocol 3 sent the session's formats; an older one's classes are inferred from their events.
    reply: client.agent.protocol >= 3 ? subscribeResult(sub.stream, sub.eventClasses) : { stream: sub.stream },
  };
  post(start);
  const merger = new LiveMerge<StreamRow>({ cpus: setup.cpus });
  const classIds = new Map<EventClass, number>();
  let newClasses: string[] = [];
  let tasks: [number, string][] = [];
  const known = new Map<number, string>();
  let received = 0;
  let lost = 0;
  const flush = (all = false) => {
    if (unacked >= MAX_UNACKED && !all) return;
    const rows = merger.take(all);
    unacked++;
    const n = rows.length;
    const ts = new BigUint64Array(n);
    const cpu = new Int32Array(n);
    const pid = new Int32Array(n);
    const cls = new Uint16Array(n);
    const ends = new Uint32Array(n);
    const texts = new Array<string>(n);
    let end = 0;
    for (let i = 0; i < n; i++) {
      const r = rows[i]!;
      ts[i] = r.tsNs;
      cpu[i] = r.cpu;
      pid[i] = r.pid;
      cls[i] = r.cls;
      texts[i] = r.text;
      ends[i] = end += r.text.length;
    }
    // One string for the batch's texts: copied across at once, not string by string.
    const text = texts.join('');
    post({ kind: 'rows', ts, cpu, pid, cls, text, ends, classes: newClasses, tasks, received, lost }, [
      ts.buffer,
      cpu.buffer,
      pid.buffer,
      cls.buffer,
      ends.buffer,
    ]);
    newClasses = [];
    tasks = [];
  };
  const timer = setInterval(flush, setup.flushMs);
  try {
    for await (const batch of sub.batches()) {
      if (batch.kind === 'loss') lost = batch.total;
      if (batch.kind !== 'events') continue;
      const events = batch.events;
      let run: StreamRow[] = [];
      for (let i = 0; i < events.length; i++) {
        const e = events[i]!;
        let id = classIds.get(e.eventClass);
        if (id === undefined) {
          classIds.set(e.eventClass, (id = classIds.size));
          newClasses.push(e.eventClass.name);
        }
        const p = e.scopes?.['event.context']?.common_pid;
        const pid = typeof p === 'number' ? p : -1;
        const comm = eventComm(e);
        if (pid >= 0 && comm !== undefined && known.get(pid) !== comm) {
          known.set(pid, comm);
          tasks.push([pid, comm]);
        }
        // The codec's inverse: the text decodes to this event again, its task's name the one the agent sent.
        const line = encodeJsonEvent(e);
        run.push({ tsNs: e.tsNs, cpu: e.cpu ?? -1, pid, cls: id, text: line.slice(0, -1) });
        // Each message holds runs of one CPU's events, in order.
        if (i + 1 === events.length || events[i + 1]!.cpu !== e.cpu) {
          merger.add(e.cpu ?? -1, run);
          run = [];
        }
      }
      received += events.length;
      while (merger.pending > MAX_PENDING && unacked >= MAX_UNACKED)
        await new Promise<void>((resolve) => {
          acked = resolve;
        });
    }
  } finally {
    clearInterval(timer);
  }
  flush(true);
  post({ kind: 'end', reason: sub.endReason ?? 'closed' });
  client.close();
}

follow().then(
  () => parentPort!.close(),
  (error: Error) => {
    post({
      kind: 'error',
      message: error.message,
      ...((error as { code?: string }).code ? { code: (error as { code?: string }).code } : {}),
    });
    parentPort!.close();
  },
);
