/**
 * Loading the agent's configuration: command-line flags over environment variables over the config file over
 * defaults. Every problem is a {@link ConfigError} naming where it is (file:line:column and key, variable, or flag).
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse, TomlError } from 'smol-toml';
import { ConfigError, type ConfigOrigin } from './errors.ts';
import { type KeyPositions, locateKeys } from './locate.ts';
import {
  type AgentConfig,
  type AgentSetting,
  CONFIG_ENV,
  DEFAULTS,
  HARDWARE_TABLE_KEYS,
  hardwareValue,
  NATS_TABLE_KEYS,
  natsValue,
  SESSION_TABLE_KEYS,
  SETTINGS,
  type SessionConfig,
  type Site,
  sessionValue,
  show,
} from './schema.ts';

/** The flags of `evtrace agent` that override settings, as Commander hands them over (strings). */
export interface AgentFlags {
  readonly config?: string | undefined;
  readonly socket?: string | undefined;
  readonly group?: string | undefined;
  readonly stateDir?: string | undefined;
  readonly metrics?: string | undefined;
  readonly bufferSize?: string | undefined;
  readonly mode?: string | undefined;
}

/** Inputs of {@link loadAgentConfig}. */
export interface LoadAgentConfigOptions {
  /** Command-line flags; they win over everything. */
  readonly flags?: AgentFlags;
  /** The environment (`process.env`); `EVTRACE_*` variables win over the file. Empty variables count as unset. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * The config file to read when neither `--config` nor `EVTRACE_CONFIG` names one; it may be absent. The CLI passes
   * {@link DEFAULT_CONFIG_FILE}. A file named by the flag or the variable must exist.
   */
  readonly file?: string;
  /** Defaults that replace {@link DEFAULTS} (the CLI's depend on the user: a socket under XDG_RUNTIME_DIR, ...). */
  readonly defaults?: Partial<Pick<AgentConfig, AgentSetting>>;
}

/** A parsed config file: its top-level table and where each key is written. */
export interface ConfigFile {
  readonly file: string;
  readonly table: Readonly<Record<string, unknown>>;
  readonly positions: KeyPositions;
}

const TOP_KEYS: readonly string[] = [...Object.values(SETTINGS).map((s) => s.key), 'sessions', 'hardware', 'nats'];

/** Largest config file read: a config is a few kilobytes; anything near this is a mistake (a log, a core file). */
export const MAX_CONFIG_BYTES = 1 << 20;

/**
 * Parses a config file's text and checks that every key is one the configuration has. Values are checked by
 * {@link resolveAgentConfig}, after the environment and flags that override them are known.
 */
export function parseConfigFile(text: string, file: string): ConfigFile {
  let table: Record<string, unknown>;
  try {
    table = parse(text, { integersAsBigInt: 'asNeeded', maxDepth: 16 });
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    const message = error.message.replace(/^Invalid TOML document: /, '').split('\n')[0]!;
    throw new ConfigError('ERR_CONFIG_SYNTAX', `not valid TOML: ${message}`, {
      origin: { kind: 'file', file, line: error.line, column: error.column },
      cause: error,
    });
  }
  const positions = locateKeys(text);
  const at = (path: readonly string[]): ConfigOrigin => ({ kind: 'file', file, ...positions.find(path) });
  const unknown = (path: readonly string[], known: readonly string[], where: string): never => {
    const key = path.at(-1)!;
    const near = suggestion(key, known);
    throw new ConfigError(
      'ERR_CONFIG_UNKNOWN_KEY',
      `unknown key ${show(key)} ${where}${near !== undefined ? ` (did you mean ${near}?)` : ''}; known keys: ${known.join(', ')}`,
      { origin: at(path), key: dotted(path) },
    );
  };
  for (const key of Object.keys(table)) if (!TOP_KEYS.includes(key)) unknown([key], TOP_KEYS, 'at the top level');
  if (Object.hasOwn(table, 'sessions')) {
    const sessions = table.sessions;
    if (!isTable(sessions))
      throw new ConfigError('ERR_CONFIG_VALUE', `expected [sessions.NAME] tables, got ${show(sessions)}`, {
        origin: at(['sessions']),
        key: 'sessions',
      });
    for (const [name, session] of Object.entries(sessions)) {
      if (!isTable(session))
        throw new ConfigError('ERR_CONFIG_VALUE', `expected a [sessions.NAME] table, got ${show(session)}`, {
          origin: at(['sessions', name]),
          key: dotted(['sessions', name]),
        });
      for (const key of Object.keys(session))
        if (!SESSION_TABLE_KEYS.includes(key))
          unknown(['sessions', name, key], SESSION_TABLE_KEYS, `in session ${show(name)}`);
    }
  }
  if (Object.hasOwn(table, 'hardware')) {
    const hardware = table.hardware;
    if (!isTable(hardware))
      throw new ConfigError('ERR_CONFIG_VALUE', `expected a [hardware] table, got ${show(hardware)}`, {
        origin: at(['hardware']),
        key: 'hardware',
      });
    for (const key of Object.keys(hardware))
      if (!HARDWARE_TABLE_KEYS.includes(key)) unknown(['hardware', key], HARDWARE_TABLE_KEYS, 'in [hardware]');
  }
  if (Object.hasOwn(table, 'nats')) {
    const nats = table.nats;
    if (!isTable(nats))
      throw new ConfigError('ERR_CONFIG_VALUE', `expected a [nats] table, got ${show(nats)}`, {
        origin: at(['nats']),
        key: 'nats',
      });
    for (const key of Object.keys(nats))
      if (!NATS_TABLE_KEYS.includes(key)) unknown(['nats', key], NATS_TABLE_KEYS, 'in [nats]');
  }
  return { file, table, positions };
}

const isTable = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date);

/** `sessions.flight.mode`; segments that are not bare keys are quoted, as TOML writes them. */
function dotted(path: readonly string[]): string {
  return path.map((s) => (/^[A-Za-z0-9_-]+$/.test(s) ? s : JSON.stringify(s))).join('.');
}

/** The known key closest to a misspelt one, if it is close (edit distance at most 2). */
function suggestion(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const k of known) {
    const d = editDistance(key.toLowerCase(), k);
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  let row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}

/** Merges flags, environment, a parsed config file and defaults, checking every value. */
export function resolveAgentConfig(options: {
  readonly flags?: AgentFlags;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly config?: ConfigFile;
  readonly defaults?: Partial<Pick<AgentConfig, AgentSetting>>;
}): AgentConfig {
  const { flags = {}, env = {}, config } = options;
  const defaults = { ...DEFAULTS, ...options.defaults };
  const cwd = process.cwd();
  // A value's problem points at the value; a table's (a session lacking events) at its header.
  const fileSite = (path: readonly string[]): Site => ({
    origin: { kind: 'file', file: config!.file, ...config!.positions.findValue(path) },
    key: dotted(path),
    base: dirname(config!.file),
  });
  const values: Record<string, unknown> = {};
  const origins = {} as Record<AgentSetting, ConfigOrigin>;
  for (const [name, setting] of Object.entries(SETTINGS) as [AgentSetting, (typeof SETTINGS)[AgentSetting]][]) {
    const flag = flags[name];
    const alias = 'alias' in setting ? setting.alias : undefined;
    const fromEnv = env[setting.env] !== undefined && env[setting.env] !== '' ? setting.env : alias;
    const variable = fromEnv !== undefined ? env[fromEnv] : undefined;
    let site: Site | undefined;
    let raw: unknown;
    if (flag !== undefined) {
      site = { origin: { kind: 'flag', flag: setting.flag }, key: setting.key, base: cwd };
      raw = flag;
    } else if (variable !== undefined && variable !== '') {
      site = { origin: { kind: 'env', variable: fromEnv! }, key: setting.key, base: cwd };
      raw = variable;
    } else if (config !== undefined && Object.hasOwn(config.table, setting.key)) {
      site = fileSite([setting.key]);
      raw = config.table[setting.key];
    }
    if (site === undefined) {
      values[name] = defaults[name];
      origins[name] = { kind: 'default' };
    } else {
      values[name] = setting.parse(raw, site);
      origins[name] = site.origin;
    }
  }
  const merged = values as Omit<AgentConfig, 'sessions' | 'hardware' | 'file' | 'origins'>;
  const sessions: SessionConfig[] = [];
  const tables = config?.table.sessions as Readonly<Record<string, Readonly<Record<string, unknown>>>> | undefined;
  for (const [name, table] of Object.entries(tables ?? {})) {
    const at = (key?: string) => fileSite(key === undefined ? ['sessions', name] : ['sessions', name, key]);
    sessions.push(sessionValue(name, table, at, merged));
  }
  const table = config?.table.hardware as Readonly<Record<string, unknown>> | undefined;
  const hardware =
    table === undefined
      ? undefined
      : hardwareValue(table, (key) => fileSite(key === undefined ? ['hardware'] : ['hardware', key]));
  const natsTable = config?.table.nats as Readonly<Record<string, unknown>> | undefined;
  const nats =
    natsTable === undefined
      ? undefined
      : natsValue(natsTable, (key) => fileSite(key === undefined ? ['nats'] : ['nats', key]));
  return { ...merged, sessions, hardware, ...(nats !== undefined ? { nats } : {}), file: config?.file, origins };
}

/**
 * The agent's configuration: flags over environment over config file over defaults. The file is the one named by
 * `--config`, else by `EVTRACE_CONFIG`, else `options.file` if it exists.
 *
 * @throws {ConfigError} naming the file, line, column and key, the variable or the flag of the first problem.
 */
export function loadAgentConfig(options: LoadAgentConfigOptions = {}): AgentConfig {
  const { flags = {}, env = {} } = options;
  const named: { path: string; origin: ConfigOrigin } | undefined =
    flags.config !== undefined
      ? { path: flags.config, origin: { kind: 'flag', flag: '--config' } }
      : env[CONFIG_ENV] !== undefined && env[CONFIG_ENV] !== ''
        ? { path: env[CONFIG_ENV], origin: { kind: 'env', variable: CONFIG_ENV } }
        : undefined;
  const path = named?.path ?? options.file;
  let config: ConfigFile | undefined;
  if (path !== undefined) {
    const file = resolve(path);
    const text = readConfigText(file, named?.origin);
    if (text !== undefined) config = parseConfigFile(text, file);
  }
  return resolveAgentConfig({
    flags,
    env,
    ...(config !== undefined ? { config } : {}),
    ...(options.defaults !== undefined ? { defaults: options.defaults } : {}),
  });
}

/** Reads a config file; undefined when a default file (no `namedBy`) does not exist. */
function readConfigText(file: string, namedBy: ConfigOrigin | undefined): string | undefined {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && namedBy === undefined) return undefined;
    const reason =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'a directory, not a file' : `${code ?? error}`;
    throw new ConfigError('ERR_CONFIG_READ', `cannot read the config file ${file}: ${reason}`, {
      origin: namedBy ?? { kind: 'file', file },
      cause: error,
    });
  }
  if (bytes.length > MAX_CONFIG_BYTES)
    throw new ConfigError(
      'ERR_CONFIG_READ',
      `${bytes.length} bytes is too large for a config file (at most ${MAX_CONFIG_BYTES})`,
      {
        origin: { kind: 'file', file },
      },
    );
  const invalid = firstInvalidUtf8(bytes);
  if (invalid >= 0) {
    const before = bytes.subarray(0, invalid).toString('utf8').split('\n');
    throw new ConfigError('ERR_CONFIG_SYNTAX', `not valid UTF-8 (byte offset ${invalid})`, {
      origin: { kind: 'file', file, line: before.length, column: before.at(-1)!.length + 1 },
    });
  }
  return bytes.toString('utf8');
}

/** The offset of the first byte that is not part of a well-formed UTF-8 sequence, or -1. */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    const n = b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
    if (n < 0) return i;
    // The second byte's range excludes overlong forms, surrogates and code points above U+10FFFF.
    const lo = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80;
    const hi = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf;
    for (let k = 1; k <= n; k++) {
      const c = bytes[i + k];
      if (c === undefined || c < (k === 1 ? lo : 0x80) || c > (k === 1 ? hi : 0xbf)) return i;
    }
    i += n + 1;
  }
  return -1;
}
