import { describe, expect, it } from 'vitest';
import { parseConfigFile, resolveAgentConfig } from '../config/load.ts';
import { exportSettings } from './export.ts';

const fromToml = (text: string) =>
  resolveAgentConfig({ config: parseConfigFile(text, '/etc/evtrace/agent.toml') }).nats;

describe('the fleet export settings', () => {
  it('reads a [nats] table: paths against the file, sizes and durations with units', () => {
    const nats = fromToml(
      '[nats]\nurl = "nats://a:4222,nats://b:4222"\nhost = "web812"\ncredentials = "fleet.creds"\nreplicas = 3\nspool_size = "64M"\nstatus_interval = "5s"\nshot_max_size = "1M"\n',
    );
    expect(nats).toEqual({
      url: 'nats://a:4222,nats://b:4222',
      host: 'web812',
      credentials: '/etc/evtrace/fleet.creds',
      replicas: 3,
      spoolSize: 64 * 1024 * 1024,
      statusInterval: 5000,
      shotMaxSize: 1024 * 1024,
    });
    const s = exportSettings({}, nats, {})!;
    expect(s).toMatchObject({ host: 'web812', replicas: 3, spoolBytes: 64 * 1024 * 1024, statusIntervalMs: 5000 });
    expect(s.connection).toMatchObject({
      servers: 'nats://a:4222,nats://b:4222',
      credentials: '/etc/evtrace/fleet.creds',
    });
  });

  it('names a misspelt [nats] key and a bad value with their place in the file', () => {
    expect(() => fromToml('[nats]\nrepicas = 3\n')).toThrow(
      /nats\.repicas: unknown key "repicas" in \[nats\] \(did you mean replicas\?\)/,
    );
    expect(() => fromToml('[nats]\nreplicas = 7\n')).toThrow(/2:\d+: nats\.replicas: expected 1 to 5 replicas, got 7/);
    expect(() => fromToml('[sessions.f]\nevents = ["kmem:*"]\nexport = "yes"\n')).toThrow(
      /sessions\.f\.export: expected true or false/,
    );
    expect(
      resolveAgentConfig({ config: parseConfigFile('[sessions.f]\nevents = ["kmem:*"]\nexport = true\n', '/x.toml') })
        .sessions[0],
    ).toMatchObject({ name: 'f', export: true });
  });

  it('takes a secret from the flag, else the environment, else the file, and needs a URL', () => {
    expect(exportSettings({}, undefined, {})).toBeUndefined();
    expect(() => exportSettings({ host: 'h' }, undefined, {})).toThrow(
      '--host names this host in the fleet: it needs --nats URL',
    );
    const env = { EVTRACE_NATS_PASSWORD: 'from-env' };
    expect(
      exportSettings({ nats: 'nats://x', natsUser: 'u' }, { password: 'from-file' }, env)!.connection.password,
    ).toBe('from-env');
    expect(
      exportSettings({ nats: 'nats://x', natsUser: 'u', natsPassword: 'flag' }, undefined, env)!.connection.password,
    ).toBe('flag');
    expect(() => exportSettings({ nats: 'nats://x', natsReplicas: '9' }, undefined, {})).toThrow(
      "--nats-replicas must be 1 to 5, not '9'",
    );
    expect(() => exportSettings({ nats: 'nats://x', natsTlsCert: 'c.pem' }, undefined, {})).toThrow(
      '--nats-tls-cert and --nats-tls-key go together',
    );
    expect(() => exportSettings({ nats: 'nats://x', natsSpoolSize: 'lots' }, undefined, {})).toThrow(
      /--nats-spool-size must be a size/,
    );
  });
});
