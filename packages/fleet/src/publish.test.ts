import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connectFleet } from './connect.ts';
import { FleetPublisher } from './publisher.ts';
import { readChannel } from './reader.ts';
import { jetStreamReady, NatsServer, natsServerAvailable, startCluster } from './testing/nats-server.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-fleet-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function server(dir: string, extra: { user?: string; password?: string } = {}): Promise<NatsServer> {
  const s = await NatsServer.start({ dir: join(dir, 'nats'), ...extra });
  cleanups.push(() => s.stop());
  return s;
}

async function publisher(url: string, dir: string, host = 'h1', more = {}): Promise<FleetPublisher> {
  const p = await FleetPublisher.start({
    host,
    connection: { servers: url },
    spoolDir: join(dir, `spool-${host}`),
    batch: { records: 50, delayMs: 5 },
    ackTimeoutMs: 1000,
    ...more,
  });
  cleanups.push(() => p.close());
  return p;
}

/** Every record of a channel, read from the start; sequence numbers per host. */
async function readAll(url: string, channel: string): Promise<Map<string, number[]>> {
  const nc = await connectFleet({ servers: url });
  try {
    const seqs = new Map<string, number[]>();
    for await (const r of readChannel(nc, channel, { since: 'all' })) {
      const list = seqs.get(r.host) ?? [];
      list.push(r.seq);
      seqs.set(r.host, list);
      expect(JSON.parse(r.record).i).toBe(r.seq);
    }
    return seqs;
  } finally {
    await nc.close();
  }
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
const sorted = (a: number[] | undefined) => [...(a ?? [])].sort((x, y) => x - y);

describe.skipIf(!natsServerAvailable())('publishing to a real nats-server (needs nats-server)', () => {
  it('delivers every record once, in order, with its host and sequence number', async () => {
    const dir = tempDir();
    const s = await server(dir);
    const p = await publisher(s.url, dir);
    for (let i = 1; i <= 1000; i++) p.add('events.demo', JSON.stringify({ i }));
    expect(await p.drain(10_000)).toBe(true);
    const got = await readAll(s.url, 'events.>');
    expect(got.get('h1')).toEqual(range(1000));
    expect(p.stats.dropped).toEqual({ records: 0, messages: 0 });
  });

  it('spools while the server is killed and replays after its restart: every sequence number exactly once', async () => {
    const dir = tempDir();
    const s = await server(dir);
    const p = await publisher(s.url, dir);
    let i = 0;
    for (; i < 500; i++) p.add('events.demo', JSON.stringify({ i: i + 1 }));
    await s.stop('SIGKILL');
    for (; i < 1500; i++) p.add('events.demo', JSON.stringify({ i: i + 1 }));
    p.flush();
    expect(p.stats.spoolBytes).toBeGreaterThan(0);
    await s.restart();
    for (; i < 2000; i++) p.add('events.demo', JSON.stringify({ i: i + 1 }));
    expect(await p.drain(20_000)).toBe(true);
    expect(sorted((await readAll(s.url, 'events.>')).get('h1'))).toEqual(range(2000));
  });

  it('continues sequence numbers after a restart of the publisher (message ids never repeat)', async () => {
    const dir = tempDir();
    const s = await server(dir);
    const a = await publisher(s.url, dir);
    for (let i = 1; i <= 100; i++) a.add('mce', JSON.stringify({ i }));
    expect(await a.drain(5000)).toBe(true);
    await a.close();
    const b = await publisher(s.url, dir);
    for (let i = 101; i <= 200; i++) b.add('mce', JSON.stringify({ i }));
    expect(await b.drain(5000)).toBe(true);
    expect((await readAll(s.url, 'mce')).get('h1')).toEqual(range(200));
  });

  it('refuses wrong credentials with a clear error', async () => {
    const dir = tempDir();
    const s = await server(dir, { user: 'agent', password: 'right' });
    const start = FleetPublisher.start({
      host: 'h1',
      connection: { servers: s.url, user: 'agent', password: 'wrong' },
      spoolDir: join(dir, 'spool'),
    });
    await expect(start).rejects.toMatchObject({
      code: 'ERR_FLEET_AUTH',
      message: expect.stringMatching(/NATS at nats:\/\/127\.0\.0\.1:\d+ refused user "agent": .*authorization/i),
    });
    const p = await publisher(s.url, dir, 'h2', { connection: { servers: s.url, user: 'agent', password: 'right' } });
    p.add('mce', '{"i":1}');
    expect(await p.drain(5000)).toBe(true);
  });

  it('counts exactly what a full spool dropped, and reports it in its status', async () => {
    const dir = tempDir();
    const s = await server(dir);
    await s.stop();
    const p = await publisher(s.url, dir, 'h1', { spool: { maxBytes: 64 * 1024 }, batch: { records: 10, delayMs: 5 } });
    const record = JSON.stringify({ i: 0, pad: 'x'.repeat(200) });
    for (let i = 0; i < 2000; i++) p.add('events.demo', record);
    p.flush();
    const { dropped } = p.stats;
    expect(dropped.records).toBeGreaterThan(0);
    expect(dropped.records).toBe(dropped.messages * 10);
    await s.restart();
    expect(await p.drain(20_000)).toBe(true);
    const nc = await connectFleet({ servers: s.url });
    cleanups.push(() => nc.close());
    let stored = 0;
    for await (const _ of readChannel(nc, 'events.>', { since: 'all' })) stored++;
    // What was stored and what was dropped are all the records added.
    expect(stored + dropped.records).toBe(2000);
    p.status({ version: 'test' });
    const status = readChannel(nc, 'status', { follow: true, since: 'all' });
    const first = (await status.next()).value!;
    await status.return(undefined);
    expect(JSON.parse(first.record).spool.dropped).toEqual(dropped);
  });
});

describe.skipIf(!natsServerAvailable())('a 3-node cluster with an R3 stream (needs nats-server)', () => {
  it('keeps every sequence number exactly once when the node the publisher uses is killed mid-export', async () => {
    const dir = tempDir();
    const nodes = await startCluster(dir, 3);
    cleanups.push(async () => {
      for (const n of nodes) await n.stop();
    });
    // The meta leader is elected a little after the servers are ready: the publisher spools until the stream exists.
    const p = await publisher(nodes[0]!.url, dir, 'h1', {
      connection: { servers: nodes[0]!.url },
      stream: { replicas: 3 },
    });
    let i = 0;
    for (; i < 500; i++) p.add('events.demo', JSON.stringify({ i: i + 1 }));
    expect(await p.drain(30_000)).toBe(true);
    await nodes[0]!.stop('SIGKILL');
    for (; i < 1000; i++) p.add('events.demo', JSON.stringify({ i: i + 1 }));
    await nodes[0]!.restart();
    for (; i < 1500; i++) p.add('events.demo', JSON.stringify({ i: i + 1 }));
    expect(await p.drain(30_000)).toBe(true);
    // Read through a node that stayed up, once the cluster has its meta leader again. The restarted node's replica
    // catches up after the acks (a loaded machine has been seen to read the last 500 a moment late): read again until
    // every number is there or 15 s have passed; exactly once either way.
    await jetStreamReady(nodes[1]!.url);
    let seen = sorted((await readAll(nodes[1]!.url, 'events.>')).get('h1'));
    for (const deadline = Date.now() + 15_000; seen.length < 1500 && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      seen = sorted((await readAll(nodes[1]!.url, 'events.>')).get('h1'));
    }
    expect(seen).toEqual(range(1500));
  });
});
