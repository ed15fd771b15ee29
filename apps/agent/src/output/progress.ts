import type { CliIO } from '../command.ts';

/** How often the progress line is redrawn. */
const INTERVAL_MS = 100;

/**
 * The events of a long command, counted on one line of a terminal's stderr (events and rate, redrawn a few times a
 * second, cleared at the end) when `io.progress` says stderr is a terminal and -q was not given; the events as they
 * are otherwise, at no cost.
 */
export function withProgress<E>(events: () => Iterable<E>, io: CliIO, what: string): () => Iterable<E> {
  if (io.progress !== true) return events;
  return function* counted() {
    const started = performance.now();
    let last = started;
    let n = 0;
    try {
      for (const e of events()) {
        yield e;
        // The clock is read once every 4096 events: reading it per event would cost more than the line is worth.
        if ((++n & 4095) === 0) {
          const now = performance.now();
          if (now - last >= INTERVAL_MS) {
            last = now;
            const rate = n / ((now - started) / 1000);
            io.stderr(
              `\revtrace: ${what}: ${n.toLocaleString('en-US')} events, ${Math.round(rate).toLocaleString('en-US')}/s\x1b[K`,
            );
          }
        }
      }
    } finally {
      if (last !== started) io.stderr('\r\x1b[K');
    }
  };
}
