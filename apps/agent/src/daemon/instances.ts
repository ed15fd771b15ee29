/**
 * Kernel sessions that ask the kernel for the same thing share one tracefs instance. The rule: sessions share when
 * their kernel configuration is the same — the same events (as the tracefs catalogue resolves the patterns), the
 * same filter (so the kernel applies it once for all) and the same per-CPU buffer size; every other kernel session
 * gets an instance of its own. The kernel then writes each event once and the agent reads it once; each page read
 * is copied into the ring buffers of every running session sharing the instance, so each keeps its own mode,
 * buffers, outputs, viewers, triggers and loss accounting. The instance is removed with the last session using it.
 */
import type { SessionSpec } from '@evtrace/agent-protocol';
import { findTracefs, KernelSource, type KernelTap, listEvents, matchEvents } from '@evtrace/tracefs';

/** Options of {@link SharedInstances}. */
export interface SharedInstancesOptions {
  /** The tracefs mount point (default: found). */
  readonly tracefs?: string;
  /** Owner tag of the instances created (see @evtrace/tracefs `createInstance`). */
  readonly owner?: string;
}

/** The kernel sources of the agent, by the configuration sessions share them by. */
export class SharedInstances {
  readonly #o: SharedInstancesOptions;
  readonly #byKey = new Map<string, KernelSource>();

  constructor(options: SharedInstancesOptions = {}) {
    this.#o = options;
  }

  /**
   * A kernel source for a session: a tap on the instance of a live session with the same configuration, or on a
   * new one. `adopt` names the instance a killed agent left (re-adopted once, then shared like any other).
   */
  acquire(spec: SessionSpec, adopt?: string): KernelTap {
    const key = this.key(spec);
    if (adopt !== undefined) {
      for (const source of this.#byKey.values()) if (source.prepared && source.resource === adopt) return source.tap();
    }
    let source = this.#byKey.get(key);
    // A source that is not prepared was closed by its last session (or failed to prepare): start afresh.
    if (source === undefined || !source.prepared || adopt !== undefined) {
      source = new KernelSource({
        events: spec.events,
        ...(spec.filter !== undefined ? { filter: spec.filter } : {}),
        ...(spec.bufferSize !== undefined ? { bufferKb: bufferKb(spec.bufferSize) } : {}),
        ...(this.#o.tracefs !== undefined ? { tracefs: this.#o.tracefs } : {}),
        ...(adopt !== undefined ? { adopt } : {}),
        ...(this.#o.owner !== undefined ? { owner: this.#o.owner } : {}),
      });
      // An adopted instance of another configuration than the one registered is not offered to new sessions.
      if (adopt === undefined || this.#byKey.get(key)?.prepared !== true) this.#byKey.set(key, source);
    }
    return source.tap();
  }

  /** What sessions must agree on to share an instance. */
  key(spec: SessionSpec): string {
    let events = [...new Set(spec.events)].sort();
    try {
      events = matchEvents(listEvents(this.#o.tracefs ?? findTracefs()), spec.events)
        .map((e) => `${e.system}:${e.event}`)
        .sort();
    } catch {
      // The source's own prepare reports a pattern that matches nothing; the patterns key it until then.
    }
    const filter = spec.filter?.trim() ?? '';
    const size = spec.bufferSize !== undefined ? bufferKb(spec.bufferSize) : 'default';
    return JSON.stringify([events, filter, size]);
  }
}

/** The kernel's per-CPU buffer size for a session's `--buffer-size`. */
export const bufferKb = (bytes: number) => Math.max(4, Math.floor(bytes / 1024));
