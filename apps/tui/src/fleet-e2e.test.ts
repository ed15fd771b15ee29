/**
 * `evtrace-view --nats URL` (the built CLI) in an 80x24 pseudo-terminal against a real nats-server with JetStream on
 * a free loopback port, two hosts publishing through @evtrace/fleet's publisher: events of an exported session, a
 * memory error, their status.
 */
import { spawn, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { FleetPublisher } from '@evtrace/fleet';
import { NatsServer, natsServerAvailable } from '@evtrace/fleet/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, type RunningViewer, startViewer } from './testing/pty.ts';
import { tempDir } from './testing/traces.ts';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function viewer(args: string[]): RunningViewer {
  const v = startViewer(args, { cols: 80, rows: 24 });
  cleanups.push(async () => {
    v.kill();
    await v.exited;
  });
  return v;
}

/** A host publishing a `demo` session's events and its status every 50 ms until the test ends. */
async function host(url: string, dir: string, name: string): Promise<FleetPublisher> {
  const p = await FleetPublisher.start({
    host: name,
    connection: { servers: url },
    spoolDir: join(dir, `spool-${name}`),
    batch: { records: 20, delayMs: 5 },
  });
  let n = 0;
  const timer = setInterval(() => {
    for (let i = 0; i < 5; i++, n++)
      p.add(
        'events.demo',
        JSON.stringify({
          ts_ns: String(1_000_000_000n + BigInt(n) * 1000n),
          cpu: n % 2,
          event: 'kmem:kmalloc',
          pid: 4242,
          comm: `${name}-worker`,
          flags: null,
          fields: { bytes_req: 512 + n, ptr: '0xffff888000001000' },
        }),
      );
    p.status({ version: '9.9.9', sessions: [{ name: 'demo', events: n, lost: 7 }] });
  }, 50);
  cleanups.push(async () => {
    clearInterval(timer);
    await p.close();
  });
  return p;
}

describe.skipIf(!natsServerAvailable())('evtrace-view --nats: the fleet view (needs nats-server)', () => {
  it('waits for the stream, then shows both hosts with their status, a memory error and the events of both, in 80x24', {
    timeout: 60_000,
  }, async () => {
    const dir = tempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const server = await NatsServer.start({ dir: join(dir, 'nats') });
    cleanups.push(() => server.stop());
    // Opened before any agent made the stream: it says so, and keeps trying.
    const v = viewer(['--nats', server.url]);
    await v.waitFor((t) => /ERR_FLEET_STREAM: no stream EVTRACE on this server/.test(t) && t.includes('no host has'));
    await host(server.url, dir, 'alpha');
    const beta = await host(server.url, dir, 'beta');
    beta.add(
      'edac',
      JSON.stringify({
        time: new Date().toISOString(),
        severity: 'ucna',
        count: 2,
        dimm: 'DIMM_B1',
        summary: 'uncorrected memory read error',
      }),
    );

    const screen = await v.waitFor(
      (t) =>
        /^alpha +\d+s ago +9\.9\.9 +\d+ +0 demo/m.test(t) &&
        /^beta +\d+s ago +9\.9\.9 +\d+ +0 demo/m.test(t) &&
        /beta edac ucna DIMM_B1 x2: uncorrected memory read error/.test(t) &&
        /^alpha #\d+ demo \[[01]\] 1\.\d{9} alpha-worker-4242 kmem:kmalloc: bytes_req=\d+/m.test(t) &&
        /^beta #\d+ demo \[[01]\] 1\.\d{9} beta-worker-4242 kmem:kmalloc: bytes_req=/m.test(t),
    );
    const lines = screen.split('\n');
    expect(lines).toHaveLength(24);
    expect(lines[0]).toMatch(new RegExp(`^evtrace fleet  hosts 2  events \\d+/s  stream EVTRACE  ${server.url}`));
    expect(lines.every((l) => l.length <= 80)).toBe(true);
    // The status says each host lost 7 events in its one session.
    expect(screen).toMatch(/^alpha .* 7 +0 demo/m);
    // Every reader found the stream: the footer shows the keys again.
    await v.waitFor((t) => t.split('\n')[23]!.startsWith('q quit  ? help'));

    v.type('?');
    const help = await v.waitFor('Fleet view: keys');
    for (const key of ['q, Ctrl-C', 'space', 'Tab, h', 'H']) expect(help).toContain(key);
    v.type('x');
    await v.waitFor((t) => t.startsWith('evtrace fleet'));

    // Tab shows one host: the first, alpha; its events only, beta's memory error gone.
    v.type('\t');
    const alpha = await v.waitFor((t) => t.includes('  host alpha') && !/^beta #/m.test(t) && /^alpha #/m.test(t));
    expect(alpha).not.toContain('DIMM_B1');
    expect(alpha).toContain('no hardware errors');

    v.type('q');
    expect((await v.exited).exitCode).toBe(0);
  });

  it('without a terminal writes the events as JSON lines with host, seq and session, up to --limit', async () => {
    const dir = tempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const server = await NatsServer.start({ dir: join(dir, 'nats') });
    cleanups.push(() => server.stop());
    await host(server.url, dir, 'alpha');
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const p = spawn(process.execPath, [CLI, '--nats', server.url, '-n', '25'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d) => (stdout += d));
      p.stderr.on('data', (d) => (stderr += d));
      p.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(25);
    const seqs = lines.map((l) => l.seq);
    expect(seqs).toEqual(Array.from({ length: 25 }, (_, i) => seqs[0] + i));
    expect(lines[0]).toMatchObject({ host: 'alpha', session: 'demo', event: 'kmem:kmalloc', comm: 'alpha-worker' });
    expect(Object.keys(lines[0]).slice(0, 3)).toEqual(['host', 'seq', 'session']);
  });

  it('says why it cannot connect, as evtrace-view: CODE: message, and exits 1', async () => {
    const v = viewer(['--nats', 'nats://127.0.0.1:1']);
    const { exitCode } = await v.exited;
    expect(exitCode).toBe(1);
    expect(v.output()).toMatch(/evtrace-view: ERR_FLEET_CONNECT: cannot connect to NATS at nats:\/\/127\.0\.0\.1:1: /);
    expect(v.output()).not.toMatch(/\n\s+at /);
  });

  it('refuses the connection flags without --nats, and --nats with a trace', () => {
    for (const [args, message] of [
      [['--nats-user', 'me'], '--nats-user goes with --nats URL'],
      [['--nats', 'nats://127.0.0.1:4222', 'trace.dat'], '--nats and TRACE/--session/--agent exclude each other'],
    ] as const) {
      const run = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 30_000 });
      expect(run.status).toBe(2);
      expect(run.stderr.split('\n')[0]).toBe(`evtrace-view: ERR_VIEW_USAGE: ${message}`);
    }
    const help = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8', timeout: 30_000 }).stdout;
    expect(help).toMatch(/^FLEET VIEW KEYS\n {2}q, Ctrl-C +quit\n/m);
    expect(help).toMatch(/^ {2}--nats-credentials <file> +a NATS credentials file/m);
  });
});
