/**
 * Endless and special inputs through the built CLI: each command ends with an error naming the file, its peak
 * memory (the child's own getrusage maximum, printed on exit by a preloaded hook) under the documented bound.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BranchList, encodeBts } from '@evtrace/hw-bts';
import { STREAM_INPUT_LIMIT } from '@evtrace/trace-format';
import { afterAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { PEAK_HOOK, peakRss } from '../testing/peak-rss.ts';

const CLI = new URL('../../dist/cli.js', import.meta.url).pathname;
const MIB = 1024 * 1024;
/** What a CLI process holds besides its input: Node, the modules a command loads, its buffers. */
const PROCESS_ALLOWANCE = 160 * MIB;
/** The bound a stream read may reach: the shared limit, plus the process itself. */
const STREAM_BOUND = STREAM_INPUT_LIMIT + PROCESS_ALLOWANCE;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  peakBytes: number;
  ms: number;
}

/** Runs the CLI with `stdin` as its standard input (a path, opened here), killed after `timeoutMs`. */
function evtrace(args: string[], options: { stdin?: string; timeoutMs?: number } = {}): Promise<Run> {
  const stdinFd = options.stdin === undefined ? 'ignore' : openSync(options.stdin, 'r');
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', PEAK_HOOK, CLI, ...args], {
    stdio: [stdinFd, 'pipe', 'pipe'],
    timeout: options.timeoutMs ?? 15_000,
    killSignal: 'SIGKILL',
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  return new Promise((resolve) => {
    child.on('close', (code) => {
      resolve({ code, stdout, ...peakRss(stderr), ms: Date.now() - started });
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'evtrace-endless-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fifoCount = 0;
function fifo(): string {
  const path = join(dir, `fifo${fifoCount++}`);
  expect(spawnSync('mkfifo', [path]).status).toBe(0);
  return path;
}

/** A writer that feeds `path` from `source` until the reader goes away. */
function feeder(path: string, source: string): ChildProcess {
  return spawn('sh', ['-c', `exec cat '${source}' > '${path}'`], { stdio: 'ignore' });
}

function endsCleanly(r: Run, bound: number): void {
  expect(r.code).toBe(ExitCode.Failure);
  expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
  expect(r.peakBytes).toBeLessThan(bound);
}

describe('endless inputs end with an error naming the file, under the memory bound', () => {
  it('kmem report /dev/zero is refused at once: a recording is read at offsets', async () => {
    const r = await evtrace(['kmem', 'report', '/dev/zero']);
    endsCleanly(r, PROCESS_ALLOWANCE);
    expect(r.stderr).toContain(
      'ERR_KMEM_INPUT: /dev/zero: a character device: a kmem recording is read from a regular file or directory',
    );
  });

  it('bts report /dev/zero stops at the stream bound, at that byte offset', async () => {
    const r = await evtrace(['bts', 'report', '/dev/zero']);
    endsCleanly(r, STREAM_BOUND);
    expect(r.stderr).toContain(
      `ERR_BTS_FORMAT: /dev/zero: byte ${STREAM_INPUT_LIMIT}: a character device longer than ${STREAM_INPUT_LIMIT} bytes`,
    );
  });

  it('mce decode - with stdin from /dev/zero stops at the stream bound', async () => {
    const r = await evtrace(['mce', 'decode', '-'], { stdin: '/dev/zero' });
    endsCleanly(r, STREAM_BOUND);
    expect(r.stderr).toContain(
      `ERR_MCE_INPUT: <stdin>: byte ${STREAM_INPUT_LIMIT}: a character device longer than ${STREAM_INPUT_LIMIT} bytes`,
    );
  });

  it('an option naming a file reads it with the same bound: bts report --kallsyms /dev/zero', async () => {
    const list = new BranchList();
    list.add(0x401000n, 0x401020n);
    const input = join(dir, 'one.bts');
    writeFileSync(input, encodeBts(list));
    const r = await evtrace(['bts', 'report', input, '--kallsyms', '/dev/zero']);
    endsCleanly(r, STREAM_BOUND);
    expect(r.stderr).toContain(`--kallsyms: /dev/zero: byte ${STREAM_INPUT_LIMIT}: a character device longer than`);
  });

  it('bts report on a FIFO fed from /dev/zero without end stops at the bound', async () => {
    const path = fifo();
    const writer = feeder(path, '/dev/zero');
    const r = await evtrace(['bts', 'report', path]);
    writer.kill();
    endsCleanly(r, STREAM_BOUND);
    expect(r.stderr).toContain(`ERR_BTS_FORMAT: ${path}: byte ${STREAM_INPUT_LIMIT}: a FIFO longer than`);
  });
});

describe('a FIFO without a writer is refused, not waited on forever', () => {
  it('bts report and mce decode wait 2 s for a writer, then name the FIFO', async () => {
    const path = fifo();
    const [bts, mce] = await Promise.all([evtrace(['bts', 'report', path]), evtrace(['mce', 'decode', path])]);
    for (const r of [bts, mce]) {
      endsCleanly(r, PROCESS_ALLOWANCE);
      expect(r.ms).toBeGreaterThanOrEqual(2000);
      expect(r.stderr).toContain(`${path}: a FIFO no writer opened within 2000 ms`);
    }
  });

  it('cat, convert and kmem report refuse it at once: they read at offsets', async () => {
    const path = fifo();
    const runs = await Promise.all([
      evtrace(['cat', path]),
      evtrace(['convert', path, '--to', 'jsonl', '-o', join(dir, 'out.jsonl')]),
      evtrace(['kmem', 'report', path]),
    ]);
    for (const r of runs) {
      endsCleanly(r, PROCESS_ALLOWANCE);
      expect(r.stderr).toContain(`${path}: a FIFO: a `);
      expect(r.stderr).toContain('is read from a regular file or directory (save the stream to a file first)');
    }
  });
});

describe('a FIFO with data', () => {
  const MCELOG = new URL('../../../../../shared/fixtures/mce-mcelog-cases/m-dmr_dcu_srar.inp', import.meta.url)
    .pathname;

  it('mce decode reads it to the writer end and decodes it as the file', async () => {
    const path = fifo();
    const writer = feeder(path, MCELOG);
    const [fromFifo, fromFile] = await Promise.all([
      evtrace(['mce', 'decode', path]),
      evtrace(['mce', 'decode', MCELOG]),
    ]);
    writer.kill();
    expect(fromFile.code).toBe(ExitCode.Ok);
    expect(fromFifo.code).toBe(ExitCode.Ok);
    expect(fromFifo.stdout).toBe(fromFile.stdout);
    expect(fromFifo.stdout).toContain('SRAR');
  });

  it('bts report - reads stdin as it reads the file; cat - refuses stdin by name', async () => {
    const list = new BranchList();
    list.add(0x401000n, 0x401020n);
    const input = join(dir, 'stdin.bts');
    writeFileSync(input, encodeBts(list));
    const [fromStdin, fromFile, cat] = await Promise.all([
      evtrace(['bts', 'report', '-'], { stdin: input }),
      evtrace(['bts', 'report', input]),
      evtrace(['cat', '-'], { stdin: input }),
    ]);
    expect(fromStdin.code).toBe(ExitCode.Ok);
    expect(fromStdin.stdout).toBe(fromFile.stdout);
    expect(fromStdin.stdout).toContain('0x401000 -> 0x401020');
    endsCleanly(cat, PROCESS_ALLOWANCE);
    expect(cat.stderr).toContain('<stdin>: a stream: a trace (trace.dat, CTF, raw pages) is read from a regular file');
  });

  it('cat names the FIFO instead of failing with ESPIPE', async () => {
    const path = fifo();
    const writer = feeder(path, MCELOG);
    const r = await evtrace(['cat', path]);
    writer.kill();
    endsCleanly(r, PROCESS_ALLOWANCE);
    expect(r.stderr).not.toContain('ESPIPE');
    expect(r.stderr).toContain(`${path}: a FIFO: a trace (trace.dat, CTF, raw pages) is read from a regular file`);
  });
});
