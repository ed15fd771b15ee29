import { createServer } from 'node:net';
import { RingBuffer, type Writer } from '@evtrace/ringbuf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DemoType } from '../commands/demo-events.ts';
import { type Prometheus, prometheusMissing, startPrometheus } from '../testing/prometheus.ts';
import { MetricsError } from './errors.ts';
import { processHealth } from './process.ts';
import { type MetricsServer, startMetricsServer } from './server.ts';
import type { MetricsProvider, SessionCounters } from './types.ts';

/**
 * A provider over real ring buffers: one per CPU of one session, written by the test like a producer would; the
 * counters the endpoint exports are the buffers' own header counters.
 */
class RingbufSession {
  readonly buffers: RingBuffer[];
  readonly writers: Writer[];
  /** What the test itself saw: records accepted and dropped per CPU. */
  readonly accepted: number[];
  readonly dropped: number[];
  constructor(cpus: number) {
    this.buffers = Array.from({ length: cpus }, () =>
      RingBuffer.create({ pageSize: 4096, pageCount: 8, mode: 'discard' }),
    );
    this.writers = this.buffers.map((b, cpu) => b.writer({ streamId: cpu }));
    // A reader that never reads holds the pages: the buffers fill and then drop, as with a stalled consumer.
    for (const b of this.buffers) b.reader();
    this.accepted = this.buffers.map(() => 0);
    this.dropped = this.buffers.map(() => 0);
  }
  /** Writes `n` demo allocation records on `cpu`. */
  write(cpu: number, n: number): void {
    const payload = new Uint8Array(24);
    for (let i = 0; i < n; i++) {
      payload[0] = i & 0xff;
      if (this.writers[cpu]!.writeBytes(DemoType.alloc, payload)) this.accepted[cpu]!++;
      else this.dropped[cpu]!++;
    }
    this.writers[cpu]!.flush();
  }
  counters(name: string): SessionCounters {
    return {
      name,
      mode: 'discard',
      state: 'running',
      source: 'demo',
      cpus: this.buffers.map((b, cpu) => {
        const s = b.stats();
        return { cpu, events: s.written, lost: s.discarded + s.overwritten, bytes: s.bytes };
      }),
      viewers: 1,
      viewerLost: 0,
    };
  }
}

const started = Date.now();
const session = new RingbufSession(2);
let protocolErrors = 0;
const provider: MetricsProvider = {
  sessions: () => [session.counters('flight')],
  health: () => ({ startTimeMs: started, sessions: 1, viewers: 1, protocolErrors, ...processHealth(started) }),
};

describe('metrics endpoint', () => {
  let server: MetricsServer;
  beforeAll(async () => {
    server = await startMetricsServer({ host: '127.0.0.1', port: 0 }, provider);
  });
  afterAll(() => server.close());

  it('serves the exposition format at /metrics and nothing else', async () => {
    session.write(0, 10);
    const response = await fetch(server.url);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    expect(text).toContain('# TYPE evtrace_events_total counter');
    expect(text).toContain(`evtrace_events_total{session="flight",source="demo",cpu="0"} ${session.accepted[0]}`);
    expect(text).toMatch(/^process_resident_memory_bytes \d+$/m);
    const base = server.url.replace(/\/metrics$/, '');
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    expect((await fetch(server.url, { method: 'POST', body: 'x' })).status).toBe(405);
  });

  it('adds contributed collectors, refuses bad or duplicate names, and survives one that throws', async () => {
    let errors = 3;
    const remove = server.registerCollector({
      name: 'node_edac_correctable_errors_total',
      help: 'Total correctable memory errors.',
      type: 'counter',
      labelNames: ['controller'],
      collect: () => [{ labels: { controller: '0' }, value: errors }],
    });
    expect(() =>
      server.registerCollector({
        name: 'node_edac_correctable_errors_total',
        help: '',
        type: 'counter',
        labelNames: [],
        collect: () => [],
      }),
    ).toThrow(expect.objectContaining({ code: 'ERR_METRICS_COLLECTOR' }));
    expect(() =>
      server.registerCollector({ name: 'bad name', help: '', type: 'gauge', labelNames: [], collect: () => [] }),
    ).toThrow(MetricsError);
    server.registerCollector({
      name: 'broken_total',
      help: 'A collector that fails.',
      type: 'counter',
      labelNames: [],
      collect: () => {
        throw new Error('device gone');
      },
    });
    errors = 5;
    const first = await (await fetch(server.url)).text();
    expect(first).toMatch(/^node_edac_correctable_errors_total\{controller="0"\} 5$/m);
    expect(first).toMatch(/^evtrace_events_total\{/m);
    const second = await (await fetch(server.url)).text();
    expect(second).toMatch(/^evtrace_collector_errors_total\{collector="broken_total"\} [12]$/m);
    remove();
    expect(await (await fetch(server.url)).text()).not.toContain('node_edac_correctable_errors_total');
  });

  it('fails with ERR_METRICS_LISTEN naming the address when the port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const { port } = blocker.address() as { port: number };
    try {
      await expect(startMetricsServer({ host: '127.0.0.1', port }, provider)).rejects.toThrow(
        expect.objectContaining({
          code: 'ERR_METRICS_LISTEN',
          message: expect.stringContaining(`127.0.0.1:${port}: the address is in use`),
        }),
      );
    } finally {
      blocker.close();
    }
  });
});

const missing = prometheusMissing();

describe.skipIf(missing !== undefined)(`scraped by a real Prometheus${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let server: MetricsServer;
  let prometheus: Prometheus;
  beforeAll(async () => {
    server = await startMetricsServer({ host: '127.0.0.1', port: 0 }, provider);
    prometheus = await startPrometheus([`127.0.0.1:${server.address.port}`]);
  }, 40_000);
  afterAll(async () => {
    await prometheus?.stop();
    await server?.close();
  });

  /** Waits until Prometheus holds the session's current per-CPU totals of `metric`, and returns them by CPU. */
  async function scraped(metric: string, expected: number[]): Promise<number[]> {
    const samples = await prometheus.waitFor(
      `${metric}{job="evtrace",session="flight",source="demo"}`,
      (s) => s.length === expected.length && s.every((x) => x.value === expected[Number(x.metric.cpu)]),
    );
    return samples.sort((a, b) => Number(a.metric.cpu) - Number(b.metric.cpu)).map((s) => s.value);
  }

  it('holds the events, lost events and bytes the ring buffers counted, per CPU, as they grow', async () => {
    session.write(0, 50);
    session.write(1, 20);
    // What the writers saw themselves: every record either accepted or dropped.
    expect(await scraped('evtrace_events_total', session.accepted)).toEqual(session.accepted);
    expect(await scraped('evtrace_lost_events_total', [0, 0])).toEqual([0, 0]);
    // 8 pages of 4 KiB hold a few hundred 24-byte records: more fill the buffer and are dropped and counted.
    session.write(1, 5000);
    expect(session.dropped[1]).toBeGreaterThan(0);
    expect(await scraped('evtrace_events_total', session.accepted)).toEqual(session.accepted);
    expect(await scraped('evtrace_lost_events_total', session.dropped)).toEqual(session.dropped);
    const bytes = session.buffers.map((b) => b.stats().bytes);
    expect(bytes[1]).toBeGreaterThanOrEqual(session.accepted[1]! * 24);
    expect(await scraped('evtrace_bytes_total', bytes)).toEqual(bytes);
    const up = await prometheus.query('up{job="evtrace"}');
    expect(up.map((s) => s.value)).toEqual([1]);
  });

  it('holds session state, viewers and agent health', async () => {
    protocolErrors = 7;
    await prometheus.waitFor('evtrace_agent_protocol_errors_total', (s) => s[0]?.value === 7);
    const running = await prometheus.query('evtrace_session_state{session="flight"} == 1');
    expect(running.map((s) => s.metric.state)).toEqual(['running']);
    expect((await prometheus.query('evtrace_session_viewers{session="flight"}'))[0]?.value).toBe(1);
    const uptime = (await prometheus.query('evtrace_agent_uptime_seconds'))[0]!.value;
    expect(uptime).toBeGreaterThan(0);
    expect(uptime).toBeLessThan((Date.now() - started) / 1000 + 1);
    const rss = (await prometheus.query('process_resident_memory_bytes{job="evtrace"}'))[0]!.value;
    expect(rss).toBeGreaterThan(10 * 1024 * 1024);
  });
});
