/**
 * The agent's fleet export (`evtrace agent --nats URL --host NAME`): sessions created with `--export` publish their
 * events (after the session's filter, as `evtrace cat --json` lines), the hardware monitor its decoded errors and
 * threshold crossings, the agent its status at an interval and a notice per trace-shot (the shot itself in the object
 * store when small enough), all through @evtrace/fleet's spooled publisher. Nothing here waits for NATS: the session
 * loop hands records to memory and, batch by batch, to the spool file.
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { SnapshotResult } from '@evtrace/agent-protocol';
import {
  authKind,
  type ConnectionFlagValues,
  connectionFromFlags,
  DEFAULT_STREAM,
  eventsChannel,
  type FleetConnectOptions,
  FleetError,
  FleetPublisher,
  type HardwareErrorRecord,
  serverList,
  type ThresholdRecord,
} from '@evtrace/fleet';
import {
  type DecodedMce,
  type EdacEvent,
  type ErrorLocation,
  edacSeverity,
  edacSummary,
  type ThresholdOutcome,
  type TrackerEvent,
} from '@evtrace/hw-mce';
import type { Command } from 'commander';
import pkg from '../../package.json' with { type: 'json' };
import type { NatsReport } from '../config/cli.ts';
import type { NatsConfig } from '../config/schema.ts';
import { addConnectionFlags } from '../nats-flags.ts';
import { parseDuration, parseSize } from '../units.ts';
import type { HardwareReport } from './hardware.ts';
import type { Session } from './session.ts';

/** The `evtrace agent` flags of the fleet export. */
export interface ExportCliOptions extends ConnectionFlagValues {
  host?: string;
  natsReplicas?: string;
  natsSpoolSize?: string;
  natsStatusInterval?: string;
  natsShotMaxSize?: string;
}

/** Adds the fleet flags to `evtrace agent`. */
export function addExportOptions(cmd: Command): void {
  cmd
    .option('--nats <url>', 'publish to NATS JetStream at URL (several separated by commas): see `evtrace help fleet`')
    .option('--host <name>', "this host's name in the fleet (default: the hostname up to its first dot)");
  addConnectionFlags(cmd)
    .option('--nats-replicas <n>', 'replicas of the stream it creates: 1, or 3 in a cluster (default 1)')
    .option(
      '--nats-spool-size <size>',
      'most bytes spooled while NATS is away (default 256M); more is dropped and counted',
    )
    .option('--nats-status-interval <time>', 'how often the agent publishes its status (default 10s)')
    .option('--nats-shot-max-size <size>', 'largest trace-shot stored in the object store (default 64M)');
}

/** What the export needs, from flags over the `[nats]` table over the environment. */
export interface ExportSettings {
  readonly host: string;
  readonly connection: FleetConnectOptions;
  readonly stream: string | undefined;
  readonly replicas: number;
  readonly spoolBytes: number;
  readonly statusIntervalMs: number;
  readonly shotMaxBytes: number;
}

function usage(message: string): never {
  throw new FleetError('ERR_FLEET_ARGUMENT', message);
}

/**
 * The export's settings, or undefined when neither `--nats` nor `[nats] url` asks for one.
 * @throws FleetError `ERR_FLEET_ARGUMENT` for a bad flag value.
 */
export function exportSettings(
  o: ExportCliOptions,
  file: NatsConfig | undefined,
  env: NodeJS.ProcessEnv = process.env,
): ExportSettings | undefined {
  const url = o.nats ?? file?.url;
  if (url === undefined) {
    if (o.host !== undefined) usage('--host names this host in the fleet: it needs --nats URL');
    return undefined;
  }
  const size = (flag: string, text: string | undefined) => {
    if (text === undefined) return undefined;
    const n = parseSize(text);
    return n === undefined || n < 4096 ? usage(`${flag} must be a size of at least 4K (64M, 1G), not '${text}'`) : n;
  };
  const replicas =
    o.natsReplicas === undefined
      ? undefined
      : /^[1-5]$/.test(o.natsReplicas)
        ? Number(o.natsReplicas)
        : usage(`--nats-replicas must be 1 to 5, not '${o.natsReplicas}'`);
  const interval =
    o.natsStatusInterval === undefined
      ? undefined
      : (parseDuration(o.natsStatusInterval) ??
        usage(`--nats-status-interval must be a duration (500ms, 10s, 1m), not '${o.natsStatusInterval}'`));
  const connection = connectionFromFlags({ ...o, nats: url }, env, {
    natsUser: file?.user,
    natsPassword: file?.password,
    natsToken: file?.token,
    natsCredentials: file?.credentials,
    natsTlsCa: file?.tlsCa,
    natsTlsCert: file?.tlsCert,
    natsTlsKey: file?.tlsKey,
  });
  return {
    host: o.host ?? file?.host ?? hostname().split('.')[0]!,
    connection: { ...connection, timeoutMs: 2000 },
    stream: o.natsStream ?? file?.stream,
    replicas: replicas ?? file?.replicas ?? 1,
    spoolBytes: size('--nats-spool-size', o.natsSpoolSize) ?? file?.spoolSize ?? 256 * 1024 * 1024,
    statusIntervalMs: interval ?? file?.statusInterval ?? 10_000,
    shotMaxBytes: size('--nats-shot-max-size', o.natsShotMaxSize) ?? file?.shotMaxSize ?? 64 * 1024 * 1024,
  };
}

/** What `--check-config` says of the export: its effective settings, how it authenticates but never the secret. */
export function natsReport(s: ExportSettings): NatsReport {
  const c = s.connection;
  const auth = authKind(c);
  return {
    url: serverList(c.servers).join(','),
    host: s.host,
    auth,
    ...(auth === 'user' && c.user !== undefined ? { user: c.user } : {}),
    ...(auth === 'credentials' && c.credentials !== undefined ? { credentials: c.credentials } : {}),
    stream: s.stream ?? DEFAULT_STREAM,
    replicas: s.replicas,
    spoolBytes: s.spoolBytes,
    statusIntervalMs: s.statusIntervalMs,
    shotMaxBytes: s.shotMaxBytes,
    tls: c.tls === undefined ? null : { ...c.tls },
  };
}

/** The DIMM an error is in, as the decoder places it (so errors and threshold crossings of one DIMM group together). */
function dimmOf(l: ErrorLocation): string | undefined {
  if (l.dimm === undefined && l.channel === undefined && l.chipSelect === undefined) return undefined;
  return [
    l.socket !== undefined ? `socket ${l.socket}` : '',
    l.channel !== undefined ? `channel ${l.channel}` : '',
    l.dimm !== undefined ? `dimm ${l.dimm}` : '',
    l.chipSelect !== undefined ? `cs ${l.chipSelect}` : '',
  ]
    .filter(Boolean)
    .join(' ');
}

/** What the agent publishes in its status. */
export interface StatusSource {
  list(): readonly {
    name: string;
    state: string;
    source: string;
    events: number;
    lost: number;
    bytes: number;
    cpus: readonly { cpu: number; lost: number }[];
    spec: { export?: boolean };
  }[];
}

/** One agent's export; see the module comment. */
export class FleetExport {
  readonly publisher: FleetPublisher;
  readonly settings: ExportSettings;
  readonly #log: (line: string) => void;
  #status: NodeJS.Timeout | undefined;
  /** Events each exporting session handed to the publisher since this agent started. */
  readonly #exported = new Map<string, number>();

  private constructor(publisher: FleetPublisher, settings: ExportSettings, log: (line: string) => void) {
    this.publisher = publisher;
    this.settings = settings;
    this.#log = log;
  }

  /**
   * Opens the spool under `stateDir` and connects. An unreachable server is logged (records wait in the spool);
   * refused credentials or a stream that does not fit are thrown.
   */
  static async start(settings: ExportSettings, stateDir: string, log: (line: string) => void): Promise<FleetExport> {
    const publisher = await FleetPublisher.start({
      host: settings.host,
      connection: settings.connection,
      stream: { ...(settings.stream !== undefined ? { name: settings.stream } : {}), replicas: settings.replicas },
      spoolDir: join(stateDir, 'fleet-spool'),
      spool: { maxBytes: settings.spoolBytes },
      shots: { maxBytes: settings.shotMaxBytes },
      log: (line) => log(`fleet: ${line}`),
    });
    return new FleetExport(publisher, settings, log);
  }

  /** Wires a session the agent opened: one created with `--export` publishes its events. */
  opened(session: Session): void {
    if (session.spec.export !== true) return;
    const channel = eventsChannel(session.name);
    this.#exported.set(session.name, 0);
    session.exports.add((json) => {
      this.publisher.add(channel, json);
      this.#exported.set(session.name, (this.#exported.get(session.name) ?? 0) + 1);
    });
    this.#log(`fleet: session ${session.name} exports its events to evtrace.${this.settings.host}.${channel}`);
  }

  /** A trace-shot was taken: stored (when small enough) and noticed. Runs in the background. */
  shot(session: Session, result: SnapshotResult, why: string): void {
    const name = result.path.split('/').at(-1)!;
    this.publisher
      .shot(result.path, { session: session.name, shot: name, events: result.events, format: result.format, why })
      .then(
        (r) => {
          if (!r.stored) this.#log(`fleet: trace-shot ${name} not stored: ${r.reason}`);
        },
        (error: Error) => this.#log(`fleet: trace-shot ${name}: ${error.message}`),
      );
  }

  /** What the hardware monitor reports, published on the `mce`, `edac` and `threshold` channels. */
  readonly hardware: HardwareReport = {
    mce: (d: DecodedMce) => {
      const dimm = dimmOf(d.location);
      const r: HardwareErrorRecord = {
        time: new Date().toISOString(),
        severity: d.severity,
        count: 1,
        ...(dimm !== undefined ? { dimm } : {}),
        bank: d.location.bank,
        cpu: d.location.cpu,
        ...(d.location.socket !== undefined ? { socket: d.location.socket } : {}),
        summary: d.summary,
      };
      this.publisher.add('mce', JSON.stringify(r));
    },
    edac: (e: EdacEvent) => {
      const r: HardwareErrorRecord = {
        time: new Date().toISOString(),
        severity: edacSeverity(e.errorType),
        count: e.count,
        dimm: e.label || `memory controller ${e.mc}`,
        summary: edacSummary(e),
      };
      this.publisher.add('edac', JSON.stringify(r));
    },
    threshold: (event: TrackerEvent, outcome: ThresholdOutcome) => {
      const dimm = dimmOf(event.record.location);
      const r: ThresholdRecord = {
        time: new Date().toISOString(),
        kind: event.kind,
        message: event.message,
        ...(dimm !== undefined ? { dimm } : {}),
        bank: event.record.location.bank,
        count: Number(event.env.TOTALCOUNT ?? 0) || 0,
        action: outcome.action,
        result: outcome.result,
      };
      this.publisher.add('threshold', JSON.stringify(r));
    },
  };

  /** Publishes the agent's status now and every interval: its sessions' counters and what the spool holds. */
  startStatus(agent: StatusSource): void {
    const send = () =>
      this.publisher.status({
        time: new Date().toISOString(),
        version: pkg.version,
        sessions: agent.list().map((s) => ({
          name: s.name,
          state: s.state,
          source: s.source,
          events: s.events,
          lost: s.lost,
          bytes: s.bytes,
          lostPerCpu: s.cpus.map((c) => c.lost),
          exported: this.#exported.get(s.name) ?? null,
        })),
      });
    send();
    this.#status = setInterval(send, this.settings.statusIntervalMs);
    this.#status.unref();
  }

  /** Waits a little for the stream to take what is spooled, and disconnects; the rest waits in the spool. */
  async close(): Promise<void> {
    clearInterval(this.#status);
    if (this.publisher.connected) await this.publisher.drain(2000);
    await this.publisher.close();
  }
}
