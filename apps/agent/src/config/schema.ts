/**
 * The agent's settings: their types, defaults, and how each is read from a TOML value, an environment variable or a
 * flag. One table of top-level settings drives all three sources, so a setting cannot exist in one and not another.
 */
import { isAbsolute, resolve } from 'node:path';
import { DURATION_SYNTAX, parseDuration, parseRotate, parseSize, SIZE_SYNTAX } from '../units.ts';
import { ConfigError, type ConfigOrigin } from './errors.ts';
import { LISTEN_SYNTAX, type ListenAddress, parseListenAddress } from './units.ts';

/** How a session treats a full buffer, as `evtrace session create --mode`. */
export type SessionMode = 'overwrite' | 'discard';
/** The formats `evtrace session create --format` writes. */
export type SessionFormat = 'tracedat' | 'ctf';
/** Where a session's events come from: the kernel's tracefs, the demo source, or whichever of the two is usable. */
export type SessionSource = 'kernel' | 'demo' | 'auto';

/** When a session's output moves on to a new file: after so many bytes, or after so much time. */
export type RotatePolicy =
  | { readonly bytes: number; readonly seconds?: undefined }
  | { readonly seconds: number; readonly bytes?: undefined };

/**
 * A session the agent creates (and, unless `start = false`, starts) when it boots: a `[sessions.NAME]` table. The
 * fields are those of `evtrace session create` (the protocol's session spec) plus `start`.
 */
export interface SessionConfig {
  readonly name: string;
  /** `SYSTEM:EVENT` names, globs allowed. */
  readonly events: readonly string[];
  /** An ftrace filter expression applied to every event of the session. */
  readonly filter?: string;
  readonly mode: SessionMode;
  /** Per-CPU buffer size in bytes. */
  readonly bufferSize: number;
  /**
   * Where the session writes its recording (`output`, and `format`: tracedat by default); without it the session only
   * keeps its buffer (a flight recorder).
   */
  readonly output?: { readonly dir: string; readonly format: SessionFormat };
  readonly rotate?: RotatePolicy;
  readonly source: SessionSource;
  /** Start recording at boot (default), or only create the session. */
  readonly start: boolean;
  /** Publish the session's events to the fleet (`[nats]`). */
  readonly export?: boolean;
}

/** mcelog's [page] memory-ce-action values: what a page whose corrected errors cross their threshold gets. */
export const PAGE_OFFLINE_ACTIONS = ['off', 'account', 'soft', 'hard', 'soft-then-hard'] as const;
export type PageOfflineAction = (typeof PAGE_OFFLINE_ACTIONS)[number];

/**
 * The `[hardware]` table: hardware monitoring as `evtrace agent --hardware` and its flags set it (a flag given wins
 * over its key). Paths are resolved against the config file's directory.
 */
export interface HardwareConfig {
  /** Run the hardware session (`--hardware`). */
  readonly enabled: boolean;
  readonly edacSysfs?: string;
  readonly nodeEdacMetrics?: boolean;
  readonly mcelog?: string;
  readonly mceInstance?: string;
  readonly mcelogConfig?: string;
  readonly runTriggers?: boolean;
  readonly pageOffline?: PageOfflineAction;
  readonly memorySysfs?: string;
}

/** Every key a `[hardware]` table may hold, each the flag of the same name (`edac_sysfs`: `--edac-sysfs`). */
export const HARDWARE_TABLE_KEYS: readonly string[] = [
  'enabled',
  'edac_sysfs',
  'node_edac_metrics',
  'mcelog',
  'mce_instance',
  'mcelog_config',
  'run_triggers',
  'page_offline',
  'memory_sysfs',
];

/**
 * The `[nats]` table: publishing to a fleet as `evtrace agent --nats` and its flags set it (a flag given wins over its
 * key). Paths are resolved against the config file's directory; sizes and durations take units.
 */
export interface NatsConfig {
  readonly url?: string;
  readonly host?: string;
  readonly credentials?: string;
  readonly user?: string;
  readonly password?: string;
  readonly token?: string;
  readonly tlsCa?: string;
  readonly tlsCert?: string;
  readonly tlsKey?: string;
  readonly stream?: string;
  readonly replicas?: number;
  readonly spoolSize?: number;
  readonly statusInterval?: number;
  readonly shotMaxSize?: number;
}

/** Every key a `[nats]` table may hold, each the flag of the same name with `nats-` before it (`tls_ca`: `--nats-tls-ca`). */
export const NATS_TABLE_KEYS: readonly string[] = [
  'url',
  'host',
  'credentials',
  'user',
  'password',
  'token',
  'tls_ca',
  'tls_cert',
  'tls_key',
  'stream',
  'replicas',
  'spool_size',
  'status_interval',
  'shot_max_size',
];

/** The agent's configuration after merging flags, environment, file and defaults. */
export interface AgentConfig {
  /** Path of the control socket. */
  readonly socket: string;
  /** Group whose members may use the control socket besides root (a name or a numeric gid); undefined: root only. */
  readonly group: string | undefined;
  /** Where the agent keeps its state (sessions it re-adopts after a restart, trace-shots). */
  readonly stateDir: string;
  /** Where the Prometheus endpoint listens; undefined: no endpoint (the default). */
  readonly metrics: ListenAddress | undefined;
  /** Per-CPU buffer size in bytes of sessions that name none. */
  readonly bufferSize: number;
  /** Mode of sessions that name none. */
  readonly mode: SessionMode;
  /** Sessions to create at boot, in file order. */
  readonly sessions: readonly SessionConfig[];
  /** The `[hardware]` table, when the file has one. */
  readonly hardware: HardwareConfig | undefined;
  /** The `[nats]` table, when the file has one. */
  readonly nats?: NatsConfig | undefined;
  /** The config file read, if any. */
  readonly file: string | undefined;
  /** Where each top-level setting came from, for `--check-config` and messages. */
  readonly origins: Readonly<Record<AgentSetting, ConfigOrigin>>;
}

/** A place a value was found, for error messages. */
export interface Site {
  readonly origin: ConfigOrigin;
  /** The dotted key in the config file (`sessions.flight.mode`). */
  readonly key: string;
  /** The directory relative paths are resolved against. */
  readonly base: string;
}

function bad(site: Site, message: string): never {
  throw new ConfigError('ERR_CONFIG_VALUE', message, { origin: site.origin, key: site.key });
}

/** Describes a value for an error message without dumping it whole. */
export function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}...` : value);
  if (typeof value === 'bigint') return `${value}`;
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Date) return 'a date';
  if (value !== null && typeof value === 'object') return 'a table';
  return String(value);
}

const isText = (value: unknown): value is string => typeof value === 'string';

function text(value: unknown, site: Site, what: string): string {
  if (!isText(value)) bad(site, `expected ${what} (a string), got ${show(value)}`);
  if (value.includes('\0')) bad(site, `${what} must not contain a NUL character`);
  return value;
}

/** A byte count from a TOML integer or a size string. */
export function sizeValue(value: unknown, site: Site): number {
  const bytes =
    typeof value === 'number' && Number.isSafeInteger(value) ? value : isText(value) ? parseSize(value) : undefined;
  if (bytes === undefined) bad(site, `expected ${SIZE_SYNTAX}, got ${show(value)}`);
  if (bytes < 4096) bad(site, `${show(value)} is less than one 4 KiB page`);
  return bytes;
}

export function modeValue(value: unknown, site: Site): SessionMode {
  if (value !== 'overwrite' && value !== 'discard') bad(site, `expected overwrite or discard, got ${show(value)}`);
  return value;
}

/** Unix socket paths are limited by sun_path: 107 bytes and a NUL. */
const SUN_PATH_MAX = 107;

function pathValue(value: unknown, site: Site, what: string): string {
  const t = text(value, site, what);
  if (t.trim() === '') bad(site, `${what} is empty`);
  return isAbsolute(t) ? t : resolve(site.base, t);
}

function socketValue(value: unknown, site: Site): string {
  const path = pathValue(value, site, 'a socket path');
  if (Buffer.byteLength(path) > SUN_PATH_MAX)
    bad(site, `the socket path ${show(path)} is longer than the ${SUN_PATH_MAX} bytes a Unix socket address holds`);
  return path;
}

function groupValue(value: unknown, site: Site): string {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return String(value);
  const t = text(value, site, 'a group name or gid');
  if (!/^(?:\d+|[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?)$/.test(t)) bad(site, `${show(t)} is not a group name or gid`);
  return t;
}

function metricsValue(value: unknown, site: Site): ListenAddress | undefined {
  if (value === false) return undefined;
  const address = isText(value) ? parseListenAddress(value) : undefined;
  if (address === undefined) bad(site, `expected ${LISTEN_SYNTAX}, got ${show(value)}`);
  return address ?? undefined;
}

/** The top-level settings, each readable from the file, the environment and a flag. */
export const SETTINGS = {
  // EVTRACE_AGENT_SOCKET is the variable `evtrace session` clients read: one setting reaches both ends.
  socket: { key: 'socket', env: 'EVTRACE_SOCKET', alias: 'EVTRACE_AGENT_SOCKET', flag: '--socket', parse: socketValue },
  group: { key: 'group', env: 'EVTRACE_GROUP', flag: '--group', parse: groupValue },
  stateDir: {
    key: 'state_dir',
    env: 'EVTRACE_STATE_DIR',
    flag: '--state-dir',
    parse: (v: unknown, s: Site) => pathValue(v, s, 'a directory'),
  },
  metrics: { key: 'metrics', env: 'EVTRACE_METRICS', flag: '--metrics', parse: metricsValue },
  bufferSize: { key: 'buffer_size', env: 'EVTRACE_BUFFER_SIZE', flag: '--buffer-size', parse: sizeValue },
  mode: { key: 'mode', env: 'EVTRACE_MODE', flag: '--mode', parse: modeValue },
} as const;

/** The name of a top-level setting. */
export type AgentSetting = keyof typeof SETTINGS;

/** What the settings are when nothing sets them. */
export const DEFAULTS: Readonly<Omit<AgentConfig, 'sessions' | 'hardware' | 'file' | 'origins'>> = {
  socket: '/run/evtrace/agent.sock',
  group: undefined,
  stateDir: '/var/lib/evtrace',
  metrics: undefined,
  bufferSize: 4 * 1024 * 1024,
  mode: 'discard',
};

/** The config file the agent reads when neither `--config` nor `EVTRACE_CONFIG` names one (it may be absent). */
export const DEFAULT_CONFIG_FILE = '/etc/evtrace/agent.toml';

/** The environment variable naming the config file. */
export const CONFIG_ENV = 'EVTRACE_CONFIG';

const SESSION_KEYS = [
  'events',
  'filter',
  'mode',
  'buffer_size',
  'output',
  'format',
  'rotate',
  'source',
  'start',
  'export',
] as const;

/** Every key a `[sessions.NAME]` table may hold. */
export const SESSION_TABLE_KEYS: readonly string[] = SESSION_KEYS;

const EVENT = /^[A-Za-z0-9_*?[\]-]+:[A-Za-z0-9_*?[\]-]+$/;
const SESSION_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;

/** Whether `name` can name a session: letters, digits, `_`, `.`, `-`, at most 64, not starting with `.` or `-`. */
export function validSessionName(name: string): boolean {
  return SESSION_NAME.test(name);
}

export function eventsValue(value: unknown, site: Site): string[] {
  const list = isText(value)
    ? [value]
    : Array.isArray(value)
      ? value
      : bad(site, `expected an array of SYSTEM:EVENT names, got ${show(value)}`);
  if (list.length === 0) bad(site, 'names no event');
  return list.map((e, i) => {
    if (!isText(e) || !EVENT.test(e))
      bad(site, `event ${i + 1}: expected SYSTEM:EVENT (globs allowed, e.g. kmem:*), got ${show(e)}`);
    return e;
  });
}

function rotateValue(value: unknown, site: Site): RotatePolicy {
  if (typeof value === 'number') return { bytes: sizeValue(value, site) };
  const rotate = isText(value) ? parseRotate(value) : undefined;
  if (rotate !== undefined) {
    if ('seconds' in rotate) {
      if (rotate.seconds < 1) bad(site, `rotating more than once a second (${show(value)}) is not supported`);
      return rotate;
    }
    return { bytes: sizeValue(value, site) };
  }
  return bad(site, `expected a size with a unit (100MiB) or ${DURATION_SYNTAX}, got ${show(value)}`);
}

function oneOf<T extends string>(value: unknown, site: Site, choices: readonly T[]): T {
  if (!choices.includes(value as T)) bad(site, `expected ${choices.join(' or ')}, got ${show(value)}`);
  return value as T;
}

/**
 * One `[sessions.NAME]` table, with the agent's defaults for mode and buffer size. `at(key)` gives the site of one of
 * its keys; unknown keys are the caller's business.
 */
export function sessionValue(
  name: string,
  table: Readonly<Record<string, unknown>>,
  at: (key?: string) => Site,
  defaults: { mode: SessionMode; bufferSize: number },
): SessionConfig {
  if (!validSessionName(name))
    bad(at(), `${show(name)} is not a session name (letters, digits, _ . -; at most 64; not starting with . or -)`);
  if (!Object.hasOwn(table, 'events')) bad(at(), 'a session needs events = ["SYSTEM:EVENT", ...]');
  const get = <T>(key: string, parse: (v: unknown, s: Site) => T): T | undefined =>
    Object.hasOwn(table, key) ? parse(table[key], at(key)) : undefined;
  const filter = get('filter', (v, s) => text(v, s, 'a filter expression'));
  const output = get('output', (v, s) => pathValue(v, s, 'an output path'));
  const format = get('format', (v, s) => oneOf(v, s, ['tracedat', 'ctf'] as const));
  const rotate = get('rotate', rotateValue);
  if (output === undefined && format !== undefined) bad(at('format'), 'format needs an output');
  if (output === undefined && rotate !== undefined) bad(at('rotate'), 'rotate needs an output');
  const start = get('start', (v, s) => (typeof v === 'boolean' ? v : bad(s, `expected true or false, got ${show(v)}`)));
  const exported = get('export', (v, s) =>
    typeof v === 'boolean' ? v : bad(s, `expected true or false, got ${show(v)}`),
  );
  return {
    name,
    events: get('events', eventsValue)!,
    ...(filter !== undefined ? { filter } : {}),
    mode: get('mode', modeValue) ?? defaults.mode,
    bufferSize: get('buffer_size', sizeValue) ?? defaults.bufferSize,
    ...(output !== undefined ? { output: { dir: output, format: format ?? 'tracedat' } } : {}),
    ...(rotate !== undefined ? { rotate } : {}),
    source: get('source', (v, s) => oneOf(v, s, ['kernel', 'demo', 'auto'] as const)) ?? 'auto',
    start: start ?? true,
    ...(exported === true ? { export: true } : {}),
  };
}

const flag = (value: unknown, site: Site): boolean =>
  typeof value === 'boolean' ? value : bad(site, `expected true or false, got ${show(value)}`);

/** The `[hardware]` table. `at(key)` gives the site of one of its keys; unknown keys are the caller's business. */
export function hardwareValue(table: Readonly<Record<string, unknown>>, at: (key?: string) => Site): HardwareConfig {
  const get = <T>(key: string, parse: (v: unknown, s: Site) => T): T | undefined =>
    Object.hasOwn(table, key) ? parse(table[key], at(key)) : undefined;
  const path = (what: string) => (v: unknown, s: Site) => pathValue(v, s, what);
  const instance = get('mce_instance', (v, s) => {
    const t = text(v, s, 'a tracefs instance name');
    if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(t)) bad(s, `${show(t)} is not a tracefs instance name`);
    return t;
  });
  const entries: [keyof HardwareConfig, unknown][] = [
    ['edacSysfs', get('edac_sysfs', path('a directory'))],
    ['nodeEdacMetrics', get('node_edac_metrics', flag)],
    ['mcelog', get('mcelog', path('a device path'))],
    ['mceInstance', instance],
    ['mcelogConfig', get('mcelog_config', path('an mcelog.conf path'))],
    ['runTriggers', get('run_triggers', flag)],
    ['pageOffline', get('page_offline', (v, s) => oneOf(v, s, PAGE_OFFLINE_ACTIONS))],
    ['memorySysfs', get('memory_sysfs', path('a directory'))],
  ];
  return {
    enabled: get('enabled', flag) ?? true,
    ...Object.fromEntries(entries.filter(([, v]) => v !== undefined)),
  };
}

/** The `[nats]` table. `at(key)` gives the site of one of its keys; unknown keys are the caller's business. */
export function natsValue(table: Readonly<Record<string, unknown>>, at: (key?: string) => Site): NatsConfig {
  const get = <T>(key: string, parse: (v: unknown, s: Site) => T): T | undefined =>
    Object.hasOwn(table, key) ? parse(table[key], at(key)) : undefined;
  const str = (what: string) => (v: unknown, s: Site) => text(v, s, what);
  const path = (what: string) => (v: unknown, s: Site) => pathValue(v, s, what);
  const duration = (v: unknown, s: Site) => {
    const ms = isText(v) ? parseDuration(v) : undefined;
    if (ms === undefined || ms < 100) bad(s, `expected ${DURATION_SYNTAX} of at least 100ms, got ${show(v)}`);
    return ms;
  };
  const replicas = (v: unknown, s: Site) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 5)
      bad(s, `expected 1 to 5 replicas, got ${show(v)}`);
    return v;
  };
  const entries: [keyof NatsConfig, unknown][] = [
    ['url', get('url', str('a NATS URL (nats://host:port, several separated by commas)'))],
    ['host', get('host', str('a host name'))],
    ['credentials', get('credentials', path('a credentials file'))],
    ['user', get('user', str('a user name'))],
    ['password', get('password', str('a password'))],
    ['token', get('token', str('a token'))],
    ['tlsCa', get('tls_ca', path('a CA certificate file'))],
    ['tlsCert', get('tls_cert', path('a certificate file'))],
    ['tlsKey', get('tls_key', path('a key file'))],
    ['stream', get('stream', str('a stream name'))],
    ['replicas', get('replicas', replicas)],
    ['spoolSize', get('spool_size', sizeValue)],
    ['statusInterval', get('status_interval', duration)],
    ['shotMaxSize', get('shot_max_size', sizeValue)],
  ];
  return Object.fromEntries(entries.filter(([, v]) => v !== undefined));
}
