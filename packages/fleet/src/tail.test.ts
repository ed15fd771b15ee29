/** tailEvents (what `fleet tail` runs) against a real nats-server: JSON lines spliced as bytes, text, filter, count. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connectFleet } from './connect.ts';
import { eventFilter } from './filter.ts';
import { FleetPublisher } from './publisher.ts';
import { tailEvents } from './tail.ts';
import { NatsServer, natsServerAvailable } from './testing/nats-server.ts';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const event = (i: number) =>
  JSON.stringify({
    ts_ns: String(2_000_000_000 + i),
    cpu: i % 2,
    event: 'kmem:kmalloc',
    pid: 100 + i,
    comm: 'wörker',
    flags: null,
    fields: { bytes_req: String(64 * i), ptr: '0xffff888000000040' },
  });

describe.skipIf(!natsServerAvailable())('tailEvents against a real nats-server (needs nats-server)', () => {
  it('writes every event of every host once, as JSON lines, text, filtered, or the first N', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'evtrace-fleet-tail-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const s = await NatsServer.start({ dir: join(dir, 'nats') });
    cleanups.push(() => s.stop());
    for (const host of ['web1', 'web2']) {
      const p = await FleetPublisher.start({
        host,
        connection: { servers: s.url },
        spoolDir: join(dir, host),
        batch: { records: 7 },
      });
      for (let i = 1; i <= 20; i++) p.add(host === 'web1' ? 'events.flight' : 'events.kmem', event(i));
      expect(await p.drain(10_000)).toBe(true);
      await p.close();
    }
    const nc = await connectFleet({ servers: s.url });
    cleanups.push(() => nc.close());
    const run = async (o: Parameters<typeof tailEvents>[1]) => {
      const chunks: Uint8Array[] = [];
      const n = await tailEvents(nc, { since: 'all', ...o }, (c) => chunks.push(c));
      const text = Buffer.concat(chunks).toString('utf8');
      expect(text.split('\n').length - 1).toBe(n);
      return text.split('\n').slice(0, -1);
    };

    const json = (await run({ json: true })).map((l) => JSON.parse(l));
    expect(json).toHaveLength(40);
    for (const host of ['web1', 'web2']) {
      const mine = json.filter((e) => e.host === host);
      expect(mine.map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect(mine[0]).toEqual({
        host,
        seq: 1,
        session: host === 'web1' ? 'flight' : 'kmem',
        ...JSON.parse(event(1)),
      });
      expect(Object.keys(mine[0]).slice(0, 3)).toEqual(['host', 'seq', 'session']);
    }

    const text = await run({ host: 'web2' });
    expect(text).toHaveLength(20);
    expect(text[2]).toBe('web2 #3 kmem [1] 2.000000003 wörker-103 kmem:kmalloc: bytes_req=192 ptr=0xffff888000000040');

    const filtered = (await run({ json: true, filter: eventFilter('bytes_req >= 1024 && host == "web1"') })).map((l) =>
      JSON.parse(l),
    );
    expect(filtered.map((e) => `${e.host}#${e.seq}`)).toEqual(Array.from({ length: 5 }, (_, i) => `web1#${16 + i}`));

    const first = await run({ json: true, session: 'flight', count: 9 });
    expect(first.map((l) => JSON.parse(l).seq)).toEqual(Array.from({ length: 9 }, (_, i) => i + 1));
  });
});
