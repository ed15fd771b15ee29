/**
 * A trace.dat assembled from parts (bytes in memory, or bytes in a file the kernel may copy) and written with
 * positional, gathered writes, so that large pieces such as kallsyms are never joined into one copy.
 */
import { writeSync, writevSync } from 'node:fs';
import type { TraceDatFileBytes } from './pages.ts';

/** A piece of output: bytes in memory, or bytes in a file that the kernel may copy. */
export type Part = Buffer | TraceDatFileBytes;

/** Bytes a part takes in the file. */
export const partSize = (part: Part) => (Buffer.isBuffer(part) ? part.length : part.size);

/** True for bytes that lie in a file rather than in memory or a string. */
export function isFileBytes(value: Uint8Array | string | TraceDatFileBytes | undefined): value is TraceDatFileBytes {
  return value !== undefined && typeof value !== 'string' && !(value instanceof Uint8Array);
}

/** A file's bytes as a list of parts and their total length, built by appending little-endian values. */
export class Out {
  readonly parts: Part[] = [];
  length = 0;

  put(b: Part): number {
    const at = this.length;
    this.parts.push(b);
    this.length += partSize(b);
    return at;
  }
  u16(v: number): void {
    const b = Buffer.alloc(2);
    b.writeUInt16LE(v);
    this.put(b);
  }
  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.put(b);
  }
  u64(v: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.put(b);
  }
  str(s: string): void {
    this.put(Buffer.from(s, 'utf8'));
  }
  /** Pads with zeros up to a multiple of `align`. */
  align(align: number): void {
    const pad = (align - (this.length % align)) % align;
    if (pad > 0) this.put(Buffer.alloc(pad));
  }
  bytes(): Buffer {
    return Buffer.concat(
      this.parts.map((p) => (Buffer.isBuffer(p) ? p : asBuffer(p.read()))),
      this.length,
    );
  }
}

export const u32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
};
export const u64 = (v: number) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(v));
  return b;
};

/**
 * `bytes` as a Buffer without copying them (`Buffer.from` of a Buffer copies, and kallsyms is large); text is encoded.
 */
export function asBuffer(bytes: Uint8Array | string): Buffer {
  return typeof bytes === 'string' ? Buffer.from(bytes) : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Writes `parts` in order from offset `at` with gathered writes, so the head is never joined into one copy, and
 * bytes already in a file (kallsyms) are copied by the kernel where they can be. Returns the end offset.
 */
export function putParts(fd: number, parts: readonly Part[], at = 0): number {
  for (let i = 0; i < parts.length; ) {
    const part = parts[i]!;
    if (!Buffer.isBuffer(part)) {
      if (part.copyTo?.(fd, at) !== true) at = putBytes(fd, asBuffer(part.read()), at);
      else at += part.size;
      i++;
      continue;
    }
    // The buffers up to the next file part, at most 1024 (Linux's IOV_MAX) per call.
    let j = i;
    while (j < parts.length && j - i < 1024 && Buffer.isBuffer(parts[j])) j++;
    const run = parts.slice(i, j) as Buffer[];
    let n = writevSync(fd, run, at);
    for (const b of run) {
      if (n >= b.length) {
        n -= b.length;
        at += b.length;
      } else {
        // A short write ended inside this buffer: finish it on its own.
        at = putBytes(fd, b.subarray(n), at + n);
        n = 0;
      }
    }
    i = j;
  }
  return at;
}

/** Writes all of `bytes` at offset `at`; returns the end offset. */
export function putBytes(fd: number, bytes: Uint8Array, at: number): number {
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done, at + done);
  return at + bytes.length;
}
