/**
 * JSON-lines framing: one message per `\n`-terminated line of UTF-8. A line longer than the limit is reported once
 * and skipped up to its newline without being buffered, so a peer that never sends a newline costs at most the
 * limit in memory.
 */

/** Longest request line the agent accepts, newline excluded. */
export const MAX_REQUEST_BYTES = 64 * 1024;
/** Longest line the agent sends (event batches are cut well below it). */
export const MAX_SERVER_MESSAGE_BYTES = 4 * 1024 * 1024;

/** One result of {@link LineDecoder.push}: a complete line, or a line that exceeded the limit. */
export type Frame = { readonly line: string } | { readonly oversize: number };

const NEWLINE = 0x0a;

/** Splits a byte stream into lines of at most `maxBytes` bytes. */
export class LineDecoder {
  readonly maxBytes: number;
  #parts: Buffer[] = [];
  #size = 0;
  /** Bytes of an oversize line seen so far, or -1 when not inside one. */
  #skipping = -1;
  readonly #decoder = new TextDecoder('utf-8', { fatal: false });

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  /** Bytes buffered for an incomplete line (a request cut off by a disconnect, for instance). */
  get pending(): number {
    return this.#size;
  }

  /** Feeds bytes; returns the lines they complete, in order. */
  push(chunk: Uint8Array): Frame[] {
    const frames: Frame[] = [];
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(NEWLINE, start);
      const end = nl === -1 ? chunk.length : nl;
      const piece = chunk.subarray(start, end);
      if (this.#skipping >= 0) {
        this.#skipping += piece.length;
      } else if (this.#size + piece.length > this.maxBytes) {
        this.#skipping = this.#size + piece.length;
        this.#parts = [];
        this.#size = 0;
      } else if (piece.length > 0) {
        this.#parts.push(Buffer.from(piece));
        this.#size += piece.length;
      }
      if (nl === -1) break;
      if (this.#skipping >= 0) {
        frames.push({ oversize: this.#skipping });
        this.#skipping = -1;
      } else {
        const bytes = this.#parts.length === 1 ? this.#parts[0]! : Buffer.concat(this.#parts, this.#size);
        frames.push({ line: this.#decoder.decode(bytes) });
        this.#parts = [];
        this.#size = 0;
      }
      start = nl + 1;
    }
    return frames;
  }
}

/** One message as a line: JSON without raw newlines (JSON.stringify escapes them), then `\n`. */
export function encodeLine(message: unknown): string {
  return `${JSON.stringify(message)}\n`;
}
