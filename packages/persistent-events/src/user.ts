/**
 * The user-space backend: a buffer is one file under a directory (tmpfs `/dev/shm/evtrace` by default), mapped shared
 * by every process that opens it. The file holds the ringbuf region (header page + data pages) then a metadata page.
 */
import {
  closeSync,
  fchmodSync,
  fchownSync,
  fstatSync,
  ftruncateSync,
  linkSync,
  openSync,
  readSync,
  rmdirSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import {
  type BufferStats,
  HEADER_SIZE,
  type Reader,
  type ReaderOptions,
  RingBuffer,
  RingbufError,
  type Snapshot,
  type Writer,
  type WriterOptions,
} from '@evtrace/ringbuf';
import { entryOf, openNamespace } from './dirs.ts';
import { fsError, PersistentError } from './errors.ts';
import { Follower } from './follow.ts';
import { type BufferMeta, decodeMeta, type EventClass, encodeMeta, META_SIZE, normalizeClasses } from './meta.ts';
import { type Mapping, mapFile } from './mmap.ts';
import { parseName } from './name.ts';
import { findMappers, type Mappers } from './procmaps.ts';
import { groupId, groupName, userName } from './users.ts';

/** Default directory of user-space buffers (tmpfs: memory, kept until reboot or deletion). */
export const DEFAULT_DIR = '/dev/shm/evtrace';
/** File name suffix of a buffer. */
export const BUFFER_SUFFIX = '.evrb';

/** The directory buffers live in: `options.dir`, else `$EVTRACE_PERSISTENT_DIR`, else {@link DEFAULT_DIR}. */
export function bufferDir(dir?: string): string {
  return dir ?? process.env.EVTRACE_PERSISTENT_DIR ?? DEFAULT_DIR;
}

/** The file of a buffer name: `team/app/flight` -> `DIR/team/app/flight.evrb`. */
export function bufferPath(name: string, dir?: string): string {
  return join(bufferDir(dir), ...parseName(name)) + BUFFER_SUFFIX;
}

/** What a new buffer looks like. */
export interface CreateBufferOptions {
  /** Bytes of data pages, rounded up to whole pages (at least two). */
  size: number;
  /** Bytes per page, a power of two from 4 KiB to 64 MiB. Default 4096. */
  pageSize?: number;
  /** `overwrite` (flight recorder, the default) or `discard` (newest records dropped when full). */
  mode?: 'overwrite' | 'discard';
  /** The record types written, by name (type = position) or as {type, name}. */
  classes?: ReadonlyArray<string | EventClass>;
  /** A group (name or gid) given access besides the owner; nobody else has any. Default: owner only. */
  group?: string | number;
  /** Give the group write access too (default read-only). */
  groupWrite?: boolean;
}

/** Options of {@link openPersistent}. */
export interface OpenPersistentOptions {
  /** Create the buffer; refused with ERR_PERSISTENT_EXISTS when the name is taken (unless {@link reuse}). */
  create?: CreateBufferOptions;
  /** With `create`: open the existing buffer instead of failing when the name is taken. */
  reuse?: boolean;
  /** Map read-only: snapshot and stats only; this process can never change the buffer. Default false. */
  readOnly?: boolean;
  /** Directory of buffers. Default {@link bufferDir}. */
  dir?: string;
}

/** The size, state and ownership of a buffer, as listed. */
export interface BufferInfo {
  backend: 'user' | 'kernel';
  name: string;
  /** The file (user) or tracefs instance directory (kernel). */
  path: string;
  /** Bytes of data pages (kernel: total over CPUs). */
  size: number;
  pageSize: number;
  mode: 'overwrite' | 'discard';
  /** Fraction of the pages holding data, 0..1 (null when unknown). */
  fill: number | null;
  /** Records lost: dropped when full plus overwritten before a registered reader had them (null when unknown). */
  lost: number | null;
  /** Records committed (null when unknown). */
  written: number | null;
  /** Processes writing (user: live read-write mappings; kernel: null, the kernel writes). */
  writers: number | null;
  /** Processes reading (user: live read-only mappings plus registered consuming readers; kernel: null). */
  readers: number | null;
  owner: string;
  group: string;
  /** Unix permission bits of the file or directory, e.g. 0o640. */
  permissions: number;
  /** ISO 8601 creation time (null when unknown). */
  created: string | null;
  /** Event classes (user) or enabled events (kernel). */
  classes: string[];
  /** Kernel: the boot-time persistent buffer (reserve_mem + trace_instance=). */
  boot?: boolean;
}

/** Paths of buffers this process writes, so a second writer here is refused while one elsewhere that died is not. */
const writing = new Set<string>();

/** A persistent buffer opened by name. */
export class PersistentBuffer {
  readonly name: string;
  readonly path: string;
  readonly readOnly: boolean;
  readonly meta: BufferMeta;
  private readonly ring: RingBuffer;
  private readonly mapping: Mapping;
  private readonly fd: number;
  private closed = false;
  private ownWriter: Writer | undefined;

  /** @internal use {@link openPersistent}. */
  constructor(name: string, path: string, fd: number, mapping: Mapping, ring: RingBuffer, meta: BufferMeta) {
    this.name = name;
    this.path = path;
    this.fd = fd;
    this.mapping = mapping;
    this.ring = ring;
    this.meta = meta;
    this.readOnly = !mapping.writable;
  }

  get pageSize(): number {
    return this.ring.pageSize;
  }
  get pageCount(): number {
    return this.ring.pageCount;
  }
  get mode(): 'overwrite' | 'discard' {
    return this.ring.mode;
  }
  /** Clock named in the header (`CLOCK_MONOTONIC` unless the producer supplies its own). */
  get clockName(): string {
    return this.ring.clockName;
  }
  /** Realtime minus clock at creation, in ns: Unix ns = timestamp + clockOffsetNs. */
  get clockOffsetNs(): number {
    return this.ring.clockOffsetNs;
  }
  /** Largest payload of one record. */
  get maxPayload(): number {
    return this.ring.maxPayload;
  }

  private live(what: string): void {
    if (this.closed)
      throw new PersistentError('ERR_PERSISTENT_CLOSED', `${this.name}: ${what} after close()`, { path: this.path });
  }

  private writable(what: string): RingBuffer {
    this.live(what);
    if (this.readOnly) {
      throw new PersistentError(
        'ERR_PERSISTENT_READ_ONLY',
        `${this.name} is open read-only: ${what} needs a read-write open`,
        {
          path: this.path,
        },
      );
    }
    return this.ring;
  }

  /**
   * The buffer's writer (ringbuf's Writer API). A writer left attached by a process that died (its mapping is gone)
   * is taken over and its open page closed; a live writer in another process is refused with ERR_PERSISTENT_WRITER_BUSY.
   */
  writer(options: Omit<WriterOptions, 'force'> = {}): Writer {
    const ring = this.writable('writer()');
    if (writing.has(this.path)) {
      throw new PersistentError('ERR_PERSISTENT_WRITER_BUSY', `${this.name}: this process already writes it`, {
        path: this.path,
      });
    }
    let force = false;
    if (ring.writerAttached) {
      const st = fstatSync(this.fd);
      const others = findMappers(st.dev, st.ino).writers.filter((pid) => pid !== process.pid);
      if (others.length > 0) {
        throw new PersistentError(
          'ERR_PERSISTENT_WRITER_BUSY',
          `${this.name}: process ${others.join(', ')} has it mapped for writing`,
          { path: this.path },
        );
      }
      force = true;
    }
    const w = ring.writer({ ...options, force });
    writing.add(this.path);
    const close = w.close.bind(w);
    w.close = () => {
      close();
      writing.delete(this.path);
    };
    this.ownWriter = w;
    return w;
  }

  /** A consuming reader (registered in the buffer: needs a read-write open). */
  reader(options?: ReaderOptions): Reader {
    return this.writable('reader()').reader(options);
  }

  /** Copies what the buffer holds now, committed records of an open page included; never changes the buffer. */
  snapshot(): Snapshot {
    this.live('snapshot()');
    return this.ring.snapshot();
  }

  /**
   * A non-consuming follower: each `poll()` hands over the records committed since the previous one. Works on
   * read-only handles; `fromStart: false` skips what the buffer holds now.
   */
  follow(options: { fromStart?: boolean } = {}): Follower {
    this.live('follow()');
    const f = new Follower(() => this.snapshot());
    if (options.fromStart === false) f.poll(() => {});
    return f;
  }

  /** The header's counters. */
  stats(): BufferStats {
    this.live('stats()');
    return this.ring.stats();
  }

  /** True while a writer is attached (or one died attached and nobody took over). */
  get writerAttached(): boolean {
    this.live('writerAttached');
    return this.ring.writerAttached;
  }

  /** Processes mapping the buffer now. */
  mappers(): Mappers {
    this.live('mappers()');
    const st = fstatSync(this.fd);
    return findMappers(st.dev, st.ino);
  }

  /** Size, state and ownership, as {@link listPersistent} shows them. */
  info(): BufferInfo {
    this.live('info()');
    const m = this.mappers();
    // Looking is not reading: this handle's own read-only mapping is not counted.
    if (this.readOnly) m.readers = m.readers.filter((pid) => pid !== process.pid);
    return describe(this.name, this.path, this.ring, this.meta, fstatSync(this.fd), m);
  }

  /**
   * Unmaps the buffer (views on it become empty) and closes the file. A writer of this handle is NOT closed: its
   * stream stays open for a later writer to take over, exactly as if the process had died. Close it first to end
   * the stream. Idempotent.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.ownWriter) writing.delete(this.path);
    this.mapping.unmap();
    closeSync(this.fd);
  }
}

function describe(
  name: string,
  path: string,
  ring: RingBuffer,
  meta: BufferMeta,
  st: { uid: number; gid: number; mode: number },
  mappers: Mappers,
): BufferInfo {
  const s = ring.stats();
  const used = s.head < 0 ? 0 : Math.min(ring.pageCount, s.head - s.tail + 1);
  return {
    backend: 'user',
    name,
    path,
    size: ring.pageSize * ring.pageCount,
    pageSize: ring.pageSize,
    mode: ring.mode,
    fill: used / ring.pageCount,
    lost: s.discarded + s.overwritten,
    written: s.written,
    writers: mappers.writers.length,
    readers: mappers.readers.length + s.readers,
    owner: userName(st.uid),
    group: groupName(st.gid),
    permissions: st.mode & 0o7777,
    created: meta.created,
    classes: meta.classes.map((c) => c.name),
  };
}

function checkCreate(c: CreateBufferOptions): { pageSize: number; pageCount: number } {
  const pageSize = c.pageSize ?? 4096;
  if (!Number.isInteger(c.size) || c.size <= 0) {
    throw new PersistentError('ERR_PERSISTENT_ARGUMENT', `size ${String(c.size)} must be a positive number of bytes`);
  }
  if (!Number.isInteger(pageSize) || pageSize < 4096 || pageSize > 1 << 26 || (pageSize & (pageSize - 1)) !== 0) {
    throw new PersistentError(
      'ERR_PERSISTENT_ARGUMENT',
      `page size ${String(pageSize)} must be a power of two from 4096 to 64 MiB`,
    );
  }
  const pageCount = Math.max(2, Math.ceil(c.size / pageSize));
  if (pageSize * pageCount > 2 ** 31 - HEADER_SIZE) {
    throw new PersistentError('ERR_PERSISTENT_ARGUMENT', `size ${c.size} exceeds the 2 GiB a buffer can hold`);
  }
  if (c.mode !== undefined && c.mode !== 'overwrite' && c.mode !== 'discard') {
    throw new PersistentError('ERR_PERSISTENT_ARGUMENT', `mode ${String(c.mode)} must be overwrite or discard`);
  }
  return { pageSize, pageCount };
}

function create(name: string, path: string, base: string, c: CreateBufferOptions): void {
  const { pageSize, pageCount } = checkCreate(c);
  const classes = normalizeClasses(c.classes);
  const gid = c.group === undefined ? undefined : groupId(c.group);
  const metaPage = encodeMeta({ created: new Date().toISOString(), classes });
  const dirFd = openNamespace(base, relative(base, dirname(path)).split(sep).filter(Boolean));
  // Built under a private name, then linked into place: nobody ever sees half a buffer, and link() refuses a taken name.
  const tmpName = `.${process.pid}.${Date.now()}.tmp`;
  const tmp = join(dirname(path), tmpName);
  let fd: number;
  try {
    fd = openSync(entryOf(dirFd, tmpName), 'wx+', 0o600);
  } catch (error) {
    closeSync(dirFd);
    throw fsError(tmp, error, 'cannot create the buffer file');
  }
  try {
    const regionBytes = RingBuffer.byteLength({ pageSize, pageCount });
    try {
      ftruncateSync(fd, regionBytes + META_SIZE);
      writeSync(fd, metaPage, 0, META_SIZE, regionBytes);
    } catch (error) {
      throw fsError(tmp, error, 'cannot size the buffer file');
    }
    try {
      if (gid !== undefined) fchownSync(fd, -1, gid);
      fchmodSync(fd, gid === undefined ? 0o600 : c.groupWrite ? 0o660 : 0o640);
    } catch (error) {
      // Only root, or a member of the group, may hand a file to a group.
      throw fsError(tmp, error, `cannot give group ${String(c.group)} access to the buffer file`);
    }
    const mapping = mapFile(fd, regionBytes, true, tmp);
    try {
      RingBuffer.create({ buffer: mapping.buffer, pageSize, pageCount, mode: c.mode ?? 'overwrite' });
    } finally {
      mapping.unmap();
    }
    try {
      linkSync(entryOf(dirFd, tmpName), entryOf(dirFd, basename(path)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
        throw new PersistentError('ERR_PERSISTENT_EXISTS', `a buffer named ${name} already exists (${path})`, { path });
      }
      throw fsError(path, error, 'cannot create the buffer');
    }
  } finally {
    closeSync(fd);
    try {
      unlinkSync(entryOf(dirFd, tmpName));
    } catch {}
    closeSync(dirFd);
  }
}

/** Reads `length` bytes at `position` (short at end of file). */
function pread(fd: number, length: number, position: number): Uint8Array {
  const out = new Uint8Array(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, out, got, length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return out.subarray(0, got);
}

/**
 * Opens an already open buffer file: validates the header page and the metadata page against the file size, then
 * maps the region. Errors name the file and the byte offset.
 */
export function openFile(name: string, path: string, fd: number, writable: boolean): PersistentBuffer {
  const size = fstatSync(fd).size;
  if (size < HEADER_SIZE) {
    throw new PersistentError(
      'ERR_PERSISTENT_CORRUPT',
      `truncated: the file has ${size} bytes, the header page needs ${HEADER_SIZE}`,
      { path, offset: size },
    );
  }
  // Validate the header from a copy first: mapping past the end of a truncated file would fault on access.
  const header = pread(fd, HEADER_SIZE, 0);
  const copy = new ArrayBuffer(HEADER_SIZE + 2 * 4096);
  new Uint8Array(copy).set(header);
  const dv = new DataView(copy);
  const pageSize = dv.getUint32(16, true);
  const pageCount = dv.getUint32(20, true);
  let regionBytes: number;
  try {
    // Geometry and every field, checked by ringbuf on the copy (page fields patched to a tiny region it can hold).
    dv.setUint32(16, 4096, true);
    dv.setUint32(20, 2, true);
    RingBuffer.attach(copy);
    regionBytes = RingBuffer.byteLength({ pageSize, pageCount });
  } catch (error) {
    if (error instanceof RingbufError) {
      // Geometry is checked last, without an offset: page size (16) or page count (20).
      const at = error.offset ?? (/page size/.test(error.message) ? 16 : 20);
      const why = error.message.replace(/^byte \d+: /, '');
      throw new PersistentError('ERR_PERSISTENT_CORRUPT', why, { path, offset: at, cause: error });
    }
    throw error;
  }
  if (size < regionBytes + META_SIZE) {
    throw new PersistentError(
      'ERR_PERSISTENT_CORRUPT',
      `truncated: the header describes ${pageCount} pages of ${pageSize} bytes (${regionBytes + META_SIZE} bytes with the metadata page) but the file has ${size}`,
      { path, offset: size },
    );
  }
  const meta = decodeMeta(pread(fd, META_SIZE, regionBytes), regionBytes, path);
  const mapping = mapFile(fd, regionBytes, writable, path);
  let ring: RingBuffer;
  try {
    ring = RingBuffer.attach(mapping.buffer, 0, regionBytes);
  } catch (error) {
    mapping.unmap();
    const at = error instanceof RingbufError ? (error.offset ?? 0) : 0;
    throw new PersistentError('ERR_PERSISTENT_CORRUPT', (error as Error).message.replace(/^byte \d+: /, ''), {
      path,
      offset: at,
      cause: error,
    });
  }
  return new PersistentBuffer(name, path, fd, mapping, ring, meta);
}

/**
 * Opens (and with `create`, first creates) the user-space buffer `name`. Any process may open it by name later,
 * read-write (to write, or to read consuming) or `readOnly` (snapshots; the mapping is read-only).
 *
 * ```ts
 * const buf = openPersistent('app/flight', { create: { size: 1 << 20, mode: 'overwrite' } });
 * const w = buf.writer();
 * const at = w.reserve(1, 8); w.view.setFloat64(at, 42, true); w.commit();
 * ```
 *
 * @throws PersistentError ERR_PERSISTENT_NAME, ERR_PERSISTENT_EXISTS, ERR_PERSISTENT_NOT_FOUND, ERR_PERSISTENT_PERMISSION (with the file's owner, group and
 * mode), ERR_PERSISTENT_CORRUPT (file and byte offset).
 */
export function openPersistent(name: string, options: OpenPersistentOptions = {}): PersistentBuffer {
  const base = bufferDir(options.dir);
  const path = bufferPath(name, base);
  if (options.create && options.readOnly) {
    throw new PersistentError('ERR_PERSISTENT_ARGUMENT', 'create and readOnly exclude each other');
  }
  if (options.create) {
    try {
      create(name, path, base, options.create);
    } catch (error) {
      if (!(options.reuse && error instanceof PersistentError && error.code === 'ERR_PERSISTENT_EXISTS')) throw error;
    }
  }
  const writable = !options.readOnly;
  let fd: number;
  try {
    fd = openSync(path, writable ? 'r+' : 'r');
  } catch (error) {
    const errno = (error as NodeJS.ErrnoException).code;
    if (errno === 'ENOENT') {
      throw new PersistentError('ERR_PERSISTENT_NOT_FOUND', `no buffer named ${name} (${path})`, { path, errno });
    }
    if (errno === 'EACCES' || errno === 'EPERM') throw permissionError(name, path, writable, errno, error);
    throw fsError(path, error, `cannot open buffer ${name}`);
  }
  try {
    return openFile(name, path, fd, writable);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

function permissionError(
  name: string,
  path: string,
  writable: boolean,
  errno: string,
  cause: unknown,
): PersistentError {
  let whose = '';
  try {
    const st = statSync(path);
    whose = ` (owner ${userName(st.uid)}, group ${groupName(st.gid)}, mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}; you are ${userName(process.getuid?.() ?? -1)})`;
  } catch {}
  return new PersistentError(
    'ERR_PERSISTENT_PERMISSION',
    `permission denied: cannot open buffer ${name} for ${writable ? 'writing' : 'reading'}: ${path}${whose}`,
    { path, errno, cause },
  );
}

/** Options of {@link deletePersistent}. */
export interface DeleteOptions {
  dir?: string;
  /** Delete even while a live process writes it (that process keeps its mapping until it ends). */
  force?: boolean;
}

/** Deletes the user-space buffer `name` and the namespace directories it leaves empty. */
export function deletePersistent(name: string, options: DeleteOptions = {}): void {
  const base = bufferDir(options.dir);
  const path = bufferPath(name, base);
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new PersistentError('ERR_PERSISTENT_NOT_FOUND', `no buffer named ${name} (${path})`, { path });
    }
    throw fsError(path, error, `cannot delete buffer ${name}`);
  }
  if (!options.force) {
    const w = findMappers(Number(st.dev), Number(st.ino)).writers.filter((p) => p !== process.pid);
    if (w.length > 0) {
      throw new PersistentError(
        'ERR_PERSISTENT_WRITER_BUSY',
        `${name}: process ${w.join(', ')} writes it (force deletes anyway)`,
        {
          path,
        },
      );
    }
  }
  try {
    unlinkSync(path);
  } catch (error) {
    throw fsError(path, error, `cannot delete buffer ${name}`);
  }
  for (let dir = dirname(path); dir !== base && dir.startsWith(base); dir = dirname(dir)) {
    try {
      rmdirSync(dir);
    } catch {
      break;
    }
  }
}
