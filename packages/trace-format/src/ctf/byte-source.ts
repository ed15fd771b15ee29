// Where stream bytes come from: memory, or a file read in windows.
import { closeSync, openSync, readSync, statSync } from 'node:fs';

/** Random access to the bytes of one data stream file. */
export interface ByteSource {
  readonly size: number;
  /** The bytes from `offset`, at most `length` of them (fewer at the end). */
  read(offset: number, length: number): Uint8Array;
  /**
   * Reads the bytes from `offset` into `into` (fewer at the end) and returns how many: for a reader that reuses one
   * buffer rather than leave the collector a new one per read. Absent where `read` copies nothing (memory).
   */
  readInto?(offset: number, into: Uint8Array): number;
}

export function memorySource(data: Uint8Array): ByteSource {
  return { size: data.length, read: (offset, length) => data.subarray(offset, offset + length) };
}

/** Reads a file in chunks on demand, so a trace of any size is decoded in bounded memory. */
export function fileSource(path: string): ByteSource {
  const size = statSync(path).size;
  return {
    size,
    read(offset, length) {
      const n = Math.max(0, Math.min(length, size - offset));
      const out = Buffer.allocUnsafe(n);
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
    readInto(offset, into) {
      const fd = openSync(path, 'r');
      try {
        let done = 0;
        while (done < into.length) {
          const got = readSync(fd, into, done, into.length - done, offset + done);
          if (got === 0) break;
          done += got;
        }
        return done;
      } finally {
        closeSync(fd);
      }
    },
  };
}

/** Bytes read ahead from a stream file: packets are decoded in place within this window. */
export const CHUNK = 4 << 20;
/** Packet header and context together never need more bytes than this (a bound on hostile metadata). */
export const MAX_HEADERS = 64 << 20;
