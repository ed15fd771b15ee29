/**
 * Persistent buffers through the real agent on its real socket: a separate Node process writes a flight recorder
 * while the agent, attached to it, streams its records to a real `evtrace cat --live` process; the writer is killed
 * with SIGKILL and the buffer stays listed and readable; trace-shots are read back (evtrace's reader, trace-cmd);
 * detach, an agent restart and a kill -9 of the agent leave the buffer in place. Kernel buffers (tracefs instances)
 * when root.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { join } from 'node:path';
import { encodeLine, PROTOCOL_VERSION, type SessionStatus } from '@evtrace/agent-protocol';
import {
  createKernelBuffer,
  deleteKernelBuffer,
  openPersistent,
  type PersistentBuffer,
} from '@evtrace/persistent-events';
import { openTrace } from '@evtrace/trace-format';
import { findTracefs } from '@evtrace/tracefs';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, cli, eventually, type RunningAgent, startAgent, workDir } from '../testing/agent-daemon.ts';
import { expectValid } from '../testing/schemas.ts';

const ENTRY = new URL('../../node_modules/@evtrace/persistent-events/dist/index.js', import.meta.url).pathname;
const hasTraceCmd = spawnSync('sh', ['-c', 'command -v trace-cmd']).status === 0;

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function fresh(prefix: string): string {
  const d = workDir(prefix);
  dirs.push(d);
  return d;
}

/** A free TCP port for the metrics endpoint. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * A writer process: appends record i (u32 i, class i % 2) every millisecond or so to `name` and prints how many it
 * committed, until killed.
 */
function startWriter(name: string, dir: string): { proc: ChildProcess; committed: () => number } {
  const proc = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { openPersistent } from ${JSON.stringify(ENTRY)};
       const w = openPersistent(${JSON.stringify(name)}, { dir: ${JSON.stringify(dir)} }).writer();
       let i = 0;
       setInterval(() => {
         for (let k = 0; k < 4; k++, i++) { const at = w.reserve(i % 2, 4); w.view.setUint32(at, i, true); w.commit(); }
         console.log(i);
       }, 10);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(proc);
  let last = 0;
  let buf = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    const lines = buf.split('\n');
    buf = lines.pop()!;
    if (lines.length > 0) last = Number(lines.at(-1));
  });
  return { proc, committed: () => last };
}

/** A real `evtrace cat --live NAME --json` process; its events as they arrive. */
function startCatLive(agent: RunningAgent, name: string): { proc: ChildProcess; events: () => LiveLine[] } {
  const proc = spawn(process.execPath, [CLI, 'cat', '--live', name, '--json'], {
    env: { ...process.env, EVTRACE_AGENT_SOCKET: agent.socket },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(proc);
  const events: LiveLine[] = [];
  let buf = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    const lines = buf.split('\n');
    buf = lines.pop()!;
    for (const l of lines) if (l) events.push(JSON.parse(l) as LiveLine);
  });
  return { proc, events: () => events };
}

interface LiveLine {
  ts_ns: string;
  event: string;
  pid?: number;
  fields: { type: number; length: number; payload: number[] };
}

/** The u32 a record's payload bytes hold. */
const value = (bytes: readonly number[]) => Buffer.from(bytes).readUInt32LE(0);

const exited = (p: ChildProcess) =>
  new Promise<void>((r) => (p.exitCode !== null || p.signalCode !== null ? r() : p.once('exit', () => r())));

describe('the agent lists and attaches to user-space persistent buffers', () => {
  // A dozen CLI processes and three agent starts: a loaded machine takes minutes where a quiet one takes seconds.
  it('streams a live writer to cat --live, survives the writer kill -9, snapshots, detaches, and re-attaches after restarts', async () => {
    const dir = fresh('agent-persistent-');
    const bufs = join(dir, 'bufs');
    const port = await freePort();
    let agent = await startAgent(dir, ['--metrics', `127.0.0.1:${port}`]);
    try {
      const created = await cli(agent, [
        'persistent',
        'create',
        't/app/flight',
        '--size',
        '256K',
        '-e',
        'app:tick',
        'app:tock',
        '--dir',
        bufs,
      ]);
      expect(created.code).toBe(0);
      const writer = startWriter('t/app/flight', bufs);
      await eventually(() => (writer.committed() >= 200 ? true : undefined));

      const attached = await cli(agent, ['session', 'attach', 't/app/flight', '--persistent', '--dir', bufs]);
      expect(attached.stderr).toBe('');
      expect(attached.code).toBe(0);
      expect(attached.stdout).toMatch(
        new RegExp(
          `^session t\\.app\\.flight attached to user buffer t/app/flight \\(${bufs}/t/app/flight\\.evrb\\): \\d+ events so far\\n$`,
        ),
      );
      // What the buffer held already came in with the attach.
      expect(Number(/(\d+) events so far/.exec(attached.stdout)![1])).toBeGreaterThanOrEqual(200);

      // One session per buffer; a missing buffer and a taken name are refused with their codes.
      const again = await cli(agent, ['session', 'attach', 't/app/flight', '--as', 'other', '--dir', bufs]);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(
        /ERR_AGENT_SESSION_EXISTS: user buffer t\/app\/flight is attached as session t\.app\.flight/,
      );
      const missing = await cli(agent, ['session', 'attach', 't/app/none', '--persistent', '--dir', bufs]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/ERR_AGENT_NO_BUFFER: ERR_PERSISTENT_NOT_FOUND: no buffer named t\/app\/none/);

      // A live viewer receives the writer's records in order, the buffer's content first.
      // Caught up with what was committed when it started (a moving target may stay ahead of a viewer on a loaded
      // machine, the writer being a process of its own).
      const cat = startCatLive(agent, 't/app/flight');
      const target = Math.max(writer.committed(), 400);
      const seen = await eventually(() => {
        const e = cat.events();
        return e.length > 0 && value(e.at(-1)!.fields.payload) >= target - 1 ? e : undefined;
      });
      expect(seen.map((e) => value(e.fields.payload))).toEqual(Array.from({ length: seen.length }, (_, i) => i));
      for (const e of seen.slice(0, 10)) {
        // The writing process is the events' task (found through /proc: the buffer does not record it).
        expect(e.pid).toBe(writer.proc.pid);
        expect(e.event).toBe(value(e.fields.payload) % 2 === 0 ? 'app:tick' : 'app:tock');
        expect(e.fields).toMatchObject({ type: value(e.fields.payload) % 2, length: 4 });
      }

      // Listed through the agent: the session, and the buffer with its writer, the agent as reader, the session.
      const sessions = await cli(agent, ['session', 'list', '--json']);
      expect(sessions.code).toBe(0);
      const listedSessions = JSON.parse(sessions.stdout) as SessionStatus[];
      for (const s of listedSessions) expectValid('@evtrace/agent-protocol/schemas/session-status.json', s);
      // `session ls` is the same command (the writer goes on: only the counts may have grown since).
      const aliased = JSON.parse((await cli(agent, ['session', 'ls', '--json'])).stdout) as SessionStatus[];
      const steady = (all: SessionStatus[]) => all.map(({ name, state, persistent }) => ({ name, state, persistent }));
      expect(steady(aliased)).toEqual(steady(listedSessions));
      const ls = await cli(agent, ['ls', '--json', '--dir', bufs]);
      expect(ls.code).toBe(0);
      expect(ls.stderr).toMatch(/listed by the agent \(pid \d+\)/);
      const listed = JSON.parse(ls.stdout);
      expectValid('@evtrace/persistent-events/schemas/listing.json', listed);
      // `persistent ls` is the same command (the writer goes on: only fill and counts may have moved since).
      const same = await cli(agent, ['persistent', 'ls', '--json', '--dir', bufs]);
      expect({ code: same.code, stderr: same.stderr }).toEqual({ code: 0, stderr: ls.stderr });
      // This test's buffers: the kernel's persistent instances are the machine's, which other tests running at the
      // same time create and remove between the two listings.
      const fixed = (l: { buffers: { name: string; backend: string; size: number; session?: string }[] }) =>
        l.buffers
          .filter((b) => b.backend !== 'kernel')
          .map(({ name, backend, size, session }) => ({ name, backend, size, session }));
      expect(fixed(JSON.parse(same.stdout))).toEqual(fixed(listed));
      expect(listedSessions).toContainEqual(
        expect.objectContaining({
          name: 't.app.flight',
          state: 'running',
          source: 'persistent',
          persistent: { buffer: 't/app/flight', backend: 'user', path: `${bufs}/t/app/flight.evrb` },
        }),
      );
      expect(listed.buffers).toContainEqual(
        expect.objectContaining({
          name: 't/app/flight',
          backend: 'user',
          size: 256 * 1024,
          mode: 'overwrite',
          writers: 1,
          readers: 1,
          session: 't.app.flight',
          classes: ['app:tick', 'app:tock'],
        }),
      );
      const table = await cli(agent, ['ls', '--dir', bufs]);
      expect(table.stdout).toMatch(/NAME\s+SIZE\s+MODE\s+FILL\s+LOST\s+WRITERS\s+READERS\s+OWNER\s+CREATED\s+SESSION/);
      expect(table.stdout).toMatch(
        /user\s+t\/app\/flight\s+256K\s+overwrite\s+\d+%\s+0\s+1\s+1\s+\S+\s+\S+\s+t\.app\.flight/,
      );

      // The agent reads through a read-only mapping and registers no consuming reader: the writer's state is its own.
      const look = openPersistent('t/app/flight', { dir: bufs, readOnly: true });
      expect(look.stats().readers).toBe(0);
      expect(look.mappers().readers).toContain(agent.proc.pid);
      look.close();

      // The writer dies; the agent keeps the buffer listed and every committed record readable.
      writer.proc.kill('SIGKILL');
      await exited(writer.proc);
      // Every committed record, open page included, counted by a reader of this process.
      const check = openPersistent('t/app/flight', { dir: bufs, readOnly: true });
      const snap = check.snapshot();
      let written = 0;
      while (snap.next()) written++;
      check.close();
      expect(written).toBeGreaterThanOrEqual(writer.committed());
      await eventually(() => (cat.events().length === written ? true : undefined));
      expect(cat.events().map((e) => value(e.fields.payload))).toEqual(Array.from({ length: written }, (_, i) => i));
      const after = JSON.parse((await cli(agent, ['ls', '--json', '--dir', bufs])).stdout);
      expectValid('@evtrace/persistent-events/schemas/listing.json', after);
      expect(after.buffers).toContainEqual(
        expect.objectContaining({ name: 't/app/flight', writers: 0, session: 't.app.flight' }),
      );

      const status = JSON.parse(
        (await cli(agent, ['session', 'status', 't/app/flight', '--json'])).stdout,
      ) as SessionStatus;
      expectValid('@evtrace/agent-protocol/schemas/session-status.json', status);
      expect(status).toMatchObject({ name: 't.app.flight', state: 'running', events: written, lost: 0 });
      expect(status.bytes).toBeGreaterThan(written * 4);
      const text = (await cli(agent, ['session', 'status', 't.app.flight'])).stdout;
      expect(text).toContain(
        `attached to user buffer t/app/flight (${bufs}/t/app/flight.evrb); detach leaves the buffer`,
      );

      // The metrics count it.
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toMatch(
        new RegExp(`evtrace_events_total\\{session="t\\.app\\.flight",source="persistent",cpu="0"\\} ${written}\\b`),
      );

      // A trace-shot holds every committed record; evtrace's reader and trace-cmd read it.
      const shot = await cli(agent, ['session', 'snapshot', 't.app.flight', '-o', join(dir, 'shots')]);
      expect(shot.code).toBe(0);
      const file = shot.stdout.trim();
      expect(shot.stderr).toMatch(
        new RegExp(`^evtrace: trace-shot of t\\.app\\.flight: ${written} events, \\d+ bytes \\(tracedat\\)\\n$`),
      );
      const shotValues: number[] = [];
      for (const e of openTrace(file).events()) {
        expect(e.eventClass.name).toMatch(/^app:t[io]ck$/);
        shotValues.push(value((e.fields as { payload: number[] }).payload));
      }
      expect(shotValues).toEqual(Array.from({ length: written }, (_, i) => i));
      if (hasTraceCmd) {
        const report = spawnSync('trace-cmd', ['report', file], { encoding: 'utf8', maxBuffer: 1 << 26 });
        expect(report.status).toBe(0);
        const lines = report.stdout.split('\n').filter((l) => /\b(tick|tock):/.test(l));
        expect(lines).toHaveLength(written);
        expect(lines[5]).toMatch(/tock:\s+type=1 length=4 payload=05 00 00 00/);
      }

      // Detach: the viewer's stream ends, the buffer stays (and nobody reads it any more).
      const detached = await cli(agent, ['session', 'detach', 't/app/flight']);
      expect(detached.stdout).toBe('session t.app.flight detached; user buffer t/app/flight kept\n');
      await exited(cat.proc);
      expect(existsSync(join(bufs, 't/app/flight.evrb'))).toBe(true);
      const gone = JSON.parse((await cli(agent, ['ls', '--json', '--dir', bufs])).stdout);
      const entry = gone.buffers.find((b: { name: string }) => b.name === 't/app/flight');
      expect(entry).toMatchObject({ readers: 0, writers: 0 });
      expect(entry.session).toBeUndefined();
      const destroyed = await cli(agent, ['session', 'detach', 't.app.flight']);
      expect(destroyed.stderr).toMatch(/ERR_AGENT_NO_SESSION/);

      // The buffer outlives the agent: a new agent attaches to it again and finds every record.
      expect(await agent.stop()).toBe(0);
      agent = await startAgent(dir);
      const re = await cli(agent, ['session', 'attach', 't/app/flight', '--as', 'flight2', '--dir', bufs]);
      expect(re.stdout).toContain(`session flight2 attached to user buffer t/app/flight`);
      expect(re.stdout).toContain(`: ${written} events so far`);

      // kill -9 of the agent: the next one attaches the session to its buffer again by itself.
      await agent.kill9();
      agent = await startAgent(dir);
      expect(agent.log()).toMatch(/session flight2: attached again to user buffer t\/app\/flight; running/);
      const revived = JSON.parse(
        (await cli(agent, ['session', 'status', 'flight2', '--json'])).stdout,
      ) as SessionStatus;
      expect(revived).toMatchObject({ events: written, persistent: { buffer: 't/app/flight', backend: 'user' } });
      expect((await cli(agent, ['session', 'destroy', 'flight2'])).code).toBe(0);
      expect(existsSync(join(bufs, 't/app/flight.evrb'))).toBe(true);
    } finally {
      await agent.stop();
    }
  }, 180_000);

  it('reports buffers it cannot open as such, refuses to attach them with the reason, and keeps serving', async () => {
    const dir = fresh('agent-persistent-bad-');
    const bufs = join(dir, 'bufs');
    const agent = await startAgent(dir);
    try {
      const good: PersistentBuffer = openPersistent('ok/one', { dir: bufs, create: { size: 8192 } });
      good.close();
      // A damaged buffer: a real buffer file cut short after its header page.
      const bytes = readFileSync(join(bufs, 'ok/one.evrb'));
      mkdirSync(join(bufs, 'bad'), { recursive: true });
      writeFileSync(join(bufs, 'bad/cut.evrb'), bytes.subarray(0, 4096 + 100));
      const listed = JSON.parse((await cli(agent, ['ls', '--json', '--dir', bufs])).stdout);
      // Kernel buffers are listed beside them; another run's may exist on this machine, so only user ones count.
      const user = listed.buffers.filter((b: { backend: string }) => b.backend === 'user');
      expect(user.map((b: { name: string }) => b.name)).toEqual(['ok/one']);
      expect(listed.unreadable).toEqual([
        expect.objectContaining({
          backend: 'user',
          name: 'bad/cut',
          code: 'ERR_PERSISTENT_CORRUPT',
          error: expect.stringMatching(/truncated/),
        }),
      ]);
      const text = (await cli(agent, ['ls', '--dir', bufs])).stdout;
      expect(text).toMatch(/^user bad\/cut: ERR_PERSISTENT_CORRUPT: .*bad\/cut\.evrb: byte \d+: truncated/m);
      const refused = await cli(agent, ['session', 'attach', 'bad/cut', '--dir', bufs]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/ERR_AGENT_SOURCE: ERR_PERSISTENT_CORRUPT: .*truncated/);
      const badName = await cli(agent, ['session', 'attach', '../etc/passwd', '--dir', bufs]);
      expect(badName.code).toBe(2);
      expect(badName.stderr).toMatch(/ERR_AGENT_BAD_MESSAGE: request\.buffer/);
      // A name of the protocol's shape that the buffers' own rules refuse (deeper than 8 segments).
      const deep = await cli(agent, ['session', 'attach', 'a/b/c/d/e/f/g/h/i', '--dir', bufs]);
      expect(deep.code).toBe(2);
      expect(deep.stderr).toMatch(/ERR_AGENT_BAD_MESSAGE: ERR_PERSISTENT_NAME: /);
      // Still serving, no session left behind by the refusals.
      expect(JSON.parse((await cli(agent, ['session', 'list', '--json'])).stdout)).toEqual([]);
      expect((await cli(agent, ['session', 'attach', 'ok/one', '--dir', bufs])).code).toBe(0);
    } finally {
      await agent.stop();
    }
  });

  it('serves the persistent ops to protocol 2 only: a version 1 connection gets ERR_AGENT_UNKNOWN_OP', async () => {
    const dir = fresh('agent-persistent-v1-');
    const agent = await startAgent(dir);
    try {
      const replies = await new Promise<string>((resolve) => {
        const c = createConnection(agent.socket);
        let got = '';
        c.on('data', (d) => {
          got += d.toString();
          if (got.split('\n').length > 3) {
            c.end();
            resolve(got);
          }
        });
        c.on('connect', () =>
          c.write(
            encodeLine({ id: 1, op: 'hello', version: 1 }) +
              encodeLine({ id: 2, op: 'buffers' }) +
              encodeLine({ id: 3, op: 'list' }),
          ),
        );
      });
      const [hello, buffers, list] = replies
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(hello).toMatchObject({ id: 1, ok: true, result: { protocol: 1 } });
      expect(buffers).toMatchObject({ id: 2, ok: false, error: { code: 'ERR_AGENT_UNKNOWN_OP' } });
      expect(list).toEqual({ id: 3, ok: true, result: [] });
      const client = await agent.connect();
      expect(client.agent.protocol).toBe(PROTOCOL_VERSION);
      client.close();
    } finally {
      await agent.stop();
    }
  });
});

const root = process.getuid?.() === 0;
const hasUseradd = spawnSync('sh', ['-c', 'command -v useradd']).status === 0;

describe.skipIf(!root || !hasUseradd)(
  `an agent that runs as an unprivileged user${!root ? ' (skipped: not root: useradd needs root)' : !hasUseradd ? ' (skipped: useradd is not installed (apt-get install passwd))' : ''}`,
  () => {
    it('lists what it may not open as unreadable (ERR_PERSISTENT_PERMISSION), refuses to attach it, and attaches what its group may read', async () => {
      const user = `evp${process.pid % 100000}`;
      execFileSync('useradd', ['-M', '-N', '-g', 'nogroup', '-s', '/usr/sbin/nologin', user]);
      const dir = fresh('agent-persistent-user-');
      const bufs = join(dir, 'bufs');
      let proc: ChildProcess | undefined;
      try {
        const uid = Number(execFileSync('id', ['-u', user]).toString());
        const gid = Number(execFileSync('id', ['-g', user]).toString());
        // Buffers of root: one for root alone (0600), one its group nogroup may read (0640).
        openPersistent('root/secret', { dir: bufs, create: { size: 8192 } }).close();
        openPersistent('shared/ok', { dir: bufs, create: { size: 8192, group: 'nogroup' } }).close();
        const home = join(dir, 'agent');
        mkdirSync(home);
        chownSync(home, uid, gid);
        const socket = join(home, 'agent.sock');
        proc = spawn(process.execPath, [CLI, 'agent', '--socket', socket, '--state-dir', join(home, 'state')], {
          uid,
          gid,
          cwd: '/',
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        children.push(proc);
        let log = '';
        proc.stderr!.on('data', (d: Buffer) => (log += d.toString()));
        await eventually(() => (log.includes('listening on') ? true : undefined), 30_000);
        const agent = { socket };
        const listed = JSON.parse((await cli(agent, ['ls', '--json', '--dir', bufs])).stdout);
        expect(listed.buffers.map((b: { name: string }) => b.name)).toEqual(['shared/ok']);
        expect(listed.unreadable).toEqual([
          expect.objectContaining({
            name: 'root/secret',
            owner: 'root',
            permissions: 0o600,
            code: 'ERR_PERSISTENT_PERMISSION',
            error: expect.stringMatching(new RegExp(`permission denied: .*you are ${user}`)),
          }),
        ]);
        const refused = await cli(agent, ['session', 'attach', 'root/secret', '--dir', bufs]);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toMatch(
          /evtrace: ERR_AGENT_PERMISSION: permission denied: cannot open buffer root\/secret for reading: .* you are evp/,
        );
        // Reading needs only read permission: the agent maps the buffer read-only.
        const ok = await cli(agent, ['session', 'attach', 'shared/ok', '--dir', bufs]);
        expect(ok.stdout).toMatch(/^session shared\.ok attached to user buffer shared\/ok/);
        expect(JSON.parse((await cli(agent, ['session', 'list', '--json'])).stdout)).toHaveLength(1);
      } finally {
        proc?.kill('SIGTERM');
        if (proc) await exited(proc);
        spawnSync('userdel', [user]);
      }
    });
  },
);

let tracefs: string | undefined;
let why = '';
try {
  if (!root) why = 'not root: kernel buffers need root';
  else tracefs = findTracefs();
} catch (error) {
  why = (error as Error).message;
}

describe.skipIf(tracefs === undefined)(
  `the agent attaches to kernel persistent buffers${why ? ` (skipped: ${why})` : ''}`,
  () => {
    it('reads the instance as a session source and leaves it, recording, on detach', async () => {
      const dir = fresh('agent-persistent-kernel-');
      const name = `agenttest/sched-${process.pid}`;
      const kb = createKernelBuffer(name, { size: 256 * 1024, events: ['sched:sched_switch'] });
      const agent = await startAgent(dir);
      try {
        const attached = await cli(agent, ['session', 'attach', name, '--persistent', '--kernel', '--as', 'ksched']);
        expect(attached.stderr).toBe('');
        expect(attached.stdout).toContain(`session ksched attached to kernel buffer ${name} (${kb.path})`);
        const listed = JSON.parse((await cli(agent, ['ls', '--json'])).stdout);
        expect(listed.buffers).toContainEqual(expect.objectContaining({ backend: 'kernel', name, session: 'ksched' }));
        const cat = startCatLive(agent, 'ksched');
        // Context switches happen on their own (this test's processes are enough).
        await eventually(() => (cat.events().length >= 20 ? true : undefined));
        for (const e of cat.events().slice(0, 20)) {
          expect(e.event).toBe('sched:sched_switch');
          expect(e.fields).toHaveProperty('next_pid');
        }
        const status = JSON.parse(
          (await cli(agent, ['session', 'status', 'ksched', '--json'])).stdout,
        ) as SessionStatus;
        expect(status).toMatchObject({
          state: 'running',
          persistent: { backend: 'kernel', buffer: name, path: kb.path },
        });
        expect(status.events).toBeGreaterThanOrEqual(20);
        const shot = await cli(agent, ['session', 'snapshot', 'ksched', '-o', join(dir, 'shots')]);
        let n = 0;
        for (const e of openTrace(shot.stdout.trim()).events()) {
          expect(e.eventClass.name).toBe('sched:sched_switch');
          n++;
        }
        expect(n).toBeGreaterThan(0);
        expect((await cli(agent, ['session', 'detach', 'ksched'])).stdout).toBe(
          `session ksched detached; kernel buffer ${name} kept\n`,
        );
        await exited(cat.proc);
        expect(existsSync(kb.path)).toBe(true);
        expect(readFileSync(join(kb.path, 'tracing_on'), 'utf8').trim()).toBe('1');
        expect(readFileSync(join(kb.path, 'set_event'), 'utf8').trim()).toBe('sched:sched_switch');
      } finally {
        await agent.stop();
        deleteKernelBuffer(name);
      }
    });
  },
);
