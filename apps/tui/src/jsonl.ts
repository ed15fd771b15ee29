/**
 * The viewer without a terminal: JSON lines of the events (trace-format's `--json` form, as `evtrace cat --json`
 * prints), so `evtrace-view trace.dat | jq` and a non-interactive `npm run demo` work.
 */
import { CommTracker } from '@evtrace/filters';
import {
  createJsonFormatter,
  eventComm,
  type FtraceMetadata,
  openTrace,
  TraceFormatError,
} from '@evtrace/trace-format';
import type { ViewerSource } from './data/source.ts';
import { ViewerError } from './errors.ts';

/** Writes a trace file's events in time order (the first `limit`). */
export function traceToJsonLines(
  path: string,
  write: (text: string) => void,
  limit = Number.POSITIVE_INFINITY,
): number {
  let printed = 0;
  try {
    const reader = openTrace(path, { lenient: true });
    // As evtrace cat --json: each task named as it was when its event fired.
    const tasks = new CommTracker();
    for (const [pid, name] of (reader as { metadata?: FtraceMetadata }).metadata?.cmdlines ?? []) tasks.seed(pid, name);
    const line = createJsonFormatter({ comm: (pid, e) => tasks.commOf(pid, e.cpu ?? undefined) });
    let parts: string[] = [];
    for (const e of reader.events()) {
      if (printed >= limit) break;
      parts.push(line(e));
      tasks.observe(e);
      printed++;
      if (parts.length >= 4096) {
        write(parts.join(''));
        parts = [];
      }
    }
    if (parts.length > 0) write(parts.join(''));
  } catch (error) {
    if (error instanceof TraceFormatError) throw new ViewerError('ERR_VIEW_INPUT', error.message, { cause: error });
    throw error;
  }
  return printed;
}

/**
 * Writes a live source's events as they arrive until `limit` events were written or `signal` aborts. Resolves to
 * the number written.
 */
export function liveToJsonLines(
  source: ViewerSource,
  write: (text: string) => void,
  limit = Number.POSITIVE_INFINITY,
  signal?: AbortSignal,
): Promise<number> {
  return new Promise((resolve) => {
    let printed = 0;
    // The window is a moving snapshot: continue after the newest event already written.
    let lastTs = -1n;
    let seenAtLast = 0;
    const finish = () => {
      unsubscribe();
      resolve(printed);
    };
    // An agent's events carry the name their task had then; the demo's are named by the source.
    const line = createJsonFormatter({ comm: (pid, e) => eventComm(e) ?? source.taskName(pid) });
    const unsubscribe = source.subscribe(() => {
      const store = source.store();
      let start = 0;
      // Binary search for the first event after lastTs, then skip those at lastTs already written.
      let lo = 0;
      let hi = store.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (store.tsNs(mid) <= lastTs) lo = mid + 1;
        else hi = mid;
      }
      start = lo;
      let atLast = 0;
      for (let i = start - 1; i >= 0 && store.tsNs(i) === lastTs; i--) atLast++;
      if (atLast > seenAtLast) start -= atLast - seenAtLast;
      const parts: string[] = [];
      for (let i = start; i < store.length && printed < limit; i++) {
        const e = store.event(i);
        parts.push(line(e));
        printed++;
        if (e.tsNs === lastTs) seenAtLast++;
        else {
          lastTs = e.tsNs;
          seenAtLast = 1;
        }
      }
      if (parts.length > 0) write(parts.join(''));
      if (printed >= limit) finish();
    });
    signal?.addEventListener('abort', finish, { once: true });
  });
}
