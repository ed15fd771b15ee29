import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseHeaderPage, readPage } from '@evtrace/trace-format';
import { afterEach, describe, expect, it } from 'vitest';
import { createInstance, type Instance } from '../instance/instance.ts';
import { smallWorkload, tracefsForTests } from '../testing/env.ts';
import {
  closeRawPipes,
  kernelLoss,
  openRawPipe,
  type RawPipe,
  RawPipeDrain,
  rawPipeCpus,
  withoutStackTraces,
} from './raw-pipe.ts';

const env = tracefsForTests();

describe('withoutStackTraces', () => {
  it('turns stack traces off while the drains run, and back on after, also when they throw', () => {
    const before = Error.stackTraceLimit;
    expect(withoutStackTraces(() => Error.stackTraceLimit)).toBe(0);
    expect(() =>
      withoutStackTraces(() => {
        throw new Error('drain failed');
      }),
    ).toThrow('drain failed');
    expect(Error.stackTraceLimit).toBe(before);
  });
});

describe.skipIf(env.why !== undefined)(`raw pipes of an instance${env.why ? ` (skipped: ${env.why})` : ''}`, () => {
  let inst: Instance | undefined;
  let pipes: RawPipe[] = [];
  afterEach(() => {
    closeRawPipes(pipes);
    pipes = [];
    inst?.remove();
    inst = undefined;
  });

  it('drains every CPU page by page: the records counted are the records the pages hold, times never go back', () => {
    inst = createInstance(env.path!);
    const p = inst.path;
    writeFileSync(join(p, 'events', 'kmem', 'kmalloc', 'enable'), '1');
    const cpus = rawPipeCpus(p);
    expect(cpus.length).toBeGreaterThan(0);
    expect(cpus).toEqual([...cpus].sort((a, b) => a - b));
    pipes = cpus.map((cpu) => openRawPipe(p, cpu));
    const pageSize = Number(readFileSync(join(p, 'buffer_subbuf_size_kb'), 'utf8').trim()) * 1024;
    const layout = parseHeaderPage(readFileSync(join(p, 'events', 'header_page'), 'utf8'), { pageSize });
    const drain = new RawPipeDrain(layout);
    writeFileSync(join(p, 'tracing_on'), '1');
    let counted = 0;
    let decoded = 0;
    let dataBytes = 0;
    for (let round = 0; round < 20 && counted < 50; round++) {
      smallWorkload();
      for (const pipe of pipes) {
        let last = pipe.lastTs;
        dataBytes += withoutStackTraces(() =>
          drain.drain(pipe, (page, ts, count) => {
            expect(page.length).toBe(pageSize);
            expect(ts).toBeGreaterThanOrEqual(last);
            last = ts;
            counted += count.records;
            readPage(page, 0, layout, () => decoded++);
          }),
        );
      }
    }
    writeFileSync(join(p, 'tracing_on'), '0');
    expect(counted).toBeGreaterThanOrEqual(50);
    expect(decoded).toBe(counted);
    expect(dataBytes).toBeGreaterThan(0);
    // What tracing left is drained to the end, then a pipe gives nothing: EAGAIN ends the drain, without an error.
    for (const pipe of pipes) {
      let rounds = 0;
      while (withoutStackTraces(() => drain.drain(pipe, () => {})) > 0) rounds++;
      expect(rounds).toBeLessThan(100);
      expect(withoutStackTraces(() => drain.drain(pipe, () => {}))).toBe(0);
    }
    for (const cpu of cpus) expect(kernelLoss(p, cpu)).toBe(0);
  });

  it('names the file when a pipe cannot be opened or read', () => {
    inst = createInstance(env.path!);
    expect(() => openRawPipe(inst!.path, 99999)).toThrow(
      expect.objectContaining({
        code: 'ERR_TRACEFS_IO',
        path: join(inst.path, 'per_cpu', 'cpu99999', 'trace_pipe_raw'),
      }),
    );
    const pipe = openRawPipe(inst.path, rawPipeCpus(inst.path)[0]!);
    closeRawPipes([pipe]);
    const layout = parseHeaderPage(readFileSync(join(inst.path, 'events', 'header_page'), 'utf8'), {
      pageSize: 4096,
    });
    expect(() => new RawPipeDrain(layout).drain(pipe, () => {})).toThrow(
      expect.objectContaining({ code: 'ERR_TRACEFS_IO', path: pipe.path, message: expect.stringMatching(/EBADF/) }),
    );
    expect(kernelLoss(join(inst.path, 'no-such-instance'), 0)).toBe(0);
  });
});
