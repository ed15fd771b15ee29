import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { connectAgent } from '@evtrace/agent-protocol';
import { openPersistent } from '@evtrace/persistent-events';
import { render } from 'ink-testing-library';
import { afterAll, describe, expect, it } from 'vitest';
import { attachAgent } from '../data/agent-source.ts';
import { openFileSource } from '../data/file-source.ts';
import { startTestAgent } from '../testing/agent.ts';
import { recordDemoTrace, tempDir } from '../testing/traces.ts';
import { App } from '../ui/app.tsx';
import { VIEWS } from './index.ts';
import { PersistentBuffers } from './persistent.tsx';

const dir = mkdtempSync(join(tmpdir(), 'tui-persistent-'));
/** The OWNER column: the buffers belong to whoever runs the tests. */
const owner = userInfo().username;
const traces = tempDir();
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(traces, { recursive: true, force: true });
});

async function until(app: { lastFrame(): string | undefined }, ok: (frame: string) => boolean): Promise<string> {
  for (let waited = 0; waited < 10_000; waited += 50) {
    const frame = app.lastFrame() ?? '';
    if (ok(frame)) return frame;
    await new Promise((r) => setTimeout(r, 50));
  }
  return app.lastFrame() ?? '';
}

describe('persistent buffers in the Sessions view', () => {
  it('lists each buffer with backend, size, mode, fill, loss, writers and readers', async () => {
    const flight = openPersistent('tui/flight', { dir, create: { size: 64 * 1024, mode: 'overwrite' } });
    const w = flight.writer();
    for (let i = 0; i < 2000; i++) {
      w.reserve(1, 16);
      w.commit();
    }
    openPersistent('tui/queue', { dir, create: { size: 1 << 20, mode: 'discard' } }).close();
    const app = render(<PersistentBuffers width={100} active options={{ dir, backends: ['user'] }} />);
    const frame = await until(app, (f) => f.includes('tui/queue'));
    const row = (name: string) => frame.split('\n').find((l) => l.includes(name)) ?? '';
    expect(frame).toMatch(/PERSISTENT\s+BACKEND\s+SIZE\s+MODE\s+FILL\s+LOST\s+W\s+R\s+OWNER/);
    // 2000 records of 24 bytes fill 12 of the 16 pages; this process writes it.
    expect(row('tui/flight')).toMatch(
      new RegExp(String.raw`tui/flight\s+user\s+64K\s+overwrite\s+75%\s+0\s+1\s+0\s+${owner}`),
    );
    expect(row('tui/queue')).toMatch(
      new RegExp(String.raw`tui/queue\s+user\s+1\.0M\s+discard\s+0%\s+0\s+0\s+0\s+${owner}`),
    );
    app.unmount();
    w.close();
    flight.close();
  });

  it('shows in the Sessions view of a trace file, beside the no-agent explanation', async () => {
    const source = openFileSource(await recordDemoTrace(traces, 50));
    process.env.EVTRACE_PERSISTENT_DIR = dir;
    try {
      const app = render(
        <App source={source} views={VIEWS} size={{ columns: 120, rows: 30 }} theme={{ colour: false }} />,
      );
      app.stdin.write('3');
      const frame = await until(app, (f) => f.includes('tui/flight'));
      expect(frame).toContain('No agent');
      expect(frame).toMatch(/PERSISTENT\s+BACKEND/);
      expect(frame).toMatch(/tui\/flight\s+user\s+64K\s+overwrite/);
      app.unmount();
    } finally {
      delete process.env.EVTRACE_PERSISTENT_DIR;
    }
  });

  it('lists them through the agent when attached to one, with the session attached to each; directly when it cannot', async () => {
    const agentDir = mkdtempSync(join(tmpdir(), 'tui-persistent-agent-'));
    const agent = await startTestAgent(agentDir);
    const client = await connectAgent(agent.socket, { client: 'test' });
    try {
      openPersistent('tui/agent', { dir, create: { size: 32 * 1024, mode: 'discard' } }).close();
      await agent.evtrace(['session', 'attach', 'tui/agent', '--persistent', '--dir', dir]);
      const app = render(
        <PersistentBuffers
          width={120}
          active
          options={{ dir, backends: ['user'] }}
          agent={() => client.buffers({ dir })}
        />,
      );
      const frame = await until(app, (f) => f.includes('tui.agent'));
      expect(frame).toMatch(/PERSISTENT \(agent\)\s+BACKEND\s+SIZE\s+MODE\s+FILL\s+LOST\s+W\s+R\s+OWNER\s+SESSION/);
      // The agent reads the buffer: one reader, the session named after it.
      expect(frame.split('\n').find((l) => l.includes('tui/agent'))).toMatch(
        new RegExp(String.raw`tui/agent\s+user\s+32K\s+discard\s+0%\s+0\s+0\s+1\s+${owner}\s+tui\.agent`),
      );
      app.unmount();

      // An agent that cannot list them (here: it went away): the same rows, read by this process, and why.
      await agent.stop();
      const fallback = render(
        <PersistentBuffers
          width={160}
          active
          options={{ dir, backends: ['user'] }}
          agent={() => client.buffers({ dir })}
        />,
      );
      const direct = await until(fallback, (f) => f.includes('read directly'));
      expect(direct).toMatch(/^PERSISTENT\s+BACKEND/m);
      expect(direct).toMatch(new RegExp(String.raw`tui/agent\s+user\s+32K\s+discard\s+0%\s+0\s+0\s+0\s+${owner}\s+-`));
      expect(direct).toMatch(/the agent did not list them \(.*\): read directly/);
      fallback.unmount();
    } finally {
      client.close();
      await agent.stop();
      rmSync(agentDir, { recursive: true, force: true });
    }
  });

  it("follows an attached buffer's session (--session) and shows the buffer through the agent in the Sessions view", async () => {
    const agentDir = mkdtempSync(join(tmpdir(), 'tui-persistent-view-'));
    // The agent's own default directory of buffers is this test's.
    process.env.EVTRACE_PERSISTENT_DIR = dir;
    const agent = await startTestAgent(agentDir).finally(() => delete process.env.EVTRACE_PERSISTENT_DIR);
    const buf = openPersistent('tui/live', { dir, create: { size: 64 * 1024, classes: ['app:tick'] } });
    const w = buf.writer();
    const write = (n: number) => {
      for (let i = 0; i < n; i++) {
        const at = w.reserve(0, 4);
        w.view.setUint32(at, i, true);
        w.commit();
      }
    };
    write(50);
    try {
      await agent.evtrace(['session', 'attach', 'tui/live', '--persistent']);
      const source = await attachAgent({ socket: agent.socket, session: 'tui.live' });
      const app = render(
        <App source={source!} views={VIEWS} size={{ columns: 140, rows: 30 }} theme={{ colour: false }} />,
      );
      write(50);
      const events = await until(app, (f) => f.includes('app:tick'));
      expect(events).toContain('agent session tui.live');
      app.stdin.write('3');
      const session = /tui\.live\s+persist.\s+overwrite\s+running\s+100\b/;
      const frame = await until(app, (f) => /tui\/live\s+user\s+64K.*tui\.live/.test(f) && session.test(f));
      expect(frame).toMatch(/PERSISTENT \(agent\)/);
      expect(frame).toMatch(session);
      app.unmount();
      await source!.close();
    } finally {
      w.close();
      buf.close();
      await agent.stop();
      rmSync(agentDir, { recursive: true, force: true });
    }
  });
});
