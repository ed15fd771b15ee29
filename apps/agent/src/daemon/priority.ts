/**
 * The agent's scheduling priority. Linux nice values are per thread, and `setPriority(0, n)` changes only the
 * calling one; the loop also waits on V8's helper threads (garbage collection, compilation), so all of them are
 * raised, as `evtrace record` raises its reader's process.
 */
import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/**
 * Sets every thread of this process whose nice value is above `nice` to `nice`, when allowed (root, or
 * CAP_SYS_NICE); returns how many threads it changed. Threads started later inherit their starter's value.
 */
export function raiseAllThreads(nice: number): number {
  let tids: number[];
  try {
    tids = readdirSync('/proc/self/task').map(Number);
  } catch {
    tids = [0];
  }
  let raised = 0;
  for (const tid of tids) {
    try {
      if (getPriority(tid) <= nice) continue;
      setPriority(tid, nice);
      raised++;
    } catch {
      // Not allowed (not root), or the thread ended meanwhile.
    }
  }
  return raised;
}
