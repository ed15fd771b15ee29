import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from './errors.ts';
import { firstInvalidUtf8, loadAgentConfig, parseConfigFile, resolveAgentConfig } from './load.ts';
import { DEFAULTS, HARDWARE_TABLE_KEYS } from './schema.ts';

const EXAMPLE = new URL('../../examples/agent.toml', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'evtrace-config-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let n = 0;
function file(text: string | Uint8Array): string {
  const path = join(work, `c${n++}.toml`);
  writeFileSync(path, text);
  return path;
}

/** Loads TOML text as the config file and returns the error it raises. */
function errorOf(text: string, options: { env?: Record<string, string> } = {}): ConfigError {
  const path = file(text);
  try {
    loadAgentConfig({ flags: { config: path }, ...options });
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`no error for:\n${text}`);
}

describe('the example config', () => {
  it('loads, with every session as written', () => {
    const config = loadAgentConfig({ flags: { config: EXAMPLE } });
    expect(config.file).toBe(EXAMPLE);
    expect(config.socket).toBe('/run/evtrace/agent.sock');
    expect(config.group).toBe('evtrace');
    expect(config.metrics).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(config.bufferSize).toBe(4 * 1024 * 1024);
    expect(config.sessions.map((s) => s.name)).toEqual(['flight', 'kmem', 'mce']);
    const [flight, kmem, mce] = config.sessions;
    expect(flight).toMatchObject({ mode: 'overwrite', bufferSize: 16 * 1024 * 1024, source: 'auto', start: true });
    expect(flight!.output).toBeUndefined();
    expect(kmem).toMatchObject({
      events: ['kmem:kmalloc', 'kmem:kfree'],
      filter: 'bytes_req > 256',
      mode: 'discard',
      output: { dir: '/var/lib/evtrace/kmem', format: 'ctf' },
      rotate: { seconds: 3600 },
      source: 'kernel',
    });
    expect(mce).toMatchObject({ start: false, bufferSize: 4 * 1024 * 1024 });
    expect(config.origins.socket).toEqual({ kind: 'file', file: EXAMPLE, line: 5, column: 10 });
    expect(config.hardware).toEqual({
      enabled: true,
      mcelogConfig: '/etc/mcelog/mcelog.conf',
      runTriggers: true,
      pageOffline: 'soft',
      nodeEdacMetrics: false,
    });
  });
});

describe('the [hardware] table', () => {
  it('takes every key of the --hardware flags, paths relative to the file; no table: no hardware', () => {
    const path = file(
      '[hardware]\nedac_sysfs = "edac"\nmcelog = "/dev/mcelog"\nmce_instance = "hw"\nmcelog_config = "conf/mcelog.conf"\n' +
        'run_triggers = false\npage_offline = "soft-then-hard"\nmemory_sysfs = "mem"\n',
    );
    expect(loadAgentConfig({ flags: { config: path } }).hardware).toEqual({
      enabled: true,
      edacSysfs: join(work, 'edac'),
      mcelog: '/dev/mcelog',
      mceInstance: 'hw',
      mcelogConfig: join(work, 'conf', 'mcelog.conf'),
      runTriggers: false,
      pageOffline: 'soft-then-hard',
      memorySysfs: join(work, 'mem'),
    });
    expect(loadAgentConfig({ flags: { config: file('[hardware]\nenabled = false\n') } }).hardware).toEqual({
      enabled: false,
    });
    expect(loadAgentConfig({ flags: { config: file('mode = "overwrite"\n') } }).hardware).toBeUndefined();
  });

  it('names the file, line, column and key of a bad value, and suggests the key meant', () => {
    const page = errorOf('[hardware]\npage_offline = "softly"\n');
    expect(page.code).toBe('ERR_CONFIG_VALUE');
    expect(page.message).toMatch(
      /:2:16: hardware\.page_offline: expected off or account or soft or hard or soft-then-hard, got "softly"/,
    );
    const flag = errorOf('[hardware]\nrun_triggers = "yes"\n');
    expect(flag.message).toMatch(/:2:16: hardware\.run_triggers: expected true or false, got "yes"/);
    const instance = errorOf('[hardware]\nmce_instance = "../x"\n');
    expect(instance.message).toMatch(/hardware\.mce_instance: "\.\.\/x" is not a tracefs instance name/);
    const unknown = errorOf('[hardware]\nmcelog_conf = "x"\n');
    expect(unknown.code).toBe('ERR_CONFIG_UNKNOWN_KEY');
    expect(unknown.message).toMatch(
      /:2:1: hardware\.mcelog_conf: unknown key "mcelog_conf" in \[hardware\] \(did you mean mcelog_config\?\)/,
    );
    expect(errorOf('hardware = 1\n').message).toMatch(/expected a \[hardware\] table, got 1/);
  });
});

describe('precedence: flags over environment over file over defaults', () => {
  const path = file('socket = "/file.sock"\nmetrics = "127.0.0.1:1000"\nmode = "overwrite"\nbuffer_size = "8MiB"\n');
  const env = {
    EVTRACE_CONFIG: path,
    EVTRACE_SOCKET: '/env.sock',
    EVTRACE_METRICS: '127.0.0.1:2000',
    EVTRACE_GROUP: '',
  };

  it('takes each setting from the strongest source that sets it', () => {
    const config = loadAgentConfig({ flags: { metrics: '[::1]:3000' }, env });
    expect(config.file).toBe(path);
    expect(config.metrics).toEqual({ host: '::1', port: 3000 });
    expect(config.origins.metrics).toEqual({ kind: 'flag', flag: '--metrics' });
    expect(config.socket).toBe('/env.sock');
    expect(config.origins.socket).toEqual({ kind: 'env', variable: 'EVTRACE_SOCKET' });
    expect(config.mode).toBe('overwrite');
    expect(config.origins.mode).toMatchObject({ kind: 'file', line: 3 });
    expect(config.bufferSize).toBe(8 * 1024 * 1024);
    // An empty variable counts as unset.
    expect(config.group).toBe(DEFAULTS.group);
    expect(config.stateDir).toBe(DEFAULTS.stateDir);
    expect(config.origins.stateDir).toEqual({ kind: 'default' });
  });

  it("EVTRACE_AGENT_SOCKET, the clients' variable, sets the socket when EVTRACE_SOCKET does not", () => {
    expect(loadAgentConfig({ env: { EVTRACE_AGENT_SOCKET: '/alias.sock' } }).socket).toBe('/alias.sock');
    expect(loadAgentConfig({ env: { EVTRACE_AGENT_SOCKET: '/alias.sock', EVTRACE_SOCKET: '/main.sock' } }).socket).toBe(
      '/main.sock',
    );
    expect(loadAgentConfig({ env: { EVTRACE_AGENT_SOCKET: 'rel' } }).origins.socket).toEqual({
      kind: 'env',
      variable: 'EVTRACE_AGENT_SOCKET',
    });
  });

  it('--config wins over EVTRACE_CONFIG, which wins over the default file', () => {
    const other = file('socket = "/other.sock"\n');
    expect(loadAgentConfig({ flags: { config: other }, env: { EVTRACE_CONFIG: path } }).socket).toBe('/other.sock');
    expect(loadAgentConfig({ env: { EVTRACE_CONFIG: path }, file: other }).socket).toBe('/file.sock');
    expect(loadAgentConfig({ file: other }).socket).toBe('/other.sock');
  });

  it('metrics can be turned off from a stronger source', () => {
    expect(loadAgentConfig({ flags: { metrics: 'off' }, env }).metrics).toBeUndefined();
    expect(loadAgentConfig({ flags: { config: file('metrics = false') } }).metrics).toBeUndefined();
  });

  it('sessions take the merged default mode and buffer size', () => {
    const sessions = file('mode = "overwrite"\n[sessions.a]\nevents = "sched:*"\n');
    const config = loadAgentConfig({
      flags: { config: sessions, bufferSize: '1MiB' },
      env: { EVTRACE_MODE: 'discard' },
    });
    expect(config.sessions[0]).toMatchObject({ events: ['sched:*'], mode: 'discard', bufferSize: 1024 * 1024 });
  });

  it('resolves relative paths against the config file directory, and flags against the working directory', () => {
    mkdirSync(join(work, 'etc'), { recursive: true });
    const path = join(work, 'etc', 'agent.toml');
    writeFileSync(path, 'state_dir = "state"\n[sessions.a]\nevents = ["a:b"]\noutput = "../out"\n');
    const config = loadAgentConfig({ flags: { config: path, socket: 'here.sock' } });
    expect(config.stateDir).toBe(join(work, 'etc', 'state'));
    expect(config.sessions[0]!.output).toEqual({ dir: join(work, 'out'), format: 'tracedat' });
    expect(config.socket).toBe(join(process.cwd(), 'here.sock'));
  });
});

describe('missing and unreadable files', () => {
  it('a missing default file is no error; a named one is', () => {
    const missing = join(work, 'missing.toml');
    expect(loadAgentConfig({ file: missing }).file).toBeUndefined();
    expect(() => loadAgentConfig({ flags: { config: missing } })).toThrow(
      expect.objectContaining({
        code: 'ERR_CONFIG_READ',
        message: `--config: cannot read the config file ${missing}: no such file`,
      }),
    );
    expect(() => loadAgentConfig({ env: { EVTRACE_CONFIG: missing } })).toThrow(
      expect.objectContaining({
        code: 'ERR_CONFIG_READ',
        message: expect.stringMatching(/^environment variable EVTRACE_CONFIG: /),
      }),
    );
  });

  it('a directory, an unreadable file and a huge file are read errors', () => {
    expect(() => loadAgentConfig({ flags: { config: work } })).toThrow(
      expect.objectContaining({ code: 'ERR_CONFIG_READ' }),
    );
    const huge = file(`# ${'x'.repeat(2 << 20)}\n`);
    expect(() => loadAgentConfig({ flags: { config: huge } })).toThrow(
      expect.objectContaining({ code: 'ERR_CONFIG_READ' }),
    );
    if (process.getuid?.() !== 0) {
      const locked = file('');
      chmodSync(locked, 0);
      expect(() => loadAgentConfig({ flags: { config: locked } })).toThrow(
        expect.objectContaining({ code: 'ERR_CONFIG_READ' }),
      );
    }
  });

  it('invalid UTF-8 names its line, column and byte offset', () => {
    const bytes = new Uint8Array([...Buffer.from('socket = "/s"\nmode = "'), 0xff, ...Buffer.from('"\n')]);
    const error = (() => {
      try {
        loadAgentConfig({ flags: { config: file(bytes) } });
      } catch (e) {
        return e as ConfigError;
      }
    })();
    expect(error).toMatchObject({ code: 'ERR_CONFIG_SYNTAX', origin: { line: 2, column: 9 } });
    expect(error!.message).toContain('byte offset 22');
  });

  it('firstInvalidUtf8 agrees with the platform decoder', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        let valid = true;
        try {
          new TextDecoder('utf-8', { fatal: true }).decode(bytes);
        } catch {
          valid = false;
        }
        expect(firstInvalidUtf8(bytes) < 0).toBe(valid);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('errors name the file, line, column and key', () => {
  it('TOML syntax errors', () => {
    const e = errorOf('socket = "/s"\nmode = [1,,]\ngroup = "g"\n');
    expect(e.code).toBe('ERR_CONFIG_SYNTAX');
    expect(e.origin).toMatchObject({ kind: 'file', line: 2 });
    expect(e.message).toMatch(/\.toml:2:\d+: not valid TOML: /);
  });

  it('unknown keys, with the closest known one', () => {
    const top = errorOf('\n\nsocket_path = "/s"\n');
    expect(top).toMatchObject({ code: 'ERR_CONFIG_UNKNOWN_KEY', key: 'socket_path', origin: { line: 3, column: 1 } });
    const inSession = errorOf('[sessions.flight]\nevents = ["a:b"]\n  buffersize = "1MiB"\n');
    expect(inSession).toMatchObject({
      code: 'ERR_CONFIG_UNKNOWN_KEY',
      key: 'sessions.flight.buffersize',
      origin: { line: 3, column: 3 },
    });
    expect(inSession.message).toContain('did you mean buffer_size?');
  });

  it.each([
    ['socket = 5', 'socket', 1, /expected a socket path \(a string\), got 5/],
    ['socket = "/a"\nsocket2 = 1', 'socket2', 2, /unknown key/],
    [`socket = "/${'x'.repeat(120)}"`, 'socket', 1, /longer than the 107 bytes/],
    ['group = "no spaces"', 'group', 1, /not a group name or gid/],
    ['metrics = "localhost"', 'metrics', 1, /expected HOST:PORT/],
    ['metrics = "127.0.0.1:99999"', 'metrics', 1, /expected HOST:PORT/],
    ['metrics = true', 'metrics', 1, /expected HOST:PORT/],
    ['buffer_size = "64Mb"', 'buffer_size', 1, /expected a size such as 64MiB/],
    ['buffer_size = "1KiB"', 'buffer_size', 1, /less than one 4 KiB page/],
    ['buffer_size = 99999999999999999999', 'buffer_size', 1, /expected a size/],
    ['mode = "ring"', 'mode', 1, /expected overwrite or discard, got "ring"/],
    ['sessions = 1', 'sessions', 1, /expected \[sessions.NAME\] tables/],
    ['sessions.a = 1', 'sessions.a', 1, /expected a \[sessions.NAME\] table/],
    ['[sessions.a]\nmode = "overwrite"', 'sessions.a', 1, /a session needs events/],
    ['[sessions.a]\nevents = []', 'sessions.a.events', 2, /names no event/],
    ['[sessions.a]\nevents = ["kmalloc"]', 'sessions.a.events', 2, /event 1: expected SYSTEM:EVENT/],
    ['[sessions.a]\nevents = ["a:b"]\nformat = "ctf"', 'sessions.a.format', 3, /format needs an output/],
    [
      '[sessions.a]\nevents = ["a:b"]\noutput = "/o"\nformat = "json"',
      'sessions.a.format',
      4,
      /expected tracedat or ctf/,
    ],
    ['[sessions.a]\nevents = ["a:b"]\noutput = "/o"\nrotate = "100"', 'sessions.a.rotate', 4, /size with a unit/],
    [
      '[sessions.a]\nevents = ["a:b"]\noutput = "/o"\nrotate = "500ms"',
      'sessions.a.rotate',
      4,
      /more than once a second/,
    ],
    ['[sessions.a]\nevents = ["a:b"]\nrotate = "1h"', 'sessions.a.rotate', 3, /rotate needs an output/],
    ['[sessions.a]\nevents = ["a:b"]\nsource = "perf"', 'sessions.a.source', 3, /expected kernel or demo or auto/],
    ['[sessions.a]\nevents = ["a:b"]\nstart = "yes"', 'sessions.a.start', 3, /expected true or false/],
    ['[sessions."-bad"]\nevents = ["a:b"]', 'sessions.-bad', 1, /not a session name/],
    ['[sessions."a b"]\nevents = ["a:b"]', 'sessions."a b"', 1, /"a b" is not a session name/],
    ['[sessions.a]\nevents = ["a:b"]\nbuffer_size = 2021-01-01', 'sessions.a.buffer_size', 3, /got a date/],
  ])('%j', (text, key, line, message) => {
    const e = errorOf(text);
    expect(e).toBeInstanceOf(ConfigError);
    expect(e.key).toBe(key);
    expect(e.origin).toMatchObject({ kind: 'file', line });
    expect(e.message).toMatch(message);
    expect(e.message).toMatch(new RegExp(`^${work}/c\\d+\\.toml:${line}:\\d+: `));
  });

  it('accepts the sizes, durations and addresses the messages promise', () => {
    const path = file(
      'buffer_size = 8388608\nmetrics = "[::1]:0"\n[sessions.a]\nevents = ["a:b"]\noutput = "/o"\nrotate = "100MiB"\n[sessions.b]\nevents = ["a:b"]\noutput = "/o"\nrotate = 1048576\n',
    );
    const config = loadAgentConfig({ flags: { config: path } });
    expect(config.bufferSize).toBe(8388608);
    expect(config.sessions.map((s) => s.rotate)).toEqual([{ bytes: 100 * 1024 * 1024 }, { bytes: 1048576 }]);
  });

  it('bad environment variables and flags are named as such', () => {
    expect(() => loadAgentConfig({ env: { EVTRACE_BUFFER_SIZE: 'lots' } })).toThrow(
      expect.objectContaining({
        code: 'ERR_CONFIG_VALUE',
        message: expect.stringMatching(/^environment variable EVTRACE_BUFFER_SIZE: expected a size/),
      }),
    );
    expect(() => loadAgentConfig({ flags: { metrics: '9464' } })).toThrow(
      expect.objectContaining({
        code: 'ERR_CONFIG_VALUE',
        message: expect.stringMatching(/^--metrics: expected HOST:PORT/),
      }),
    );
    expect(() => loadAgentConfig({ flags: { mode: 'both' } })).toThrow(
      /^--mode: expected overwrite or discard, got "both"$/,
    );
  });

  it('a stronger source hides a bad value in a weaker one only for that setting', () => {
    const path = file('mode = "ring"\n');
    expect(loadAgentConfig({ flags: { config: path, mode: 'overwrite' } }).mode).toBe('overwrite');
  });
});

describe('fuzzing the loader', () => {
  const example = readFileSync(EXAMPLE, 'utf8');
  const typed = (run: () => unknown) => {
    try {
      run();
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      expect(error.message).toMatch(/^\S/);
    }
  };

  it('mutated example configs raise only ConfigError', () => {
    const mutation = fc.record({
      at: fc.nat(),
      cut: fc.nat({ max: 40 }),
      insert: fc.oneof(
        fc.string({ maxLength: 20 }),
        fc.constantFrom(
          '[',
          ']',
          '"',
          "'''",
          '"""',
          '=',
          '\n',
          '[[sessions]]',
          '.',
          '{',
          '}',
          '#',
          '\\u0000',
          '__proto__',
          '1e999',
        ),
      ),
    });
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 4 }), (mutations) => {
        let text = example;
        for (const m of mutations) {
          const at = m.at % (text.length + 1);
          text = text.slice(0, at) + m.insert + text.slice(at + m.cut);
        }
        typed(() => resolveAgentConfig({ config: parseConfigFile(text, '/fuzz.toml') }));
      }),
      { numRuns: 1500 },
    );
  });

  it('arbitrary TOML values in every key raise only ConfigError', () => {
    const value = fc.oneof(
      fc.string({ maxLength: 12 }).map((s) => JSON.stringify(s)),
      fc.integer().map(String),
      fc.double({ noNaN: true }).map((d) => (Number.isInteger(d) ? `${d}.0` : String(d))),
      fc.constantFrom(
        'true',
        'false',
        '[]',
        '{}',
        '["a:b"]',
        '[1, 2]',
        '1979-05-27',
        'inf',
        'nan',
        '"64MiB"',
        '"30s"',
        '":0"',
      ),
    );
    const key = fc.constantFrom('socket', 'group', 'state_dir', 'metrics', 'buffer_size', 'mode');
    const sessionKey = fc.constantFrom(
      'events',
      'filter',
      'mode',
      'buffer_size',
      'output',
      'format',
      'rotate',
      'source',
      'start',
    );
    const hardwareKey = fc.constantFrom(...HARDWARE_TABLE_KEYS);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(key, value), { maxLength: 4 }),
        fc.array(fc.tuple(sessionKey, value), { maxLength: 6 }),
        fc.array(fc.tuple(hardwareKey, value), { maxLength: 4 }),
        (top, session, hardware) => {
          const unique = <T extends [string, string]>(pairs: T[]) => [...new Map(pairs).entries()];
          const text = `${unique(top)
            .map(([k, v]) => `${k} = ${v}`)
            .join('\n')}\n[sessions.s]\n${unique(session)
            .map(([k, v]) => `${k} = ${v}`)
            .join('\n')}\n[hardware]\n${unique(hardware)
            .map(([k, v]) => `${k} = ${v}`)
            .join('\n')}\n`;
          typed(() => resolveAgentConfig({ config: parseConfigFile(text, '/fuzz.toml') }));
        },
      ),
      { numRuns: 1500 },
    );
  });

  it('arbitrary environment and flag values raise only ConfigError', () => {
    const text = fc.string({ maxLength: 30 });
    fc.assert(
      fc.property(text, text, text, text, (socket, metrics, size, mode) => {
        typed(() =>
          loadAgentConfig({
            flags: { metrics, mode },
            env: { EVTRACE_SOCKET: socket, EVTRACE_BUFFER_SIZE: size, EVTRACE_GROUP: socket },
          }),
        );
      }),
      { numRuns: 1000 },
    );
  });
});
