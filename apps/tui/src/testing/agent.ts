/**
 * The real evtrace agent for end-to-end tests, run as the user runs it: `evtrace agent` (apps/agent's CLI, started
 * as a program, never imported: apps do not depend on each other) on a socket in a temporary directory, and
 * `evtrace ARGS` against it.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** apps/agent's CLI; plain node runs it (its sources are erasable TypeScript). */
export const AGENT_CLI = fileURLToPath(new URL('../../../agent/src/cli.ts', import.meta.url));

export interface TestAgent {
  readonly socket: string;
  readonly proc: ChildProcess;
  /** `evtrace ARGS` with EVTRACE_AGENT_SOCKET set to this agent; rejects on a non-zero exit with its stderr. */
  evtrace(args: readonly string[]): Promise<string>;
  /** SIGTERM (the agent stops its sessions and removes their tracefs instances) and waits for the exit. */
  stop(): Promise<number | null>;
}

/** Starts `evtrace agent` in `dir` and waits until it listens. */
export async function startTestAgent(dir: string, extra: readonly string[] = []): Promise<TestAgent> {
  const socket = join(dir, 'agent.sock');
  const proc = spawn(
    process.execPath,
    [AGENT_CLI, 'agent', '--socket', socket, '--state-dir', join(dir, 'state'), ...extra],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  const exited = new Promise<number | null>((resolve) => proc.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the agent did not listen within 30 s:\n${log}`)), 30_000);
    proc.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
      if (log.includes('listening on')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the agent exited (${code}) before listening:\n${log}`));
    });
  });
  return {
    socket,
    proc,
    async evtrace(args) {
      try {
        const { stdout } = await run(process.execPath, [AGENT_CLI, ...args], {
          env: { ...process.env, EVTRACE_AGENT_SOCKET: socket },
        });
        return stdout;
      } catch (error) {
        const e = error as { code: number; stderr: string };
        throw new Error(`evtrace ${args.join(' ')} exited ${e.code}: ${e.stderr}`);
      }
    },
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      return exited;
    },
  };
}

/**
 * Creates and starts kernel session `name` recording the `getppid` calls of process `pid` only (a generator's: the
 * session records nothing before it fires), into 8 MiB per-CPU buffers in discard mode.
 */
export async function startGetppidSession(agent: TestAgent, name: string, pid: number): Promise<void> {
  await agent.evtrace([
    'session',
    'create',
    name,
    '--events',
    'syscalls:sys_enter_getppid',
    '--filter',
    `common_pid == ${pid}`,
    '--source',
    'kernel',
    '--mode',
    'discard',
    '--buffer-size',
    '8M',
  ]);
  await agent.evtrace(['session', 'start', name]);
}
