/**
 * `evtrace agent --nats` and `evtrace fleet` against a real nats-server (Debian's package) with JetStream on a free
 * loopback port: agents with the demo source (no root needed) export a session, the server or an agent is killed
 * mid-export, and `fleet tail` must show every sequence number of every host exactly once.
 */
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { connectFleet, fleetHosts, type HostSummary, Spool } from '@evtrace/fleet';
import { NatsServer, natsServerAvailable } from '@evtrace/fleet/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { cli, eventually, type RunningAgent, startAgent, workDir } from '../testing/agent-daemon.ts';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function dir(prefix: string): string {
  const d = workDir(prefix);
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

async function server(at: string, extra: { user?: string; password?: string } = {}): Promise<NatsServer> {
  const s = await NatsServer.start({ dir: join(at, 'nats'), ...extra });
  cleanups.push(() => s.stop());
  return s;
}

/**
 * EDAC sysfs in the per-DIMM layout with no errors yet, and an empty tracefs tree (this VM has no machine-check
 * support): the hardware session reads the EDAC counters, whose growth is a memory error.
 */
function hardwareInputs(at: string): string[] {
  const put = (path: string, text: string) => {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${text}\n`);
  };
  for (const f of ['ce_count', 'ue_count', 'ce_noinfo_count', 'ue_noinfo_count'])
    put(join(at, 'edac', 'mc', 'mc0', f), '0');
  for (const i of [0, 1]) {
    put(join(at, 'edac', 'mc', 'mc0', `dimm${i}`, 'dimm_label'), `CPU_SrcID#0_MC#0_Chan#${i}_DIMM#0`);
    put(join(at, 'edac', 'mc', 'mc0', `dimm${i}`, 'dimm_ce_count'), '0');
    put(join(at, 'edac', 'mc', 'mc0', `dimm${i}`, 'dimm_ue_count'), '0');
  }
  mkdirSync(join(at, 'tracefs'), { recursive: true });
  return [
    '--hardware',
    '--tracefs',
    join(at, 'tracefs'),
    '--edac-sysfs',
    join(at, 'edac'),
    '--mcelog',
    join(at, 'no-mcelog'),
  ];
}

async function agent(at: string, url: string, host: string, extra: string[] = []): Promise<RunningAgent> {
  const a = await startAgent(at, [
    '--nats',
    url,
    '--host',
    host,
    '--nats-status-interval',
    '200ms',
    '--demo-rate',
    '100',
    ...extra,
  ]);
  cleanups.push(() => (a.proc.exitCode === null ? a.stop() : undefined));
  return a;
}

async function exportDemo(a: RunningAgent): Promise<void> {
  const created = await cli(a, [
    'session',
    'create',
    'd',
    '--events',
    'kmem:*',
    '--mode',
    'overwrite',
    '--source',
    'demo',
    '--export',
  ]);
  expect(created.stderr).toBe('');
  expect((await cli(a, ['session', 'start', 'd'])).code).toBe(0);
}

interface Status {
  spool: { bytes: number };
  sessions: { name: string; state: string; exported: number | null }[];
}

/** Every exported event in the stream, by host: `fleet tail --since all --json --no-follow`. */
async function tailAll(url: string): Promise<Map<string, { seq: number; session: string; event: string }[]>> {
  const r = await cli({ socket: '' }, ['fleet', 'tail', '--nats', url, '--since', 'all', '--json', '--no-follow']);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  const byHost = new Map<string, { seq: number; session: string; event: string }[]>();
  for (const line of r.stdout.split('\n').filter(Boolean)) {
    const e = JSON.parse(line) as { host: string; seq: number; session: string; event: string };
    byHost.set(e.host, [...(byHost.get(e.host) ?? []), e]);
  }
  return byHost;
}

/** The hosts' last status, read in-process (polled: faster than a command each time). */
async function statuses(url: string): Promise<HostSummary[]> {
  const nc = await connectFleet({ servers: url });
  try {
    return await fleetHosts(nc);
  } catch {
    return [];
  } finally {
    await nc.close();
  }
}

/**
 * Once every host stopped its session d and its spool is empty, the stream holds all it exported: resolves to the
 * events by host, read by `fleet tail`, when each host has at least what its agent's status says it exported (a
 * restarted agent's count leaves out what its predecessor spooled).
 */
async function settled(url: string, hosts: readonly string[]) {
  const exported = await eventually(async () => {
    const all = await statuses(url);
    const done = hosts.map((h) => all.find((x) => x.host === h)?.status as Status | undefined);
    const d = (s: Status | undefined) => s?.sessions.find((x) => x.name === 'd');
    return done.every((s) => s !== undefined && s.spool.bytes === 0 && d(s)?.state === 'stopped')
      ? new Map(hosts.map((h, i) => [h, d(done[i])!.exported ?? 0]))
      : undefined;
  }, 30_000);
  const events = await tailAll(url);
  for (const h of hosts) {
    expect(exported.get(h)).toBeGreaterThan(0);
    expect(events.get(h)?.length ?? 0).toBeGreaterThanOrEqual(exported.get(h)!);
  }
  return events;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe.skipIf(!natsServerAvailable())('evtrace agent --nats and evtrace fleet (needs nats-server)', () => {
  it('two agents export a demo session and memory errors; the server is killed and restarted mid-export; fleet tail shows both hosts gap-free, fleet errors each DIMM, fleet pull a trace-shot', {
    timeout: 120_000,
  }, async () => {
    const work = dir('fleet-two-');
    const s = await server(work);
    const alpha = await agent(join(work, 'alpha'), s.url, 'alpha', hardwareInputs(join(work, 'alpha')));
    const beta = await agent(join(work, 'beta'), s.url, 'beta', hardwareInputs(join(work, 'beta')));
    await alpha.waitForLog(/hardware: session hardware created and started; reading EDAC/);
    await beta.waitForLog(/hardware: session hardware created and started; reading EDAC/);
    await exportDemo(alpha);
    await exportDemo(beta);
    await eventually(async () =>
      (await statuses(s.url)).filter((h) => h.messages > 2).length === 2 ? true : undefined,
    );
    await s.stop('SIGKILL');
    // Both keep recording into their spools meanwhile.
    await alpha.waitForLog(/NATS connection lost/);
    await new Promise((r) => setTimeout(r, 500));
    // Memory errors while the server is down: the drivers count them, the agents spool them.
    writeFileSync(join(work, 'alpha', 'edac', 'mc', 'mc0', 'dimm1', 'dimm_ce_count'), '3\n');
    writeFileSync(join(work, 'beta', 'edac', 'mc', 'mc0', 'dimm0', 'dimm_ce_count'), '2\n');
    writeFileSync(join(work, 'beta', 'edac', 'mc', 'mc0', 'dimm0', 'dimm_ue_count'), '1\n');
    await new Promise((r) => setTimeout(r, 1500));
    await s.restart();
    await alpha.waitForLog(/reconnected to NATS/);
    for (const a of [alpha, beta]) expect((await cli(a, ['session', 'stop', 'd'])).code).toBe(0);
    const events = await settled(s.url, ['alpha', 'beta']);
    const errors = await cli({ socket: '' }, ['fleet', 'errors', '--nats', s.url, '--since', 'all', '--json']);
    expect(errors.stderr).toBe('');
    const rows = errors.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows.map((r) => [r.host, r.place, r.errors, r.corrected, r.uncorrected, r.worst])).toEqual([
      ['alpha', 'CPU_SrcID#0_MC#0_Chan#1_DIMM#0', 3, 3, 0, 'corrected'],
      ['beta', 'CPU_SrcID#0_MC#0_Chan#0_DIMM#0', 3, 2, 1, 'ucna'],
    ]);
    // A trace-shot goes to the object store; fleet pull brings it back as evtrace cat reads it.
    expect((await cli(alpha, ['session', 'snapshot', 'd'])).code).toBe(0);
    const shot = readdirSync(join(alpha.stateDir, 'snapshots'))[0]!;
    const pulled = join(work, 'pulled');
    await eventually(async () => {
      const r = await cli({ socket: '' }, ['fleet', 'pull', 'alpha', shot, '-o', pulled, '--nats', s.url]);
      return r.code === 0 ? r : undefined;
    });
    const local = await cli({ socket: '' }, ['cat', join(alpha.stateDir, 'snapshots', shot), '--json']);
    const remote = await cli({ socket: '' }, ['cat', join(pulled, shot), '--json']);
    expect(remote.code).toBe(0);
    expect(remote.stdout).toBe(local.stdout);
    expect(remote.stdout.length).toBeGreaterThan(0);
    for (const host of ['alpha', 'beta']) {
      const got = events.get(host)!;
      expect(got.every((e) => e.session === 'd' && e.event.startsWith('kmem:'))).toBe(true);
      // Exactly once each, and no gap.
      expect(got.map((e) => e.seq).sort((a, b) => a - b)).toEqual(range(got.length));
    }
  });

  it('an agent records on while NATS is away; killed with SIGKILL, it sends its spool after its restart, in sequence from 1', {
    timeout: 120_000,
  }, async () => {
    const work = dir('fleet-kill-');
    const s = await server(work);
    await s.stop();
    const first = await agent(work, s.url, 'gamma');
    await first.waitForLog(/spooling to .*fleet-spool until it can be reached/);
    await exportDemo(first);
    const spool = join(first.stateDir, 'fleet-spool');
    const spooled = () =>
      readdirSync(spool)
        .filter((f) => f.endsWith('.seg'))
        .reduce((a, f) => a + statSync(join(spool, f)).size, 0);
    await eventually(() => (spooled() > 20_000 ? true : undefined));
    // Recording does not wait for NATS: the session keeps counting events, and loses none.
    const status = async () =>
      JSON.parse((await cli(first, ['session', 'status', 'd', '--json'])).stdout) as { events: number; lost: number };
    const before = await status();
    const later = await eventually(async () => {
      const s = await status();
      return s.events > before.events ? s : undefined;
    });
    expect(later.lost).toBe(0);
    await first.kill9();
    // What the killed agent left: every record of it must reach the stream.
    const left = Spool.open(spool);
    let spooledRecords = 0;
    for (let n = left.next(); n !== undefined; n = left.next()) spooledRecords += n.entry.count;
    left.close();
    expect(spooledRecords).toBeGreaterThan(0);
    await s.restart();
    const second = await agent(work, s.url, 'gamma');
    await second.waitForLog(/session d exports its events/);
    expect((await cli(second, ['session', 'stop', 'd'])).code).toBe(0);
    const got = (await settled(s.url, ['gamma'])).get('gamma')!;
    // Sequence numbers continue across the restart: what the killed agent spooled starts the stream at 1.
    expect(got.map((e) => e.seq).sort((a, b) => a - b)).toEqual(range(got.length));
    expect(got.length).toBeGreaterThanOrEqual(spooledRecords);
  });

  it('says clearly that the server refused the credentials, and exits 1', { timeout: 30_000 }, async () => {
    const work = dir('fleet-auth-');
    const s = await server(work, { user: 'agent', password: 'right' });
    const refused = startAgent(work, [
      '--nats',
      s.url,
      '--host',
      'h',
      '--nats-user',
      'agent',
      '--nats-password',
      'wrong',
    ]);
    await expect(refused).rejects.toThrow(
      /exited \(1\)[\s\S]*NATS at nats:\/\/127\.0\.0\.1:\d+ refused user "agent": .*[Aa]uthorization/,
    );
    const hosts = await cli({ socket: '' }, [
      'fleet',
      'hosts',
      '--nats',
      s.url,
      '--nats-user',
      'agent',
      '--nats-password',
      'wrong',
    ]);
    expect(hosts.code).toBe(1);
    expect(hosts.stderr).toMatch(/^evtrace: ERR_FLEET_AUTH: NATS at nats:\/\/127\.0\.0\.1:\d+ refused user "agent": /);
    // The right credentials get through: to a server no agent published to yet.
    const ok = await cli({ socket: '' }, [
      'fleet',
      'hosts',
      '--nats',
      s.url,
      '--nats-user',
      'agent',
      '--nats-password',
      'right',
    ]);
    expect(ok.stderr).toBe(
      'evtrace: ERR_FLEET_STREAM: no stream EVTRACE on this server: no agent has published to it yet (or another stream name was meant)\n',
    );
  });
});
