/**
 * What the standalone evtrace puts where the sources reach outside their bundle, which a single executable
 * application cannot: scripts/standalone.ts rewrites `createRequire(import.meta.url)` to `standaloneRequire`,
 * `new Worker(` to `new StandaloneWorker(`, kmemtrace's read of perf-data.wasm to `standaloneRawAsset` and the
 * Perfetto schema's file reads to `standaloneAsset`, and injects this module into the main bundle and into each
 * worker's.
 *
 * The native FFI (koffi) is the one file that must be on disk to load: it is written to a fresh private directory,
 * opened, unlinked, and loaded from the open descriptor, so nothing is left behind and nobody else can swap it.
 */
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { getAsset, getRawAsset } from 'node:sea';
import { Worker, type WorkerOptions } from 'node:worker_threads';

let koffi: unknown;

/** koffi's native module, from the binary's `koffi.node` asset (once per thread: each thread loads its own). */
function embeddedKoffi(): unknown {
  if (koffi !== undefined) return koffi;
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-'));
  let fd: number;
  try {
    const file = join(dir, 'koffi.node');
    writeFileSync(file, new Uint8Array(getRawAsset('koffi.node')), { mode: 0o500 });
    fd = openSync(file, 'r');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  try {
    const module = { exports: {} };
    process.dlopen(module, `/proc/self/fd/${fd}`);
    koffi = module.exports;
  } finally {
    closeSync(fd);
  }
  return koffi;
}

/** `require` for the modules the sources load on first use: koffi, and @evtrace/filters (bundled). */
export function standaloneRequire(id: string): unknown {
  if (id === 'koffi') return embeddedKoffi();
  // A require() esbuild bundles: the filter language still loads on first use.
  if (id === '@evtrace/filters') return require('@evtrace/filters');
  throw new Error(`the standalone evtrace does not include ${id}`);
}
/** Nothing resolves to a file here: callers that look for files first (tracefs's libc.ts) then take `require`. */
standaloneRequire.resolve = (id: string): never => {
  throw new Error(`the standalone evtrace has no file for ${id}`);
};

/** A binary file embedded at build time (kmemtrace's perf-data.wasm), by its name. */
export function standaloneRawAsset(name: string): Uint8Array {
  return new Uint8Array(getRawAsset(name));
}

/** A text file embedded at build time (the Perfetto .proto files), by its path in its package. */
export function standaloneAsset(path: string): string {
  return getAsset(path, 'utf8');
}

/** A worker thread from the worker bundle embedded under the file's name (`reader-worker.js`), run as code. */
export class StandaloneWorker extends Worker {
  constructor(file: string | URL, options: WorkerOptions = {}) {
    const name = basename(file instanceof URL ? file.pathname : file).replace(/\.ts$/, '.js');
    super(getAsset(name, 'utf8'), { ...options, eval: true });
  }
}
