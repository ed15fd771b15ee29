import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { errorText } from '@evtrace/errors';
import { describe, expect, it } from 'vitest';
import { descriptorWriter, wroteThroughStream } from './stdio.ts';

/** A FIFO with both ends open non-blocking: writes fill it up to the pipe's capacity, then fail with EAGAIN. */
function fifo(): { reader: number; writer: number; close: () => void } {
  const path = join(mkdtempSync(join(tmpdir(), 'evtrace-stdio-')), 'fifo');
  execFileSync('mkfifo', [path]);
  const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const writer = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
  return {
    reader,
    writer,
    close: () => {
      closeSync(reader);
      closeSync(writer);
    },
  };
}

/** Everything the FIFO holds now. */
function drain(fd: number): Buffer {
  const parts: Buffer[] = [];
  const b = Buffer.alloc(65536);
  for (;;) {
    try {
      const n = readSync(fd, b);
      if (n <= 0) break;
      parts.push(Buffer.from(b.subarray(0, n)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
      throw error;
    }
  }
  return Buffer.concat(parts);
}

describe('descriptorWriter', () => {
  it('writes the whole text to the descriptor, in order', () => {
    expect(wroteThroughStream()).toBe(false);
    const f = fifo();
    try {
      const write = descriptorWriter(
        f.writer,
        () => expect.unreachable('no overflow'),
        () => {},
      );
      write('evtrace: one\n');
      write('two é\n');
      expect(drain(f.reader).toString()).toBe('evtrace: one\ntwo é\n');
    } finally {
      f.close();
    }
  });

  it('hands the rest of a write to the overflow stream when a non-blocking descriptor is full, and later ones too', () => {
    const f = fifo();
    try {
      const rest: Buffer[] = [];
      let opened = 0;
      const overflow = { write: (b: Uint8Array) => rest.push(Buffer.from(b)) };
      const write = descriptorWriter(
        f.writer,
        () => {
          opened++;
          return overflow;
        },
        () => {},
      );
      const text = 'x'.repeat(200_000);
      write(text);
      const written = drain(f.reader);
      // The pipe took what fits (64 KiB by default); nothing was lost or written twice.
      expect(written.length).toBeGreaterThan(0);
      expect(written.length).toBeLessThan(text.length);
      expect(written.length + Buffer.concat(rest).length).toBe(text.length);
      // The pipe has room again, but a direct write would overtake what the stream may still hold.
      write('next\n');
      expect(drain(f.reader).length).toBe(0);
      expect(Buffer.concat(rest).toString().endsWith('xnext\n')).toBe(true);
      expect(opened).toBe(1);
      // The program must not exit before the stream has written it.
      expect(wroteThroughStream()).toBe(true);
    } finally {
      f.close();
    }
  });

  it('gives the overflow stream copies: a caller reusing its buffer changes nothing the stream holds', () => {
    const f = fifo();
    try {
      // Keeps what it is given, uncopied, as a stream that has not written it yet does.
      const held: Uint8Array[] = [];
      const write = descriptorWriter(
        f.writer,
        () => ({ write: (b: Uint8Array) => held.push(b) }),
        () => {},
      );
      const reused = Buffer.alloc(200_000, 'a');
      write(reused);
      const written = drain(f.reader).length;
      reused.fill('b');
      write(reused);
      reused.fill('c');
      const rest = Buffer.concat(held).toString();
      expect(written + rest.length).toBe(400_000);
      expect(rest).toBe('a'.repeat(200_000 - written) + 'b'.repeat(200_000));
    } finally {
      f.close();
    }
  });

  it('calls onClosed when the reader goes away while the overflow stream still holds text (a real socket)', async () => {
    const f = fifo();
    const socket = new Socket({ fd: f.writer, readable: false, writable: true });
    try {
      const closed = new Promise<void>((resolve) => {
        const write = descriptorWriter(f.writer, () => socket, resolve);
        write('x'.repeat(200_000));
      });
      // The stream's queued writes now fail with EPIPE, reported as an error event, not thrown.
      closeSync(f.reader);
      await closed;
    } finally {
      socket.destroy();
    }
  });

  it('calls onClosed when the reader has gone (EPIPE) and writes nothing more', () => {
    const f = fifo();
    closeSync(f.reader);
    let closed = 0;
    try {
      const write = descriptorWriter(
        f.writer,
        () => expect.unreachable('no overflow'),
        () => closed++,
      );
      write('lost\n');
      expect(closed).toBe(1);
    } finally {
      closeSync(f.writer);
    }
  });
});

describe('descriptorWriter on a failing descriptor', () => {
  it('names the stream and the reason when a write fails (a full disk), as one line the CLI prints', () => {
    const full = openSync('/dev/full', 'w');
    try {
      const write = descriptorWriter(
        full,
        () => ({ write: () => true }),
        () => {},
      );
      let caught: unknown;
      try {
        write('x');
      } catch (error) {
        caught = error;
      }
      expect(errorText(caught)).toBe(`cannot write descriptor ${full}: ENOSPC (no space left on device)`);
    } finally {
      closeSync(full);
    }
    const cli = new URL('../dist/cli.js', import.meta.url).pathname;
    const r = spawnSync('sh', ['-c', `"${process.execPath}" "${cli}" --version > /dev/full`], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('evtrace: ERR_CLI_IO: cannot write standard output: ENOSPC (no space left on device)\n');
  });
});
