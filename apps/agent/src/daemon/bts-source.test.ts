/**
 * Branch sessions in the real agent: `--source bts` asks the kernel for Branch Trace Store and, on a machine
 * without it (this VM), refuses with the kernel's answer; `--source bts-qemu` records a real program's branches
 * under QEMU user mode (labelled software) into the session's buffers, outputs and trace-shots.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SessionStatus } from '@evtrace/agent-protocol';
import { describeProbe, probeBts, readTraceBranches, Symbolizer } from '@evtrace/hw-bts';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, eventually, type RunningAgent, startAgent, workDir } from '../testing/agent-daemon.ts';

const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
const why = !has('cc')
  ? 'no C compiler: cc is not installed (apt-get install gcc)'
  : !has('qemu-x86_64')
    ? 'qemu-x86_64 is not installed (apt-get install qemu-user)'
    : process.arch !== 'x64'
      ? `host is ${process.arch}, the test program is x86-64`
      : '';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function status(agent: RunningAgent, name: string): Promise<SessionStatus> {
  return JSON.parse((await cli(agent, ['session', 'status', name, '--json'])).stdout) as SessionStatus;
}

/** fib(6): 25 calls of fib. */
const PROGRAM = `
int __attribute__((noinline)) fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(void) { volatile int r = fib(6); return r == 8 ? 0 : 1; }
`;

describe('branch sessions', () => {
  const bts = probeBts();
  it.skipIf(bts.ok)(
    `--source bts is refused with the kernel's answer${bts.ok ? ' (skipped: this machine has BTS)' : ''}`,
    async () => {
      const dir = workDir('agent-bts-hw-');
      dirs.push(dir);
      const agent = await startAgent(dir);
      try {
        const r = await cli(agent, [
          'session',
          'create',
          'hw',
          '--source',
          'bts',
          '--events',
          'bts:branch',
          '--mode',
          'overwrite',
          '--',
          '/bin/true',
        ]);
        expect(r.code).toBe(1);
        expect(r.stderr).toContain('ERR_AGENT_SOURCE');
        expect(r.stderr).toContain(describeProbe(bts));
        expect((await cli(agent, ['session', 'list', '--json'])).stdout.trim()).toBe('[]');
        const usage = await cli(agent, [
          'session',
          'create',
          'hw',
          '--source',
          'bts',
          '--events',
          'bts:branch',
          '--mode',
          'overwrite',
        ]);
        expect(usage.code).toBe(2);
        expect(usage.stderr).toMatch(/needs the program to trace/);
      } finally {
        await agent.stop();
      }
    },
  );

  it.skipIf(why !== '')(
    `--source bts-qemu records a program's branches into the session, its output and trace-shots${why ? ` (skipped: ${why})` : ''}`,
    async () => {
      const dir = workDir('agent-bts-qemu-');
      dirs.push(dir);
      const exe = join(dir, 'fib');
      writeFileSync(`${exe}.c`, PROGRAM);
      execFileSync('cc', [
        '-O1',
        '-static',
        '-no-pie',
        '-fno-inline',
        '-fno-optimize-sibling-calls',
        '-o',
        exe,
        `${exe}.c`,
      ]);
      const agent = await startAgent(dir);
      try {
        const created = await cli(agent, [
          'session',
          'create',
          'b',
          '--source',
          'bts-qemu',
          '--events',
          'bts:branch',
          '--mode',
          'discard',
          '--output',
          join(dir, 'out'),
          '--',
          exe,
        ]);
        expect(created.code, created.stderr).toBe(0);
        expect((await cli(agent, ['session', 'start', 'b'])).code).toBe(0);
        const s = await eventually(async () => {
          const st = await status(agent, 'b');
          return st.events > 0 ? st : undefined;
        }, 30_000);
        expect(s.source).toBe('bts-qemu');
        expect(s.lost).toBe(0);
        expect((await cli(agent, ['session', 'status', 'b'])).stdout).toContain('SOFTWARE: the program under QEMU');
        const shot = (await cli(agent, ['session', 'snapshot', 'b', '-o', join(dir, 'shots')])).stdout.trim();
        expect((await cli(agent, ['session', 'stop', 'b'])).code).toBe(0);
        const done = await status(agent, 'b');
        expect(done.files).toHaveLength(1);
        for (const file of [done.files[0]!, shot]) {
          const { branches } = readTraceBranches(file);
          expect(branches.length, file).toBe(done.events);
          const symbols = new Symbolizer().addElf(exe);
          let calls = 0;
          for (let i = 0; i < branches.length; i++) {
            const hit = symbols.lookup(branches.toHi[i]!, branches.toLo[i]!);
            if (hit?.name === 'fib' && hit.offset === 0) calls++;
          }
          expect(calls, file).toBe(25);
        }
        expect((await cli(agent, ['session', 'destroy', 'b'])).code).toBe(0);
      } finally {
        await agent.stop();
      }
    },
  );
});
