/** Listing persistent buffers of both backends, and deleting one by name. */
import { readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import type { PersistentError } from './errors.ts';
import { bootBuffers, deleteKernelBuffer, type KernelOptions, listKernelBuffers } from './kernel.ts';
import { parseName } from './name.ts';
import { BUFFER_SUFFIX, type BufferInfo, bufferDir, deletePersistent, openPersistent } from './user.ts';
import { groupName, userName } from './users.ts';

/** Options of {@link listPersistent}. */
export interface ListOptions extends KernelOptions {
  /** Directory of user-space buffers. */
  dir?: string;
  /** Which backends. Default both. */
  backends?: ReadonlyArray<'user' | 'kernel'>;
  /** Kernel command line to read boot-time buffers from. Default /proc/cmdline. */
  cmdline?: string;
}

/** A buffer that exists but could not be described (no permission, damaged). */
export interface UnreadableBuffer {
  backend: 'user' | 'kernel';
  name: string;
  path: string;
  owner: string;
  group: string;
  permissions: number;
  /** The error's code and message. */
  code: string;
  error: string;
}

/** What {@link listPersistent} found. */
export interface PersistentListing {
  buffers: BufferInfo[];
  unreadable: UnreadableBuffer[];
  /** Why kernel buffers are not listed (no tracefs, not root), when they are not. */
  kernelUnavailable?: string;
  /** Why there is no boot-time persistent buffer, when there is none. */
  bootAbsent?: string;
}

function* bufferFiles(base: string, dir = base): Generator<string> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    if (e.name.startsWith('.')) continue;
    const path = join(dir, e.name);
    if (e.isDirectory()) yield* bufferFiles(base, path);
    else if (e.isFile() && e.name.endsWith(BUFFER_SUFFIX)) yield path;
  }
}

/** Lists the persistent buffers this process can see, with size, mode, fill, loss, writers, readers, owner, created. */
export function listPersistent(options: ListOptions = {}): PersistentListing {
  const backends = options.backends ?? ['user', 'kernel'];
  const out: PersistentListing = { buffers: [], unreadable: [] };
  if (backends.includes('user')) {
    const base = bufferDir(options.dir);
    for (const path of bufferFiles(base)) {
      const name = relative(base, path).slice(0, -BUFFER_SUFFIX.length).split(sep).join('/');
      try {
        parseName(name);
      } catch {
        continue;
      }
      try {
        const buf = openPersistent(name, { dir: base, readOnly: true });
        try {
          out.buffers.push(buf.info());
        } finally {
          buf.close();
        }
      } catch (error) {
        let st: { uid: number; gid: number; mode: number } = { uid: -1, gid: -1, mode: 0 };
        try {
          st = statSync(path);
        } catch {}
        out.unreadable.push({
          backend: 'user',
          name,
          path,
          owner: userName(st.uid),
          group: groupName(st.gid),
          permissions: st.mode & 0o7777,
          code: (error as PersistentError).code ?? 'ERR_PERSISTENT_IO',
          error: (error as Error).message,
        });
      }
    }
  }
  if (backends.includes('kernel')) {
    try {
      const kernelOptions = { ...options };
      for (const k of listKernelBuffers(kernelOptions)) {
        try {
          out.buffers.push(k.info());
        } catch (error) {
          out.unreadable.push({
            backend: 'kernel',
            name: k.name,
            path: k.path,
            owner: '',
            group: '',
            permissions: 0,
            code: 'ERR_PERSISTENT_IO',
            error: (error as Error).message,
          });
        }
      }
      const boot = bootBuffers(kernelOptions);
      if (boot.absent !== undefined) out.bootAbsent = boot.absent;
    } catch (error) {
      out.kernelUnavailable = (error as Error).message;
    }
  }
  return out;
}

/** Deletes a persistent buffer of either backend. */
export function deleteBuffer(
  name: string,
  options: { backend?: 'user' | 'kernel'; dir?: string; tracefs?: string; force?: boolean } = {},
): void {
  if (options.backend === 'kernel') {
    deleteKernelBuffer(name, options.tracefs !== undefined ? { tracefs: options.tracefs } : {});
    return;
  }
  deletePersistent(name, {
    ...(options.dir !== undefined ? { dir: options.dir } : {}),
    ...(options.force !== undefined ? { force: options.force } : {}),
  });
}
