/**
 * Asking the kernel itself, through perf_event_open(2) called over the koffi FFI, whether it can trace branches:
 * an `intel_bts` event (the PMU type from sysfs) or a cycles event sampling LBR branch stacks. The file descriptor is
 * closed at once; what matters is the kernel's answer (an errno name) when it says no.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/** What the kernel said to one perf_event_open. */
export interface PerfEventProbe {
  /** What was asked for. */
  readonly what: string;
  readonly ok: boolean;
  /** The errno name when it refused (ENOENT: no such PMU or event, EOPNOTSUPP: no branch sampling, EACCES...). */
  readonly errno?: string;
  /** Why the probe could not ask (no FFI, unknown architecture, no PMU type in sysfs). */
  readonly why?: string;
}

const SYS_PERF_EVENT_OPEN: Readonly<Record<string, number>> = { x64: 298, arm64: 241, ia32: 336 };
const ATTR_SIZE = 128;
const PERF_TYPE_HARDWARE = 0;
const SAMPLE_IP = 1n;
const SAMPLE_BRANCH_STACK = 1n << 11n;
const BRANCH_USER = 1n;
const BRANCH_ANY = 1n << 3n;
// perf_event_attr flag bits: disabled, exclude_kernel, exclude_hv.
const FLAGS = (1n << 0n) | (1n << 5n) | (1n << 6n);

type Koffi = typeof import('koffi');
let ffi: { koffi: Koffi; syscall: (...args: unknown[]) => number; close: (fd: number) => number } | string | undefined;

function load(): Exclude<typeof ffi, undefined> {
  if (ffi !== undefined) return ffi;
  try {
    const koffi = createRequire(import.meta.url)('koffi') as Koffi;
    const libc = koffi.load('libc.so.6');
    ffi = {
      koffi,
      syscall: libc.func('long syscall(long number, ...)') as (...args: unknown[]) => number,
      close: libc.func('int close(int fd)') as (fd: number) => number,
    };
  } catch (error) {
    ffi = `the koffi FFI cannot load libc: ${(error as Error).message}`;
  }
  return ffi;
}

function attr(type: number, config: bigint, sampleType: bigint, period: bigint, branchType: bigint): Buffer {
  const b = Buffer.alloc(ATTR_SIZE);
  b.writeUInt32LE(type, 0);
  b.writeUInt32LE(ATTR_SIZE, 4);
  b.writeBigUInt64LE(config, 8);
  b.writeBigUInt64LE(period, 16);
  b.writeBigUInt64LE(sampleType, 24);
  b.writeBigUInt64LE(FLAGS, 40);
  b.writeBigUInt64LE(branchType, 72);
  return b;
}

function open(what: string, a: Buffer): PerfEventProbe {
  const f = load();
  if (typeof f === 'string') return { what, ok: false, why: f };
  const nr = SYS_PERF_EVENT_OPEN[process.arch];
  if (nr === undefined || process.platform !== 'linux')
    return { what, ok: false, why: `perf_event_open is not known on ${process.platform}/${process.arch}` };
  // pid 0 (this process), cpu -1 (any), no group, no flags.
  const fd = Number(f.syscall(nr, 'void *', a, 'int', 0, 'int', -1, 'int', -1, 'unsigned long', 0));
  if (fd >= 0) {
    f.close(fd);
    return { what, ok: true };
  }
  const code = f.koffi.errno();
  const errno = Object.entries(f.koffi.os.errno).find(([, v]) => v === code)?.[0] ?? `errno ${code}`;
  return { what, ok: false, errno };
}

/** Opens (and closes) an `intel_bts` event for this process. */
export function probeBts(devices = '/sys/bus/event_source/devices'): PerfEventProbe {
  const what = 'perf_event_open(intel_bts, user space)';
  let type: number;
  try {
    type = Number(readFileSync(`${devices}/intel_bts/type`, 'utf8').trim());
  } catch (error) {
    return {
      what,
      ok: false,
      why: `no intel_bts PMU type: ${devices}/intel_bts/type: ${(error as NodeJS.ErrnoException).code}`,
    };
  }
  return open(what, attr(type, 0n, 0n, 1n, 0n));
}

/** Opens (and closes) a cycles event sampling LBR branch stacks of user space for this process. */
export function probeLbr(): PerfEventProbe {
  return open(
    'perf_event_open(cycles sampling branch stacks, user space)',
    attr(PERF_TYPE_HARDWARE, 0n, SAMPLE_IP | SAMPLE_BRANCH_STACK, 100_000n, BRANCH_ANY | BRANCH_USER),
  );
}

/** One line for messages: `WHAT: ok`, `WHAT: the kernel says ERRNO`, or `WHAT: not asked (WHY)`. */
export function describeProbe(p: PerfEventProbe): string {
  if (p.ok) return `${p.what}: ok`;
  return p.errno !== undefined ? `${p.what}: the kernel says ${p.errno}` : `${p.what}: not asked (${p.why})`;
}
