/**
 * A session of the evtrace agent as a live source, through @evtrace/agent-protocol: the session's recent window
 * first, then live events, read by a worker thread (agent-stream.ts) into a bounded window; the agent's per-CPU
 * counters every second; and the Sessions view's controls.
 */
import {
  type AgentClient,
  connectAgent,
  defaultSocketPath,
  ProtocolError,
  type SessionStatus,
} from '@evtrace/agent-protocol';
import { ViewerError } from '../errors.ts';
import { type AgentStream, startAgentStream } from './agent-stream.ts';
import { BufferGaugeFeed, gaugeStats } from './buffer-gauges.ts';
import type { SessionControl, SessionInfo, SourceStats, ViewerSource } from './source.ts';
import { arrayStore } from './store.ts';
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

/** How often the stream's reader thread hands over what it merged, ms. */
const FLUSH_MS = 33;
const EMPTY_STATS: SourceStats = { cpus: [], types: [], eventsPerSec: 0, lost: 0, total: 0 };

async function followSession(
  client: AgentClient,
  socket: string,
  name: string | undefined,
  options: AttachOptions,
): Promise<ViewerSource> {
  const timers: NodeJS.Timeout[] = [];
  const listeners = new Set<() => void>();
  const warnings: string[] = [];
  let status: SessionStatus | undefined;
  let stream: AgentStream | undefined;
  const gauges = name !== undefined ? new BufferGaugeFeed(client, name) : undefined;
  gauges?.start();
  if (name !== undefined) {
    status = await client.status(name);
    // A worker thread reads the stream and merges the CPUs in time order: drawing never holds the socket up.
    try {
      stream = await startAgentStream(
        { socket, session: name, queue: 100_000, cpus: status.cpus.map((c) => c.cpu), flushMs: FLUSH_MS },
        options.window ?? 100_000,
      );
    } catch (error) {
      gauges?.close();
      throw new ViewerError('ERR_VIEW_AGENT', (error as Error).message, { cause: error });
    }
    stream.onEnd = (reason) => {
      warnings.push(`session ${name}: stream ended (${reason})`);
      for (const l of listeners) l();
    };
    // Views are told at a steady frame rate, whatever the event rate.
    const refresh = setInterval(() => {
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
  const empty = arrayStore([]);
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
    const s = stream?.window.stats() ?? EMPTY_STATS;
    const agentCpus = new Map((status?.cpus ?? []).map((c) => [c.cpu, c]));
    return {
      ...s,
      // The agent's counts are the session's; the window's are what this viewer received.
      cpus: s.cpus.map((c) => {
        const a = agentCpus.get(c.cpu);
        return a === undefined ? c : { ...c, events: a.events, lost: a.lost };
      }),
      lost: status?.lost ?? 0,
      viewerLost: stream?.lost ?? 0,
      received: stream?.received ?? 0,
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
    store: () => stream?.window.snapshot() ?? empty,
    eventClasses: () => [...(stream?.window.eventClasses ?? [])],
    stats,
    lost: () => stats().lost,
    taskName: (pid) => stream?.tasks.get(pid),
    // A kernel session records this machine: its kallsyms names the addresses (the demo's are synthetic).
    // /proc/kallsyms read at once in the background: the kernel takes a while to write it, which the first row
    // naming a symbol would otherwise wait for on the drawing thread.
    symbols: lazySymbols(() => undefined, status?.demo !== true, true),
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    sessions: control,
    summary: () =>
      name === undefined
        ? undefined
        : `session ${name}: received ${stream?.received ?? 0} events, the agent's queue for this viewer lost ${stream?.lost ?? 0}`,
    warnings: () => warnings,
    async close() {
      for (const t of timers.splice(0)) clearInterval(t);
      gauges?.close();
      await stream?.close();
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
