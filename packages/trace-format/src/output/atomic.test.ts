import { execFileSync } from 'node:child_process';
import {
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  statSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import { checkOutputDir, writeBytesAtomically, writeDirAtomically, writeFileAtomically } from './atomic.ts';

const fresh = () => mkdtempSync(join(tmpdir(), 'evtrace-atomic-'));
const mode = (path: string) => statSync(path).mode & 0o777;
const put = (text: string) => (fd: number) => writeSync(fd, text);
const fail = () => {
  throw new Error('input broke');
};

describe('writeFileAtomically', () => {
  it('replaces the target only when the write completes, leaving nothing else behind', () => {
    const dir = fresh();
    const out = join(dir, 'out.dat');
    writeFileSync(out, 'old trace');
    expect(() =>
      writeFileAtomically(out, (fd) => {
        writeSync(fd, 'half of a new ');
        fail();
      }),
    ).toThrow('input broke');
    expect(readFileSync(out, 'utf8')).toBe('old trace');
    expect(readdirSync(dir)).toEqual(['out.dat']);
    expect(writeFileAtomically(out, put('new trace'))).toBe(9);
    expect(readFileSync(out, 'utf8')).toBe('new trace');
    expect(readdirSync(dir)).toEqual(['out.dat']);
  });

  it('creates files readable by the owner only unless shared or given a mode; a replaced file keeps its mode', () => {
    const dir = fresh();
    writeFileAtomically(join(dir, 'private'), put('x'));
    expect(mode(join(dir, 'private'))).toBe(0o600);
    writeFileAtomically(join(dir, 'shared'), put('x'), { share: true });
    expect(mode(join(dir, 'shared'))).toBe(0o644 & ~process.umask());
    writeFileAtomically(join(dir, 'exact'), put('x'), { mode: 0o640 });
    expect(mode(join(dir, 'exact'))).toBe(0o640);
    writeFileAtomically(join(dir, 'exact'), put('y'));
    expect(mode(join(dir, 'exact'))).toBe(0o640);
  });

  it('follows a symbolic link at the target and replaces the file it names', () => {
    const dir = fresh();
    mkdirSync(join(dir, 'real'));
    writeFileSync(join(dir, 'real', 'trace.dat'), 'old');
    symlinkSync(join(dir, 'real', 'trace.dat'), join(dir, 'link.dat'));
    writeFileAtomically(join(dir, 'link.dat'), put('new'));
    expect(readlinkSync(join(dir, 'link.dat'))).toBe(join(dir, 'real', 'trace.dat'));
    expect(readFileSync(join(dir, 'real', 'trace.dat'), 'utf8')).toBe('new');
    expect(readdirSync(join(dir, 'real'))).toEqual(['trace.dat']);
  });

  it('writes a device in place and names it with the reason when the write fails', () => {
    expect(() => writeFileAtomically('/dev/full', put('x'))).toThrow(
      new TraceFormatError(
        'ERR_TRACE_OUTPUT',
        'cannot write /dev/full: ENOSPC (no space left on device)',
        {},
        { path: '/dev/full' },
      ),
    );
    expect(writeFileAtomically('/dev/null', put('abc'))).toBe(3);
  });

  it('with followLinks false, replaces a link or a FIFO at the target and writes nothing through it', () => {
    const dir = fresh();
    writeFileSync(join(dir, 'victim'), 'not yours');
    symlinkSync(join(dir, 'victim'), join(dir, 'out.dat'));
    writeFileAtomically(join(dir, 'out.dat'), put('trace'), { followLinks: false });
    expect(readFileSync(join(dir, 'victim'), 'utf8')).toBe('not yours');
    expect(lstatSync(join(dir, 'out.dat')).isFile()).toBe(true);
    expect(readFileSync(join(dir, 'out.dat'), 'utf8')).toBe('trace');
    expect(mode(join(dir, 'out.dat'))).toBe(0o600);
    execFileSync('mkfifo', [join(dir, 'fifo.dat')]);
    writeFileAtomically(join(dir, 'fifo.dat'), put('trace'), { followLinks: false });
    expect(readFileSync(join(dir, 'fifo.dat'), 'utf8')).toBe('trace');
  });

  it('writes a FIFO in place, without seeking', () => {
    const fifo = join(fresh(), 'fifo');
    execFileSync('mkfifo', [fifo]);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      expect(writeBytesAtomically(fifo, 'through the pipe')).toBe(16);
      const got = Buffer.alloc(64);
      expect(got.toString('utf8', 0, readSync(reader, got))).toBe('through the pipe');
    } finally {
      closeSync(reader);
    }
  });

  it('names the target and the reason when it cannot be created', () => {
    const dir = fresh();
    const missing = join(dir, 'no-such-dir', 'out.dat');
    expect(() => writeFileAtomically(missing, put('x'))).toThrow(
      `cannot write ${missing}: ENOENT (no such file or directory)`,
    );
    expect(() => writeFileAtomically(dir, put('x'))).toThrow(`cannot write ${dir}: EISDIR (is a directory)`);
  });
});

describe('writeDirAtomically', () => {
  it('refuses a non-empty directory or a file unless forced, then swaps the new one in', () => {
    const dir = fresh();
    const out = join(dir, 'ctf');
    mkdirSync(out);
    writeFileSync(join(out, 'stream_7'), 'leftover');
    expect(() => writeDirAtomically(out, () => 0)).toThrow(
      `cannot write ${out}: the directory is not empty (--force replaces it)`,
    );
    expect(() => checkOutputDir(out)).toThrow(TraceFormatError);
    writeDirAtomically(out, (temp) => writeFileSync(join(temp, 'metadata'), 'new'), { force: true });
    expect(readdirSync(out)).toEqual(['metadata']);
    expect(mode(out)).toBe(0o700);
    expect(readdirSync(dir)).toEqual(['ctf']);
    writeFileSync(join(dir, 'file'), 'x');
    expect(() => writeDirAtomically(join(dir, 'file'), () => 0)).toThrow('it exists and is not a directory');
  });

  it('fills an empty or absent directory, shared on request, and leaves the old one whole when building fails', () => {
    const dir = fresh();
    mkdirSync(join(dir, 'empty'));
    writeDirAtomically(join(dir, 'empty'), (temp) => writeFileSync(join(temp, 'metadata'), 'a'), { share: true });
    expect(readdirSync(join(dir, 'empty'))).toEqual(['metadata']);
    expect(mode(join(dir, 'empty'))).toBe(0o755 & ~process.umask());
    expect(() =>
      writeDirAtomically(
        join(dir, 'empty'),
        (temp) => {
          writeFileSync(join(temp, 'stream_0'), 'part');
          fail();
        },
        { force: true },
      ),
    ).toThrow('input broke');
    expect(readdirSync(join(dir, 'empty'))).toEqual(['metadata']);
    expect(readdirSync(dir)).toEqual(['empty']);
  });

  it('names the file under the target when a write in the new directory fails', () => {
    const dir = fresh();
    const out = join(dir, 'ctf');
    expect(() =>
      writeDirAtomically(out, (temp) => {
        mkdirSync(join(temp, 'sub'));
        mkdirSync(join(temp, 'sub'));
      }),
    ).toThrow(`cannot write ${join(out, 'sub')}: EEXIST (already exists)`);
    expect(readdirSync(dir)).toEqual([]);
  });
});
