/**
 * The `stats` op against the real agent: a demo session's gauges from its ring buffers' headers, sampled at a steady
 * interval with `since` giving only the newer samples; a kernel session's from its tracefs instance's per-CPU stats,
 * compared with the kernel's own files, and the loss a burst into a small buffer causes.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type AgentClient, type BufferStats, checkBufferStats } from '@evtrace/agent-protocol';
import { parseCpuStats } from '@evtrace/tracefs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type RunningAgent, startAgent, workDir } from '../testing/agent-daemon.ts';
import { kernelAccess } from '../testing/kernel-recording.ts';

const { tracefs, why } = kernelAccess('not root: kernel sessions need root');

let dir: string;
let agent: RunningAgent;
let client: AgentClient;
beforeAll(async () => {
  dir = workDir('agent-stats-');
  agent = await startAgent(dir, ['--demo-rate', '4000']);
  client = await agent.connect();
});
afterAll(async () => {
  client?.close();
  await agent?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('buffer gauges (stats)', () => {
  it('samples a demo session from its ring buffers every second; since gives the newer samples only', async () => {
    await client.createSession({
      name: 'g1',
      events: ['kmem:kmalloc', 'kmem:kfree'],
      mode: 'overwrite',
      source: 'demo',
      bufferSize: 65536,
    });
    const before = await client.stats('g1');
    // Not started: nothing sampled yet.
    expect(before).toMatchObject({ name: 'g1', origin: 'ringbuf', unit: 'records', interval: 1000, samples: [] });
    const status = await client.start('g1');
    const s = await eventually(async () => {
      const r = await client.stats('g1');
      return r.samples.length >= 3 ? r : undefined;
    });
    expect(checkBufferStats(s)).toBeUndefined();
    const seqs = s.samples.map((x) => x.seq);
    expect(seqs).toEqual(seqs.map((_, i) => seqs[0]! + i));
    // A steady interval: consecutive samples about a second apart (timers on a loaded machine run late, not early).
    for (let i = 1; i < s.samples.length; i++) {
      const gap = s.samples[i]!.time - s.samples[i - 1]!.time;
      expect(gap).toBeGreaterThanOrEqual(900);
      expect(gap).toBeLessThan(5000);
    }
    const last = s.samples.at(-1)!;
    expect(last.cpus.map((c) => c.cpu)).toEqual(status.cpus.map((c) => c.cpu));
    for (const c of last.cpus) {
      // 64 KiB per CPU as asked, written and read as it goes.
      expect(c.size).toBe(65536);
      expect(c.written).toBeGreaterThan(0);
      expect(c.head).toBeGreaterThan(0);
      expect(c.read).toBeLessThanOrEqual(c.head);
      expect(c.fill).toBeGreaterThanOrEqual(0);
      expect(c.fill).toBeLessThanOrEqual(1);
      expect(c.entries).toBeNull();
      expect(c.lost).toBe(c.overrun + c.dropped);
    }
    // A read of the demo source writes some of the ring each interval.
    expect(s.samples.some((x) => x.cpus.some((c) => c.peakFill > 0 && c.peakFill <= 1))).toBe(true);
    // The counters only grow from one sample to the next.
    const first = s.samples[0]!;
    for (const c of last.cpus) expect(c.written).toBeGreaterThan(first.cpus.find((f) => f.cpu === c.cpu)!.written);
    const newer = await eventually(async () => {
      const r = await client.stats('g1', last.seq);
      return r.samples.length > 0 ? r : undefined;
    });
    expect(newer.samples.every((x) => x.seq > last.seq)).toBe(true);
    await client.destroy('g1');
  }, 30_000);

  it('names a session that does not exist, and refuses a malformed since', async () => {
    await expect(client.stats('nope')).rejects.toMatchObject({ code: 'ERR_AGENT_NO_SESSION' });
    await expect(client.stats('g1', -1)).rejects.toMatchObject({
      code: 'ERR_AGENT_BAD_MESSAGE',
      message: expect.stringContaining('request.since'),
    });
  });
});

/** Reads the kernel's counters of one CPU of an instance. */
const kernelStats = (instance: string, cpu: number) =>
  parseCpuStats(readFileSync(join(tracefs!, 'instances', instance, 'per_cpu', `cpu${cpu}`, 'stats'), 'utf8'));

/** A burst of getppid calls from one process: millions of events in well under a second. */
const burst = () =>
  spawnSync('python3', ['-c', 'import os\nfor _ in range(1_000_000): os.getppid()'], { stdio: 'ignore' });

describe.skipIf(why !== '')(`kernel session gauges${why ? ` (skipped: ${why})` : ''}`, () => {
  it('reports the tracefs instance per CPU: its size, and the loss of a burst into a small buffer', async () => {
    await client.createSession({
      name: 'k1',
      events: ['syscalls:sys_enter_getppid'],
      mode: 'discard',
      source: 'kernel',
      bufferSize: 16384,
    });
    const status = await client.start('k1');
    const instance = status.instance!;
    burst();
    const s: BufferStats = await eventually(async () => {
      const r = await client.stats('k1');
      return (r.samples.at(-1)?.cpus.reduce((a, c) => a + c.lost, 0) ?? 0) > 0 ? r : undefined;
    });
    expect(s).toMatchObject({ origin: 'tracefs', unit: 'events', instance });
    const last = s.samples.at(-1)!;
    expect(last.cpus.map((c) => c.cpu)).toEqual(status.cpus.map((c) => c.cpu));
    for (const c of last.cpus) {
      // The instance's buffer_size_kb: the 16 KiB asked for, as the kernel rounded it to its pages.
      const kb = readFileSync(
        join(tracefs!, 'instances', instance, 'per_cpu', `cpu${c.cpu}`, 'buffer_size_kb'),
        'utf8',
      );
      expect(c.size).toBe(Number.parseInt(kb, 10) * 1024);
      expect(c.size).toBeGreaterThanOrEqual(16384);
      expect(c.size).toBeLessThan(65536);
      expect(c.entries).not.toBeNull();
      // The kernel's counters only grow: what it says now is at least what the sample said.
      const now = kernelStats(instance, c.cpu);
      expect(now['read events']).toBeGreaterThanOrEqual(c.read);
      expect((now.overrun ?? 0) + (now['dropped events'] ?? 0) + (now['commit overrun'] ?? 0)).toBeGreaterThanOrEqual(
        c.lost,
      );
    }
    // Events were lost because the buffer was full when the agent came to read it: one read took most of it.
    const peak = Math.max(...s.samples.flatMap((x) => x.cpus.map((c) => c.peakFill)));
    expect(peak).toBeGreaterThan(0.5);
    expect(peak).toBeLessThanOrEqual(1);
    // The session's own loss counts the kernel's.
    const after = await client.status('k1');
    expect(after.lost).toBeGreaterThanOrEqual(last.cpus.reduce((a, c) => a + c.lost, 0));
    expect(last.cpus.reduce((a, c) => a + c.read, 0)).toBeGreaterThan(0);
    await client.destroy('k1');
  }, 60_000);
});
