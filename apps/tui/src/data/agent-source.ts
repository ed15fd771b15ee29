/**
 * A session of the evtrace agent as a live source, through @evtrace/agent-protocol: the session's recent window
 * first, then live events, into the same bounded window the demo uses; the agent's per-CPU counters every second;
 * and the Sessions view's controls.
 */
import {
  type AgentClient,
  connectAgent,
  defaultSocketPath,
  ProtocolError,
  type SessionStatus,
  type Subscription,
} from '@evtrace/agent-protocol';
import { eventComm, LiveMerge, type TraceEvent } from '@evtrace/trace-format';
import { ViewerError } from '../errors.ts';
import { BufferGaugeFeed, gaugeStats } from './buffer-gauges.ts';
import { LiveWindow } from './live-window.ts';
import type { SessionControl, SessionInfo, SourceStats, ViewerSource } from './source.ts';
import { lazySymbols } from './symbols.ts';

/** Options of {@link attachAgent}. */
export interface AttachOptions {
  /** The agent's socket; default the agent's default. */
  readonly socket?: string;
  /** The session to follow; default the first running one. */
  readonly session?: string;
  /** Events kept for the Events view. Default 100000. */
  readonly window?: number;
  /** How often views are told about new events, in ms: the frame rate a live stream is drawn at. Default 66. */
  readonly refreshMs?: number;
}

/**
 * Connects to the agent and follows a session. Resolves to undefined when no agent answers and neither a socket nor
 * a session was named (the caller then starts the demo).
 *
 * @throws ViewerError `ERR_VIEW_AGENT` when the named agent or session cannot be reached.
 */
export async function attachAgent(options: AttachOptions = {}): Promise<ViewerSource | undefined> {
  const socket = options.socket ?? defaultSocketPath();
  const explicit = options.socket !== undefined || options.session !== undefined;
  let client: AgentClient;
  try {
    client = await connectAgent(socket, { client: 'evtrace-view' });
  } catch (error) {
    if (!explicit && error instanceof ProtocolError) return undefined;
    throw new ViewerError('ERR_VIEW_AGENT', `cannot reach the agent at ${socket}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  try {
    const sessions = await client.list();
    const name = options.session ?? (sessions.find((s) => s.state === 'running') ?? sessions[0])?.name;
    if (options.session !== undefined && !sessions.some((s) => s.name === options.session)) {
      const known = sessions.map((s) => s.name).join(', ') || 'none';
      throw new ViewerError(
        'ERR_VIEW_AGENT',
        `the agent at ${socket} has no session ${options.session} (it has: ${known})`,
      );
    }
    return await followSession(client, socket, name, options);
  } catch (error) {
    client.close();
    if (error instanceof ProtocolError) throw new ViewerError('ERR_VIEW_AGENT', error.message, { cause: error });
    throw error;
  }
}

async function followSession(
  client: AgentClient,
  socket: string,
  name: string | undefined,
  options: AttachOptions,
): Promise<ViewerSource> {
  const window = new LiveWindow(options.window ?? 100_000);
  const timers: NodeJS.Timeout[] = [];
  /** Task names as the agent sent them with the events: the last one per pid. */
  const tasks = new Map<number, string>();
  const listeners = new Set<() => void>();
  const warnings: string[] = [];
  let status: SessionStatus | undefined;
  let viewerLost = 0;
  /** Events this viewer received from the stream (the recent window's included). */
  let received = 0;
  let subscription: Subscription | undefined;
  const gauges = name !== undefined ? new BufferGaugeFeed(client, name) : undefined;
  gauges?.start();
  if (name !== undefined) {
    // Asked before subscribing: once the recent window arrives, the client stops reading replies until the stream
    // is consumed (its backlog pauses the socket), and the stream is consumed only below.
    status = await client.status(name);
    // The agent sends each CPU's events in order; they are merged across CPUs at each refresh.
    const merger = new LiveMerge<TraceEvent>({ cpus: status.cpus.map((c) => c.cpu) });
    subscription = await client.subscribe(name, { queue: 100_000 });
    const sub = subscription;
    const flush = (all = false) => {
      const ready = merger.take(all);
      if (ready.length > 0) window.push(ready);
    };
    (async () => {
      for await (const batch of sub.batches()) {
        if (batch.kind === 'events') {
          // Typed by the session's format files (the subscription decodes them): filters compile and print fmt
          // prints as for a file. Each message holds runs of one CPU's events in order.
          const events = batch.events;
          let run = 0;
          for (let i = 0; i < events.length; i++) {
            const e = events[i]!;
            const pid = e.scopes?.['event.context']?.common_pid;
            const comm = eventComm(e);
            if (typeof pid === 'number' && comm !== undefined) tasks.set(pid, comm);
            if (i + 1 === events.length || events[i + 1]!.cpu !== e.cpu) {
              merger.add(e.cpu ?? 0, run === 0 && i + 1 === events.length ? events : events.slice(run, i + 1));
              run = i + 1;
            }
          }
          received += events.length;
        } else if (batch.kind === 'loss') viewerLost = batch.total;
      }
      flush(true);
      warnings.push(`session ${name}: stream ended (${sub.endReason ?? 'closed'})`);
    })().catch((e: Error) => warnings.push(`session ${name}: ${e.message}`));
    const refresh = setInterval(() => {
      flush();
      for (const l of listeners) l();
    }, options.refreshMs ?? 66);
    const poll = setInterval(() => {
      client.status(name).then(
        (s) => {
          status = s;
        },
        () => {},
      );
    }, 1000);
    timers.push(refresh, poll);
  }
  const control: SessionControl = {
    list: async () => (await client.list()).map(sessionInfo),
    async create(session, events) {
      await client.createSession({ name: session, events, mode: 'overwrite', source: 'auto' });
      await client.start(session);
    },
    stop: async (session) => void (await client.stop(session)),
    snapshot: async (session) => (await client.snapshot(session)).path,
    destroy: (session) => client.destroy(session),
    buffers: () => client.buffers(),
  };
  const stats = (): SourceStats => {
    const s = window.stats();
    const agentCpus = new Map((status?.cpus ?? []).map((c) => [c.cpu, c]));
    return {
      ...s,
      // The agent's counts are the session's; the window's are what this viewer received.
      cpus: s.cpus.map((c) => {
        const a = agentCpus.get(c.cpu);
        return a === undefined ? c : { ...c, events: a.events, lost: a.lost };
      }),
      lost: status?.lost ?? 0,
      viewerLost,
      received,
      total: status?.events ?? s.total,
      ...gaugeStats(gauges),
    };
  };
  return {
    label:
      name === undefined
        ? `agent ${socket} (no session: create one in Sessions)`
        : `agent session ${name}${status?.demo ? ' (DEMO source)' : ''}`,
    live: true,
    store: () => window.snapshot(),
    eventClasses: () => [...(subscription?.eventClasses ?? [])],
    stats,
    lost: () => stats().lost,
    taskName: (pid) => tasks.get(pid),
    // A kernel session records this machine: its kallsyms names the addresses (the demo's are synthetic).
    symbols: lazySymbols(() => undefined, status?.demo !== true),
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    sessions: control,
    summary: () =>
      name === undefined
        ? undefined
        : `session ${name}: received ${received} events, the agent's queue for this viewer lost ${viewerLost}`,
    warnings: () => warnings,
    async close() {
      for (const t of timers.splice(0)) clearInterval(t);
      gauges?.close();
      await subscription?.close().catch(() => {});
      client.close();
    },
  };
}

function sessionInfo(s: SessionStatus): SessionInfo {
  return {
    name: s.name,
    mode: s.mode,
    state: s.state,
    events: s.events,
    lost: s.lost,
    bytes: s.bytes,
    source: s.demo ? 'demo' : s.source,
  };
}
