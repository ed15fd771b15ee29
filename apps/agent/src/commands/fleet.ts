import { resolve } from 'node:path';
import {
  type ConnectionFlagValues,
  connectFleet,
  connectionFromFlags,
  DEFAULT_NATS_URL,
  eventFilter,
  type FleetConnectOptions,
  fleetErrors,
  fleetHosts,
  hostState,
  type NatsConnection,
  pullShot,
  type Since,
  tailEvents,
} from '@evtrace/fleet';
import type { Command } from 'commander';
import { addCommand, type CliIO } from '../command.ts';
import { usageError } from '../exit-codes.ts';
import { setExamples } from '../help.ts';
import { addConnectionFlags } from '../nats-flags.ts';
import { parseDuration } from '../units.ts';

/** How every `fleet` verb reaches NATS. */
type ConnectionOptions = ConnectionFlagValues;

function connectionOptions(c: Command): Command {
  return addConnectionFlags(
    c.option('--nats <url>', `the NATS server (env EVTRACE_NATS_URL; default ${DEFAULT_NATS_URL})`),
  );
}

function connection(o: ConnectionOptions): FleetConnectOptions {
  return { ...connectionFromFlags(o), name: 'evtrace fleet' };
}

/** Runs `fn` with a connection, closed afterwards; a fleet error ends the command with its code. */
async function withFleet<T>(o: ConnectionOptions, fn: (nc: NatsConnection) => Promise<T>): Promise<T> {
  const nc = await connectFleet(connection(o));
  try {
    return await fn(nc);
  } finally {
    await nc.close().catch(() => {});
  }
}

/** `--since`: `all`, a time ago (`10m`, `24h`), or a date (ISO 8601). */
export function parseSince(text: string | undefined, fallback: Since): Since {
  if (text === undefined) return fallback;
  if (text === 'all') return 'all';
  const ago = parseDuration(text);
  if (ago !== undefined) return new Date(Date.now() - ago);
  const date = /^\d{4}-\d{2}-\d{2}/.test(text) ? new Date(text) : undefined;
  if (date === undefined || Number.isNaN(date.getTime()))
    throw usageError(`--since must be all, a time ago (10m, 24h) or a date (2026-01-31T12:00Z), not '${text}'`);
  return date;
}

const stream = (o: ConnectionOptions) => (o.natsStream !== undefined ? { stream: o.natsStream } : {});

interface TailOptions extends ConnectionOptions {
  host?: string;
  session?: string;
  filter?: string;
  since?: string;
  count?: string;
  json?: boolean;
  follow: boolean;
}

async function tail(o: TailOptions, io: CliIO): Promise<void> {
  const count = o.count === undefined ? undefined : Number(o.count);
  if (count !== undefined && (!Number.isSafeInteger(count) || count <= 0))
    throw usageError(`--count must be a positive integer, not '${o.count}'`);
  let filter: ReturnType<typeof eventFilter> | undefined;
  try {
    filter = o.filter === undefined ? undefined : eventFilter(o.filter);
  } catch (error) {
    throw usageError(`--filter: ${(error as Error).message}`);
  }
  const since = parseSince(o.since, 'new');
  await withFleet(o, async (nc) => {
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once('SIGINT', onSignal);
    let shown: number;
    try {
      shown = await tailEvents(
        nc,
        {
          ...stream(o),
          ...(o.host !== undefined ? { host: o.host } : {}),
          ...(o.session !== undefined ? { session: o.session } : {}),
          ...(filter !== undefined ? { filter } : {}),
          ...(count !== undefined ? { count } : {}),
          json: o.json === true,
          since,
          follow: o.follow,
          signal: stop.signal,
        },
        io.stdoutBytes ?? ((bytes) => io.stdout(Buffer.from(bytes).toString())),
      );
    } finally {
      process.removeListener('SIGINT', onSignal);
    }
    if (filter?.problem !== undefined && shown === 0)
      io.stderr(`evtrace fleet tail: --filter fits no event: ${filter.problem}\n`);
  });
}

/** `evtrace fleet`: reads what a fleet of agents published to NATS JetStream. */
export function registerFleet(program: Command, io: CliIO): void {
  const fleet = addCommand(program, 'fleet')
    .summary('read a fleet of agents through NATS JetStream: hosts, events, hardware errors, trace-shots')
    .description(
      `Agents started with \`evtrace agent --nats URL --host NAME\` publish to one JetStream stream (EVTRACE, subjects
evtrace.HOST.CHANNEL): the events of sessions created with --export (evtrace.HOST.events.SESSION, as \`evtrace cat
--json\` prints them), decoded machine checks and memory errors (.mce, .edac), threshold crossings (.threshold), a
notice per trace-shot (.shot; the shot itself in the object store evtrace-shots) and their status (.status). Every
record carries its host and a sequence number per host and channel: a gap is a loss, and the agent's status counts
what its spool dropped. These verbs read them from any server of the cluster.`,
    );

  connectionOptions(
    addCommand(fleet, 'hosts')
      .summary('every host in the stream: last seen, version, sessions, events lost')
      .option('--json', 'one JSON object per host per line'),
  ).action(async (o: ConnectionOptions & { json?: boolean }) => {
    await withFleet(o, async (nc) => {
      const hosts = await fleetHosts(nc, stream(o));
      for (const h of hosts) {
        if (o.json === true) {
          io.stdout(
            `${JSON.stringify({ host: h.host, lastSeen: h.lastSeen?.toISOString() ?? null, messages: h.messages, status: h.status ?? null })}\n`,
          );
          continue;
        }
        const st = hostState(h);
        io.stdout(
          `${h.host}  last seen ${h.lastSeen?.toISOString() ?? 'never (no status)'}  version ${st.version ?? '?'}  sessions ${st.sessions.join(',') || '-'}  lost ${st.lost}  spool dropped ${st.dropped}\n`,
        );
      }
    });
  });

  const tailCmd = connectionOptions(
    addCommand(fleet, 'tail')
      .summary('events of exported sessions across hosts, historical and live')
      .option('--host <name>', 'one host only')
      .option('--session <name>', 'one session only')
      .option('--filter <expr>', 'ftrace filter on the event fields (host and session are fields too)')
      .option('--since <time>', 'start at: all, a time ago (10m, 24h), or a date; default: new events only')
      .option('--count <n>', 'stop after N events')
      .option('--no-follow', 'stop at the end of what is stored instead of waiting for new events')
      .option('--json', 'one JSON object per event (`evtrace cat --json` with host, seq and session first)'),
  );
  tailCmd.action(async (o: TailOptions) => tail(o, io));
  setExamples(
    tailCmd,
    `evtrace fleet tail --since all --json --no-follow            every stored event of every host
evtrace fleet tail --host web812 --filter 'bytes_req > 4096'   live, one host, filtered`,
  );

  connectionOptions(
    addCommand(fleet, 'errors')
      .summary('hardware errors per host and DIMM (or bank): counts, worst severity, threshold state')
      .option('--since <time>', 'errors since: all, a time ago or a date', '24h')
      .option('--host <name>', 'one host only')
      .option('--json', 'one JSON object per host and DIMM'),
  ).action(async (o: ConnectionOptions & { since: string; host?: string; json?: boolean }) => {
    const since = parseSince(o.since, 'all');
    await withFleet(o, async (nc) => {
      const rows = await fleetErrors(nc, { ...stream(o), since, ...(o.host !== undefined ? { host: o.host } : {}) });
      for (const r of rows) {
        if (o.json === true) io.stdout(`${JSON.stringify(r)}\n`);
        else
          io.stdout(
            `${r.host}  ${r.place}  errors ${r.errors} (corrected ${r.corrected}, uncorrected ${r.uncorrected})  worst ${r.worst}  last ${r.lastSeen}${r.threshold ? `  threshold crossed ${r.threshold.crossings}x: ${r.threshold.message} (${r.threshold.action}: ${r.threshold.result})` : ''}\n`,
          );
      }
      if (rows.length === 0 && o.json !== true) io.stderr('evtrace fleet errors: no hardware errors in that time\n');
    });
  });

  connectionOptions(
    addCommand(fleet, 'pull')
      .summary('fetch a stored trace-shot of a host (readable by evtrace cat)')
      .argument('<host>', 'the host that took it')
      .argument('<shot>', 'its name, as its notice and `fleet tail` give it (session-shot-...dat)')
      .requiredOption('-o, --output <dir>', 'directory to write it into'),
  ).action(async (host: string, shot: string, o: ConnectionOptions & { output: string }) => {
    await withFleet(o, async (nc) => {
      const path = await pullShot(nc, host, shot, resolve(o.output));
      io.stdout(`${path}\n`);
    });
  });
}
