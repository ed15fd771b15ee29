/**
 * Export and tail throughput against a real nats-server (JetStream, file store, on loopback), each figure beside a
 * peer measured in the same run on the same bytes:
 *   FleetPublisher (batching, spool file, acknowledged JetStream publishes)  vs  raw acknowledged JetStream
 *   publishes of the same message bodies (no spool), the limit the server and client set;
 *   tailEvents (what `fleet tail --json` runs: decode, JSON lines with host and sequence, a chunk per message)  vs
 *   a raw ordered consumer reading the same messages.
 * Run: node src/fleet.bench.ts (needs nats-server on PATH or in /usr/sbin); EVTRACE_BENCH_EVENTS sets the number of
 * events (a multiple of 1024 is exact), for a smaller run on a busy machine.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromTotal, printComparisons } from '@evtrace/bench';
import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import { connectFleet } from './connect.ts';
import { encodeEnvelope } from './envelope.ts';
import { FleetPublisher } from './publisher.ts';
import { readChannel } from './reader.ts';
import { subjectOf } from './subjects.ts';
import { tailEvents } from './tail.ts';
import { NatsServer, natsServerAvailable } from './testing/nats-server.ts';

const BATCH = 1024;
const EVENTS = Math.max(BATCH, Number(process.env.EVTRACE_BENCH_EVENTS ?? 200_000) || 200_000);
// One kmalloc event as `evtrace cat --json` prints it.
const EVENT = JSON.stringify({
  ts_ns: '11810879215128',
  cpu: 0,
  event: 'kmem:kmalloc',
  pid: 4101,
  comm: 'demo-worker',
  flags: {
    irqs_off: false,
    need_resched: false,
    preempt_resched: false,
    hardirq: false,
    softirq: false,
    nmi: false,
    preempt_depth: 0,
    migrate_disable: 0,
  },
  fields: {
    call_site: '0xffffffff81040806',
    ptr: '0xffff888102773280',
    bytes_req: '293',
    bytes_alloc: '2287',
    gfp_flags: '0x2c6',
    node: 603,
  },
});

if (!natsServerAvailable()) {
  process.stdout.write(
    '\n### fleet\n\nnot measured: nats-server is not installed (Debian: apt-get install nats-server)\n',
  );
  process.exit(0);
}
const dir = mkdtempSync(join(tmpdir(), 'evtrace-fleet-bench-'));
const server = await NatsServer.start({ dir: join(dir, 'nats') });
try {
  const nc = await connectFleet({ servers: server.url });
  const js = jetstream(nc);

  // Ours: records in, acknowledged by the stream.
  const publisher = await FleetPublisher.start({
    host: 'bench',
    connection: { servers: server.url },
    spoolDir: join(dir, 'spool'),
    batch: { records: BATCH },
  });
  let t0 = process.hrtime.bigint();
  for (let i = 0; i < EVENTS; i++) publisher.add('events.ours', EVENT);
  if (!(await publisher.drain(120_000))) throw new Error('the publisher did not drain in 120 s');
  const ours = fromTotal('export (spooled, acked)', Number(process.hrtime.bigint() - t0), EVENTS, EVENT.length);
  await publisher.close();

  // Peer: the same bodies, published and acknowledged with the same window, straight from memory.
  const records = Array.from({ length: BATCH }, () => EVENT);
  const bodies = Array.from({ length: Math.ceil(EVENTS / BATCH) }, (_, i) =>
    encodeEnvelope(
      { v: 1, host: 'raw', channel: 'events.raw', seq: i * BATCH + 1, n: BATCH, time: new Date().toISOString() },
      records,
    ),
  );
  t0 = process.hrtime.bigint();
  const inflight = new Set<Promise<unknown>>();
  for (let i = 0; i < bodies.length; i++) {
    const p: Promise<unknown> = js
      .publish(subjectOf('raw', 'events.raw'), bodies[i]!, { msgID: `raw.${i}` })
      .then(() => inflight.delete(p));
    inflight.add(p);
    if (inflight.size >= 64) await Promise.race(inflight);
  }
  await Promise.all(inflight);
  const raw = fromTotal(
    'raw JetStream publish, same bytes',
    Number(process.hrtime.bigint() - t0),
    bodies.length * BATCH,
    EVENT.length,
  );

  // Ours: every record of one host as `fleet tail --json` writes it (host, sequence number and session spliced in).
  t0 = process.hrtime.bigint();
  let bytes = 0;
  const n = await tailEvents(nc, { session: 'ours', since: 'all', json: true }, (chunk) => {
    bytes += chunk.length;
  });
  const tail = fromTotal('fleet tail --json (decode, stamp)', Number(process.hrtime.bigint() - t0), n, bytes / n);

  // Peer: a raw ordered consumer over the same messages, bytes only.
  t0 = process.hrtime.bigint();
  const consumer = await js.consumers.get('EVTRACE', {
    filter_subjects: subjectOf('bench', 'events.ours'),
    deliver_policy: DeliverPolicy.All,
  });
  const messages = await consumer.consume({ max_bytes: 8 * 1024 * 1024 });
  let m2 = 0;
  let got = 0;
  for await (const m of messages) {
    got += m.data.length;
    m2++;
    if (m.info.pending === 0) break;
  }
  await messages.close();
  const rawTail = fromTotal('raw ordered consumer, same messages', Number(process.hrtime.bigint() - t0), n, got / n);
  void m2;

  // 100 hosts at once, each its own publisher, connection and spool, while one reader follows them all.
  const HOSTS = 100;
  const PER_HOST = Math.max(100, Math.round(EVENTS / HOSTS / 100) * 100);
  const rssBefore = process.memoryUsage().rss;
  const fleet = await Promise.all(
    Array.from({ length: HOSTS }, (_, i) =>
      FleetPublisher.start({
        host: `sim${i}`,
        connection: { servers: server.url },
        spoolDir: join(dir, `spool-sim${i}`),
        batch: { records: BATCH },
      }),
    ),
  );
  const follow = new AbortController();
  let followed = 0;
  const reader = (async () => {
    for await (const _ of readChannel(nc, 'events.sim', { since: 'new', follow: true, signal: follow.signal })) {
      if (++followed === HOSTS * PER_HOST) follow.abort();
    }
  })();
  await new Promise((r) => setTimeout(r, 200));
  t0 = process.hrtime.bigint();
  for (let k = 0; k < PER_HOST; k += 100)
    for (const p of fleet) for (let j = 0; j < 100; j++) p.add('events.sim', EVENT);
  const drained = await Promise.all(fleet.map((p) => p.drain(120_000)));
  if (drained.includes(false)) throw new Error('a simulated host did not drain in 120 s');
  await Promise.race([reader, new Promise((r) => setTimeout(r, 60_000))]);
  const hosts = fromTotal(
    `${HOSTS} hosts at once, read live`,
    Number(process.hrtime.bigint() - t0),
    HOSTS * PER_HOST,
    EVENT.length,
  );
  const rssGrowth = (process.memoryUsage().rss - rssBefore) / (1024 * 1024);
  for (const p of fleet) await p.close();

  printComparisons(`fleet: ${EVENTS} events of ${EVENT.length} bytes through one nats-server on loopback`, [
    { case: 'export with JetStream acks (target >= 200k events/s)', ours, peer: raw, target: '>= 200k/s' },
    { case: 'fleet tail consumption (target >= 500k events/s)', ours: tail, peer: rawTail, target: '>= 500k/s' },
    {
      case: `${HOSTS} simulated hosts publishing at once, one live reader (${followed} of ${HOSTS * PER_HOST} read; RSS grew ${rssGrowth.toFixed(0)} MiB)`,
      ours: hosts,
      peer: ours,
      target: 'reader keeps up, memory bounded',
    },
  ]);
  await nc.close();
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
