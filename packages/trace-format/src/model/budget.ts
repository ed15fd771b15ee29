/**
 * Runs `take` (one event indexed; false once there is none left) until `budgetMs` has passed, and at least
 * `minEvents` times: the slice an index does between a viewer's frames. Returns false when `take` ran out.
 */
export function takeWithin(take: () => boolean, budgetMs: number, minEvents = 0): boolean {
  const end = performance.now() + budgetMs;
  let n = 0;
  for (;;) {
    if (!take()) return false;
    // The clock is read every 1024 events: performance.now() costs more than indexing one.
    if (++n >= minEvents && (n & 1023) === 0 && performance.now() >= end) return true;
  }
}
