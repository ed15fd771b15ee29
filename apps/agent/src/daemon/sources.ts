/**
 * Which source feeds a recording or a session when asked for `auto`: the live kernel where it can be read, the
 * demo source elsewhere. The agent's sessions and `evtrace record --source auto` choose alike.
 */
import { findTracefs } from '@evtrace/tracefs';

/** The sources `auto` chooses from. */
export type AutoChoice = 'kernel' | 'demo';

/** What {@link autoSource} asks of the machine (replaceable in tests). */
export interface SourceProbe {
  /** The effective user id, undefined where there is none (not POSIX). */
  readonly uid: () => number | undefined;
  /** The tracefs mount point (mounting it when root); throws when it cannot be reached. */
  readonly tracefs: () => string;
}

const machine: SourceProbe = { uid: () => process.getuid?.(), tracefs: () => findTracefs() };

/**
 * `--source auto`: the live kernel when we are root and tracefs is reachable (mounted, or mountable by us), the demo
 * source otherwise. Returns the choice and why, for the one line the CLI prints.
 */
export function autoSource(probe: SourceProbe = machine): { readonly source: AutoChoice; readonly reason: string } {
  const uid = probe.uid();
  if (uid !== 0)
    return { source: 'demo', reason: `not root (uid ${uid ?? 'unknown'}): the kernel's tracefs needs root` };
  try {
    return { source: 'kernel', reason: `root, tracefs at ${probe.tracefs()}` };
  } catch (error) {
    return { source: 'demo', reason: `tracefs unavailable: ${(error as Error).message}` };
  }
}
