// Where stream bytes come from: memory, or a file read in windows.
import { closeSync, openSync, readSync, statSync } from 'node:fs';

/** Random access to the bytes of one data stream file. */
export interface ByteSource {
  readonly size: number;
  /**
   * The bytes from `offset`, at most `length` of them (fewer at the end); read into `reuse` when it is large enough
   * and the source copies (a file), so that a reader moving through a file keeps one buffer.
   */
  read(offset: number, length: number, reuse?: Uint8Array): Uint8Array;
}

export function memorySource(data: Uint8Array): ByteSource {
  return { size: data.length, read: (offset, length) => data.subarray(offset, offset + length) };
}

/** Reads a file in chunks on demand, so a trace of any size is decoded in bounded memory. */
export function fileSource(path: string): ByteSource {
  const size = statSync(path).size;
  return {
    size,
    read(offset, length, reuse) {
      const n = Math.max(0, Math.min(length, size - offset));
      const out = reuse !== undefined && reuse.length >= n ? reuse : Buffer.allocUnsafe(n);
      const fd = openSync(path, 'r');
      try {
        let done = 0;
        while (done < n) {
          const got = readSync(fd, out, done, n - done, offset + done);
          if (got === 0) break;
          done += got;
        }
        return out.subarray(0, done);
      } finally {
        closeSync(fd);
      }
    },
  };
}

/** Bytes read ahead from a stream file: packets are decoded in place within this window. */
export const CHUNK = 1 << 20;
/** Packet header and context together never need more bytes than this (a bound on hostile metadata). */
export const MAX_HEADERS = 64 << 20;
