/**
 * Every message of the agent's control protocol (PROTOCOL.md is the prose version). Requests go from client to
 * agent, each with a client-chosen `id`; the agent answers each with exactly one {@link Response} carrying the same
 * `id`, and sends {@link StreamMessage}s for the subscriptions a client opened.
 */
import type { AgentErrorCode } from './errors.ts';
import type { StatsRequest } from './stats.ts';

/** The protocol version this package speaks; `hello` negotiates it. */
export const PROTOCOL_VERSION = 3;
/**
 * Every version an agent of this package speaks: 2 adds the persistent-buffer ops (`buffers`, `attach`, `detach`),
 * 3 the session's event formats in the `subscribe` reply.
 */
export const PROTOCOL_VERSIONS: readonly number[] = [1, 2, 3];
/** Ops a connection may use only after a `hello` of version 2 or later. */
export const V2_OPS: readonly RequestOp[] = ['buffers', 'attach', 'detach'];

export type SessionMode = 'overwrite' | 'discard';
export type SessionSourceKind = 'kernel' | 'demo' | 'auto' | 'bts' | 'bts-qemu';
export type OutputFormat = 'tracedat' | 'ctf';
export type SessionState = 'created' | 'running' | 'stopped' | 'failed';
export type TriggerSignal = 'SIGUSR1' | 'SIGUSR2';

/** What takes a trace-shot of an overwrite-mode session besides the `snapshot` request. */
export type TriggerSpec =
  /** An event matching an ftrace filter expression (checked against every event class of the session). */
  | { readonly kind: 'event'; readonly filter: string }
  /** A signal sent to the agent process. */
  | { readonly kind: 'signal'; readonly signal: TriggerSignal };

/** Everything `evtrace session create` says about a session. */
export interface SessionSpec {
  /** 1-64 characters of `[A-Za-z0-9_.-]`, not starting with `.` or `-`. */
  readonly name: string;
  /** Event patterns (`kmem:kmalloc`, `sched:*`). At least one. */
  readonly events: readonly string[];
  readonly filter?: string;
  readonly mode: SessionMode;
  /** Per-CPU buffer size in bytes. */
  readonly bufferSize?: number;
  /** Files written while recording. */
  readonly output?: { readonly dir: string; readonly format: OutputFormat };
  /** Start a new output file after this many bytes or seconds. */
  readonly rotate?: { readonly bytes?: number; readonly seconds?: number };
  /** Default `auto`: the kernel when the agent is root with tracefs, else the demo source. */
  readonly source?: SessionSourceKind;
  /** The program (and its arguments) whose branches the `bts` and `bts-qemu` sources record. */
  readonly command?: readonly string[];
  readonly triggers?: readonly TriggerSpec[];
  /** Publish the session's events (after its filter) to the fleet, when the agent runs with `--nats`. */
  readonly export?: boolean;
}

/** A request. `id` is a non-negative integer the client chooses; replies carry it back. */
export type Request =
  | { readonly id: number; readonly op: 'hello'; readonly version: number; readonly client?: string }
  | { readonly id: number; readonly op: 'create'; readonly session: SessionSpec }
  | { readonly id: number; readonly op: 'start' | 'stop' | 'destroy' | 'status'; readonly name: string }
  | {
      readonly id: number;
      readonly op: 'snapshot';
      readonly name: string;
      readonly dir?: string;
      readonly format?: OutputFormat;
    }
  | { readonly id: number; readonly op: 'list' }
  | { readonly id: number; readonly op: 'trigger'; readonly name: string; readonly trigger: TriggerSpec }
  | {
      readonly id: number;
      readonly op: 'subscribe';
      readonly name: string;
      /** Send the session's recent window first. Default true. */
      readonly window?: boolean;
      /** Events this viewer may have queued before it loses some. Default 10000, at most 100000. */
      readonly queue?: number;
    }
  | { readonly id: number; readonly op: 'unsubscribe'; readonly stream: number }
  /** Version 2: the persistent buffers the agent can see (`dir`: their directory, default the agent's). */
  | { readonly id: number; readonly op: 'buffers'; readonly dir?: string }
  /** Version 2: makes a persistent buffer the source of a new session (running at once). */
  | ({ readonly id: number; readonly op: 'attach' } & AttachSpec)
  /** Version 2: ends an attached session; the buffer stays. */
  | { readonly id: number; readonly op: 'detach'; readonly name: string }
  /** The gauges of a session's buffers, sampled by the agent (stats.ts). */
  | ({ readonly id: number; readonly op: 'stats' } & StatsRequest);

export type RequestOp = Request['op'];

/** Every op, for validation and help. */
export const REQUEST_OPS: readonly RequestOp[] = [
  'hello',
  'create',
  'start',
  'stop',
  'destroy',
  'status',
  'snapshot',
  'list',
  'trigger',
  'subscribe',
  'unsubscribe',
  'buffers',
  'attach',
  'detach',
  'stats',
];

export type PersistentBackend = 'user' | 'kernel';

/** What `attach` attaches to. */
export interface AttachSpec {
  /** The persistent buffer's name: `team/app/flight` (or a boot-time kernel instance's name). */
  readonly buffer: string;
  /** `user` (a flight recorder file, the default) or `kernel` (a tracefs instance `evtrace.p.*`). */
  readonly backend?: PersistentBackend;
  /** The session's name. Default: the buffer's name with `/` as `.` (`team.app.flight`). */
  readonly name?: string;
  /** Directory of user-space buffers. Default: the agent's (`$EVTRACE_PERSISTENT_DIR` or /dev/shm/evtrace). */
  readonly dir?: string;
}

/** A persistent buffer as `buffers` lists it (the fields of @evtrace/persistent-events' `BufferInfo`). */
export interface PersistentBufferStatus {
  readonly backend: PersistentBackend;
  readonly name: string;
  /** The buffer file (user) or the tracefs instance directory (kernel). */
  readonly path: string;
  /** Bytes of data pages (kernel: over all CPUs). */
  readonly size: number;
  readonly pageSize: number;
  readonly mode: SessionMode;
  /** Fraction of pages holding data, 0..1; null when unknown. */
  readonly fill: number | null;
  /** Records dropped or overwritten before a registered reader had them; null when unknown. */
  readonly lost: number | null;
  readonly written: number | null;
  /** Live writing processes (user); null for the kernel. */
  readonly writers: number | null;
  /** Live reading processes (user, the agent's own attachment included); null for the kernel. */
  readonly readers: number | null;
  readonly owner: string;
  readonly group: string;
  readonly permissions: number;
  /** ISO 8601; null when unknown. */
  readonly created: string | null;
  readonly classes: readonly string[];
  /** The kernel's boot-time persistent buffer. */
  readonly boot?: boolean;
  /** The agent's session attached to this buffer, if any. */
  readonly session?: string;
}

/** A buffer that exists but the agent could not open (no permission, damaged): listed with the reason. */
export interface UnreadableBuffer {
  readonly backend: PersistentBackend;
  readonly name: string;
  readonly path: string;
  readonly owner: string;
  readonly group: string;
  readonly permissions: number;
  /** @evtrace/persistent-events' error code (`ERR_PERSISTENT_PERMISSION`, `ERR_PERSISTENT_CORRUPT`...). */
  readonly code: string;
  readonly error: string;
}

/** The reply to `buffers`. */
export interface BufferList {
  readonly buffers: readonly PersistentBufferStatus[];
  readonly unreadable: readonly UnreadableBuffer[];
  /** Why kernel buffers are not listed (no tracefs, agent not root). */
  readonly kernelUnavailable?: string;
  /** Why there is no boot-time persistent buffer. */
  readonly bootAbsent?: string;
}

/** The reply to `detach`. */
export interface DetachResult {
  readonly name: string;
  /** The buffer, which still exists. */
  readonly buffer: string;
  readonly backend: PersistentBackend;
}

/** One CPU's counters in a status. */
export interface CpuStatus {
  readonly cpu: number;
  readonly events: number;
  readonly lost: number;
  readonly bytes: number;
}

/** A session as `status` and `list` report it. */
export interface SessionStatus {
  readonly name: string;
  readonly state: SessionState;
  readonly mode: SessionMode;
  /** `kernel` or `demo` (after `auto` was resolved). */
  readonly source: string;
  /** True for the demo source: its events are synthetic. */
  readonly demo: boolean;
  readonly events: number;
  /** Events lost by the kernel or the session's buffers (discard mode: dropped; never a viewer's loss). */
  readonly lost: number;
  /**
   * Overwrite mode: ring-buffer pages the buffer reused before the agent's own reader (output, viewers, triggers)
   * reached them (a trace-shot never needs them: it is the buffer's content).
   */
  readonly overwrittenPages: number;
  readonly bytes: number;
  readonly cpus: readonly CpuStatus[];
  readonly viewers: number;
  /** Events viewers lost by reading too slowly, summed. */
  readonly viewerLost: number;
  readonly snapshots: number;
  /** Output files finished so far. */
  readonly files: readonly string[];
  /** The tracefs instance, for kernel sessions. */
  readonly instance?: string;
  /** The other sessions reading the same tracefs instance (kernel sessions with the same configuration). */
  readonly sharedWith?: readonly string[];
  /** For a session attached to a persistent buffer (`attach`): which one. Detaching never deletes it. */
  readonly persistent?: { readonly buffer: string; readonly backend: PersistentBackend; readonly path: string };
  /** Why a failed session failed. */
  readonly error?: { readonly code: string; readonly message: string };
  readonly spec: SessionSpec;
}

export interface HelloResult {
  readonly protocol: number;
  readonly agent: string;
  readonly pid: number;
}

export interface SnapshotResult {
  /** The trace-shot written: a trace.dat file or a CTF directory. */
  readonly path: string;
  readonly format: OutputFormat;
  readonly events: number;
  readonly bytes: number;
}

export interface SubscribeResult {
  /** The stream id that the stream messages carry. */
  readonly stream: number;
  /**
   * Version 3: the session's event classes, as the text of their ftrace `format` files: what the stream's events are
   * decoded by. Absent from older agents.
   */
  readonly formats?: readonly EventFormat[];
}

/** One event class of a session: `events/SYSTEM/EVENT/format` as tracefs prints it. */
export interface EventFormat {
  readonly system: string;
  readonly format: string;
}

/** A reply. */
export type Response =
  | { readonly id: number; readonly ok: true; readonly result: unknown }
  | {
      readonly id: number | null;
      readonly ok: false;
      readonly error: { readonly code: AgentErrorCode; readonly message: string };
    };

/** One event as `evtrace cat --json` prints it. */
export interface LiveEvent {
  /** Nanoseconds, as a decimal string (they exceed 2^53). */
  readonly ts_ns: string;
  readonly cpu: number | null;
  /** `system:event`. */
  readonly event: string;
  /** The task the event belongs to (ftrace's `common_pid`), null when the source records none. */
  readonly pid: number | null;
  /** That task's name when the event fired (saved_cmdlines, sched events, /proc), null when the agent cannot say. */
  readonly comm: string | null;
  /** ftrace's common flags and preemption depth, null when the source records none. */
  readonly flags: LiveEventFlags | null;
  /**
   * The payload, typed by the event's format: 64-bit integers as decimal strings, addresses and hex-printed integers
   * as `"0x..."` strings, narrower integers as numbers (`@evtrace/trace-format/schemas/event.json`).
   */
  readonly fields: Readonly<Record<string, unknown>>;
}

/** The kernel's `common_flags` and `common_preempt_count`, decoded as its latency format does. */
export interface LiveEventFlags {
  readonly irqs_off: boolean;
  readonly need_resched: boolean;
  readonly preempt_resched: boolean;
  readonly hardirq: boolean;
  readonly softirq: boolean;
  readonly nmi: boolean;
  readonly preempt_depth: number;
  readonly migrate_disable: number;
}

/** Messages of a subscription. */
export type StreamMessage =
  /** Events in time order per CPU. */
  | { readonly stream: number; readonly kind: 'events'; readonly events: readonly LiveEvent[] }
  /** The recent window has been sent; what follows is live. */
  | { readonly stream: number; readonly kind: 'live' }
  /** This viewer lost `lost` events since the last notice (its queue was full), `total` since it subscribed. */
  | { readonly stream: number; readonly kind: 'loss'; readonly lost: number; readonly total: number }
  /** The stream ended (session stopped or destroyed, unsubscribed); no more messages follow. */
  | { readonly stream: number; readonly kind: 'end'; readonly reason: string };

export type ServerMessage = Response | StreamMessage;
