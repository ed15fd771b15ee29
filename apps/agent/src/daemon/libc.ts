/**
 * The C library through the koffi FFI, loaded once on first use, for the system calls Node has no API for
 * (SO_PEERCRED, per-thread file-system identity, renameat2).
 */
import { createRequire } from 'node:module';

type Koffi = typeof import('koffi');

let loaded: { koffi: Koffi; lib: ReturnType<Koffi['load']> } | undefined;

/** Declares `prototype` (a C declaration) from libc.so.6. */
export function libcFunction<F>(prototype: string): F {
  loaded ??= (() => {
    const koffi = createRequire(import.meta.url)('koffi') as Koffi;
    return { koffi, lib: koffi.load('libc.so.6') };
  })();
  return loaded.lib.func(prototype) as F;
}

/** The errno of the last call made through koffi on this thread. */
export function libcErrno(): number {
  return loaded?.koffi.errno() ?? 0;
}
