/**
 * The configuration as `evtrace agent` sees it: the flags that override settings, the file the CLI reads by default,
 * configuration errors as usage errors (exit status 2), and the `--check-config` report.
 */
import type { Command } from 'commander';
import { describeOrigin } from './errors.ts';
import { type AgentFlags, loadAgentConfig } from './load.ts';
import { type AgentConfig, type AgentSetting, DEFAULT_CONFIG_FILE, DEFAULTS, SETTINGS } from './schema.ts';
import { formatListenAddress } from './units.ts';

/** The options `evtrace agent` parses that concern the configuration. */
export interface AgentConfigCliOptions extends AgentFlags {
  readonly checkConfig?: boolean;
  readonly json?: boolean;
}

/**
 * Adds the configuration flags `evtrace agent` lacks among `--config`, `--socket`, `--group`, `--state-dir`,
 * `--metrics`, `--buffer-size`, `--mode` and `--check-config` (a command may already define some with its own help).
 */
export function addConfigOptions(cmd: Command): Command {
  const has = (flag: string) => cmd.options.some((o) => o.long === flag);
  const add = (flags: string, help: string) => {
    if (!has(flags.split(' ')[0]!)) cmd.option(flags, help);
  };
  add('--config <file>', `config file (default ${DEFAULT_CONFIG_FILE} if it exists; env EVTRACE_CONFIG)`);
  add('--socket <path>', `control socket (default ${DEFAULTS.socket}; env EVTRACE_SOCKET)`);
  add('--group <name>', 'members of this group may use the control socket (env EVTRACE_GROUP)');
  add('--state-dir <dir>', `where the agent keeps its state (default ${DEFAULTS.stateDir}; env EVTRACE_STATE_DIR)`);
  add(
    '--metrics <addr>',
    'serve Prometheus metrics on HOST:PORT, e.g. 127.0.0.1:9464, or off (default; env EVTRACE_METRICS)',
  );
  add(
    '--buffer-size <size>',
    'per-CPU buffer of config-file sessions that name none, e.g. 16MiB (default 4MiB; env EVTRACE_BUFFER_SIZE)',
  );
  add(
    '--mode <mode>',
    'overwrite or discard, for config-file sessions that name none (default discard; env EVTRACE_MODE)',
  );
  add('--check-config', 'check the configuration, print the effective settings and where each came from, and exit');
  add('--json', 'with --check-config: print the report as one JSON object (schemas/check-config.json)');
  return cmd;
}

/**
 * Loads the agent's configuration from the parsed options, the environment and the default config file.
 *
 * @throws {ConfigError} naming the place (file:line:column: key: what); {@link exitCodeOf} makes it exit status 2.
 */
export function agentConfigFromCli(
  options: AgentConfigCliOptions,
  env: Readonly<Record<string, string | undefined>> = process.env,
  defaults: { file?: string; settings?: Partial<Pick<AgentConfig, AgentSetting>> } = {},
): AgentConfig {
  const flags: Record<string, string> = {};
  for (const name of ['config', ...Object.keys(SETTINGS)] as const) {
    const value = options[name as keyof AgentFlags];
    if (typeof value === 'string') flags[name] = value;
  }
  return loadAgentConfig({
    flags,
    env,
    file: defaults.file ?? DEFAULT_CONFIG_FILE,
    ...(defaults.settings !== undefined ? { defaults: defaults.settings } : {}),
  });
}

const SIZE_UNITS: [number, string][] = [
  [1024 ** 3, 'GiB'],
  [1024 ** 2, 'MiB'],
  [1024, 'KiB'],
];

function formatSize(bytes: number): string {
  for (const [scale, unit] of SIZE_UNITS) if (bytes % scale === 0) return `${bytes / scale}${unit}`;
  return `${bytes}B`;
}

function formatSetting(config: AgentConfig, name: AgentSetting): string {
  switch (name) {
    case 'metrics':
      return config.metrics === undefined ? 'off' : formatListenAddress(config.metrics);
    case 'bufferSize':
      return formatSize(config.bufferSize);
    case 'group':
      return config.group ?? '(none: root only)';
    default:
      return String(config[name]);
  }
}

/** A setting's value as `--check-config --json` gives it: sizes in bytes, the metrics address as HOST:PORT, none as null. */
function settingValue(config: AgentConfig, name: AgentSetting): string | number | null {
  switch (name) {
    case 'metrics':
      return config.metrics === undefined ? null : formatListenAddress(config.metrics);
    case 'group':
      return config.group ?? null;
    default:
      return config[name];
  }
}

/** The fleet export's effective settings as `--check-config` reports them: how it authenticates, never the secret. */
export interface NatsReport {
  readonly url: string;
  readonly host: string;
  readonly auth: 'none' | 'user' | 'token' | 'credentials';
  readonly user?: string;
  readonly credentials?: string;
  readonly stream: string;
  readonly replicas: number;
  readonly spoolBytes: number;
  readonly statusIntervalMs: number;
  readonly shotMaxBytes: number;
  readonly tls: { readonly ca?: string; readonly cert?: string; readonly key?: string } | null;
}

/** The `--check-config --json` report (schemas/check-config.json): the text report's facts, each value typed. */
export function configReportJson(config: AgentConfig, nats?: NatsReport): string {
  const settings = Object.fromEntries(
    (Object.keys(SETTINGS) as AgentSetting[]).map((n) => [
      SETTINGS[n].key,
      { value: settingValue(config, n), origin: config.origins[n] },
    ]),
  );
  return `${JSON.stringify({
    file: config.file ?? null,
    settings,
    sessions: config.sessions,
    hardware: config.hardware ?? null,
    nats: nats ?? null,
  })}\n`;
}

/** The `--check-config` report: every setting, its value and its origin, then the sessions declared. */
export function configReport(config: AgentConfig, nats?: NatsReport): string {
  const lines = [`config file: ${config.file ?? '(none)'}`];
  const names = Object.keys(SETTINGS) as AgentSetting[];
  const width = Math.max(...names.map((n) => SETTINGS[n].key.length));
  const values = names.map((n) => formatSetting(config, n));
  const valueWidth = Math.max(...values.map((v) => v.length));
  names.forEach((n, i) => {
    lines.push(
      `  ${SETTINGS[n].key.padEnd(width)}  ${values[i]!.padEnd(valueWidth)}  (${describeOrigin(config.origins[n])})`,
    );
  });
  lines.push(`sessions: ${config.sessions.length === 0 ? '(none)' : ''}`.trimEnd());
  for (const s of config.sessions) {
    const parts = [
      `events ${s.events.join(',')}`,
      s.mode,
      formatSize(s.bufferSize),
      s.source,
      ...(s.filter !== undefined ? [`filter ${JSON.stringify(s.filter)}`] : []),
      ...(s.output !== undefined ? [`output ${s.output.dir} (${s.output.format})`] : []),
      ...(s.rotate?.bytes !== undefined ? [`rotate ${formatSize(s.rotate.bytes)}`] : []),
      ...(s.rotate?.seconds !== undefined ? [`rotate ${s.rotate.seconds}s`] : []),
      s.start ? 'started at boot' : 'created at boot, not started',
    ];
    lines.push(`  ${s.name}: ${parts.join('; ')}`);
  }
  const hw = config.hardware;
  if (hw === undefined) lines.push('hardware: (no [hardware] table)');
  else {
    const keys: [string, unknown][] = [
      ['edac_sysfs', hw.edacSysfs],
      ['node_edac_metrics', hw.nodeEdacMetrics],
      ['mcelog', hw.mcelog],
      ['mce_instance', hw.mceInstance],
      ['mcelog_config', hw.mcelogConfig],
      ['run_triggers', hw.runTriggers],
      ['page_offline', hw.pageOffline],
      ['memory_sysfs', hw.memorySysfs],
    ];
    const set = keys.filter(([, v]) => v !== undefined).map(([k, v]) => `${k} ${v}`);
    lines.push(`hardware: ${hw.enabled ? 'enabled' : 'disabled'}${set.length > 0 ? `; ${set.join('; ')}` : ''}`);
  }
  if (nats === undefined) lines.push('nats: (no export: neither --nats nor [nats] url)');
  else {
    const auth =
      nats.auth === 'user'
        ? `user ${nats.user}`
        : nats.auth === 'credentials'
          ? `credentials file ${nats.credentials}`
          : nats.auth;
    const tls =
      nats.tls === null
        ? 'off'
        : Object.entries(nats.tls)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ') || 'on';
    lines.push(`nats: ${nats.url}`);
    lines.push(`  host ${nats.host}; auth ${auth}; tls ${tls}`);
    lines.push(
      `  stream ${nats.stream}, ${nats.replicas} replica${nats.replicas === 1 ? '' : 's'}; spool ${formatSize(nats.spoolBytes)}; status every ${nats.statusIntervalMs / 1000}s; trace-shots stored up to ${formatSize(nats.shotMaxBytes)}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
