/**
 * The agent under systemd's Type=notify: a real Unix datagram socket bound by python3 (Node has none) stands where
 * systemd's would, and receives what the agent sends.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, workDir } from '../testing/agent-daemon.ts';
import { hasPython, listenNotify as listen } from '../testing/notify-socket.ts';
import { notifySocketAddress, systemdNotifier } from './sd-notify.ts';

interface Started {
  readonly proc: ChildProcess;
  readonly exited: Promise<number | null>;
  /** What the agent wrote to stderr so far. */
  log(): string;
}

function startAgent(dir: string, env: Record<string, string>): Started {
  const proc = spawn(
    process.execPath,
    [CLI, 'agent', '--socket', join(dir, 'agent.sock'), '--state-dir', join(dir, 'state')],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } },
  );
  let log = '';
  proc.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', resolve));
  return { proc, exited, log: () => log };
}

describe('notifySocketAddress', () => {
  it('is a sockaddr_un: family AF_UNIX, a path with its NUL, an abstract name without one', () => {
    const path = notifySocketAddress('/run/systemd/notify');
    expect(path.readUInt16LE(0)).toBe(1);
    expect(path.subarray(2).toString()).toBe('/run/systemd/notify\0');
    const abstract = notifySocketAddress('@name');
    expect([...abstract.subarray(2)]).toEqual([0, ...Buffer.from('name')]);
  });

  it('refuses a relative name and one longer than sun_path', () => {
    expect(() => notifySocketAddress('notify')).toThrow(/absolute path or start with @: 'notify'/);
    expect(() => notifySocketAddress(`/${'x'.repeat(120)}`)).toThrow(/longer than 107 bytes/);
  });
});

describe.skipIf(!hasPython)('the agent under Type=notify (needs python3 for the receiving socket)', () => {
  const dir = workDir('evtrace-notify-');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  for (const [kind, name] of [
    ['a path', join(dir, 'notify.sock')],
    ['an abstract name', `@evtrace-notify-test-${process.pid}`],
  ] as const) {
    it(`sends READY=1 once listening, WATCHDOG=1 every half interval and STOPPING=1 to ${kind}`, async () => {
      const systemd = await listen(name);
      const agent = startAgent(join(dir, kind.replaceAll(' ', '-')), { NOTIFY_SOCKET: name, WATCHDOG_USEC: '200000' });
      try {
        await systemd.until((d) => d.startsWith('READY=1\n'));
        expect(systemd.datagrams[0]).toMatch(/^READY=1\nSTATUS=listening on .*agent\.sock\n$/);
        await systemd.until((d) => d === 'WATCHDOG=1\n', 3);
        agent.proc.kill('SIGTERM');
        expect(await agent.exited, agent.log()).toBe(0);
        await systemd.until((d) => d === 'STOPPING=1\n');
        expect(systemd.datagrams.at(-1)).toBe('STOPPING=1\n');
      } finally {
        agent.proc.kill('SIGKILL');
        systemd.close();
      }
    }, 30_000);
  }

  it('sends no WATCHDOG=1 when WATCHDOG_PID names another process', async () => {
    const name = join(dir, 'notify-other.sock');
    const systemd = await listen(name);
    const agent = startAgent(join(dir, 'other'), { NOTIFY_SOCKET: name, WATCHDOG_USEC: '100000', WATCHDOG_PID: '1' });
    try {
      await systemd.until((d) => d.startsWith('READY=1\n'));
      // Ten intervals' worth of pings would have come by now.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      agent.proc.kill('SIGTERM');
      expect(await agent.exited, agent.log()).toBe(0);
      await systemd.until((d) => d === 'STOPPING=1\n');
      expect(systemd.datagrams.filter((d) => d.startsWith('WATCHDOG'))).toEqual([]);
    } finally {
      agent.proc.kill('SIGKILL');
      systemd.close();
    }
  }, 30_000);

  it('takes NOTIFY_SOCKET and WATCHDOG_* out of the environment, so that programs it runs do not notify', async () => {
    const name = join(dir, 'notify-env.sock');
    const systemd = await listen(name);
    const env: NodeJS.ProcessEnv = {
      NOTIFY_SOCKET: name,
      WATCHDOG_USEC: '60000000',
      WATCHDOG_PID: String(process.pid),
    };
    const notifier = systemdNotifier(env);
    try {
      expect(env).toEqual({});
      expect(notifier?.watchdogMs).toBe(60_000);
      notifier?.ready('test');
      await systemd.until((d) => d === 'READY=1\nSTATUS=test\n');
      await systemd.until((d) => d === 'WATCHDOG=1\n');
    } finally {
      notifier?.close();
      systemd.close();
    }
  });

  it('ends with ERR_CLI_IO naming the socket when nothing listens there', async () => {
    const agent = startAgent(join(dir, 'nobody'), { NOTIFY_SOCKET: join(dir, 'nobody.sock') });
    expect(await agent.exited).toBe(1);
    expect(agent.log()).toMatch(/ERR_CLI_IO: cannot notify systemd at .*nobody\.sock: sendto failed \(errno 2\)/);
  }, 30_000);
});
