/** `evtrace agent --check-config` and configuration errors through the real CLI (the agent's own process). */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { expectValid } from '../testing/schemas.ts';

const CLI = new URL('../cli.ts', import.meta.url).pathname;
const EXAMPLE = new URL('../../examples/agent.toml', import.meta.url).pathname;
const run = promisify(execFile);
const work = mkdtempSync(join(tmpdir(), 'evtrace-check-config-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Runs `evtrace ARGS` with only the given EVTRACE_* variables. */
async function evtrace(args: string[], env: Record<string, string> = {}) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('EVTRACE_')));
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env: { ...clean, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('evtrace agent --check-config', () => {
  it('prints the effective settings with their origins and exits 0 without starting the agent', async () => {
    const socket = join(work, 'never.sock');
    const r = await evtrace(['agent', '--check-config', '--socket', socket], { EVTRACE_CONFIG: EXAMPLE });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`config file: ${EXAMPLE}\n`);
    expect(r.stdout).toMatch(new RegExp(`^ {2}socket +${socket} +\\(--socket\\)$`, 'm'));
    expect(r.stdout).toMatch(/^ {2}metrics +127\.0\.0\.1:9464 +\(.*agent\.toml:8:11\)$/m);
    expect(r.stdout).toMatch(/^ {2}flight: /m);
  });

  it('--json: the same report as one object, valid against its schema, each value typed and placed', async () => {
    const socket = join(work, 'never.sock');
    const env = { EVTRACE_CONFIG: EXAMPLE, EVTRACE_MODE: 'overwrite' };
    const r = await evtrace(['agent', '--check-config', '--json', '--socket', socket], env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expectValid('@evtrace/agent/schemas/check-config.json', report);
    expect(report.file).toBe(EXAMPLE);
    expect(report.settings.socket).toEqual({ value: socket, origin: { kind: 'flag', flag: '--socket' } });
    expect(report.settings.metrics).toEqual({
      value: '127.0.0.1:9464',
      origin: { kind: 'file', file: EXAMPLE, line: 8, column: 11 },
    });
    expect(report.settings.mode).toEqual({ value: 'overwrite', origin: { kind: 'env', variable: 'EVTRACE_MODE' } });
    expect(report.settings.buffer_size.value).toBe(4 * 1024 * 1024);
    // The text report says the same of each setting.
    const text = await evtrace(['agent', '--check-config', '--socket', socket], env);
    expect(text.stdout).toMatch(/^ {2}mode +overwrite +\(environment variable EVTRACE_MODE\)$/m);
    expect(report.sessions.map((s: { name: string }) => s.name)).toEqual(['flight', 'kmem', 'mce']);
    expect(report.sessions[1]).toMatchObject({
      filter: 'bytes_req > 256',
      output: { format: 'ctf' },
      rotate: { seconds: 3600 },
    });
    expect(report.hardware).toMatchObject({ enabled: true, pageOffline: 'soft', runTriggers: true });
    const alone = await evtrace(['agent', '--json', '--socket', socket]);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toBe('evtrace: ERR_CLI_USAGE: --json goes with --check-config\n');
  });

  it('reports the fleet export ([nats] under its flags): URL, host, how it authenticates, never a secret', async () => {
    const file = join(work, 'nats.toml');
    writeFileSync(
      file,
      `[nats]\nurl = "nats://n1:4222,nats://n2:4222"\nhost = "from-file"\nuser = "ops"\npassword = "s3cret-pw"\ntls_ca = "ca.pem"\nreplicas = 3\nspool_size = "64MiB"\n`,
    );
    const args = ['agent', '--check-config', '--config', file, '--host', 'web812', '--nats-status-interval', '2s'];
    const text = await evtrace(args);
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(
      `nats: nats://n1:4222,nats://n2:4222\n  host web812; auth user ops; tls ca ${join(work, 'ca.pem')}\n  stream EVTRACE, 3 replicas; spool 64MiB; status every 2s; trace-shots stored up to 64MiB\n`,
    );
    const json = await evtrace([...args, '--json'], { EVTRACE_NATS_TOKEN: 'tok-123' });
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout);
    expectValid('@evtrace/agent/schemas/check-config.json', report);
    // A token (here from the environment) is preferred to the user: the report says which, not what.
    expect(report.nats).toEqual({
      url: 'nats://n1:4222,nats://n2:4222',
      host: 'web812',
      auth: 'token',
      stream: 'EVTRACE',
      replicas: 3,
      spoolBytes: 64 * 1024 * 1024,
      statusIntervalMs: 2000,
      shotMaxBytes: 64 * 1024 * 1024,
      tls: { ca: join(work, 'ca.pem') },
    });
    for (const out of [text.stdout, json.stdout]) {
      expect(out).not.toContain('s3cret-pw');
      expect(out).not.toContain('tok-123');
    }
    // No export asked for: said so, and null in JSON.
    writeFileSync(join(work, 'none.toml'), '');
    const none = await evtrace(['agent', '--check-config', '--json', '--config', join(work, 'none.toml')]);
    expect(JSON.parse(none.stdout).nats).toBeNull();
    const noneText = await evtrace(['agent', '--check-config', '--config', join(work, 'none.toml')]);
    expect(noneText.stdout).toContain('nats: (no export: neither --nats nor [nats] url)\n');
  });

  it('exits 2 naming the file, line, column and key of a mistake', async () => {
    const bad = join(work, 'bad.toml');
    writeFileSync(bad, '# comment\n\n[sessions.flight]\nevents = ["sched:*"]\nbuffersize = "1MiB"\n');
    const r = await evtrace(['agent', '--check-config', '--config', bad]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `evtrace: ERR_CONFIG_UNKNOWN_KEY: ${bad}:5:1: sessions.flight.buffersize: unknown key "buffersize" in session "flight" (did you mean buffer_size?); known keys: events, filter, mode, buffer_size, output, format, rotate, source, start, export\n`,
    );
  });

  it('exits 2 on a bad environment variable, and the agent does not start on one either', async () => {
    const checked = await evtrace(['agent', '--check-config'], { EVTRACE_METRICS: 'localhost' });
    expect(checked.code).toBe(2);
    expect(checked.stderr).toMatch(
      /^evtrace: ERR_CONFIG_VALUE: environment variable EVTRACE_METRICS: expected HOST:PORT/,
    );
    const started = await evtrace(['agent', '--socket', join(work, 'a.sock'), '--state-dir', join(work, 'st')], {
      EVTRACE_BUFFER_SIZE: '12 parsecs',
    });
    expect(started.code).toBe(2);
    expect(started.stderr).toMatch(/EVTRACE_BUFFER_SIZE: expected a size/);
  });

  it('the agent fails (exit 1) naming the metrics address when it is taken, and leaves no socket behind', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const { port } = blocker.address() as { port: number };
    try {
      const socket = join(work, 'm.sock');
      const r = await evtrace([
        'agent',
        '--socket',
        socket,
        '--state-dir',
        join(work, 'st2'),
        '--metrics',
        `127.0.0.1:${port}`,
      ]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(
        `ERR_METRICS_LISTEN: metrics: cannot listen on 127.0.0.1:${port}: the address is in use`,
      );
      const again = await evtrace(['session', 'list', '--socket', socket]);
      expect(again.code).not.toBe(0);
    } finally {
      blocker.close();
    }
  });
});
