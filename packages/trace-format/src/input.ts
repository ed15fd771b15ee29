/**
 * Reading what a user names as input, with bounded memory whatever it is. A regular file is read at its known size;
 * a stream (a FIFO or pipe, a character device such as a terminal or /dev/zero, stdin) is read up to a bound and
 * refused beyond it, so an endless input ends in an error naming it instead of growing without end. A FIFO is
 * opened without blocking: one that no writer opens within a short wait is refused rather than waited on forever.
 * Every decoder package reads user input through here, each raising its own error type through `error`.
 */
import { closeSync, constants as fs, fstatSync, openSync, readFileSync, readSync, type Stats, statSync } from 'node:fs';
import { type InputLocation, TraceFormatError } from './errors.ts';

/** What a path is, as the messages name it. */
export type InputFileKind =
  | 'directory'
  | 'file'
  | 'FIFO'
  | 'character device'
  | 'block device'
  | 'socket'
  | 'special file';

/** Most bytes {@link readInput} takes from a stream (FIFO, pipe, device, stdin): 128 MiB. */
export const STREAM_INPUT_LIMIT = 128 * 1024 * 1024;

/** How long {@link readInput} waits for a writer to open a FIFO before refusing it: 2 s. */
export const FIFO_WRITER_WAIT_MS = 2000;

/** Options of {@link readInput} and {@link inputFileKind}. */
export interface ReadInputOptions {
  /** Most bytes read from a stream; default {@link STREAM_INPUT_LIMIT}. */
  readonly maxStreamBytes?: number;
  /** How long to wait for a FIFO's writer, in ms; default {@link FIFO_WRITER_WAIT_MS}. */
  readonly writerWaitMs?: number;
  /**
   * Builds the error thrown on a problem, so a package keeps its own error type. Default: a
   * {@link TraceFormatError} `ERR_TRACE_INPUT`.
   */
  readonly error?: (message: string, at: InputLocation) => Error;
}

/** The label an input is named by in messages: `<stdin>` for `-`. */
export function inputLabel(path: string): string {
  return path === '-' ? '<stdin>' : path;
}

function kindOf(st: Stats): InputFileKind {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'directory';
  if (st.isFIFO()) return 'FIFO';
  if (st.isCharacterDevice()) return 'character device';
  if (st.isBlockDevice()) return 'block device';
  if (st.isSocket()) return 'socket';
  return 'special file';
}

function failWith(options: ReadInputOptions): (message: string, at: InputLocation) => Error {
  return options.error ?? ((message, at) => new TraceFormatError('ERR_TRACE_INPUT', message, at));
}

function errnoOf(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? String(error);
}

/**
 * What `path` is (`-` is stdin), following symbolic links.
 * @throws the options' error (default {@link TraceFormatError} `ERR_TRACE_INPUT`) when it cannot be looked at.
 */
export function inputFileKind(path: string, options: ReadInputOptions = {}): InputFileKind {
  try {
    return kindOf(path === '-' ? fstatSync(0) : statSync(path));
  } catch (error) {
    throw failWith(options)(`cannot open: ${errnoOf(error)}`, { file: inputLabel(path) });
  }
}

/**
 * Refuses anything but a regular file or a directory, for readers that seek (trace.dat, CTF, databases): a stream
 * would block or fail mid-read with ESPIPE.
 * @returns `'file'` or `'directory'`.
 * @throws the options' error naming the file and what it is.
 */
export function requireSeekableInput(
  path: string,
  expected: string,
  options: ReadInputOptions = {},
): 'file' | 'directory' {
  // `-` names stdin, which readers that seek do not take, whatever it is.
  const kind = path === '-' ? 'stream' : inputFileKind(path, options);
  if (kind === 'file' || kind === 'directory') return kind;
  throw failWith(options)(
    `a ${kind}: ${expected} is read from a regular file or directory (save the stream to a file first)`,
    { file: inputLabel(path) },
  );
}

/**
 * The whole of a file (`-`: stdin): a regular file at its size, a stream up to `maxStreamBytes`.
 * @throws the options' error naming the file: a directory, a stream longer than the bound (at the byte offset of
 * the bound), a FIFO no writer opened, a read error.
 */
export function readInput(path: string, options: ReadInputOptions = {}): Buffer {
  const file = inputLabel(path);
  const fail = failWith(options);
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever if none comes.
    fd = path === '-' ? 0 : openSync(path, fs.O_RDONLY | fs.O_NONBLOCK);
  } catch (error) {
    throw fail(`cannot open: ${errnoOf(error)}`, { file });
  }
  try {
    const kind = kindOf(fstatSync(fd));
    if (kind === 'directory') throw fail('a directory: expected a file', { file });
    if (kind === 'file') {
      try {
        return readFileSync(fd);
      } catch (error) {
        throw fail(`cannot read: ${errnoOf(error)}`, { file });
      }
    }
    return readStream(fd, kind, file, path !== '-' && kind === 'FIFO', options, fail);
  } finally {
    if (path !== '-') closeSync(fd);
  }
}

const CHUNK = 1024 * 1024;

function readStream(
  fd: number,
  kind: InputFileKind,
  file: string,
  awaitWriter: boolean,
  options: ReadInputOptions,
  fail: (message: string, at: InputLocation) => Error,
): Buffer {
  const max = options.maxStreamBytes ?? STREAM_INPUT_LIMIT;
  const waitMs = options.writerWaitMs ?? FIFO_WRITER_WAIT_MS;
  const deadline = Date.now() + waitMs;
  const buffer = Buffer.allocUnsafe(CHUNK);
  const chunks: Buffer[] = [];
  let total = 0;
  // A FIFO opened without blocking reads 0 bytes both at its end and before any writer came: until one shows
  // (data, or EAGAIN: open but nothing written yet), 0 bytes means keep waiting.
  let writerSeen = !awaitWriter;
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, buffer, 0, Math.min(CHUNK, max + 1 - total), null);
    } catch (error) {
      if (errnoOf(error) !== 'EAGAIN') throw fail(`cannot read: ${errnoOf(error)}`, { file, offset: total });
      writerSeen = true;
      sleep(1);
      continue;
    }
    if (n === 0) {
      if (writerSeen) break;
      if (Date.now() >= deadline)
        throw fail(`a FIFO no writer opened within ${waitMs} ms: start its writer first, or save the data to a file`, {
          file,
        });
      sleep(10);
      continue;
    }
    writerSeen = true;
    total += n;
    if (total > max)
      throw fail(
        `a ${kind} longer than ${max} bytes, the most read from a stream (save it to a file to read it whole)`,
        { file, offset: max },
      );
    chunks.push(Buffer.from(buffer.subarray(0, n)));
  }
  return Buffer.concat(chunks, total);
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

function sleep(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}
