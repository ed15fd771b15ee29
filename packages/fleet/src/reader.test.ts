import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterEach, describe, expect, it } from 'vitest';
import { connectFleet } from './connect.ts';
import { FleetEventDecoder } from './display.ts';
import { ENVELOPE_VERSION, encodeEnvelope } from './envelope.ts';
import { eventFilter } from './filter.ts';
import { FleetPublisher } from './publisher.ts';
import { fleetErrors, fleetHosts, pullShot, type ReadOptions, readChannel } from './reader.ts';
import type { HardwareErrorRecord, ThresholdRecord } from './records.ts';
import { ensureStream } from './stream.ts';
import { type Channel, DEFAULT_STREAM, messageId, subjectOf } from './subjects.ts';
import { NatsServer, natsServerAvailable } from './testing/nats-server.ts';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'evtrace-fleet-read-'));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

describe('eventFilter (over events decoded by the JSON event codec)', () => {
  const decoder = new FleetEventDecoder();
  const line = decoder.decode(
    JSON.stringify({
      ts_ns: '1000',
      cpu: 1,
      event: 'kmem:kmalloc',
      pid: 7,
      comm: 'nginx',
      flags: null,
      fields: { bytes_req: '4096', ptr: '0xffff8881', node: 0 },
    }),
    'h',
    'events.s',
    1,
  );
  it('compares decimal and hex strings as integers, strings as strings, host and session as fields', () => {
    expect(eventFilter('bytes_req > 1024 && node == 0').test(line, 'h', 's')).toBe(true);
    expect(eventFilter('bytes_req > 8192').test(line, 'h', 's')).toBe(false);
    expect(eventFilter('ptr == 0xffff8881').test(line, 'h', 's')).toBe(true);
    expect(eventFilter('host == "web1" && session ~ "fl*"').test(line, 'web1', 'flight')).toBe(true);
    expect(eventFilter('host == "web1"').test(line, 'web2', 'flight')).toBe(false);
    expect(eventFilter('comm ~ "ngi*" && common_pid == 7').test(line, 'h', 's')).toBe(true);
    expect(eventFilter('cpu == 1 && common_pid != 8').test(line, 'h', 's')).toBe(true);
  });
  it('leaves out events the expression does not fit, and says why when none fit', () => {
    const f = eventFilter('nosuch > 1');
    expect(f.test(line, 'h', 's')).toBe(false);
    expect(f.problem).toMatch(/kmem:kmalloc: /);
  });
  it('refuses bad syntax at once, with the kernel caret', () => {
    expect(() => eventFilter('bytes_req >')).toThrow(/--filter: bytes_req >\n {12}\^\n/);
    expect(() => eventFilter('(a > 1')).toThrow(/Too many '\('/);
  });
  it('a record that is not an event line is an error naming host, channel, sequence number and column', () => {
    expect(() => decoder.decode('{"ts_ns":"1","cpu":"x"}', 'web1', 'events.flight', 42)).toThrow(
      /web1\.events\.flight:42:.*cpu: expected a CPU number or null/,
    );
  });
});

describe.skipIf(!natsServerAvailable())('reading a fleet from a real nats-server (needs nats-server)', () => {
  async function setup() {
    const dir = tempDir();
    const s = await NatsServer.start({ dir: join(dir, 'nats') });
    cleanups.push(() => s.stop());
    const start = async (host: string) => {
      const p = await FleetPublisher.start({ host, connection: { servers: s.url }, spoolDir: join(dir, host) });
      cleanups.push(() => p.close());
      return p;
    };
    const nc = await connectFleet({ servers: s.url });
    cleanups.push(() => nc.close());
    return { dir, s, start, nc };
  }

  /** Publishes one batch as an agent's spool does: its envelope, under the message id of its first record. */
  async function publishBatch(nc: NatsConnection, host: string, channel: Channel, seq: number, n: number) {
    const records = Array.from({ length: n }, (_, i) => JSON.stringify({ i: seq + i }));
    const body = encodeEnvelope(
      { v: ENVELOPE_VERSION, host, channel, seq, n, time: new Date().toISOString() },
      records,
    );
    return jetstream(nc).publish(subjectOf(host, channel), body, { msgID: messageId(host, channel, seq) });
  }
  const seqsOf = async (nc: NatsConnection, channel: string, since: ReadOptions['since']) => {
    const seqs: string[] = [];
    for await (const r of readChannel(nc, channel, { since })) seqs.push(`${r.host}:${r.seq}`);
    return seqs;
  };

  it('gives a batch the stream stored twice (a spool replayed after its duplicate window) once', async () => {
    const { nc } = await setup();
    await ensureStream(nc, { duplicateWindowMs: 300 });
    const begun = new Date();
    await publishBatch(nc, 'h1', 'events.demo', 1, 2);
    await publishBatch(nc, 'h1', 'events.demo', 3, 2);
    await publishBatch(nc, 'h2', 'events.demo', 1, 1);
    // Within the window the stream drops the copy itself.
    expect((await publishBatch(nc, 'h1', 'events.demo', 1, 2)).duplicate).toBe(true);
    await new Promise((r) => setTimeout(r, 600));
    // After it, the copy is stored: the reader leaves it out.
    expect((await publishBatch(nc, 'h1', 'events.demo', 1, 2)).duplicate).toBe(false);
    await publishBatch(nc, 'h1', 'events.demo', 5, 1);
    const jsm = await jetstreamManager(nc);
    expect((await jsm.streams.info(DEFAULT_STREAM)).state.messages).toBe(5);
    const once = ['h1:1', 'h1:2', 'h1:3', 'h1:4', 'h2:1', 'h1:5'];
    expect(await seqsOf(nc, 'events.>', 'all')).toEqual(once);
    expect(await seqsOf(nc, 'events.>', begun)).toEqual(once);
  });

  it('from a time, ends at the last message that matched when it began, without waiting on later subjects', async () => {
    const { nc } = await setup();
    await ensureStream(nc);
    await publishBatch(nc, 'h1', 'events.demo', 1, 3);
    await new Promise((r) => setTimeout(r, 50));
    const between = new Date();
    await new Promise((r) => setTimeout(r, 50));
    await publishBatch(nc, 'h1', 'mce', 1, 1);
    await publishBatch(nc, 'h1', 'events.demo', 4, 1);
    await publishBatch(nc, 'h1', 'mce', 2, 1);
    const t0 = performance.now();
    expect(await seqsOf(nc, 'events.>', between)).toEqual(['h1:4']);
    expect(await seqsOf(nc, 'events.>', new Date(0))).toEqual(['h1:1', 'h1:2', 'h1:3', 'h1:4']);
    // Nothing of the channel after the time: an empty answer at once (the mce messages after it do not match).
    await new Promise((r) => setTimeout(r, 50));
    const after = new Date();
    await publishBatch(nc, 'h1', 'mce', 3, 1);
    expect(await seqsOf(nc, 'events.>', after)).toEqual([]);
    expect(performance.now() - t0).toBeLessThan(10_000);
  });

  it('aggregates machine checks, memory errors and thresholds per host and DIMM', async () => {
    const { start, nc } = await setup();
    const a = await start('a');
    const b = await start('b');
    const err = (e: Partial<HardwareErrorRecord>): string =>
      JSON.stringify({ time: '2026-11-27T08:00:00.000Z', severity: 'corrected', count: 1, summary: 's', ...e });
    a.add('mce', err({ dimm: 'socket 1 channel 0 dimm 0', bank: 13 }));
    a.add('mce', err({ dimm: 'socket 1 channel 0 dimm 0', bank: 13, time: '2026-11-27T09:00:00.000Z' }));
    a.add('mce', err({ bank: 4, severity: 'fatal' }));
    a.add('edac', err({ dimm: 'CPU_SrcID#0_MC#0_Chan#1_DIMM#0', count: 4, severity: 'ucna' }));
    const crossed: ThresholdRecord = {
      time: '2026-11-27T09:00:00.000Z',
      kind: 'dimm-ce',
      message: 'corrected memory errors exceeded threshold',
      dimm: 'socket 1 channel 0 dimm 0',
      bank: 13,
      count: 2,
      action: 'none',
      result: 'ok',
    };
    a.add('threshold', JSON.stringify(crossed));
    b.add('edac', err({ dimm: 'DIMM_A1', count: 2 }));
    expect(await a.drain(5000)).toBe(true);
    expect(await b.drain(5000)).toBe(true);
    const rows = await fleetErrors(nc, { since: 'all' });
    expect(
      rows.map((r) => [r.host, r.place, r.errors, r.corrected, r.uncorrected, r.worst, r.threshold?.crossings ?? 0]),
    ).toEqual([
      ['a', 'bank 4', 1, 0, 1, 'fatal', 0],
      ['a', 'CPU_SrcID#0_MC#0_Chan#1_DIMM#0', 4, 0, 4, 'ucna', 0],
      ['a', 'socket 1 channel 0 dimm 0', 2, 2, 0, 'corrected', 1],
      ['b', 'DIMM_A1', 2, 2, 0, 'corrected', 0],
    ]);
    expect(rows[2]!.lastSeen).toBe('2026-11-27T09:00:00.000Z');
    expect((await fleetErrors(nc, { since: 'all', host: 'b' })).map((r) => r.place)).toEqual(['DIMM_A1']);
    // Nothing since a time after every message was stored.
    expect(await fleetErrors(nc, { since: new Date(Date.now() + 60_000) })).toEqual([]);
  });

  it('stores a trace-shot (file or directory) with its notice, pulls it back byte for byte, names what a host has', async () => {
    const { dir, s, start, nc } = await setup();
    const url = s.url;
    const p = await start('web1');
    const file = join(dir, 'flight-shot-0001.dat');
    writeFileSync(file, Buffer.from('tracing\0data'.repeat(100)));
    expect(await p.shot(file, { session: 'flight', shot: 'flight-shot-0001.dat', events: 3 })).toEqual({
      stored: true,
    });
    const ctf = join(dir, 'flight-shot-0002');
    mkdirSync(join(ctf, 'sub'), { recursive: true });
    writeFileSync(join(ctf, 'metadata'), '/* CTF 1.8 */');
    writeFileSync(join(ctf, 'sub', 'stream_0'), Buffer.alloc(100, 7));
    expect(await p.shot(ctf, { session: 'flight', shot: 'flight-shot-0002' })).toEqual({ stored: true });
    const tinyShots = await FleetPublisher.start({
      host: 'tiny',
      connection: { servers: url },
      spoolDir: join(dir, 'tiny'),
      shots: { maxBytes: 10 },
    });
    cleanups.push(() => tinyShots.close());
    expect(await tinyShots.shot(file, { session: 'flight', shot: 'x.dat' })).toEqual({
      stored: false,
      reason: '1200 bytes, over the 10-byte limit',
    });
    const out = join(dir, 'pulled');
    expect(await pullShot(nc, 'web1', 'flight-shot-0001.dat', out)).toBe(join(out, 'flight-shot-0001.dat'));
    expect(readFileSync(join(out, 'flight-shot-0001.dat'))).toEqual(readFileSync(file));
    await pullShot(nc, 'web1', 'flight-shot-0002', out);
    expect(readFileSync(join(out, 'flight-shot-0002', 'sub', 'stream_0'))).toEqual(Buffer.alloc(100, 7));
    await expect(pullShot(nc, 'web1', 'nope', out)).rejects.toThrow(
      'host web1 has no trace-shot nope in evtrace-shots (it has: flight-shot-0001.dat, flight-shot-0002)',
    );
    expect(await p.drain(5000)).toBe(true);
    const hosts = await fleetHosts(nc);
    expect(hosts.find((h) => h.host === 'web1')?.messages).toBe(2);
  });
});
