/**
 * What the metrics endpoint reads from the agent. The daemon implements {@link MetricsProvider}; the metrics server
 * only reads it at scrape time, so counters are never copied or kept twice.
 */

/** How a session treats a full buffer, as in `evtrace session create --mode`. */
export type SessionMode = 'overwrite' | 'discard';

/** Where a session is in its life. */
export type SessionState = 'created' | 'running' | 'stopped' | 'failed';

/** One CPU's counters of a session; every number is a running total since the session was created. */
export interface CpuCounters {
  /** The CPU number. */
  readonly cpu: number;
  /** Events written into the session's buffer on this CPU. */
  readonly events: number;
  /** Events lost on this CPU (overwritten or dropped by the kernel or the ring buffer). */
  readonly lost: number;
  /** Bytes of event data recorded on this CPU. */
  readonly bytes: number;
}

/** The counters of one session at the moment of a scrape. */
export interface SessionCounters {
  /** The session's name (`evtrace session create NAME`). */
  readonly name: string;
  readonly mode: SessionMode;
  readonly state: SessionState;
  /** The source feeding the session: `kernel`, `demo`, or a subsystem's name. */
  readonly source: string;
  /** Per-CPU totals; one entry per CPU the session records. */
  readonly cpus: readonly CpuCounters[];
  /** Viewers attached now. */
  readonly viewers: number;
  /** Events viewers of this session lost because they read too slowly (summed over viewers, ever). */
  readonly viewerLost: number;
}

/** The agent's own health at the moment of a scrape. */
export interface AgentHealth {
  /** When the agent started, in milliseconds since the Unix epoch. */
  readonly startTimeMs: number;
  /** Sessions that exist now. */
  readonly sessions: number;
  /** Viewers attached now, over all sessions. */
  readonly viewers: number;
  /** Bytes of event text queued for viewers now, over all sessions (0 when absent). */
  readonly viewerQueuedBytes?: number;
  /** Control-protocol requests refused as malformed, oversize or not permitted, since start. */
  readonly protocolErrors: number;
  /** Seconds since the agent started. */
  readonly uptimeSeconds: number;
}

/** The agent as the metrics server sees it. */
export interface MetricsProvider {
  /** Every session's counters, read at scrape time. */
  sessions(): readonly SessionCounters[];
  /** The agent's health, read at scrape time. */
  health(): AgentHealth;
}
