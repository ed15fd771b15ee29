import { ByteOut } from '@evtrace/trace-format';
import type { CliIO } from '../command.ts';

/** The encoding buffer's size: a write call per this many bytes of output, at most. */
const BUFFER_BYTES = 1 << 20;

/**
 * Text collected before it is encoded: enough that encoding costs little per text, little enough that the pieces
 * held until then die young (a longer chain survives the young generation's collections, which copy it).
 */
const PENDING_CHARS = 1 << 14;

/**
 * Collects output text into large writes: texts are appended to one string (V8 links the pieces and copies them
 * once, when it is encoded), encoded into one reused buffer, and the buffer written when full.
 */
export function bufferedWriter(write: (bytes: Uint8Array) => void): { put(text: string): void; flush(): void } {
  let buffer: Buffer | undefined;
  let used = 0;
  let pending = '';
  const encode = () => {
    // UTF-8 takes at most 3 bytes per UTF-16 unit: room for that many needs no measuring.
    if (used + pending.length * 3 > BUFFER_BYTES) {
      if (used > 0) write(buffer!.subarray(0, used));
      used = 0;
      if (pending.length * 3 > BUFFER_BYTES) {
        write(Buffer.from(pending));
        pending = '';
        return;
      }
    }
    buffer ??= Buffer.allocUnsafeSlow(BUFFER_BYTES);
    used += buffer.write(pending, used);
    pending = '';
  };
  return {
    put(text) {
      pending += text;
      if (pending.length >= PENDING_CHARS) encode();
    },
    flush() {
      if (pending.length > 0) encode();
      if (used > 0) write(buffer!.subarray(0, used));
      used = 0;
    },
  };
}

/**
 * Output written as bytes into one reused buffer (`out`), by writers that fill it themselves (trace text and JSON
 * lines): `put` hands it to `write` once it holds a buffer's worth, `flush` whatever it holds. Chunks are valid during
 * the call only.
 */
export function byteWriter(write: (bytes: Uint8Array) => void): { out: ByteOut; put(): void; flush(): void } {
  const out = new ByteOut(BUFFER_BYTES + (1 << 16));
  const flush = () => {
    if (out.length > 0) write(out.bytes.subarray(0, out.length));
    out.length = 0;
  };
  return {
    out,
    put() {
      if (out.length >= BUFFER_BYTES) flush();
    },
    flush,
  };
}

/** A command's standard output as bytes: written as they are where the program allows, else decoded for a test's text. */
export function stdoutBytes(io: CliIO): (bytes: Uint8Array) => void {
  return io.stdoutBytes ?? ((bytes) => io.stdout(Buffer.from(bytes).toString('utf8')));
}
