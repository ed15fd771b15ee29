/** Test support: the real agent as a child process (`node src/cli.ts agent ...`) on a real socket. */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type AgentClient, connectAgent } from '@evtrace/agent-protocol';

const run = promisify(execFile);
export const CLI = new URL('../cli.ts', import.meta.url).pathname;

export interface RunningAgent {
  readonly proc: ChildProcess;
  readonly socket: string;
  readonly stateDir: string;
  /** Everything the agent wrote to stderr so far. */
  log(): string;
  /** Waits until the log matches. */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<string>;
  connect(): Promise<AgentClient>;
  /** SIGTERM and wait for exit; resolves to the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL, no cleanup. */
  kill9(): Promise<void>;
}

/** A fresh work directory readable by other users (tests connect as an unprivileged user too). */
export function workDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return dir;
}

/** Starts the agent and waits until it accepts connections. */
export async function startAgent(
  dir: string,
  extra: readonly string[] = [],
  socket = join(dir, 'run', 'agent.sock'),
): Promise<RunningAgent> {
  const stateDir = join(dir, 'state');
  const proc = spawn(process.execPath, [CLI, 'agent', '--socket', socket, '--state-dir', stateDir, ...extra], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  const waiters = new Set<() => void>();
  proc.stderr!.on('data', (d: Buffer) => {
    log += d.toString();
    for (const w of waiters) w();
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const agent: RunningAgent = {
    proc,
    socket,
    stateDir,
    log: () => log,
    waitForLog(pattern, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = pattern.exec(log);
          if (m === null) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(m[0]);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`agent log never matched ${pattern}:\n${log}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    connect: () => connectAgent(socket, { client: 'test' }),
    async stop() {
      proc.kill('SIGTERM');
      return exited;
    },
    async kill9() {
      proc.kill('SIGKILL');
      await exited;
    },
  };
  await Promise.race([
    agent.waitForLog(/listening on/),
    exited.then((code) => {
      throw new Error(`the agent exited (${code}) before listening:\n${log}`);
    }),
  ]);
  return agent;
}

/** Runs `evtrace ARGS` against the agent's socket; resolves to its exit code and output. */
export async function cli(
  agent: RunningAgent | { socket: string },
  args: readonly string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], {
      env: { ...process.env, EVTRACE_AGENT_SOCKET: agent.socket },
      maxBuffer: 1 << 26,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Polls `fn` until it returns a value other than undefined. */
export async function eventually<T>(fn: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
