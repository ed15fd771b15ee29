import { spawn } from 'node:child_process';
import { closeSync, constants, openSync, readdirSync, readSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInstance, type Instance } from '../instance/instance.ts';
import { tracefsForTests } from '../testing/env.ts';
import { PipeWaiter } from './pipe-wait.ts';

const env = tracefsForTests();

describe.skipIf(env.why !== undefined)(`PipeWaiter on raw pipes${env.why ? ` (skipped: ${env.why})` : ''}`, () => {
  let inst: Instance;
  let pipes: number[];
  let waiter: PipeWaiter;

  /** Empties every CPU's buffer; returns the sub-buffers read. */
  const drain = () => {
    const page = Buffer.alloc(4096);
    let pages = 0;
    for (const fd of pipes) {
      for (;;) {
        try {
          if (readSync(fd, page) <= 0) break;
          pages++;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
          throw error;
        }
      }
    }
    return pages;
  };
  /** Writes `count` trace_marker lines of about 100 bytes, one write each, from a child process after `delay` s. */
  const markers = (count: number, delay: number) =>
    new Promise<void>((resolve, reject) => {
      const line = 'x'.repeat(90);
      const sh = spawn('sh', [
        '-c',
        `sleep ${delay}; i=0; while [ $i -lt ${count} ]; do echo ${line}; i=$((i+1)); done > ${join(inst.path, 'trace_marker')}`,
      ]);
      sh.on('error', reject);
      sh.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`marker writer exited ${code}`))));
    });
  const timed = (ms: number) => {
    const t = performance.now();
    expect(waiter.wait(ms)).toBe(true);
    return performance.now() - t;
  };

  beforeAll(() => {
    inst = createInstance(env.path!);
    // 64 KiB per CPU: a quarter of it is about 160 markers on one CPU.
    writeFileSync(join(inst.path, 'buffer_size_kb'), '64');
    writeFileSync(join(inst.path, 'buffer_percent'), '25');
    writeFileSync(join(inst.path, 'tracing_on'), '1');
    pipes = readdirSync(join(inst.path, 'per_cpu'))
      .filter((d) => /^cpu\d+$/.test(d))
      .map((d) => openSync(join(inst.path, 'per_cpu', d, 'trace_pipe_raw'), constants.O_RDONLY | constants.O_NONBLOCK));
    waiter = PipeWaiter.open(pipes)!;
  });
  afterAll(() => {
    for (const fd of pipes ?? []) closeSync(fd);
    inst?.remove();
  });

  it('loads poll(2) here', () => {
    expect(waiter).toBeInstanceOf(PipeWaiter);
  });

  it('sleeps the whole timeout while the buffers stay below the watermark, a few events included', async () => {
    drain();
    expect(timed(300)).toBeGreaterThanOrEqual(250);
    await markers(5, 0);
    expect(timed(300)).toBeGreaterThanOrEqual(250);
    expect(drain()).toBeGreaterThan(0);
  });

  it('is woken by the kernel when a buffer fills to the watermark, long before its timeout', async () => {
    drain();
    // The writer starts after 0.3 s, while this thread is blocked in poll(2) (the child's exit is seen afterwards).
    const writing = markers(2000, 0.3);
    const waited = timed(10_000);
    await writing;
    expect(waited).toBeGreaterThanOrEqual(250);
    expect(waited).toBeLessThan(5000);
    expect(drain()).toBeGreaterThan(4);
  });
});
