/**
 * The few libc calls Node lacks (copy_file_range, poll, fallocate, sched_setscheduler), through the koffi FFI, loaded on
 * first use.
 * Null where there is no FFI (another libc, koffi not installed): callers then fall back to what Node offers.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';

/** Offsets are one-element arrays the kernel advances, or null for the descriptor's own position. */
export type CopyFileRange = (
  fdIn: number,
  offIn: number[] | null,
  fdOut: number,
  offOut: number[] | null,
  length: number,
  flags: number,
) => number | bigint;

/** fallocate(2): `mode` flags (FALLOC_FL_*), offsets and lengths in bytes. */
export type Fallocate = (fd: number, mode: number, offset: number, length: number) => number;

/** poll(2) over an array of `struct pollfd` (8 bytes each: int fd, short events, short revents). */
export type Poll = (fds: Uint8Array, count: number, timeoutMs: number) => number;

/** sched_setscheduler(2) of thread `tid`; `param` is a `struct sched_param` (one int: the priority). */
export type SchedSetscheduler = (tid: number, policy: number, param: Int32Array) => number;
/** sched_getscheduler(2): the thread's policy, or -1. */
export type SchedGetscheduler = (tid: number) => number;
/** sched_getparam(2): fills `param` with the thread's priority. */
export type SchedGetparam = (tid: number, param: Int32Array) => number;

export interface Libc {
  readonly copyFileRange: CopyFileRange;
  readonly poll: Poll;
  readonly fallocate: Fallocate;
  readonly schedSetscheduler: SchedSetscheduler;
  readonly schedGetscheduler: SchedGetscheduler;
  readonly schedGetparam: SchedGetparam;
  /** The calling thread's errno after the last call. */
  readonly errno: () => number;
}

let libc: Libc | null | undefined;

type Koffi = typeof import('koffi');

/**
 * koffi's native module, taken from the platform package koffi installs with it (`@koromix/koffi-linux-x64`) when
 * it is there and of the same version: koffi's own entry point probes the platform and wraps deprecated names
 * around the same functions, start-up CPU the native module alone does not spend (record.bench.ts prints a
 * recording's CPU). Anything unexpected falls back to that entry point.
 */
function loadKoffi(): Koffi {
  const require = createRequire(import.meta.url);
  try {
    const entry = require.resolve('koffi');
    const fromKoffi = createRequire(entry);
    const pkg = `@koromix/koffi-${process.platform}-${process.arch}`;
    const platformDir = dirname(fromKoffi.resolve(`${pkg}/package.json`));
    const native = fromKoffi(join(platformDir, `${process.platform}_${process.arch}`, 'koffi.node')) as Koffi & {
      version?: string;
    };
    const { version } = JSON.parse(readFileSync(join(dirname(entry), 'package.json'), 'utf8')) as { version: string };
    if (native.version === version && typeof native.load === 'function' && typeof native.errno === 'function') {
      return native;
    }
  } catch {}
  return require('koffi') as Koffi;
}

/** The libc calls, or null when they cannot be loaded here. */
export function loadLibc(): Libc | null {
  if (libc !== undefined) return libc;
  try {
    const koffi = loadKoffi();
    const lib = koffi.load('libc.so.6');
    libc = {
      copyFileRange: lib.func(
        'int64_t copy_file_range(int fd_in, _Inout_ int64_t *off_in, int fd_out, _Inout_ int64_t *off_out, size_t len, unsigned int flags)',
      ) as CopyFileRange,
      poll: lib.func('int poll(_Inout_ void *fds, unsigned long nfds, int timeout)') as Poll,
      fallocate: lib.func('int fallocate(int fd, int mode, int64_t offset, int64_t len)') as Fallocate,
      schedSetscheduler: lib.func(
        'int sched_setscheduler(int pid, int policy, const void *param)',
      ) as SchedSetscheduler,
      schedGetscheduler: lib.func('int sched_getscheduler(int pid)') as SchedGetscheduler,
      schedGetparam: lib.func('int sched_getparam(int pid, _Out_ void *param)') as SchedGetparam,
      errno: () => koffi.errno(),
    };
  } catch {
    libc = null;
  }
  return libc;
}

/** The errno name (`ENOSPC`) of a number, as Node's own errors carry it. */
export function errnoName(errno: number): string {
  for (const [name, value] of Object.entries(constants.errno)) if (value === errno) return name;
  return `errno ${errno}`;
}

/** An error shaped like Node's fs errors (`code`, `errno`, `syscall`), so callers handle both alike. */
export function systemError(errno: number, syscall: string): NodeJS.ErrnoException {
  const code = errnoName(errno);
  return Object.assign(new Error(`${code}: ${syscall} failed`), { code, errno: -errno, syscall });
}
