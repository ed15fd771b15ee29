import type { Socket } from 'node:net';
import { homedir, setPriority } from 'node:os';
import { join } from 'node:path';
import { defaultSocketPath } from '@evtrace/agent-protocol';
import type { Command } from 'commander';
import { addCommand, type CliIO } from '../command.ts';
import { bootSessions } from '../config/boot.ts';
import {
  type AgentConfigCliOptions,
  addConfigOptions,
  agentConfigFromCli,
  configReport,
  configReportJson,
} from '../config/cli.ts';
import { Agent } from '../daemon/agent.ts';
import { addExportOptions, type ExportCliOptions, exportSettings, FleetExport, natsReport } from '../daemon/export.ts';
import { addHardwareOptions, HARDWARE_OPTION_NAMES, Hardware, type HardwareCliOptions } from '../daemon/hardware.ts';
import { type SystemdNotifier, systemdNotifier } from '../daemon/sd-notify.ts';
import { listen } from '../daemon/server.ts';
import type { Session } from '../daemon/session.ts';
import { CliCode, CliExit, ExitCode, errorCodeOf, usageError } from '../exit-codes.ts';
import { setExamples } from '../help.ts';
import { type MetricsServer, startMetricsServer } from '../metrics/server.ts';
import { onStopSignals } from '../signals.ts';

/** Options of `evtrace agent`; the config layer fills the same names. */
export interface AgentCliOptions extends AgentConfigCliOptions, HardwareCliOptions, ExportCliOptions {
  tracefs?: string;
  maxSessions?: string;
  maxViewers?: string;
  demoRate?: string;
}

/** Where the agent keeps its state unless told: /var/lib/evtrace for root, the XDG state directory otherwise. */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env, uid = process.getuid?.() ?? 0): string {
  if (uid === 0) return '/var/lib/evtrace';
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'evtrace');
}

/** The options among `names` that were given. */
function definedOnly<T extends object>(options: T, names: readonly (keyof T)[]): Partial<T> {
  return Object.fromEntries(names.filter((n) => options[n] !== undefined).map((n) => [n, options[n]])) as Partial<T>;
}

function count(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) === 0) throw usageError(`${name} must be a positive integer, not '${text}'`);
  return Number(text);
}

/** `evtrace agent`: the collector daemon, in the foreground. */
export function registerAgent(program: Command, io: CliIO): void {
  const cmd = addCommand(program, 'agent')
    .summary('run the collector agent (sessions, flight recording, live views) in the foreground')
    .description(
      `Runs the evtrace collector until a stop signal (below). It is controlled over a Unix socket (mode 0660 with --group,
else 0600, in a 0750 directory) with the JSON-lines protocol of @evtrace/agent-protocol (PROTOCOL.md); each peer's
credentials are checked (SO_PEERCRED): root, the agent's own user, and members of --group may connect. Use
\`evtrace session\` to create and drive sessions, \`evtrace cat --live SESSION\` to watch one.
Each session has its own tracefs instance (kernel source) and per-CPU ring buffers. Its state is kept in
STATE-DIR/sessions/NAME/state.json: after the agent was killed (kill -9), the next agent re-adopts the tracefs
instances that still exist (keeping what they buffered) or re-creates the sessions, finishes the .part outputs left
behind, removes evtrace instances no session claims, and says which on stderr. Trace-shots triggered by events or
signals go to STATE-DIR/snapshots. SIGUSR1 and SIGUSR2 take trace-shots of the sessions with a matching signal
trigger. On SIGTERM, SIGINT, SIGQUIT or SIGHUP every session is stopped, its output finished and its instance
removed, and the agent exits with status 0, as \`evtrace record\` does; a signal during that is ignored. SIGHUP stops
it too (a foreground agent whose terminal closes) rather than reloading the configuration, which names the socket, the
state directory and the boot sessions: restart the agent to apply a change. As root the agent
raises its priority (nice -20; \`evtrace record\` goes further, to SCHED_FIFO, for the length of a recording), so that
it keeps up with the load it records.
With --hardware the agent runs a session named "hardware" (source mce): machine checks (tracefs mce:mce_record, else
/dev/mcelog) and memory errors (ras:mc_event, else EDAC counter growth), decoded by @evtrace/hw-mce; the metrics
endpoint adds per-DIMM EDAC counters and machine checks per bank and per DIMM, and with --node-edac-metrics the
per-controller counts under node_exporter's node_edac_* names (leave it off where node_exporter runs its edac collector);
a leaky-bucket threshold crossed (--mcelog-config, mcelog.conf's format) becomes an evtrace:mce_threshold event of
the session (what was crossed, where, the count, the action taken and its result), takes a trace-shot of every running
session and, with --run-triggers, runs the configured trigger command with mcelog's environment. A page whose
corrected errors cross [page] memory-ce-threshold is offlined through sysfs as memory-ce-action (or --page-offline)
says: soft, hard or soft-then-hard (account: counted only; off: not tracked); a refusal (EBUSY...) is logged and counted
in evtrace_mce_threshold_crossings_total{result="failed"}, and the page stays eligible. A [hardware] table in the config
file sets the same: enabled (--hardware), edac_sysfs, node_edac_metrics, mcelog, mce_instance, mcelog_config,
run_triggers, page_offline and memory_sysfs; a flag given wins over its key.`,
    )
    .option('--socket <path>', `control socket (default ${defaultSocketPath()}; env EVTRACE_AGENT_SOCKET)`)
    .option('--group <name>', 'members of this group may control the agent (socket mode 0660)')
    .option('--state-dir <dir>', `where session state and trace-shots are kept (default ${defaultStateDir()})`)
    .option('--tracefs <dir>', 'the tracefs mount point (default: found, mounted when root)')
    .option('--max-sessions <n>', 'most sessions at once', '32')
    .option('--max-viewers <n>', 'most live viewers at once', '64')
    .option('--demo-rate <n>', 'events per second per CPU of demo sessions', '5000')
    .action(async (options: AgentCliOptions) => {
      await runAgent(options, io);
    });
  // --config, --metrics, --buffer-size, --mode, --check-config: flags over EVTRACE_* over the config file.
  addConfigOptions(cmd);
  addHardwareOptions(cmd);
  addExportOptions(cmd);
  setExamples(
    cmd,
    `evtrace agent                                        foreground, default socket and state directory
evtrace agent --group evtrace --socket /run/evtrace/agent.sock
evtrace agent --state-dir /tmp/st --socket /tmp/st/agent.sock   then: EVTRACE_AGENT_SOCKET=/tmp/st/agent.sock evtrace session list`,
  );
}

/** Runs the agent until SIGHUP, SIGINT, SIGQUIT or SIGTERM. */
export async function runAgent(options: AgentCliOptions, io: CliIO): Promise<void> {
  const log = (line: string) => io.stderr(`evtrace agent: ${line}\n`);
  const config = agentConfigFromCli(options, process.env, {
    settings: { socket: defaultSocketPath(), stateDir: defaultStateDir() },
  });
  if (options.json === true && options.checkConfig !== true) throw usageError('--json goes with --check-config');
  // A fleet error keeps its code: exitCodeOf makes ERR_FLEET_ARGUMENT a usage error.
  const settings = exportSettings(options, config.nats);
  if (options.checkConfig === true) {
    const nats = settings !== undefined ? natsReport(settings) : undefined;
    io.stdout(options.json === true ? configReportJson(config, nats) : configReport(config, nats));
    return;
  }
  const { socket, stateDir } = config;
  const maxSessions = count('--max-sessions', options.maxSessions);
  const maxViewers = count('--max-viewers', options.maxViewers);
  const demoRate = count('--demo-rate', options.demoRate);
  let hardware: Hardware | undefined;
  // A flag given wins over its [hardware] key.
  const hw = { ...config.hardware, ...definedOnly(options, HARDWARE_OPTION_NAMES) };
  try {
    if ((options.hardware ?? config.hardware?.enabled) === true)
      hardware = new Hardware({
        ...hw,
        log,
        ...(options.tracefs !== undefined ? { tracefs: options.tracefs } : {}),
      });
  } catch (error) {
    // The hardware options are the command line's: a usage error, with the code of the package that refused them.
    throw new CliExit(errorCodeOf(error), (error as Error).message, ExitCode.Usage);
  }
  let fleet: FleetExport | undefined;
  if (settings !== undefined) fleet = await FleetExport.start(settings, stateDir, log);
  if (fleet !== undefined && hardware !== undefined) hardware.report = fleet.hardware;
  const agent = new Agent({
    stateDir,
    log,
    ...(options.tracefs !== undefined ? { tracefs: options.tracefs } : {}),
    ...(maxSessions !== undefined ? { maxSessions } : {}),
    ...(maxViewers !== undefined ? { maxViewers } : {}),
    ...(demoRate !== undefined ? { demoRate } : {}),
    ...(hardware !== undefined ? { sources: hardware.sources } : {}),
    ...(fleet !== undefined ? { opened: (s: Session) => fleet.opened(s), shot: fleet.shot.bind(fleet) } : {}),
  });
  let server: Awaited<ReturnType<typeof listen>>;
  let metrics: MetricsServer | undefined;
  try {
    for (const line of await agent.recover()) log(line);
    if (config.metrics !== undefined) metrics = await startMetricsServer(config.metrics, agent);
    for (const m of hardware?.metrics() ?? []) metrics?.registerCollector(m);
    server = await listen(agent, { socket, log, ...(config.group !== undefined ? { group: config.group } : {}) });
  } catch (error) {
    agent.close();
    await metrics?.close();
    await fleet?.close();
    throw error;
  }
  const connections = new Set<Socket>();
  server.on('connection', (c) => {
    connections.add(c);
    c.on('close', () => connections.delete(c));
  });
  if (metrics !== undefined) log(`metrics at ${metrics.url}`);
  const boot = {
    has: (name: string) => agent.sessionsByName.has(name),
    create: agent.create.bind(agent),
    start: agent.start.bind(agent),
  };
  for (const line of await bootSessions(config.sessions, boot)) log(line);
  if (hardware !== undefined) log(await hardware.boot(agent));
  fleet?.startStatus(agent);
  log(`listening on ${socket} (pid ${process.pid}, state in ${stateDir})`);
  // Under systemd's Type=notify: ready once the socket listens, then the watchdog's pings (sd-notify.ts).
  let systemd: SystemdNotifier | undefined;
  try {
    systemd = systemdNotifier();
    systemd?.ready(`listening on ${socket}`);
  } catch (error) {
    agent.close();
    server.close();
    await metrics?.close();
    throw new CliExit(CliCode.Io, (error as Error).message);
  }
  // The reading loop must not starve under the load it records (as `evtrace record`'s reader): root raises it.
  if (process.getuid?.() === 0) {
    try {
      setPriority(0, -20);
    } catch {}
  }
  // Held until the agent has stopped: a second signal must not cut the outputs short.
  const stopping = Promise.withResolvers<void>();
  const signals = onStopSignals(
    (signal) => {
      log(`${signal}: stopping every session`);
      stopping.resolve();
    },
    (signal) => log(`${signal}: already stopping`),
  );
  await stopping.promise;
  systemd?.stopping();
  systemd?.close();
  agent.close();
  await metrics?.close();
  await fleet?.close();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  for (const c of connections) c.end();
  setTimeout(() => {
    for (const c of connections) c.destroy();
  }, 500).unref();
  await closed;
  log('stopped');
  signals.dispose();
}
