/**
 * Following a growing input, as mcelog's daemon mode follows the kernel: a kernel log being written (`tail -f`), or
 * `journalctl -k -f -o json` on stdin. The kernel prints a report's lines in one burst, so bytes are gathered into
 * whole lines and decoded when the input goes quiet (or a batch grows large): a record is never cut between two
 * batches by a pause inside it.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { type BufferKind, detectBufferKind, type ReadResult, readMceBuffer } from './read.ts';

/** Whole lines of a growing input, decoded a batch at a time. */
export class LineBatches {
  readonly #file: string | undefined;
  #kind: BufferKind | undefined;
  #lines: Buffer[] = [];
  #size = 0;
  #partial: Buffer = Buffer.alloc(0);

  /** `kind` as detected from the first batch when not given. */
  constructor(options: { kind?: BufferKind; file?: string } = {}) {
    this.#kind = options.kind;
    this.#file = options.file;
  }

  /** Bytes received; a line's end may come in a later chunk. */
  push(chunk: Uint8Array): void {
    const data = this.#partial.length > 0 ? Buffer.concat([this.#partial, chunk]) : Buffer.from(chunk);
    const end = data.lastIndexOf(0x0a);
    if (end < 0) {
      this.#partial = data;
      return;
    }
    this.#lines.push(data.subarray(0, end + 1));
    this.#size += end + 1;
    this.#partial = Buffer.from(data.subarray(end + 1));
  }

  /** Bytes of whole lines waiting to be decoded. */
  get pending(): number {
    return this.#size;
  }

  /**
   * Decodes the whole lines received since the last call (with the unfinished last line too when `final`, at the
   * input's end); undefined when there are none.
   */
  take(final = false): ReadResult | undefined {
    if (final && this.#partial.length > 0) {
      this.#lines.push(this.#partial);
      this.#size += this.#partial.length;
      this.#partial = Buffer.alloc(0);
    }
    if (this.#size === 0) return undefined;
    const bytes = Buffer.concat(this.#lines, this.#size);
    this.#lines = [];
    this.#size = 0;
    this.#kind ??= detectBufferKind(bytes);
    return readMceBuffer(bytes, { kind: this.#kind, ...(this.#file ? { file: this.#file } : {}) });
  }
}

/**
 * Reads what a file gained from `offset` on, at most `max` bytes (call again for the rest); a file that shrank
 * (rotated or truncated) is read again from its start. Returns the new bytes and the offset to continue from.
 */
export function readGrowth(path: string, offset: number, max = 1 << 20): { bytes: Buffer; offset: number } {
  const size = statSync(path).size;
  const from = size < offset ? 0 : offset;
  if (size === from) return { bytes: Buffer.alloc(0), offset: from };
  const bytes = Buffer.alloc(Math.min(size - from, max));
  const fd = openSync(path, 'r');
  try {
    let got = 0;
    while (got < bytes.length) {
      const n = readSync(fd, bytes, got, bytes.length - got, from + got);
      if (n === 0) break;
      got += n;
    }
    return { bytes: bytes.subarray(0, got), offset: from + got };
  } finally {
    closeSync(fd);
  }
}
