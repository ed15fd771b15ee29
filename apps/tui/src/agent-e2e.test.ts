/**
 * End to end with the real agent: `evtrace agent` on a private socket, the built evtrace-view in a pseudo-terminal
 * attached to it. The Sessions view drives a session's life from the keyboard, and after each step the agent's own
 * account (`evtrace session list --json`) must agree with the screen. The Events view of a live session shows each
 * event's task as the agent names it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import type { SessionStatus } from '@evtrace/agent-protocol';
import { openTrace } from '@evtrace/trace-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestAgent, type TestAgent } from './testing/agent.ts';
import { startViewer } from './testing/pty.ts';
import { tempDir } from './testing/traces.ts';
import { NEW_SESSION_EVENTS } from './views/sessions.tsx';

const dir = tempDir('evtrace-view-agent-');
let agent: TestAgent;
beforeAll(async () => {
  agent = await startTestAgent(dir, ['--demo-rate', '2000']);
}, 60_000);
afterAll(async () => {
  await agent?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const sessions = async (): Promise<SessionStatus[]> => JSON.parse(await agent.evtrace(['session', 'list', '--json']));
const row = (text: string, name: string) => text.split('\n').find((l) => l.slice(1).startsWith(`${name} `)) ?? '';

describe('evtrace-view on a running agent, in a pseudo-terminal', { timeout: 120_000 }, () => {
  it('creates, stops, snapshots and destroys a session from the Sessions view; the agent agrees at each step', async () => {
    const v = startViewer(['--agent', agent.socket]);
    try {
      await v.waitFor('no session: create one in Sessions');
      v.type('3');
      await v.waitFor('the agent has no sessions: c creates one');
      expect(await sessions()).toEqual([]);

      // Create: c, the name typed as one burst, Enter.
      v.type('c');
      await v.waitFor('new session name:');
      v.type('tui-flight');
      await v.waitFor('new session name: tui-flight');
      v.type('\r');
      let text = await v.waitFor((t) => t.includes('create tui-flight: done') && /running/.test(row(t, 'tui-flight')));
      expect(row(text, 'tui-flight')).toMatch(/^>tui-flight\s+(kernel|demo)\s+overwrite\s+running\s/);
      let [s] = await sessions();
      expect(s).toMatchObject({ name: 'tui-flight', mode: 'overwrite', state: 'running' });
      expect(s!.spec.events).toEqual(NEW_SESSION_EVENTS);
      // What the row names as the source is the agent's choice (the kernel as root with tracefs, else the demo).
      expect(row(text, 'tui-flight')).toContain(s!.demo ? 'demo' : s!.source);

      // Stop: x.
      v.type('x');
      text = await v.waitFor((t) => t.includes('stop tui-flight: done') && /stopped/.test(row(t, 'tui-flight')));
      [s] = await sessions();
      expect(s).toMatchObject({ name: 'tui-flight', state: 'stopped', snapshots: 0 });
      expect(row(text, 'tui-flight')).toMatch(/\sstopped\s/);

      // Snapshot: s; the status line gives the file, which is a readable trace.
      v.type('s');
      text = await v.waitFor((t) => /snapshot tui-flight: done \(.+\)/.test(t));
      const path = /snapshot tui-flight: done \((.+?)\)/.exec(text)![1]!;
      expect(existsSync(path)).toBe(true);
      const reader = openTrace(path);
      for (const e of reader.events()) expect(NEW_SESSION_EVENTS).toContain(e.eventClass.name);
      [s] = await sessions();
      expect(s).toMatchObject({ name: 'tui-flight', state: 'stopped', snapshots: 1 });

      // Destroy: d asks first; another key cancels, y confirms.
      v.type('d');
      await v.waitFor('destroy session tui-flight? y to confirm');
      v.type('n');
      await v.waitFor('destroy cancelled');
      expect((await sessions()).map((x) => x.name)).toEqual(['tui-flight']);
      v.type('d');
      await v.waitFor('destroy session tui-flight? y to confirm');
      v.type('y');
      text = await v.waitFor((t) => t.includes('destroy tui-flight: done') && t.includes('the agent has no sessions'));
      expect(row(text, 'tui-flight')).toBe('');
      expect(await sessions()).toEqual([]);

      v.type('q');
      expect((await v.exited).exitCode).toBe(0);
    } finally {
      v.kill();
    }
  });

  it("shows each live event's task (comm-pid) as the agent names it", async () => {
    const create = [
      'session',
      'create',
      'tasks',
      '--events',
      'kmem:kmalloc',
      '--mode',
      'overwrite',
      '--source',
      'demo',
    ];
    await agent.evtrace(create);
    await agent.evtrace(['session', 'start', 'tasks']);
    try {
      // The names the agent gives (from the session's saved_cmdlines): the truth the screen must show.
      const names = new Map<number, string>();
      for (const line of (await agent.evtrace(['cat', '--live', 'tasks', '--json', '-n', '200'])).trim().split('\n')) {
        const e = JSON.parse(line) as { pid?: number; comm?: string };
        expect(e.pid, line).toBeTypeOf('number');
        if (e.comm !== undefined) names.set(e.pid!, e.comm);
      }
      expect(names.size).toBeGreaterThan(0);
      const v = startViewer(['--session', 'tasks'], { env: { EVTRACE_AGENT_SOCKET: agent.socket } });
      try {
        // Typed by the session's formats, the event is named as a file's is (ftrace's name, without its system).
        const taskOf = (l: string) => /^[ >]\d+\.\d{6}\s+\d+\s+(\S+)-(\d+)\s+kmalloc\s/.exec(l);
        const text = await v.waitFor((t) => t.split('\n').filter((l) => taskOf(l)).length >= 10);
        const rows = text.split('\n').flatMap((l) => {
          const m = taskOf(l);
          return m ? [{ comm: m[1]!, pid: Number(m[2]) }] : [];
        });
        for (const r of rows) expect(r.comm, `pid ${r.pid}`).toBe(names.get(r.pid));
        v.type('q');
        expect((await v.exited).exitCode).toBe(0);
      } finally {
        v.kill();
      }
    } finally {
      await agent.evtrace(['session', 'destroy', 'tasks']);
    }
  });
});

describe('evtrace-view without a terminal on an agent session', { timeout: 60_000 }, () => {
  it('writes the events as the agent sent them: each with the name its task had, its flags, its typed fields', async () => {
    await agent.evtrace([
      'session',
      'create',
      'lines',
      '--events',
      'kmem:kmalloc',
      '--mode',
      'overwrite',
      '--source',
      'demo',
    ]);
    await agent.evtrace(['session', 'start', 'lines']);
    try {
      const names = new Map<number, string>();
      for (const line of (await agent.evtrace(['cat', '--live', 'lines', '--json', '-n', '100'])).trim().split('\n')) {
        const e = JSON.parse(line) as { pid: number; comm: string | null };
        if (e.comm !== null) names.set(e.pid, e.comm);
      }
      expect(names.size).toBeGreaterThan(0);
      const cli = new URL('../dist/cli.js', import.meta.url).pathname;
      const run = spawnSync(process.execPath, [cli, '--session', 'lines', '-n', '50'], {
        encoding: 'utf8',
        env: { ...process.env, EVTRACE_AGENT_SOCKET: agent.socket },
        timeout: 30_000,
      });
      expect(run.status, run.stderr).toBe(0);
      const events = run.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { pid: number; comm: string; flags: unknown; fields: Record<string, unknown> });
      expect(events).toHaveLength(50);
      for (const e of events) {
        expect(e.comm, `pid ${e.pid}`).toBe(names.get(e.pid));
        expect(e.flags).not.toBeNull();
        // kmalloc's format: call_site an address, bytes_req a size_t (a 64-bit decimal string).
        expect(e.fields).toMatchObject({
          call_site: expect.stringMatching(/^0x[0-9a-f]+$/),
          bytes_req: expect.stringMatching(/^\d+$/),
        });
      }
    } finally {
      await agent.evtrace(['session', 'destroy', 'lines']);
    }
  });
});
