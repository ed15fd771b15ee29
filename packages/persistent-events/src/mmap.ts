/**
 * Shared file mappings through the koffi FFI: `mmap(MAP_SHARED)` of an open file, seen from JavaScript as an
 * ArrayBuffer over the mapped pages. Stores land in the page cache (tmpfs: memory) directly, so they survive the
 * process; a read-only mapping (PROT_READ) makes every store from a reader a fault in the reader alone.
 */
import { createRequire } from 'node:module';
import { PersistentError } from './errors.ts';

const PROT_READ = 1;
const PROT_WRITE = 2;
const MAP_SHARED = 1;
const MAP_FAILED = 0xffff_ffff_ffff_ffffn;

interface Libc {
  koffi: typeof import('koffi');
  mmap: (addr: null, length: number, prot: number, flags: number, fd: number, offset: number) => unknown;
  munmap: (addr: unknown, length: number) => number;
}

let libc: Libc | undefined;

function load(): Libc {
  if (libc) return libc;
  let koffi: typeof import('koffi');
  try {
    koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
  } catch (error) {
    throw new PersistentError(
      'ERR_PERSISTENT_UNSUPPORTED',
      `user-space persistent buffers need the koffi package (shared file mappings): ${(error as Error).message}`,
      { cause: error },
    );
  }
  const lib = koffi.load('libc.so.6');
  libc = {
    koffi,
    mmap: lib.func('void *mmap(void *addr, size_t length, int prot, int flags, int fd, int64_t offset)'),
    munmap: lib.func('int munmap(void *addr, size_t length)'),
  };
  return libc;
}

/** A live mapping. */
export interface Mapping {
  /** The mapped bytes; zero-length once unmapped. */
  readonly buffer: ArrayBuffer;
  readonly writable: boolean;
  /** Detaches {@link buffer} (every view on it becomes empty) and unmaps. Idempotent. */
  unmap(): void;
}

/**
 * Maps `length` bytes of the open file `fd` from offset 0, shared. The file must be at least `length` bytes long:
 * touching a mapped page past the end of the file raises SIGBUS.
 */
export function mapFile(fd: number, length: number, writable: boolean, path: string): Mapping {
  const { koffi, mmap, munmap } = load();
  const ptr = mmap(null, length, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  if (ptr === null || koffi.address(ptr) === MAP_FAILED) {
    const errno = koffi.errno();
    const name = Object.entries(koffi.os.errno).find(([, v]) => v === errno)?.[0] ?? `errno ${errno}`;
    throw new PersistentError(
      name === 'EACCES' || name === 'EPERM' ? 'ERR_PERSISTENT_PERMISSION' : 'ERR_PERSISTENT_IO',
      `cannot map ${path} (${length} bytes, ${writable ? 'read-write' : 'read-only'}): ${name}`,
      { path, errno: name },
    );
  }
  let buffer = koffi.view(ptr, length);
  let mapped = true;
  return {
    get buffer() {
      return buffer;
    },
    writable,
    unmap() {
      if (!mapped) return;
      mapped = false;
      // Detach first: later accesses through old views read nothing instead of faulting on unmapped memory.
      buffer = buffer.transfer(0);
      munmap(ptr, length);
    },
  };
}
