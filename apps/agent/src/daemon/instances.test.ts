/**
 * Instance sharing in the real agent on the real tracefs: kernel sessions with the same configuration read one
 * instance (status says which, and with whom), each keeps its own counters and outputs, the instance goes with the
 * last of them, and after kill -9 the restarted agent re-adopts the one instance for all of them.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { SessionStatus } from '@evtrace/agent-protocol';
import { instanceOwner, listInstances } from '@evtrace/tracefs';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, eventually, type RunningAgent, startAgent, workDir } from '../testing/agent-daemon.ts';
import { kernelAccess } from '../testing/kernel-recording.ts';

const { tracefs, why: access } = kernelAccess('not root: kernel sessions need root');
let why = access;
if (why === '' && spawnSync('sh', ['-c', 'command -v trace-cmd']).status !== 0)
  why = 'trace-cmd is not installed (apt-get install trace-cmd)';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const load = () => {
  for (let i = 0; i < 5; i++) execFileSync('ls', ['-R', '/proc/self'], { stdio: 'ignore' });
};

async function status(agent: RunningAgent, name: string): Promise<SessionStatus> {
  return JSON.parse((await cli(agent, ['session', 'status', name, '--json'])).stdout) as SessionStatus;
}

async function create(agent: RunningAgent, name: string, args: readonly string[]): Promise<void> {
  const r = await cli(agent, ['session', 'create', name, '--source', 'kernel', ...args]);
  expect(r.code, r.stderr).toBe(0);
}

/** The instances of the agent's process. */
const ours = (agent: RunningAgent) => listInstances(tracefs!).filter((n) => instanceOwner(n)?.pid === agent.proc.pid);

/** kmalloc lines of a trace.dat as trace-cmd reports them. */
const traceCmdCount = (file: string) =>
  execFileSync('trace-cmd', ['report', file], { maxBuffer: 1 << 28 })
    .toString()
    .split('\n')
    .filter((l) => /kmalloc:/.test(l)).length;

describe.skipIf(why !== '')(`kernel sessions sharing an instance${why ? ` (skipped: ${why})` : ''}`, () => {
  it('shares one instance between sessions of the same configuration; others get their own', async () => {
    const dir = workDir('agent-share-');
    dirs.push(dir);
    const agent = await startAgent(dir);
    try {
      await create(agent, 'a', ['--events', 'kmem:kmalloc', '--mode', 'overwrite']);
      await create(agent, 'b', ['--events', 'kmem:kmalloc', '--mode', 'discard', '--output', join(dir, 'b')]);
      await create(agent, 'c', ['--events', 'kmem:kmalloc', '--mode', 'discard', '--buffer-size', '2M']);
      await create(agent, 'd', ['--events', 'kmem:kmalloc', '--mode', 'discard', '--filter', 'bytes_req > 64']);
      const [a, b, c, d] = await Promise.all(['a', 'b', 'c', 'd'].map((n) => status(agent, n)));
      expect(a!.instance).toMatch(/^evtrace-[0-9a-f]{8}-\d+-\d+$/);
      expect(b!.instance).toBe(a!.instance);
      expect(a!.sharedWith).toEqual(['b']);
      expect(b!.sharedWith).toEqual(['a']);
      // Another buffer size, another filter: instances of their own.
      expect(new Set([a!.instance, c!.instance, d!.instance]).size).toBe(3);
      expect(c!.sharedWith).toEqual([]);
      expect(ours(agent).sort()).toEqual([a!.instance!, c!.instance!, d!.instance!].sort());
      const text = (await cli(agent, ['session', 'status', 'a'])).stdout;
      expect(text).toContain(`tracefs instance ${a!.instance} (shared with b)`);
      expect((await cli(agent, ['session', 'status', 'c'])).stdout).toContain(
        `tracefs instance ${c!.instance} (its own)`,
      );

      for (const n of ['a', 'b']) expect((await cli(agent, ['session', 'start', n])).code).toBe(0);
      await eventually(async () => {
        load();
        const s = await status(agent, 'b');
        return s.events > 200 ? s : undefined;
      });
      // a stops; b reads on alone from the same instance, a's counts stay.
      expect((await cli(agent, ['session', 'stop', 'a'])).code).toBe(0);
      const aStopped = await status(agent, 'a');
      const bAt = (await status(agent, 'b')).events;
      await eventually(async () => {
        load();
        return (await status(agent, 'b')).events > bAt ? true : undefined;
      });
      expect((await status(agent, 'a')).events).toBe(aStopped.events);
      expect((await cli(agent, ['session', 'stop', 'b'])).code).toBe(0);
      const bDone = await status(agent, 'b');
      expect(bDone.lost).toBe(0);
      expect(aStopped.lost).toBe(0);
      // b's output holds exactly the events b counted, as trace-cmd reads them.
      expect(bDone.files).toHaveLength(1);
      expect(traceCmdCount(bDone.files[0]!)).toBe(bDone.events);
      // A restarted session reads the shared instance again.
      expect((await cli(agent, ['session', 'start', 'a'])).code).toBe(0);
      await eventually(async () => {
        load();
        return (await status(agent, 'a')).events > aStopped.events ? true : undefined;
      });

      // The instance stays while a session uses it and goes with the last.
      expect((await cli(agent, ['session', 'destroy', 'b'])).code).toBe(0);
      expect(existsSync(join(tracefs!, 'instances', a!.instance!))).toBe(true);
      expect((await status(agent, 'a')).sharedWith).toEqual([]);
      expect((await cli(agent, ['session', 'destroy', 'a'])).code).toBe(0);
      expect(existsSync(join(tracefs!, 'instances', a!.instance!))).toBe(false);
      // A new session of that configuration gets a fresh instance.
      await create(agent, 'e', ['--events', 'kmem:kmalloc', '--mode', 'overwrite']);
      const e = await status(agent, 'e');
      expect(e.instance).not.toBe(a!.instance);
      expect(ours(agent)).toContain(e.instance);
    } finally {
      await agent.stop();
    }
    expect(ours(agent)).toEqual([]);
  });

  it('after kill -9 the restarted agent re-adopts the shared instance for every session that read it', async () => {
    const dir = workDir('agent-share-crash-');
    dirs.push(dir);
    let agent = await startAgent(dir);
    let instance: string | undefined;
    try {
      await create(agent, 'x', ['--events', 'kmem:kmalloc', '--mode', 'overwrite']);
      await create(agent, 'y', ['--events', 'kmem:kmalloc', '--mode', 'overwrite', '--output', join(dir, 'y')]);
      for (const n of ['x', 'y']) expect((await cli(agent, ['session', 'start', n])).code).toBe(0);
      instance = (await status(agent, 'x')).instance;
      expect((await status(agent, 'y')).instance).toBe(instance);
      await eventually(async () => {
        load();
        return (await status(agent, 'y')).events > 50 ? true : undefined;
      });
      await agent.kill9();
      expect(existsSync(join(tracefs!, 'instances', instance!))).toBe(true);
      agent = await startAgent(dir);
      // Re-adopted by both: the instance carries this state directory's owner tag, so no other evtrace process
      // (parallel recordings, other agents) removes it while its agent is dead.
      const x = await agent.waitForLog(/session x: .*running/);
      const y = await agent.waitForLog(/session y: .*running/);
      expect(x).toContain(`re-adopted tracefs instance ${instance}`);
      expect(y).toContain(`re-adopted tracefs instance ${instance}`);
      const [sx, sy] = [await status(agent, 'x'), await status(agent, 'y')];
      expect(sy.instance).toBe(sx.instance);
      expect(sx.sharedWith).toEqual(['y']);
      expect(sx.instance).toBe(instance);
      await eventually(async () => {
        load();
        return (await status(agent, 'x')).events > 0 && (await status(agent, 'y')).events > 0 ? true : undefined;
      });
      expect(readdirSync(join(dir, 'y')).some((f) => f.endsWith('.dat'))).toBe(true);
      for (const n of ['x', 'y']) expect((await cli(agent, ['session', 'destroy', n])).code).toBe(0);
      expect(existsSync(join(tracefs!, 'instances', sx.instance!))).toBe(false);
      expect(existsSync(join(tracefs!, 'instances', instance!))).toBe(false);
    } finally {
      await agent.stop();
    }
  });
});
