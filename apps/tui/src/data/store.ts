/**
 * What the views read events from: a sequence addressed by position, whose summary columns (time, CPU, pid, event
 * class) cost no decoding and whose full events are decoded one at a time, when a row is on screen.
 */
import type { EventClass, TraceEvent } from '@evtrace/trace-format';

/** Events by position, oldest first. */
export interface EventStore {
  readonly length: number;
  tsNs(i: number): bigint;
  cpu(i: number): number | null;
  /** The task's pid, or -1 when the format has none. */
  pid(i: number): number;
  eventClass(i: number): EventClass;
  event(i: number): TraceEvent;
}

/** A store over decoded events held in an array (CTF traces, live windows, tests). */
export function arrayStore(events: readonly TraceEvent[]): EventStore {
  return {
    length: events.length,
    tsNs: (i) => events[i]!.tsNs,
    cpu: (i) => events[i]!.cpu,
    pid: (i) => pidOf(events[i]!),
    eventClass: (i) => events[i]!.eventClass,
    event: (i) => events[i]!,
  };
}

/** The positions of `base` listed in `positions` (a filter's matches), in that order. */
export function subsetStore(base: EventStore, positions: Uint32Array, length = positions.length): EventStore {
  return {
    length,
    tsNs: (i) => base.tsNs(positions[i]!),
    cpu: (i) => base.cpu(positions[i]!),
    pid: (i) => base.pid(positions[i]!),
    eventClass: (i) => base.eventClass(positions[i]!),
    event: (i) => base.event(positions[i]!),
  };
}

/** The pid of a decoded event: ftrace's `common_pid`, or a CTF context's `vpid`/`tid`/`pid`. */
export function pidOf(e: TraceEvent): number {
  const ctx = e.scopes?.['event.context'] ?? e.scopes?.['stream.event.context'];
  const v = ctx?.common_pid ?? ctx?.vpid ?? ctx?.tid ?? ctx?.pid;
  return typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : -1;
}
