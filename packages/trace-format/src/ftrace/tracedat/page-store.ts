/**
 * Where each CPU's pages wait, as they fill, until a trace.dat is assembled: packed, compressed a chunk at a time
 * (version 7) and kept in memory or in a temporary file, so that a writer holds a few pages per CPU whatever the
 * trace's length. A file's CPU data must each lie in one piece while events arrive interleaved across CPUs: hence
 * the store, which the assembly then copies from, CPU by CPU.
 */

import { closeSync, openSync, readSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { outputError } from '../../output/atomic.ts';
import { PagePacker } from '../encode.ts';
import type { PageLayout } from '../headers.ts';
import type { TraceDatCpuPages } from './pages.ts';
import { CHUNK_PAGES, type ChunkedCpuPages } from './v7.ts';
import { zstdFrame } from './zstd-frames.ts';

/** Bytes a CPU gathers before they go to the store: few writes, little held per CPU. */
const STAGE = 1 << 16;
/** Bytes read back from a file store at a time. */
const READ_BACK = 1 << 20;

/** node:zlib, loaded when a file is compressed. */
const zlib = () => process.getBuiltinModule('node:zlib') as typeof import('node:zlib');

/** Bytes kept for later: in memory, or where they lie in the store's file. */
type Kept = Buffer | { readonly at: number; readonly length: number };

/** Keeps bytes and gives them back in the order kept. */
export interface Store {
  /** Keeps a copy of `bytes`. */
  put(bytes: Uint8Array): Kept;
  /** The kept bytes, in order (a buffer that may be reused once the next is asked for). */
  get(kept: readonly Kept[]): Iterable<Uint8Array>;
  close(): void;
}

/** A store in memory, for a trace.dat made in memory. */
export function memoryStore(): Store {
  return {
    put: (bytes) => Buffer.from(bytes),
    get: (kept) => kept as Buffer[],
    close() {},
  };
}

/**
 * A store in a temporary file beside `target` (on the disk the output goes to, which must have room for it anyway;
 * in the system's temporary directory when the target is a device or a FIFO), removed from the directory as soon as
 * it is open, so that nothing is left behind however the process ends.
 */
export function fileStore(target: string): Store {
  const special = statSync(target, { throwIfNoEntry: false });
  const where = special !== undefined && !special.isFile() && !special.isDirectory() ? tmpdir() : dirname(target);
  // Named as writeFileAtomically names its temporary file (opened exclusively): node:crypto is not loaded for it.
  const path = join(where, `.${basename(target)}.${process.pid}.${Math.random().toString(36).slice(2, 10)}.pages`);
  let fd: number;
  try {
    fd = openSync(path, 'wx+', 0o600);
    unlinkSync(path);
  } catch (error) {
    throw outputError(target, error);
  }
  let end = 0;
  const buffer = Buffer.allocUnsafe(READ_BACK);
  return {
    put(bytes) {
      const at = end;
      try {
        for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done, at + done);
      } catch (error) {
        throw outputError(target, error);
      }
      end += bytes.length;
      return { at, length: bytes.length };
    },
    *get(kept) {
      for (const k of kept) {
        const { at, length } = k as { at: number; length: number };
        for (let done = 0; done < length; ) {
          const n = readSync(fd, buffer, 0, Math.min(buffer.length, length - done), at + done);
          done += n;
          yield buffer.subarray(0, n);
        }
      }
    },
    close: () => closeSync(fd),
  };
}

/** One CPU's records packed into pages, the pages into compressed chunks (or left as they are), and kept. */
export class CpuWriter {
  readonly packer: PagePacker;
  readonly #store: Store;
  readonly #compress: ((raw: Buffer) => Buffer) | undefined;
  /** Pages waiting to be compressed as one chunk. */
  readonly #raw: Buffer;
  #held = 0;
  readonly #stage = Buffer.allocUnsafe(STAGE);
  #staged = 0;
  readonly #kept: Kept[] = [];
  #size = 0;
  #count = 0;

  constructor(layout: PageLayout, store: Store, compression: 'none' | 'zstd' | 'zlib') {
    this.#store = store;
    this.#compress =
      compression === 'zstd' ? zstdFrame : compression === 'zlib' ? (raw) => zlib().deflateSync(raw) : undefined;
    this.#raw = Buffer.allocUnsafe(this.#compress === undefined ? 0 : layout.pageSize * CHUNK_PAGES);
    this.packer = new PagePacker(layout, (page) => this.#page(page));
  }

  #page(page: Buffer): void {
    if (this.#compress === undefined) {
      this.#put(page);
      return;
    }
    page.copy(this.#raw, this.#held);
    this.#held += page.length;
    if (this.#held === this.#raw.length) this.#chunk();
  }

  #chunk(): void {
    const raw = this.#raw.subarray(0, this.#held);
    const z = this.#compress!(raw);
    const header = Buffer.allocUnsafe(8);
    header.writeUInt32LE(z.length, 0);
    header.writeUInt32LE(raw.length, 4);
    this.#put(header);
    this.#put(z);
    this.#count++;
    this.#held = 0;
  }

  #put(bytes: Uint8Array): void {
    this.#size += bytes.length;
    if (this.#staged + bytes.length > STAGE) this.#flush();
    if (bytes.length > STAGE) this.#kept.push(this.#store.put(bytes));
    else {
      this.#stage.set(bytes, this.#staged);
      this.#staged += bytes.length;
    }
  }

  #flush(): void {
    if (this.#staged > 0) this.#kept.push(this.#store.put(this.#stage.subarray(0, this.#staged)));
    this.#staged = 0;
  }

  /** Closes the last page and chunk; the CPU's data as the version 6 or 7 writers take it. */
  finish(): TraceDatCpuPages | ChunkedCpuPages {
    this.packer.close();
    if (this.#held > 0) this.#chunk();
    this.#flush();
    const kept = this.#kept;
    const store = this.#store;
    const chunks = () => store.get(kept);
    return this.#compress === undefined
      ? { size: this.#size, chunks }
      : { size: this.#size, count: this.#count, chunks };
  }
}
