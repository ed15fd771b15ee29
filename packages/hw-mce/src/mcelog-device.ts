/**
 * The legacy /dev/mcelog character device (CONFIG_X86_MCELOG_LEGACY). Its ABI is asked, not assumed: the record
 * length (`sizeof(struct mce)` of the running kernel), the log length (records per read) and the overflow flags come
 * from the device's ioctls, called through the koffi FFI (Node has no ioctl). A read must take the whole log at once,
 * so the buffer is `logLength × recordLength` bytes.
 */
import { closeSync, constants as fs, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type InputNote, MceError } from './errors.ts';
import { readStructMce } from './inputs/struct-mce.ts';
import type { MceRecord } from './record.ts';

/** The default device path. */
export const MCELOG_DEVICE = '/dev/mcelog';

/** Linux's `_IOR(type, nr, size)`: direction read (2) in bits 30-31, size in 16-29, type in 8-15, number in 0-7. */
export function ior(type: string, nr: number, size: number): number {
  return ((2 << 30) >>> 0) + size * 0x10000 + type.charCodeAt(0) * 0x100 + nr;
}

/** The ioctls of /dev/mcelog (arch/x86/include/uapi/asm/mce.h), each `_IOR('M', n, int)`. */
export const MCE_IOCTL = {
  /** `sizeof(struct mce)` of the running kernel. */
  getRecordLen: ior('M', 1, 4),
  /** Records the kernel's log holds (and a read must ask for). */
  getLogLen: ior('M', 2, 4),
  /** The log's flags, cleared by the call: bit 0 (MCE_OVERFLOW) says records were lost. */
  getClearFlags: ior('M', 3, 4),
} as const;

/** MCE_OVERFLOW of `struct mce_log`'s flags: the log was full and records were dropped. */
export const MCE_OVERFLOW = 1;

type Koffi = typeof import('koffi');
type Ioctl = (fd: number, request: number, type: string, arg: Buffer) => number;
let ffi: { koffi: Koffi; ioctl: Ioctl } | string | undefined;

function load(): { koffi: Koffi; ioctl: Ioctl } | string {
  if (ffi !== undefined) return ffi;
  try {
    const koffi = createRequire(import.meta.url)('koffi') as Koffi;
    const libc = koffi.load('libc.so.6');
    ffi = { koffi, ioctl: libc.func('int ioctl(int fd, unsigned long request, ...)') as Ioctl };
  } catch (error) {
    ffi = `the koffi FFI cannot load libc: ${(error as Error).message}`;
  }
  return ffi;
}

/** `ioctl(fd, request, &int)`; @throws MceError `ERR_MCE_SOURCE` naming the request and errno. */
function ioctlInt(fd: number, request: number, name: string, path: string): number {
  const f = load();
  if (typeof f === 'string') throw new MceError('ERR_MCE_SOURCE', `${name}: ${f}`, { location: { file: path } });
  const out = Buffer.alloc(4);
  if (f.ioctl(fd, request, 'void *', out) < 0) {
    const code = f.koffi.errno();
    const errno = Object.entries(f.koffi.os.errno).find(([, v]) => v === code)?.[0] ?? `errno ${code}`;
    const hint = errno === 'ENOTTY' ? ' (not an mcelog device)' : '';
    throw new MceError('ERR_MCE_SOURCE', `ioctl ${name} failed: ${errno}${hint}`, { location: { file: path } });
  }
  return out.readInt32LE(0);
}

/** What the device says about its ABI. */
export interface McelogAbi {
  /** Bytes per record (MCE_GET_RECORD_LEN). */
  readonly recordLength: number;
  /** Records per read (MCE_GET_LOG_LEN). */
  readonly logLength: number;
  /** The flags MCE_GETCLEAR_FLAGS returned (and cleared). */
  readonly flags: number;
}

export interface McelogRead extends McelogAbi {
  readonly records: MceRecord[];
  readonly notes: InputNote[];
}

function openDevice(path: string): number {
  try {
    return openSync(path, fs.O_RDONLY | fs.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? `no mcelog device: this kernel has no CONFIG_X86_MCELOG_LEGACY (or no machine-check support); read the mce:mce_record tracepoint instead`
        : `cannot open: ${code ?? error}`;
    throw new MceError('ERR_MCE_SOURCE', why, { location: { file: path }, cause: error });
  }
}

/** Asks an open mcelog device for its record length, log length and flags (clearing the flags). */
export function queryMcelog(fd: number, path = MCELOG_DEVICE): McelogAbi {
  const recordLength = ioctlInt(fd, MCE_IOCTL.getRecordLen, 'MCE_GET_RECORD_LEN', path);
  const logLength = ioctlInt(fd, MCE_IOCTL.getLogLen, 'MCE_GET_LOG_LEN', path);
  const flags = ioctlInt(fd, MCE_IOCTL.getClearFlags, 'MCE_GETCLEAR_FLAGS', path);
  if (recordLength <= 0 || recordLength > 4096 || logLength <= 0 || logLength > 1 << 16)
    throw new MceError(
      'ERR_MCE_SOURCE',
      `implausible ABI from the device: record length ${recordLength}, log length ${logLength}`,
      { location: { file: path } },
    );
  return { recordLength, logLength, flags };
}

/**
 * Reads the records waiting in /dev/mcelog, the ABI asked from the device. A lost-records overflow flag becomes a note.
 *
 * @throws MceError `ERR_MCE_SOURCE` when the device is absent (saying so), cannot be opened, or answers no ioctl.
 */
export function readMcelogDevice(options: { path?: string } = {}): McelogRead {
  const path = options.path ?? MCELOG_DEVICE;
  const fd = openDevice(path);
  try {
    const abi = queryMcelog(fd, path);
    const buf = Buffer.alloc(abi.recordLength * abi.logLength);
    let n = 0;
    try {
      n = readSync(fd, buf, 0, buf.length, null);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN')
        throw new MceError('ERR_MCE_SOURCE', `cannot read: ${(error as NodeJS.ErrnoException).code ?? error}`, {
          location: { file: path },
          cause: error,
        });
    }
    const r = readStructMce(buf.subarray(0, n), { recordLength: abi.recordLength, file: path });
    const notes = [...r.notes];
    if ((abi.flags & MCE_OVERFLOW) !== 0)
      notes.push({ location: { file: path }, message: 'the kernel log overflowed (MCE_OVERFLOW): records were lost' });
    return { ...abi, records: r.records, notes };
  } finally {
    closeSync(fd);
  }
}
