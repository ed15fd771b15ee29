import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { detectTraceKind, openTrace } from './detect.ts';
import { TraceFormatError } from './errors.ts';
import { inputFileKind, readInput, requireSeekableInput } from './input.ts';

const dir = mkdtempSync(join(tmpdir(), 'evtrace-input-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function fifo(name: string): string {
  const path = join(dir, name);
  const r = spawnSync('mkfifo', [path]);
  if (r.status !== 0) throw new Error(`mkfifo: ${r.stderr}`);
  return path;
}

function caught(f: () => unknown): TraceFormatError {
  try {
    f();
  } catch (error) {
    if (error instanceof TraceFormatError) return error;
    throw error;
  }
  throw new Error('no error thrown');
}

describe('readInput', () => {
  it('reads a regular file whole', () => {
    const path = join(dir, 'a.txt');
    writeFileSync(path, 'hello\n');
    expect(readInput(path).toString()).toBe('hello\n');
    expect(inputFileKind(path)).toBe('file');
  });

  it('refuses a directory and a missing path, naming them', () => {
    expect(caught(() => readInput(dir)).message).toBe(`${dir}: a directory: expected a file`);
    const missing = join(dir, 'missing');
    expect(caught(() => readInput(missing)).message).toBe(`${missing}: cannot open: ENOENT`);
  });

  it('stops an endless character device at the bound, naming the file and the offset', () => {
    const e = caught(() => readInput('/dev/zero', { maxStreamBytes: 3 * 1024 * 1024 + 5 }));
    expect(e.code).toBe('ERR_TRACE_INPUT');
    expect(e.location).toEqual({ file: '/dev/zero', offset: 3 * 1024 * 1024 + 5 });
    expect(e.message).toMatch(/^\/dev\/zero: byte 3145733: a character device longer than 3145733 bytes/);
  });

  it('refuses a FIFO that no writer opens, after the wait', () => {
    const path = fifo('lonely');
    const started = Date.now();
    const e = caught(() => readInput(path, { writerWaitMs: 300 }));
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(e.message).toBe(
      `${path}: a FIFO no writer opened within 300 ms: start its writer first, or save the data to a file`,
    );
  });

  it('reads a FIFO whose writer comes after it is opened, to the writer end', async () => {
    const path = fifo('fed');
    // The writer starts after the read began waiting, writes in two bursts with a pause, and closes.
    const writer = spawn('sh', ['-c', `sleep 0.2; { printf 'one\\n'; sleep 0.2; printf 'two\\n'; } > '${path}'`]);
    const closed = new Promise((resolve) => writer.on('close', resolve));
    expect(readInput(path).toString()).toBe('one\ntwo\n');
    await closed;
  });

  it('stops a FIFO fed without end at the bound', async () => {
    const path = fifo('endless');
    const writer = spawn('sh', ['-c', `exec cat /dev/zero > '${path}'`]);
    const closed = new Promise((resolve) => writer.on('close', resolve));
    const e = caught(() => readInput(path, { maxStreamBytes: 1 << 20 }));
    expect(e.message).toBe(
      `${path}: byte 1048576: a FIFO longer than 1048576 bytes, the most read from a stream (save it to a file to read it whole)`,
    );
    await closed; // the writer ends on EPIPE once the reader is gone
  });

  it('raises the caller error type', () => {
    class Mine extends Error {}
    expect(() => readInput(dir, { error: (m) => new Mine(m) })).toThrow(Mine);
  });
});

describe('requireSeekableInput', () => {
  it('lets files and directories through and refuses streams, naming what they are', () => {
    const sub = join(dir, 'sub');
    mkdirSync(sub);
    expect(requireSeekableInput(sub, 'a trace')).toBe('directory');
    expect(caught(() => requireSeekableInput('-', 'a trace')).message).toBe(
      '<stdin>: a stream: a trace is read from a regular file or directory (save the stream to a file first)',
    );
    const e = caught(() => requireSeekableInput('/dev/zero', 'a trace'));
    expect(e.message).toBe(
      '/dev/zero: a character device: a trace is read from a regular file or directory (save the stream to a file first)',
    );
  });

  it('is what openTrace checks first: a FIFO without a writer is refused at once, not waited on', () => {
    const path = fifo('trace');
    expect(caught(() => detectTraceKind(path)).message).toMatch(`${path}: a FIFO: a trace (trace.dat, CTF, raw pages)`);
  });
});

describe('files inside a trace directory', () => {
  it('a CTF metadata that is a FIFO without a writer is refused after the wait, naming it', () => {
    const trace = join(dir, 'ctf');
    mkdirSync(trace);
    const metadata = join(trace, 'metadata');
    expect(spawnSync('mkfifo', [metadata]).status).toBe(0);
    const e = caught(() => openTrace(trace));
    expect(e.message).toBe(
      `${metadata}: a FIFO no writer opened within 2000 ms: start its writer first, or save the data to a file`,
    );
  });
});
