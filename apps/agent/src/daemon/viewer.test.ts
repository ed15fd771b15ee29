/**
 * Slow viewers: a viewer that does not read loses its own events, counted and reported, while the session and a
 * fast viewer lose nothing; the per-viewer queue bounds what the agent holds for it.
 */
import { rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import type { SessionStatus, SubscriptionItem } from '@evtrace/agent-protocol';
import { encodeLine } from '@evtrace/agent-protocol';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, eventually, startAgent, workDir } from '../testing/agent-daemon.ts';
import { MAX_VIEWER_QUEUE_BYTES, Viewer } from './viewer.ts';

describe('Viewer', () => {
  it(`holds at most MAX_VIEWER_QUEUE_BYTES of event text whatever its capacity; leaving drops the queue`, () => {
    const lines: string[] = [];
    const v = new Viewer(3, 100_000, {
      write: (l) => {
        lines.push(l);
        return false;
      },
      writable: false,
    });
    const event = `{"pad":"${'x'.repeat(1000)}"}`;
    const fits = Math.floor(MAX_VIEWER_QUEUE_BYTES / event.length);
    for (let i = 0; i < fits + 50; i++) v.offer(event);
    expect([v.queued, v.lost, v.queuedBytes]).toEqual([fits, 50, fits * event.length]);
    v.end('unsubscribed', false);
    expect([v.queued, v.queuedBytes]).toEqual([0, 0]);
    expect(lines.map((l) => JSON.parse(l))).toEqual([{ stream: 3, kind: 'end', reason: 'unsubscribed' }]);
  });

  it('queues up to its capacity, counts the rest lost, and reports the loss once the connection drains', () => {
    const lines: string[] = [];
    let writable = false;
    const v = new Viewer(7, 3, {
      write: (l) => {
        lines.push(l);
        return true;
      },
      get writable() {
        return writable;
      },
    });
    v.markLive();
    for (let i = 0; i < 5; i++) v.offer(`{"n":${i}}`);
    expect([v.queued, v.lost]).toEqual([3, 3]); // the live marker takes a slot: 2 events queued, 3 lost
    writable = true;
    v.flush();
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      { stream: 7, kind: 'live' },
      { stream: 7, kind: 'events', events: [{ n: 0 }, { n: 1 }] },
      { stream: 7, kind: 'loss', lost: 3, total: 3 },
    ]);
    v.end('bye');
    v.offer('{"n":9}');
    expect(JSON.parse(lines.at(-1)!)).toEqual({ stream: 7, kind: 'end', reason: 'bye' });
    expect(v.queued).toBe(0);
  });

  it('at the end hands a blocked connection everything queued, then the loss notice, then end', () => {
    const lines: string[] = [];
    const v = new Viewer(2, 4, {
      write: (l) => {
        lines.push(l);
        return false;
      },
      writable: false,
    });
    for (let i = 0; i < 6; i++) v.offer(`{"n":${i}}`);
    v.flush();
    expect(lines).toEqual([]); // the reader is behind: nothing sent yet
    v.end('stopped');
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      { stream: 2, kind: 'events', events: [{ n: 0 }, { n: 1 }, { n: 2 }, { n: 3 }] },
      { stream: 2, kind: 'loss', lost: 2, total: 2 },
      { stream: 2, kind: 'end', reason: 'stopped' },
    ]);
  });
});

const dir = workDir('agent-viewers-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('slow and fast viewers of one session', () => {
  it('the stalled viewer loses its own events (loss notices), the fast one and the session lose none', async () => {
    const agent = await startAgent(dir, ['--demo-rate', '20000']);
    try {
      expect(
        (
          await cli(agent, [
            'session',
            'create',
            'v',
            '--events',
            'kmem:kmalloc',
            '--mode',
            'overwrite',
            '--source',
            'demo',
          ])
        ).code,
      ).toBe(0);
      expect((await cli(agent, ['session', 'start', 'v'])).code).toBe(0);
      // The stalled viewer: subscribes on a raw socket and never reads (its socket buffer fills, then its queue).
      const stalled = createConnection(agent.socket);
      await new Promise<void>((r) => stalled.once('connect', () => r()));
      stalled.write(
        encodeLine({ id: 1, op: 'hello', version: 1 }) +
          encodeLine({ id: 2, op: 'subscribe', name: 'v', window: false, queue: 100 }),
      );
      stalled.pause();
      const fast = await agent.connect();
      const view = await fast.subscribe('v', { window: false, queue: 100_000 });
      const items: SubscriptionItem[] = [];
      const reading = (async () => {
        for await (const item of view) items.push(item);
      })();
      const s = await eventually(async () => {
        const st = JSON.parse((await cli(agent, ['session', 'status', 'v', '--json'])).stdout) as SessionStatus;
        return st.viewerLost > 1000 ? st : undefined;
      }, 30_000);
      expect(s.viewers).toBe(2);
      expect(s.lost).toBe(0);
      // The stalled viewer, read at last: events, then a loss notice with what it missed.
      stalled.resume();
      let text = '';
      stalled.on('data', (d) => (text += d.toString()));
      // Notices come whenever its queue empties; their totals add up to what the agent counted.
      const total = await eventually(() => {
        const totals = [...text.matchAll(/\{"stream":\d+,"kind":"loss","lost":(\d+),"total":(\d+)\}/g)].map((m) =>
          Number(m[2]),
        );
        const last = totals.at(-1);
        return last !== undefined && last >= s.viewerLost ? last : undefined;
      });
      expect(total).toBeGreaterThan(1000);
      stalled.destroy();
      await view.close();
      await reading;
      fast.close();
      expect(items.some((i) => i.kind === 'loss')).toBe(false);
      expect(items.filter((i) => i.kind === 'event').length).toBeGreaterThan(1000);
    } finally {
      await agent.stop();
    }
  });
});
