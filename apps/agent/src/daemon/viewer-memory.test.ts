/**
 * Stalled viewers of a real agent: clients that subscribe and stop reading. What the agent queues for them is bounded
 * per viewer (MAX_VIEWER_QUEUE_BYTES, whatever queue length they asked for), and given up as soon as they leave,
 * by unsubscribing or by closing their connection, as its metrics endpoint reports.
 */
import { rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, eventually, type RunningAgent, startAgent, workDir } from '../testing/agent-daemon.ts';
import { freePort } from '../testing/prometheus.ts';
import { MAX_VIEWER_QUEUE_BYTES } from './viewer.ts';

const VIEWERS = 8;
/** What each stalled viewer holds before they leave: well past its socket's buffers, so it is the queue's. */
const HELD = 1 << 20;

let dir: string;
let agent: RunningAgent;
let metricsUrl: string;
beforeAll(async () => {
  dir = workDir('agent-viewer-memory-');
  const port = await freePort();
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
  agent = await startAgent(dir, ['--demo-rate', '20000', '--metrics', `127.0.0.1:${port}`]);
  const created = await cli(agent, [
    'session',
    'create',
    's',
    '--events',
    'kmem:*,sched:*',
    '--mode',
    'overwrite',
    '--source',
    'demo',
  ]);
  expect(created.code, created.stderr).toBe(0);
  expect((await cli(agent, ['session', 'start', 's'])).code).toBe(0);
});
afterAll(async () => {
  await agent?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The agent's gauges of that name, read from its metrics endpoint. */
async function gauge(name: string): Promise<number> {
  // A kept-alive connection the server closes as the next request leaves is HTTP's known race (a loaded machine widens
  // it); an idempotent GET is sent again on a new connection, as HTTP clients do.
  const text = await fetch(metricsUrl)
    .catch(() => fetch(metricsUrl))
    .then((r) => r.text());
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (m === null) throw new Error(`no ${name} in the metrics:\n${text}`);
  return Number(m[1]);
}

/** A client that subscribes with the largest queue, reads the subscribe reply, then never reads again. */
function stalledViewer(): Promise<{ socket: Socket; stream: number }> {
  return new Promise((resolve, reject) => {
    const socket = connect(agent.socket);
    let text = '';
    const onData = (d: Buffer) => {
      text += d.toString();
      const m = /"id":2,"ok":true,"result":\{"stream":(\d+)\}/.exec(text);
      if (m === null) return;
      socket.off('data', onData);
      socket.pause();
      resolve({ socket, stream: Number(m[1]) });
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(
      '{"id":1,"op":"hello","version":2}\n{"id":2,"op":"subscribe","name":"s","queue":100000,"window":false}\n',
    );
  });
}

describe('memory held for stalled viewers', () => {
  it('is bounded per viewer and given up at once when they unsubscribe or disconnect', async () => {
    const status = JSON.parse((await cli(agent, ['session', 'status', 's', '--json'])).stdout) as { demo: boolean };
    expect(status.demo).toBe(true);
    const viewers = await Promise.all(Array.from({ length: VIEWERS }, stalledViewer));
    expect(await gauge('evtrace_agent_viewers')).toBe(VIEWERS);
    // Their queues fill (the bound itself: viewer.test.ts).
    const held = await eventually(async () => {
      const bytes = await gauge('evtrace_agent_viewer_queued_bytes');
      return bytes >= VIEWERS * HELD ? bytes : undefined;
    }, 30_000);
    expect(held).toBeLessThanOrEqual(VIEWERS * MAX_VIEWER_QUEUE_BYTES);

    // Half unsubscribe (still not reading): their queues are dropped, not parked in their sockets.
    const half = viewers.slice(0, VIEWERS / 2);
    for (const [i, v] of half.entries()) v.socket.write(`{"id":${3 + i},"op":"unsubscribe","stream":${v.stream}}\n`);
    const t0 = Date.now();
    await eventually(async () => ((await gauge('evtrace_agent_viewers')) === VIEWERS / 2 ? true : undefined), 3000);
    expect(await gauge('evtrace_agent_viewer_queued_bytes')).toBeLessThanOrEqual(
      (VIEWERS / 2) * MAX_VIEWER_QUEUE_BYTES,
    );
    // The others close their connections: nothing stays queued.
    for (const v of viewers.slice(VIEWERS / 2)) v.socket.destroy();
    await eventually(async () => ((await gauge('evtrace_agent_viewer_queued_bytes')) === 0 ? true : undefined), 3000);
    expect(await gauge('evtrace_agent_viewers')).toBe(0);
    expect(Date.now() - t0).toBeLessThan(5000);
    for (const v of half) v.socket.destroy();
  }, 60_000);
});
