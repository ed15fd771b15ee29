/**
 * The agent acts for its caller, tested as an attacker would try it: a real unprivileged user (made with useradd) in
 * the group of a root agent names output, trace-shot and buffer paths, plants a symbolic link between start and stop,
 * and reads a root-only persistent buffer through the agent. Every path must be opened with that user's rights.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { openPersistent } from '@evtrace/persistent-events';
import { openTrace } from '@evtrace/trace-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cli, eventually, type RunningAgent, startAgent, workDir } from '../testing/agent-daemon.ts';
import { asCaller, type Caller } from './caller.ts';

const root = process.getuid?.() === 0;
const hasUseradd = spawnSync('sh', ['-c', 'command -v useradd']).status === 0;

/** Runs `evtrace ARGS` as `uid`:`gid` with `umask`, against the agent's socket. */
function runAs(
  who: { uid: number; gid: number },
  socket: string,
  args: readonly string[],
  umask = '022',
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const quoted = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
    const child = spawn('sh', ['-c', `umask ${umask}; exec ${quoted}`], {
      uid: who.uid,
      gid: who.gid,
      cwd: '/',
      env: { ...process.env, EVTRACE_AGENT_SOCKET: socket },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe.skipIf(!root || !hasUseradd)(
  `a root agent acting for a group member${!root ? ' (skipped: not root: useradd needs root)' : !hasUseradd ? ' (skipped: useradd is not installed (apt-get install passwd))' : ''}`,
  () => {
    const user = `evc${process.pid % 100000}`;
    const group = `${user}g`;
    let member: { uid: number; gid: number };
    let dir: string;
    let agent: RunningAgent;
    /** A root file the attacks aim at. */
    let precious: string;
    /** A directory of the member's, and a root directory only root may enter. */
    let mine: string;
    let rootOnly: string;
    const as = (args: readonly string[], umask?: string) => runAs(member, agent.socket, args, umask);

    beforeAll(async () => {
      execFileSync('groupadd', [group]);
      // The agent's group is the member's primary group: spawn() as uid:gid carries no supplementary groups.
      execFileSync('useradd', ['-M', '-N', '-g', group, '-s', '/usr/sbin/nologin', user]);
      member = {
        uid: Number(execFileSync('id', ['-u', user]).toString()),
        gid: Number(execFileSync('id', ['-g', user]).toString()),
      };
      dir = workDir('agent-caller-');
      precious = join(dir, 'precious');
      writeFileSync(precious, 'root data\n');
      mine = join(dir, 'mine');
      mkdirSync(mine);
      chownSync(mine, member.uid, member.gid);
      rootOnly = join(dir, 'root-only');
      mkdirSync(rootOnly, { mode: 0o700 });
      agent = await startAgent(dir, ['--group', group, '--demo-rate', '4000']);
    }, 60_000);

    afterAll(async () => {
      await agent?.stop();
      spawnSync('userdel', [user]);
      spawnSync('groupdel', [group]);
      rmSync(dir, { recursive: true, force: true });
    }, 30_000);

    it('refuses output and trace-shots into a directory the member may not write (ERR_AGENT_PERMISSION, path named)', async () => {
      const create = await as(['session', 'create', 'denied', '--events', 'kmem:*', '--mode', 'overwrite']);
      expect(create.code).toBe(0);
      const output = await as([
        'session',
        'create',
        'out',
        '--source',
        'demo',
        '--events',
        'kmem:*',
        '--mode',
        'overwrite',
        '--output',
        join(rootOnly, 'sub'),
      ]);
      expect(output.code).toBe(1);
      expect(output.stderr).toMatch(
        new RegExp(`ERR_AGENT_PERMISSION: cannot mkdir ${rootOnly}/sub: EACCES \\(permission denied\\)`),
      );
      // An existing root directory: created nothing, refused at create rather than at the first page.
      const existing = await as([
        'session',
        'create',
        'out',
        '--events',
        'kmem:*',
        '--mode',
        'overwrite',
        '--output',
        rootOnly,
      ]);
      expect(existing.code).toBe(1);
      expect(existing.stderr).toMatch(
        new RegExp(`ERR_AGENT_PERMISSION: cannot \\w+ ${rootOnly}/\\.evtrace-\\w+: EACCES \\(permission denied\\)`),
      );
      expect(await as(['session', 'start', 'denied'])).toMatchObject({ code: 0 });
      const shot = await as(['session', 'snapshot', 'denied', '-o', rootOnly]);
      expect(shot.code).toBe(1);
      expect(shot.stderr).toMatch(
        new RegExp(
          `ERR_AGENT_PERMISSION: cannot \\w+ ${rootOnly}/denied-shot-0001\\.dat: EACCES \\(permission denied\\)`,
        ),
      );
      expect(readdirSync(rootOnly)).toEqual([]);
      // Root asking for the same directory is served: the rights are the caller's, not a rule about paths.
      const rootShot = await cli(agent, ['session', 'snapshot', 'denied', '-o', rootOnly]);
      expect(rootShot.code).toBe(0);
      expect(statSync(rootShot.stdout.trim()).uid).toBe(0);
      // A file where a directory is named: the error names it, in words (no raw `EEXIST: EEXIST: ...`).
      const notDir = await cli(agent, ['session', 'snapshot', 'denied', '-o', precious]);
      expect(notDir.stderr).toBe(`evtrace: ERR_AGENT_OUTPUT: cannot mkdir ${precious}: EEXIST (already exists)\n`);
      expect(await as(['session', 'destroy', 'denied'])).toMatchObject({ code: 0 });
    }, 30_000);

    it("writes the member's output, rotations and trace-shots as the member, with the member's umask", async () => {
      const out = join(mine, 'rec');
      const shots = join(mine, 'shots');
      const args = ['--events', 'kmem:*', '--mode', 'overwrite', '--output', out, '--rotate', '1s'];
      expect(await as(['session', 'create', 'owned', '--source', 'demo', ...args], '027')).toMatchObject({ code: 0 });
      expect(await as(['session', 'start', 'owned'], '027')).toMatchObject({ code: 0 });
      await eventually(() => (existsSync(join(out, 'owned-0001.dat')) ? true : undefined));
      const shot = await as(['session', 'snapshot', 'owned', '-o', shots], '027');
      expect(shot.code).toBe(0);
      expect(await as(['session', 'stop', 'owned'], '027')).toMatchObject({ code: 0 });
      const files = [
        ...readdirSync(out).map((f) => join(out, f)),
        ...readdirSync(shots).map((f) => join(shots, f)),
        out,
        shots,
      ];
      expect(files.filter((f) => f.endsWith('.dat')).length).toBeGreaterThanOrEqual(3);
      for (const f of files) {
        const st = statSync(f);
        expect({ f, uid: st.uid, gid: st.gid }).toEqual({ f, uid: member.uid, gid: member.gid });
        // Directories: umask 027, no bits for others, none to write for the group. Recordings hold kernel addresses
        // and are the owner's alone (0600) whatever the umask, as `evtrace record` writes them.
        expect({ f, mode: st.mode & 0o777 }).toEqual({ f, mode: st.isDirectory() ? 0o750 : 0o600 });
      }
      // And they are whole recordings.
      for (const f of files.filter((f) => f.endsWith('.dat')))
        expect(openTrace(f).eventClasses.length).toBeGreaterThan(0);
      expect(await as(['session', 'destroy', 'owned'])).toMatchObject({ code: 0 });
    }, 30_000);

    it('does not follow a symbolic link planted at the output name between start and stop', async () => {
      // A directory anyone may write, as /tmp (fs.protected_symlinks does not guard it here).
      const shared = join(dir, 'shared');
      mkdirSync(shared);
      chmodSync(shared, 0o1777);
      for (const caller of ['member', 'root'] as const) {
        const name = `race-${caller}`;
        const run = (args: string[]) => (caller === 'root' ? cli(agent, args) : as(args));
        const create = await run([
          'session',
          'create',
          name,
          '--source',
          'demo',
          '--events',
          'kmem:*',
          '--mode',
          'overwrite',
          '--output',
          shared,
        ]);
        expect(create.code).toBe(0);
        expect((await run(['session', 'start', name])).code).toBe(0);
        await eventually(() => (existsSync(join(shared, `${name}-0001.part`)) ? true : undefined));
        symlinkSync(precious, join(shared, `${name}-0001.dat`));
        const stop = await run(['session', 'stop', name]);
        expect(stop.code).toBe(1);
        expect(stop.stderr).toMatch(
          new RegExp(
            `ERR_AGENT_OUTPUT: cannot write ${shared}/${name}-0001\\.dat: a symbolic link appeared at that name while recording \\(it is left alone\\); the recording is kept as `,
          ),
        );
        expect(readFileSync(precious, 'utf8')).toBe('root data\n');
        expect(statSync(precious).size).toBe(10);
        // The recording is kept aside, readable, owned by whoever asked for it.
        const kept = /kept as (\S+)/.exec(stop.stderr)![1]!;
        expect(statSync(kept).uid).toBe(caller === 'root' ? 0 : member.uid);
        expect(openTrace(kept).eventClasses.length).toBeGreaterThan(0);
        expect((await run(['session', 'destroy', name])).code).toBe(0);
      }
    }, 30_000);

    it('refuses the member a root-only persistent buffer as a direct open does: ERR_AGENT_PERMISSION, the same message', async () => {
      const bufs = join(dir, 'bufs');
      openPersistent('root/secret', { dir: bufs, create: { size: 8192 } }).close();
      const direct = await as(['persistent', 'cat', 'root/secret', '--dir', bufs]);
      const through = await as(['session', 'attach', 'root/secret', '--persistent', '--dir', bufs]);
      expect(through.code).toBe(1);
      const denied =
        /ERR_AGENT_PERMISSION: permission denied: cannot open buffer root\/secret for reading: \S+ \(owner root, group root, mode 0600; you are (\w+)\)/;
      expect(through.stderr).toMatch(denied);
      expect(denied.exec(through.stderr)![1]).toBe(user);
      // The direct open's code is persistent-events' own; the agent's reply says the same under its code.
      expect(direct.stderr.trim()).toBe(
        through.stderr.trim().replace('ERR_AGENT_PERMISSION', 'ERR_PERSISTENT_PERMISSION'),
      );
      // Not listed as readable through the agent either; kernel buffers are refused to the member outright.
      const ls = JSON.parse((await as(['ls', '--json', '--dir', bufs])).stdout);
      expect(ls.buffers.filter((b: { name: string }) => b.name === 'root/secret')).toEqual([]);
      expect(ls.unreadable).toEqual([
        expect.objectContaining({ name: 'root/secret', code: 'ERR_PERSISTENT_PERMISSION' }),
      ]);
      const kernel = await as(['session', 'attach', 'anything', '--kernel', '--persistent']);
      expect(kernel.stderr).toMatch(
        /ERR_AGENT_PERMISSION: permission denied: kernel buffer anything is a tracefs instance, which only root reads/,
      );
      // Root, for whom the buffer is readable, attaches it.
      expect((await cli(agent, ['session', 'attach', 'root/secret', '--persistent', '--dir', bufs])).code).toBe(0);
      // A directory the member cannot read lists as empty, as it does for them directly; root sees its buffer.
      const hidden = join(rootOnly, 'bufs');
      openPersistent('hidden/one', { dir: hidden, create: { size: 8192 } }).close();
      const theirs = JSON.parse((await as(['ls', '--json', '--dir', hidden])).stdout);
      expect({ buffers: theirs.buffers, unreadable: theirs.unreadable }).toEqual({ buffers: [], unreadable: [] });
      const roots = JSON.parse((await cli(agent, ['ls', '--json', '--dir', hidden])).stdout);
      // (Kernel buffers other tests create meanwhile are listed too: only the user-space ones of --dir are compared.)
      const userBuffers = roots.buffers.filter((b: { backend: string }) => b.backend === 'user');
      expect(userBuffers.map((b: { name: string }) => b.name)).toEqual(['hidden/one']);
      // Attached by root, its content is still the buffer's: the member may neither view it nor take a trace-shot.
      const live = await as(['cat', '--live', 'root.secret', '--limit', '1']);
      expect(live.code).toBe(1);
      expect(live.stderr).toMatch(denied);
      expect(denied.exec(live.stderr)![1]).toBe(user);
      const shot = await as(['session', 'snapshot', 'root.secret', '-o', mine]);
      expect(shot.code).toBe(1);
      expect(shot.stderr).toMatch(denied);
      expect(readdirSync(mine).filter((f) => f.startsWith('root.secret'))).toEqual([]);
      expect((await cli(agent, ['session', 'detach', 'root.secret'])).code).toBe(0);
    }, 30_000);

    it("finishes a member's .part as the member after kill -9, the creator kept in the state file", async () => {
      const out = join(mine, 'crash');
      const spec = ['--source', 'demo', '--events', 'kmem:*', '--mode', 'overwrite', '--output', out];
      expect((await as(['session', 'create', 'crash', ...spec], '077')).code).toBe(0);
      expect((await as(['session', 'start', 'crash'])).code).toBe(0);
      const part = join(out, 'crash-0001.part');
      // Killed once the state file names the .part (the directory exists a moment before it is recorded).
      const stateFile = join(agent.stateDir, 'sessions', 'crash', 'state.json');
      const state = await eventually(() => {
        const s = JSON.parse(readFileSync(stateFile, 'utf8'));
        return s.part === part && existsSync(part) ? s : undefined;
      });
      // spawn() as uid:gid leaves the member no supplementary groups, and the kernel says so (SO_PEERGROUPS).
      expect(state.owner).toEqual({ uid: member.uid, gid: member.gid, groups: [], umask: 0o077 });
      await agent.kill9();
      agent = await startAgent(dir, ['--group', group, '--demo-rate', '4000']);
      await agent.waitForLog(/session crash: output \S+ left by the previous agent finished as \S+crash-0001\.dat/);
      const st = statSync(join(out, 'crash-0001.dat'));
      expect({ uid: st.uid, mode: st.mode & 0o777 }).toEqual({ uid: member.uid, mode: 0o600 });
      // The re-created session still writes as its creator.
      expect((await as(['session', 'stop', 'crash'])).code).toBe(0);
      for (const f of readdirSync(out)) expect({ f, uid: statSync(join(out, f)).uid }).toEqual({ f, uid: member.uid });
      expect((await as(['session', 'destroy', 'crash'])).code).toBe(0);
    }, 30_000);

    it('switches only for the span of the call and back; an agent that is not root refuses to act for others', () => {
      const them: Caller = { uid: member.uid, gid: member.gid, groups: [member.gid], umask: 0o077 };
      const umask = process.umask();
      expect(() => asCaller(them, () => writeFileSync(join(rootOnly, 'x'), ''))).toThrow(/EACCES/);
      expect(asCaller(them, () => process.umask())).toBe(0o077);
      asCaller(them, () => writeFileSync(join(mine, 'made'), 'x'));
      expect(statSync(join(mine, 'made'))).toMatchObject({ uid: member.uid, gid: member.gid, mode: 0o100600 });
      // Root again, with its umask, after a success and after a failure.
      expect(process.umask()).toBe(umask);
      writeFileSync(join(rootOnly, 'y'), '');
      expect(statSync(join(rootOnly, 'y')).uid).toBe(0);
      rmSync(join(rootOnly, 'y'));
      // Without CAP_SETUID the switch does not take: refused, not done with the agent's own rights.
      const probe = `import(${JSON.stringify(new URL('./caller.ts', import.meta.url).pathname)}).then((m) => { try { m.asCaller({ uid: 0xfffe, gid: 0xfffe, groups: [], umask: 18 }, () => console.log('acted')); } catch (e) { console.log(e.code, e.message); } })`;
      const r = spawnSync(process.execPath, ['-e', probe], {
        uid: member.uid,
        gid: member.gid,
        cwd: '/',
        encoding: 'utf8',
      });
      expect(r.stdout.trim()).toMatch(
        new RegExp(
          `^ERR_AGENT_PERMISSION the agent \\(uid ${member.uid}\\) cannot act for \\w+ \\(uid 65534\\): only an agent running as root`,
        ),
      );
    }, 30_000);

    it('uses the supplementary groups the kernel recorded for the peer (SO_PEERGROUPS)', async () => {
      const team = `${user}t`;
      execFileSync('groupadd', [team]);
      try {
        execFileSync('usermod', ['-a', '-G', team, user]);
        // Only the team may write here: the member through a supplementary group, which su gives a login.
        const shared = join(dir, 'team');
        mkdirSync(shared);
        chownSync(shared, 0, Number(execFileSync('getent', ['group', team]).toString().split(':')[2]));
        chmodSync(shared, 0o770);
        const script = `EVTRACE_AGENT_SOCKET='${agent.socket}' '${process.execPath}' '${CLI}'`;
        const viaSu = (args: string) =>
          spawnSync('su', ['-s', '/bin/sh', user, '-c', `${script} ${args}`], { cwd: '/', encoding: 'utf8' });
        expect(viaSu(`session create team --source demo --events 'kmem:*' --mode overwrite`).status).toBe(0);
        expect(viaSu('session start team').status).toBe(0);
        const shot = viaSu(`session snapshot team -o ${shared}`);
        expect(shot.stderr).toMatch(/trace-shot of team/);
        expect(statSync(shot.stdout.trim()).uid).toBe(member.uid);
        // The same member without that group (spawned as uid:gid alone) is refused.
        const alone = await as(['session', 'snapshot', 'team', '-o', shared]);
        expect(alone.stderr).toMatch(
          new RegExp(
            `ERR_AGENT_PERMISSION: cannot \\w+ ${shared}/team-shot-\\d{4}\\.dat: EACCES \\(permission denied\\)`,
          ),
        );
        expect(viaSu('session destroy team').status).toBe(0);
      } finally {
        spawnSync('gpasswd', ['-d', user, team]);
        spawnSync('groupdel', [team]);
      }
    }, 30_000);

    it('runs no command for the member (a branch-trace session would run it as root)', async () => {
      const bts = await as([
        'session',
        'create',
        'cmd',
        '--source',
        'bts-qemu',
        '--events',
        'branches',
        '--mode',
        'overwrite',
        '--',
        '/bin/true',
      ]);
      expect(bts.code).toBe(1);
      expect(bts.stderr).toMatch(/ERR_AGENT_PERMISSION: a session with a command runs it as the agent/);
    }, 30_000);
  },
);

describe('agent --socket', () => {
  it('refuses a path that is not a socket and leaves it intact; replaces a stale socket', async () => {
    const dir = workDir('agent-socket-');
    try {
      const file = join(dir, 'important');
      writeFileSync(file, 'keep me\n');
      const refused = spawnSync(process.execPath, [CLI, 'agent', '--socket', file, '--state-dir', join(dir, 'st')], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(refused.status).toBe(1);
      expect(refused.stderr).toMatch(new RegExp(`${file} exists and is not a socket \\(a file\\): it is left alone`));
      expect(readFileSync(file, 'utf8')).toBe('keep me\n');
      // A socket nobody listens on any more (its server gone without unlinking it) is replaced.
      const stale = join(dir, 'stale.sock');
      const server = createServer();
      await new Promise<void>((resolve) => server.listen(stale, resolve));
      // Closing a listening socket unlinks its path: keep a hard link of it, then close.
      execFileSync('ln', [stale, `${stale}.keep`]);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      execFileSync('mv', [`${stale}.keep`, stale]);
      expect(statSync(stale).isSocket()).toBe(true);
      const agent = await startAgent(dir, [], stale);
      try {
        const client = await agent.connect();
        expect(await client.list()).toEqual([]);
        client.close();
      } finally {
        await agent.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it.skipIf(!root)(
    `leaves a shared directory's owner and mode alone with --group${root ? '' : ' (skipped: not root: chown needs root)'}`,
    async () => {
      const dir = workDir('agent-socket-');
      try {
        // As /tmp: sticky, world-writable, other files in it.
        writeFileSync(join(dir, 'other'), '');
        chmodSync(dir, 0o1777);
        const agent = await startAgent(dir, ['--group', '0'], join(dir, 'grouped.sock'));
        try {
          expect(statSync(join(dir, 'grouped.sock')).mode & 0o777).toBe(0o660);
          expect(statSync(dir).mode & 0o7777).toBe(0o1777);
          expect(agent.log()).toMatch(/holds other files and is left as it is/);
        } finally {
          await agent.stop();
        }
        // A directory made for the socket is opened to the group.
        const made = join(dir, 'run');
        const own = await startAgent(dir, ['--group', '0'], join(made, 'agent.sock'));
        await own.stop();
        expect(statSync(made).mode & 0o7777).toBe(0o750);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    30_000,
  );
});
