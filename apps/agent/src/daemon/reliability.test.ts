/**
 * The agent under abuse, for real: garbage and oversize lines on its socket, clients vanishing mid-request, a peer
 * that is neither root nor in the agent's group (a real user made with useradd), kill -9 in the middle of a kernel
 * session and the restart that re-adopts its tracefs instance, and a disk that fills up under one of two sessions.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { connectAgent, type SessionStatus } from '@evtrace/agent-protocol';
import { openTrace } from '@evtrace/trace-format';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, eventually, startAgent, workDir } from '../testing/agent-daemon.ts';
import { kernelAccess } from '../testing/kernel-recording.ts';

const root = process.getuid?.() === 0;
const { tracefs, why } = kernelAccess('not root: kernel sessions need root');
const hasUseradd = spawnSync('sh', ['-c', 'command -v useradd']).status === 0;

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const fresh = (prefix: string) => {
  const d = workDir(prefix);
  dirs.push(d);
  return d;
};

/** Sends raw bytes on a new connection and collects what comes back until the agent is quiet. */
function raw(socket: string, data: string | Buffer, endAfter = true): Promise<string> {
  return new Promise((resolve) => {
    const c = createConnection(socket);
    let got = '';
    c.on('data', (d) => (got += d.toString()));
    c.on('error', () => {});
    c.on('connect', () => {
      c.write(data);
      setTimeout(() => {
        if (endAfter) c.end();
        else c.destroy();
        resolve(got);
      }, 400);
    });
  });
}

describe('hostile clients on the real socket', () => {
  it('answers garbage, oversize lines, requests before hello and unknown ops with errors, and keeps serving', async () => {
    const agent = await startAgent(fresh('agent-abuse-'));
    try {
      const replies = (
        await raw(
          agent.socket,
          'not json\n{"id":1,"op":"list"}\n{"id":2,"op":"hello","version":1}\n{"id":3,"op":"fly"}\n[]\n',
        )
      )
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(
        replies.map((r) => r.error?.code ?? 'ok'),
        JSON.stringify(replies),
      ).toEqual([
        'ERR_AGENT_BAD_MESSAGE',
        'ERR_AGENT_HELLO_REQUIRED',
        'ok',
        'ERR_AGENT_UNKNOWN_OP',
        'ERR_AGENT_BAD_MESSAGE',
      ]);
      const big = await raw(
        agent.socket,
        Buffer.concat([Buffer.alloc(300_000, 0x61), Buffer.from('\n{"id":9,"op":"hello","version":7}\n')]),
      );
      expect(
        big
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l).error.code),
      ).toEqual(['ERR_AGENT_TOO_LARGE', 'ERR_AGENT_VERSION']);
      // Half a request, then gone; a flood of bytes without newline, then gone.
      await raw(agent.socket, '{"id":1,"op":"hel', false);
      await raw(agent.socket, Buffer.alloc(2_000_000, 0x7b), false);
      const client = await agent.connect();
      expect(await client.list()).toEqual([]);
      client.close();
      expect(agent.proc.exitCode).toBeNull();
      const s = statSync(agent.socket);
      expect(s.mode & 0o777).toBe(0o600);
      expect(statSync(join(agent.socket, '..')).mode & 0o777).toBe(0o750);
    } finally {
      expect(await agent.stop()).toBe(0);
    }
  });
});

describe.skipIf(!root || !hasUseradd)(
  `peer credentials${!root ? ' (skipped: not root: useradd needs root)' : !hasUseradd ? ' (skipped: useradd is not installed (apt-get install passwd))' : ''}`,
  () => {
    it('refuses a user outside the group and accepts a member (SO_PEERCRED)', async () => {
      const user = `evt${process.pid % 100000}`;
      const group = `${user}g`;
      execFileSync('groupadd', [group]);
      execFileSync('useradd', ['-M', '-N', '-g', 'nogroup', user]);
      try {
        const uid = Number(execFileSync('id', ['-u', user]).toString());
        const gid = Number(execFileSync('id', ['-g', user]).toString());
        const dir = fresh('agent-cred-');
        const agent = await startAgent(dir, ['--group', group]);
        try {
          expect(statSync(agent.socket).mode & 0o777).toBe(0o660);
          const probe = `import(${JSON.stringify(new URL('../../../../packages/agent-protocol/dist/index.js', import.meta.url).pathname)}).then(async (p) => { try { const a = await p.connectAgent(${JSON.stringify(agent.socket)}); console.log('ok', (await a.list()).length); a.close(); } catch (e) { console.log(e.code, e.message); } })`;
          const asUser = (groups: number[]) =>
            spawnSync(process.execPath, ['-e', probe], {
              uid,
              gid,
              ...(groups.length ? {} : {}),
              encoding: 'utf8',
              cwd: '/',
            });
          // Outside the group: the socket's mode already refuses it.
          const refused = asUser([]);
          expect(refused.stdout).toMatch(/^ERR_AGENT_CONNECT .*EACCES/);
          // In the group: accepted.
          execFileSync('usermod', ['-a', '-G', group, user]);
          const member = spawnSync(
            'su',
            ['-s', '/bin/sh', user, '-c', `${process.execPath} -e '${probe.replace(/'/g, "'\\''")}'`],
            {
              encoding: 'utf8',
              cwd: '/',
            },
          );
          expect(member.stdout.trim()).toBe('ok 0');
          // A peer that gets through the file mode but not the credential check (socket opened up by hand).
          execFileSync('chmod', ['0666', agent.socket]);
          execFileSync('chmod', ['0755', join(agent.socket, '..')]);
          execFileSync('gpasswd', ['-d', user, group]);
          const outsider = asUser([]);
          expect(outsider.stdout + outsider.stderr).toMatch(/ERR_AGENT_PERMISSION .*uid \d+ .*is not root or in group/);
          await agent.waitForLog(/refused a connection: uid \d+/);
        } finally {
          await agent.stop();
        }
      } finally {
        spawnSync('userdel', [user]);
        spawnSync('groupdel', [group]);
      }
    });
  },
);

describe.skipIf(why !== '')(`kernel sessions, crash and restart${why ? ` (skipped: ${why})` : ''}`, () => {
  it('records from a private instance; after kill -9 the output is readable and a restart re-adopts the instance', async () => {
    const dir = fresh('agent-crash-');
    const out = join(dir, 'out');
    let agent = await startAgent(dir);
    const load = () => {
      for (let i = 0; i < 5; i++) execFileSync('ls', ['-R', '/proc/self'], { stdio: 'ignore' });
    };
    try {
      expect(
        (
          await cli(agent, [
            'session',
            'create',
            'k',
            '--events',
            'kmem:kmalloc',
            '--mode',
            'overwrite',
            '--source',
            'kernel',
            '--output',
            out,
          ])
        ).code,
      ).toBe(0);
      expect((await cli(agent, ['session', 'start', 'k'])).code).toBe(0);
      const before = JSON.parse((await cli(agent, ['session', 'status', 'k', '--json'])).stdout) as SessionStatus;
      expect(before.instance).toMatch(/^evtrace-[0-9a-f]{8}-\d+-\d+$/);
      expect(existsSync(join(tracefs!, 'instances', before.instance!))).toBe(true);
      await eventually(async () => {
        load();
        const s = JSON.parse((await cli(agent, ['session', 'status', 'k', '--json'])).stdout) as SessionStatus;
        return s.events > 100 ? s : undefined;
      });
      const shot = (await cli(agent, ['session', 'snapshot', 'k', '-o', join(dir, 'shots')])).stdout.trim();
      const report = execFileSync('trace-cmd', ['report', shot], { maxBuffer: 1 << 28 }).toString();
      expect(report).toMatch(/kmalloc:/);
      await agent.kill9();
      // What the killed agent wrote: a raw-pages directory, readable to its last whole page.
      const part = readdirSync(out).find((f) => f.endsWith('.part'))!;
      expect(part).toBeDefined();
      let n = 0;
      for (const _ of openTrace(join(out, part)).events()) n++;
      expect(n).toBeGreaterThan(0);
      // The instance outlived its agent; the next one takes it over and says so.
      expect(existsSync(join(tracefs!, 'instances', before.instance!))).toBe(true);
      agent = await startAgent(dir);
      // Re-adopted: its owner tag keeps other evtrace processes (parallel recordings, other agents) off it.
      await agent.waitForLog(new RegExp(`session k: re-adopted tracefs instance ${before.instance}.*running`));
      expect(agent.log()).toMatch(/finished as .*k-0001\.dat/);
      expect(existsSync(join(out, 'k-0001.part'))).toBe(false);
      expect(existsSync(join(out, 'k-0001.dat'))).toBe(true);
      load();
      const after = await eventually(async () => {
        load();
        const s = JSON.parse((await cli(agent, ['session', 'status', 'k', '--json'])).stdout) as SessionStatus;
        return s.events > 0 ? s : undefined;
      });
      expect(after.state).toBe('running');
      expect(after.instance).toBe(before.instance);
      expect((await cli(agent, ['session', 'destroy', 'k'])).code).toBe(0);
      expect(existsSync(join(tracefs!, 'instances', before.instance!))).toBe(false);
      expect(existsSync(join(tracefs!, 'instances', after.instance!))).toBe(false);
    } finally {
      await agent.stop();
    }
  });

  it('stops only the session whose disk is full, with a clear error; the other keeps running', async () => {
    const dir = fresh('agent-full-');
    const small = join(dir, 'small');
    mkdirSync(small);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', small]);
    const agent = await startAgent(dir, ['--demo-rate', '40000']);
    try {
      expect(
        (
          await cli(agent, [
            'session',
            'create',
            'full',
            '--events',
            'kmem:kmalloc',
            '--mode',
            'discard',
            '--source',
            'demo',
            '--output',
            small,
          ])
        ).code,
      ).toBe(0);
      expect(
        (
          await cli(agent, [
            'session',
            'create',
            'other',
            '--events',
            'kmem:kfree',
            '--mode',
            'overwrite',
            '--source',
            'demo',
          ])
        ).code,
      ).toBe(0);
      for (const s of ['full', 'other']) expect((await cli(agent, ['session', 'start', s])).code).toBe(0);
      const failed = await eventually(async () => {
        const s = JSON.parse((await cli(agent, ['session', 'status', 'full', '--json'])).stdout) as SessionStatus;
        return s.state === 'failed' ? s : undefined;
      }, 30_000);
      expect(failed.error?.code).toBe('ERR_AGENT_OUTPUT');
      expect(failed.error?.message).toMatch(/ENOSPC \(no space left on device\)/);
      expect(agent.log()).toMatch(/session full failed and stopped: ERR_AGENT_OUTPUT/);
      const part = readdirSync(small).find((f) => f.endsWith('.part'))!;
      let n = 0;
      for (const _ of openTrace(join(small, part)).events()) n++;
      expect(n).toBeGreaterThan(0);
      const other = JSON.parse((await cli(agent, ['session', 'status', 'other', '--json'])).stdout) as SessionStatus;
      expect(other.state).toBe('running');
      const later = await eventually(async () => {
        const s = JSON.parse((await cli(agent, ['session', 'status', 'other', '--json'])).stdout) as SessionStatus;
        return s.events > other.events ? s : undefined;
      });
      expect(later.lost).toBe(0);
    } finally {
      await agent.stop();
      spawnSync('umount', [small]);
    }
  });
});

it('connectAgent names the socket when no agent runs', async () => {
  await expect(connectAgent('/nonexistent/agent.sock')).rejects.toMatchObject({ code: 'ERR_AGENT_CONNECT' });
});
