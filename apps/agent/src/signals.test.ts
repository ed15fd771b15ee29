/**
 * Every stop signal sent to a real `evtrace record` and a real agent: each ends cleanly with status 0, leaves tracefs
 * as it found it (no evtrace instance of the process) and a finished output that `evtrace cat` reads. The kernel
 * source where root and tracefs are here, the demo source otherwise.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { connectAgent } from '@evtrace/agent-protocol';
import { findTracefs, instanceOwner, listInstances } from '@evtrace/tracefs';
import { afterAll, describe, expect, it } from 'vitest';
import { ExitCode } from './exit-codes.ts';
import { STOP_SIGNALS } from './signals.ts';
import { CLI, cli, eventually, startAgent, workDir } from './testing/agent-daemon.ts';

function kernel(): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    return findTracefs();
  } catch {
    return undefined;
  }
}

const tracefs = kernel();
const source = tracefs === undefined ? 'demo' : 'kernel';
const work = workDir('evtrace-signals-');
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The evtrace instances process `pid` holds (none without tracefs). */
const instancesOf = (pid: number) =>
  tracefs === undefined ? [] : listInstances(tracefs).filter((n) => instanceOwner(n)?.pid === pid);

/** Events `evtrace cat --json` reads from a trace; fails the test when cat refuses it. */
async function catCount(path: string): Promise<number> {
  const r = await cli({ socket: join(work, 'none.sock') }, ['cat', '--json', path]);
  expect(r.code, r.stderr).toBe(ExitCode.Ok);
  return r.stdout.split('\n').filter((l) => l.startsWith('{')).length;
}

/** `evtrace record` until `signals` are sent (the first once it records, the others right after it). */
async function recordUntil(signals: readonly NodeJS.Signals[], out: string) {
  const args = [CLI, 'record', '-e', 'sched:sched_switch', '-e', 'kmem:kmalloc', '-o', out];
  if (source === 'demo') args.push('--demo', '--duration', '1h');
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  // Recording: pages reach OUTPUT.part (the kernel's after its instance is set up).
  await eventually(() =>
    existsSync(`${out}.part`) && (tracefs === undefined || instancesOf(child.pid!).length > 0) ? true : undefined,
  );
  await new Promise((r) => setTimeout(r, 300));
  for (const s of signals) child.kill(s);
  return { pid: child.pid!, ...(await exited), stderr: () => stderr };
}

describe(`evtrace record on a signal (${source} source${tracefs === undefined ? ': not root or no tracefs' : ''})`, () => {
  for (const signal of STOP_SIGNALS) {
    it(`${signal}: exit 0, no instance left, OUTPUT finished and readable, no OUTPUT.part`, async () => {
      const out = join(work, `record-${signal}.dat`);
      const r = await recordUntil([signal], out);
      expect({ code: r.code, signal: r.signal }, r.stderr()).toEqual({ code: ExitCode.Ok, signal: null });
      expect(instancesOf(r.pid)).toEqual([]);
      expect(existsSync(`${out}.part`)).toBe(false);
      const summary = /recorded (\d+) events/.exec(r.stderr());
      expect(summary, r.stderr()).not.toBeNull();
      expect(await catCount(out)).toBe(Number(summary![1]));
    });
  }

  it('a burst of signals while it stops: still one clean stop, a readable output', async () => {
    const out = join(work, 'record-burst.dat');
    const r = await recordUntil(['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGINT'], out);
    expect({ code: r.code, signal: r.signal }, r.stderr()).toEqual({ code: ExitCode.Ok, signal: null });
    expect(instancesOf(r.pid)).toEqual([]);
    expect(existsSync(`${out}.part`)).toBe(false);
    expect(await catCount(out)).toBeGreaterThan(0);
  });
});

const hasScript = spawnSync('sh', ['-c', 'command -v script']).status === 0;

describe.skipIf(!hasScript)(
  `evtrace record in a terminal that closes${hasScript ? '' : ' (skipped: script(1) is not installed (apt-get install bsdutils))'}`,
  () => {
    it('the hung-up terminal (SIGHUP, then EIO on stderr) still gets a finished output and no instance left', async () => {
      const out = join(work, 'record-pty.dat');
      const args = [
        'record',
        '-e',
        'sched:sched_switch',
        '-o',
        out,
        ...(source === 'demo' ? ['--demo', '--duration', '1h'] : []),
      ];
      // script(1) runs it on a pseudo-terminal of its own; killing script closes the terminal's master side.
      const command = [process.execPath, CLI, ...args].map((a) => `'${a}'`).join(' ');
      const term = spawn('script', ['-qfec', command, '/dev/null'], { stdio: 'ignore' });
      const closed = new Promise((resolve) => term.on('exit', resolve));
      await eventually(() => (existsSync(`${out}.part`) ? true : undefined));
      await new Promise((r) => setTimeout(r, 300));
      const pid = Number(
        execFileSync('pgrep', ['-n', '-f', `${CLI} record .*${out}`])
          .toString()
          .trim(),
      );
      term.kill('SIGKILL');
      await closed;
      await eventually(() => (existsSync(`/proc/${pid}`) ? undefined : true));
      expect(instancesOf(pid)).toEqual([]);
      expect(existsSync(`${out}.part`)).toBe(false);
      expect(await catCount(out)).toBeGreaterThan(0);
    });
  },
);

describe.skipIf(!hasScript)(
  `evtrace agent in a terminal that closes${hasScript ? '' : ' (skipped: script(1) is not installed (apt-get install bsdutils))'}`,
  () => {
    it('stops every session, finishes its output and removes its instances', async () => {
      const dir = workDir('evtrace-signals-pty-');
      try {
        const socket = join(dir, 'agent.sock');
        const output = join(dir, 'out');
        const args = ['agent', '--socket', socket, '--state-dir', join(dir, 'state'), '--demo-rate', '2000'];
        const command = [process.execPath, CLI, ...args].map((a) => `'${a}'`).join(' ');
        const term = spawn('script', ['-qfec', command, '/dev/null'], { stdio: 'ignore' });
        const closed = new Promise((resolve) => term.on('exit', resolve));
        const client = await eventually(async () => {
          try {
            return await connectAgent(socket, { client: 'test' });
          } catch {
            return undefined;
          }
        });
        const pid = client.agent.pid;
        client.close();
        const agent = { socket };
        const created = await cli(agent, [
          'session',
          'create',
          's',
          '--events',
          'sched:sched_switch',
          '--mode',
          'discard',
          '--source',
          source,
          '--output',
          output,
        ]);
        expect(created.code, created.stderr).toBe(0);
        expect((await cli(agent, ['session', 'start', 's'])).code).toBe(0);
        await eventually(async () => {
          const st = JSON.parse((await cli(agent, ['session', 'status', 's', '--json'])).stdout) as { events: number };
          return st.events > 0 ? true : undefined;
        });
        term.kill('SIGKILL');
        await closed;
        await eventually(() => (existsSync(`/proc/${pid}`) ? undefined : true));
        expect(instancesOf(pid)).toEqual([]);
        const files = readdirSync(output);
        expect(files.filter((f) => f.endsWith('.part'))).toEqual([]);
        let events = 0;
        for (const f of files) events += await catCount(join(output, f));
        expect(events).toBeGreaterThan(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  },
);

describe(`evtrace agent on a signal (${source} sessions${tracefs === undefined ? ': not root or no tracefs' : ''})`, () => {
  /** An agent recording one session into an output directory; resolves once events were recorded. */
  async function recordingAgent(name: string) {
    const dir = workDir(`evtrace-signals-${name}-`);
    const agent = await startAgent(dir, ['--demo-rate', '2000']);
    const output = join(dir, 'out');
    const create = await cli(agent, [
      'session',
      'create',
      's',
      '--events',
      'sched:sched_switch,kmem:kmalloc',
      '--mode',
      'discard',
      '--source',
      source,
      '--output',
      output,
    ]);
    expect(create.code, create.stderr).toBe(0);
    expect((await cli(agent, ['session', 'start', 's'])).code).toBe(0);
    await eventually(async () => {
      const s = JSON.parse((await cli(agent, ['session', 'status', 's', '--json'])).stdout) as { events: number };
      return s.events > 0 ? true : undefined;
    });
    if (tracefs !== undefined) expect(instancesOf(agent.proc.pid!).length).toBeGreaterThan(0);
    return { agent, output, dir };
  }

  /** Sends `signals`, waits for the exit, and checks what the agent left. */
  async function stopWith(signals: readonly NodeJS.Signals[]) {
    const { agent, output, dir } = await recordingAgent(signals.join('-'));
    try {
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        agent.proc.once('exit', (code, signal) => resolve({ code, signal })),
      );
      const [first, ...later] = signals;
      agent.proc.kill(first);
      // The later ones while it stops (it may already have exited: the signal then finds nobody).
      if (later.length > 0) await agent.waitForLog(/stopping every session/);
      for (const s of later) agent.proc.kill(s);
      expect(await exited, agent.log()).toEqual({ code: 0, signal: null });
      expect(agent.log()).toContain(`${signals[0]}: stopping every session`);
      expect(agent.log()).toContain('stopped');
      expect(instancesOf(agent.proc.pid!)).toEqual([]);
      const files = readdirSync(output);
      expect(files.filter((f) => f.endsWith('.part'))).toEqual([]);
      expect(files.length).toBeGreaterThan(0);
      let events = 0;
      for (const f of files) events += await catCount(join(output, f));
      expect(events).toBeGreaterThan(0);
      return agent;
    } finally {
      if (agent.proc.exitCode === null && agent.proc.signalCode === null) await agent.kill9();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  for (const signal of STOP_SIGNALS) {
    it(`${signal}: every session stopped, its output finished and readable, no instance left, exit 0`, async () => {
      await stopWith([signal]);
    });
  }

  it('more signals while it stops: still one clean stop', async () => {
    const agent = await stopWith(['SIGTERM', 'SIGHUP', 'SIGINT', 'SIGQUIT']);
    expect(agent.log().match(/stopping every session/g)).toHaveLength(1);
  });
});
