/**
 * zstd frames for trace.dat chunks from one compression context, reused from chunk to chunk. `zstdCompressSync` makes
 * a context per call and leaves it to the garbage collector: a writer that makes little garbage otherwise (the CTF
 * records path) piles up hundreds of them, tens of MiB of native memory, before a collection frees them, and setting
 * one up is a large share of compressing a 40 KiB chunk. Node has no public synchronous call on a kept context, so
 * this drives a zstd stream's handle as `zstdCompressSync` does inside; where that handle is not there (another
 * runtime) or a frame does not complete in one call, each frame comes from `zstdCompressSync`. The frames are the
 * bytes `zstdCompressSync` gives (the tests compare them). Reading keeps one decompression context the same way, and
 * decodes into the reader's own buffer (see {@link zstdDecodeInto}).
 */

/** node:zlib, loaded when a file is compressed. */
const zlib = () => process.getBuiltinModule('node:zlib') as typeof import('node:zlib');

/** The binding behind a zstd stream, as Node's own synchronous calls use it. */
interface ZstdHandle {
  writeSync(
    flush: number,
    input: Uint8Array,
    inputOffset: number,
    inputLength: number,
    output: Uint8Array,
    outputOffset: number,
    outputLength: number,
  ): void;
  close(): void;
  onerror: (message: string) => void;
}

/** A stream's binding kept for synchronous calls, its state (`[output left, input left]`) and whether it failed. */
interface Kept {
  readonly handle: ZstdHandle;
  readonly state: Uint32Array;
  failed: boolean;
}

/** The binding of a zstd stream for synchronous calls, or undefined where the runtime has none. */
function keptHandle(stream: unknown): Kept | undefined {
  const { _handle: handle, _writeState: state } = stream as { _handle?: ZstdHandle; _writeState?: unknown };
  if (typeof handle?.writeSync !== 'function' || !(state instanceof Uint32Array) || state.length < 2) return undefined;
  const kept: Kept = { handle, state, failed: false };
  // The stream's own handler would destroy the stream and raise its error event later, outside the call.
  handle.onerror = () => {
    kept.failed = true;
  };
  return kept;
}

let compress: ((raw: Uint8Array) => Buffer) | undefined;
/** Whether the frames so far came from the kept context. */
let kept = false;

/** Whether {@link zstdFrame} compresses with its kept context (false where it fell back to a context per frame). */
export function zstdContextKept(): boolean {
  return kept;
}

/** `raw` as one zstd frame, at zstd's default level. */
export function zstdFrame(raw: Uint8Array): Buffer {
  compress ??= keptContext() ?? ((bytes) => zlib().zstdCompressSync(bytes));
  return compress(raw);
}

function keptContext(): ((raw: Uint8Array) => Buffer) | undefined {
  const z = zlib();
  const k = keptHandle(z.createZstdCompress());
  if (k === undefined) return undefined;
  const { handle, state } = k;
  const end = z.constants.ZSTD_e_end;
  let out = Buffer.allocUnsafe(0);
  kept = true;
  return (raw) => {
    if (!kept) return z.zstdCompressSync(raw);
    // More than zstd's bound for `raw`, so that one call completes the frame.
    const room = raw.length + (raw.length >> 7) + 1024;
    if (out.length < room) out = Buffer.allocUnsafe(room);
    try {
      handle.writeSync(end, raw, 0, raw.length, out, 0, out.length);
    } catch {
      k.failed = true;
    }
    // A frame left unfinished leaves the context mid-frame, and a failed one is done: either is given up.
    if (k.failed || state[0] === 0 || state[1] !== 0) {
      kept = false;
      return z.zstdCompressSync(raw);
    }
    return Buffer.from(out.subarray(0, out.length - state[0]!));
  };
}

let decoder: Kept | undefined;

/**
 * Decodes the zstd frame `frame` into the start of `into` with one decompression context kept from frame to frame;
 * true when the frame gave exactly `size` bytes (`into` must be longer, so that a larger frame shows). False when it
 * did not (corrupt, cut, another size) or there is no kept context here: the caller then decompresses the frame as
 * usual, which says what is wrong. Writing into the caller's buffer leaves the collector no buffer per frame, and the
 * context is set up once rather than per frame.
 */
export function zstdDecodeInto(frame: Uint8Array, into: Uint8Array, size: number): boolean {
  // No bytes are no frame (which zstdDecompressSync refuses, and a context would take as nothing to do).
  if (into.length <= size || frame.length === 0) return false;
  const d = (decoder ??= keptHandle(zlib().createZstdDecompress()));
  if (d === undefined) return false;
  try {
    d.handle.writeSync(zlib().constants.ZSTD_e_end, frame, 0, frame.length, into, 0, into.length);
  } catch {
    d.failed = true;
  }
  // state: [output left, input left]. Anything but the whole input giving `size` bytes may leave the context inside
  // a frame, or failed: it is not used again.
  const exact = !d.failed && d.state[1] === 0 && into.length - d.state[0]! === size;
  if (!exact) {
    decoder = undefined;
    try {
      d.handle.close();
    } catch {
      // Already closed by a failure: nothing is left to free.
    }
  }
  return exact;
}
