/**
 * The kernel backend: a persistent kernel buffer is a tracefs instance `instances/evtrace.p.<name>` (segments joined
 * by `:`), created with mkdir and removed with rmdir. The kernel keeps recording into it after the creating process
 * ends, and any process (root, or a user tracefs lets in) reopens it by name. The prefix never matches evtrace's
 * per-recording instances (`evtrace-<pid>-<n>`), so cleaning those never touches these.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  findTracefs,
  listEvents,
  listInstances,
  matchEvents,
  planEventFilter,
  readEventFormat,
  removeInstanceDir,
  TracefsError,
  writeKernelFilter,
} from '@evtrace/tracefs';
import { type BootDetection, detectBootBuffers } from './boot.ts';
import { PersistentError } from './errors.ts';
import { kernelInstanceName, nameOfInstance } from './name.ts';
import type { BufferInfo } from './user.ts';
import { groupName, userName } from './users.ts';

/** Where tracefs is (default: found through /proc/mounts, mounted when root). */
export interface KernelOptions {
  tracefs?: string;
}

/** What a new kernel buffer records. */
export interface KernelCreateOptions extends KernelOptions {
  /** Bytes of ring buffer per CPU (`buffer_size_kb`, rounded up to KiB). Default: the kernel's. */
  size?: number;
  /** Sub-buffer (page) size in bytes (`buffer_subbuf_size_kb`), a power of two >= 4096. Default: the kernel's. */
  pageSize?: number;
  /** `overwrite` (flight recorder, the kernel's default) or `discard` (`options/overwrite` = 0). */
  mode?: 'overwrite' | 'discard';
  /** Event classes to enable: `system:event` globs (`sched:sched_switch`, `irq:*`). */
  events?: readonly string[];
  /** An ftrace filter applied to every enabled event. */
  filter?: string;
}

function tracefsOf(options: KernelOptions): string {
  if (options.tracefs !== undefined) return options.tracefs;
  try {
    return findTracefs();
  } catch (error) {
    throw new PersistentError(
      'ERR_PERSISTENT_UNSUPPORTED',
      `kernel buffers need tracefs: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
}

/** Re-throws tracefs' errors as ours, keeping the message and the file. */
function wrap<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (!(error instanceof TracefsError)) throw error;
    const code =
      error.code === 'ERR_TRACEFS_PERMISSION'
        ? 'ERR_PERSISTENT_PERMISSION'
        : error.code === 'ERR_TRACEFS_EVENT' ||
            error.code === 'ERR_TRACEFS_FILTER' ||
            error.code === 'ERR_TRACEFS_SETTING'
          ? 'ERR_PERSISTENT_ARGUMENT'
          : 'ERR_PERSISTENT_IO';
    throw new PersistentError(code, error.message, {
      ...(error.path !== undefined ? { path: error.path } : {}),
      ...(error.errno !== undefined ? { errno: error.errno } : {}),
      cause: error,
    });
  }
}

function put(file: string, value: string, what: string): void {
  try {
    writeFileSync(file, value);
  } catch (error) {
    const errno = (error as NodeJS.ErrnoException).code;
    throw new PersistentError(
      errno === 'EACCES' || errno === 'EPERM' ? 'ERR_PERSISTENT_PERMISSION' : 'ERR_PERSISTENT_ARGUMENT',
      `${what}: the kernel refused ${JSON.stringify(value)} for ${file} (${errno})`,
      { path: file, ...(errno ? { errno } : {}), cause: error },
    );
  }
}

function read(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** A persistent kernel buffer (a tracefs instance). */
export class KernelBuffer {
  readonly name: string;
  /** The tracefs instance name. */
  readonly instance: string;
  /** The instance directory. */
  readonly path: string;
  /** True for the boot-time persistent buffer (reserve_mem + trace_instance=). */
  readonly boot: boolean;

  /** @internal use {@link createKernelBuffer} or {@link openKernelBuffer}. */
  constructor(name: string, instance: string, path: string, boot = false) {
    this.name = name;
    this.instance = instance;
    this.path = path;
    this.boot = boot;
  }

  /** Enabled events (`set_event`), as `system:event`. */
  events(): string[] {
    return (read(join(this.path, 'set_event')) ?? '').split('\n').filter(Boolean);
  }

  /** The instance's events in the kernel's text form (`trace`: non-consuming, like `cat instances/NAME/trace`). */
  text(): string {
    const file = join(this.path, 'trace');
    try {
      return readFileSync(file, 'utf8');
    } catch (error) {
      throw new PersistentError('ERR_PERSISTENT_IO', `cannot read ${file}: ${(error as NodeJS.ErrnoException).code}`, {
        path: file,
        cause: error,
      });
    }
  }

  /** Size, fill, loss and ownership. */
  info(): BufferInfo {
    const st = statSync(this.path);
    const kb = (file: string) => Number(/\d+/.exec(read(join(this.path, file)) ?? '')?.[0] ?? Number.NaN);
    let bytes = 0;
    let lost = 0;
    let written = 0;
    let cpus = 0;
    for (const cpu of readdirSync(join(this.path, 'per_cpu')).filter((d) => /^cpu\d+$/.test(d))) {
      const stats = read(join(this.path, 'per_cpu', cpu, 'stats')) ?? '';
      const field = (key: string) => Number(new RegExp(`^${key}: (\\d+)`, 'm').exec(stats)?.[1] ?? 0);
      bytes += field('bytes');
      lost += field('overrun') + field('dropped events');
      written += field('entries') + field('overrun') + field('read events');
      cpus++;
    }
    const total = kb('buffer_total_size_kb') * 1024 || kb('buffer_size_kb') * 1024 * cpus;
    const subbuf = kb('buffer_subbuf_size_kb');
    return {
      backend: 'kernel',
      name: this.name,
      path: this.path,
      size: total,
      pageSize: Number.isNaN(subbuf) ? 4096 : subbuf * 1024,
      mode: (read(join(this.path, 'options', 'overwrite')) ?? '1').trim() === '0' ? 'discard' : 'overwrite',
      fill: total > 0 ? Math.min(1, bytes / total) : null,
      lost,
      written,
      writers: null,
      readers: null,
      owner: userName(st.uid),
      group: groupName(st.gid),
      permissions: st.mode & 0o7777,
      created: (st.birthtimeMs > 0 ? st.birthtime : st.ctime).toISOString(),
      classes: this.events(),
      ...(this.boot ? { boot: true } : {}),
    };
  }

  /** Removes the instance (tracing off, events off, rmdir). The boot-time buffer is the kernel's and is refused. */
  delete(): void {
    if (this.boot) {
      throw new PersistentError(
        'ERR_PERSISTENT_PERMISSION',
        `${this.name} is the kernel's boot-time persistent buffer: not deleted`,
        {
          path: this.path,
        },
      );
    }
    wrap(() => removeInstanceDir(this.path));
  }
}

/**
 * Creates the kernel buffer `name`: a tracefs instance with its size, page size, mode, events and filter, recording
 * from the moment it returns. Refused with ERR_PERSISTENT_EXISTS when the instance exists.
 */
export function createKernelBuffer(name: string, options: KernelCreateOptions = {}): KernelBuffer {
  const instance = kernelInstanceName(name);
  const tracefs = tracefsOf(options);
  const path = join(tracefs, 'instances', instance);
  if (
    options.pageSize !== undefined &&
    (options.pageSize < 4096 || (options.pageSize & (options.pageSize - 1)) !== 0)
  ) {
    throw new PersistentError(
      'ERR_PERSISTENT_ARGUMENT',
      `page size ${options.pageSize} must be a power of two >= 4096`,
    );
  }
  if (options.size !== undefined && !(Number.isInteger(options.size) && options.size > 0)) {
    throw new PersistentError('ERR_PERSISTENT_ARGUMENT', `size ${options.size} must be a positive number of bytes`);
  }
  if (options.mode !== undefined && options.mode !== 'overwrite' && options.mode !== 'discard') {
    throw new PersistentError('ERR_PERSISTENT_ARGUMENT', `mode ${String(options.mode)} must be overwrite or discard`);
  }
  // Check events and filter against the catalogue before touching the kernel.
  const selected = wrap(() => (options.events?.length ? matchEvents(listEvents(tracefs), options.events) : []));
  const filters = wrap(() =>
    options.filter?.trim()
      ? selected.map((e) => ({ e, plan: planEventFilter(options.filter!, readEventFormat(tracefs, e).eventClass) }))
      : [],
  );
  for (const { e, plan } of filters) {
    if (plan.userSpace !== undefined) {
      throw new PersistentError(
        'ERR_PERSISTENT_ARGUMENT',
        `the filter cannot run in the kernel for ${e.system}:${e.event} (${plan.userSpace}); a persistent kernel buffer has no user-space reader to finish it`,
      );
    }
  }
  try {
    mkdirSync(path);
  } catch (error) {
    const errno = (error as NodeJS.ErrnoException).code;
    if (errno === 'EEXIST') {
      throw new PersistentError('ERR_PERSISTENT_EXISTS', `a kernel buffer named ${name} already exists (${path})`, {
        path,
      });
    }
    throw new PersistentError(
      errno === 'EACCES' || errno === 'EPERM' ? 'ERR_PERSISTENT_PERMISSION' : 'ERR_PERSISTENT_IO',
      `cannot create the tracefs instance ${path}: ${errno}`,
      { path, ...(errno ? { errno } : {}), cause: error },
    );
  }
  const buf = new KernelBuffer(name, instance, path);
  try {
    put(join(path, 'tracing_on'), '0', 'cannot pause the new instance');
    if (options.pageSize !== undefined) {
      put(join(path, 'buffer_subbuf_size_kb'), String(options.pageSize / 1024), 'page size');
    }
    if (options.size !== undefined) put(join(path, 'buffer_size_kb'), String(Math.ceil(options.size / 1024)), 'size');
    put(join(path, 'options', 'overwrite'), options.mode === 'discard' ? '0' : '1', 'mode');
    for (const { e, plan } of filters) {
      if (plan.kernel !== undefined) {
        wrap(() => writeKernelFilter(path, join(path, 'events', e.system, e.event), plan.kernel!));
      }
    }
    for (const e of selected) put(join(path, 'events', e.system, e.event, 'enable'), '1', `${e.system}:${e.event}`);
    put(join(path, 'tracing_on'), '1', 'cannot start tracing');
  } catch (error) {
    try {
      removeInstanceDir(path);
    } catch {}
    throw error;
  }
  return buf;
}

/** Opens the kernel buffer `name`, or a boot-time persistent instance by its own instance name. */
export function openKernelBuffer(name: string, options: KernelOptions & { cmdline?: string } = {}): KernelBuffer {
  const tracefs = tracefsOf(options);
  const boot = bootBuffers({ ...options, tracefs }).buffers.find((b) => b.name === name);
  if (boot) return new KernelBuffer(name, boot.name, boot.path, true);
  const instance = kernelInstanceName(name);
  const path = join(tracefs, 'instances', instance);
  try {
    if (!statSync(path).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new PersistentError('ERR_PERSISTENT_NOT_FOUND', `no kernel buffer named ${name} (${path})`, { path });
  }
  return new KernelBuffer(name, instance, path);
}

/** Deletes the kernel buffer `name`. */
export function deleteKernelBuffer(name: string, options: KernelOptions = {}): void {
  openKernelBuffer(name, options).delete();
}

/** The boot-time persistent buffers of this kernel, or why there is none. */
export function bootBuffers(options: KernelOptions & { cmdline?: string } = {}): BootDetection {
  const tracefs = tracefsOf(options);
  const cmdline = options.cmdline ?? read('/proc/cmdline') ?? '';
  return detectBootBuffers(tracefs, cmdline, listInstances(tracefs));
}

/** Every persistent kernel buffer: evtrace's named instances and the boot-time ones. */
export function listKernelBuffers(options: KernelOptions & { cmdline?: string } = {}): KernelBuffer[] {
  const tracefs = tracefsOf(options);
  const out: KernelBuffer[] = [];
  for (const instance of listInstances(tracefs)) {
    const name = nameOfInstance(instance);
    if (name !== undefined) out.push(new KernelBuffer(name, instance, join(tracefs, 'instances', instance)));
  }
  for (const b of bootBuffers({ ...options, tracefs }).buffers)
    out.push(new KernelBuffer(b.name, b.name, b.path, true));
  return out;
}
