/**
 * The binary `struct mce` of the /dev/mcelog ABI (arch/x86/include/uapi/asm/mce.h). The kernel only ever appends
 * fields, so a record of any length holds the fields whose offsets fit: 88 bytes up to `mcgcap` (2.6.31), 104 with
 * `synd`/`ipid` (4.9), 120 with `ppin` and `microcode`, 128 with `kflags` today. The device reports the length through
 * the MCE_GET_RECORD_LEN ioctl; a saved dump says it with {@link StructMceOptions.recordLength} or is probed
 * ({@link probeRecordLength}).
 */
import type { InputNote } from '../errors.ts';
import { MceError } from '../errors.ts';
import type { MceRecord } from '../record.ts';

/** Field offsets of `struct mce` (x86-64). */
export const STRUCT_MCE = {
  status: 0,
  misc: 8,
  addr: 16,
  mcgstatus: 24,
  ip: 32,
  tsc: 40,
  time: 48,
  cpuvendor: 56,
  inject_flags: 57,
  severity: 58,
  cpuid: 60,
  cs: 64,
  bank: 65,
  cpu: 66,
  finished: 67,
  extcpu: 68,
  socketid: 72,
  apicid: 76,
  mcgcap: 80,
  synd: 88,
  ipid: 96,
  ppin: 104,
  microcode: 112,
  kflags: 120,
  /** sizeof(struct mce) on current kernels. */
  size: 128,
} as const;

/** Shortest record the ABI ever had (fields up to `mcgcap`). */
export const MIN_RECORD_LENGTH = 88;

export interface StructMceOptions {
  /** Bytes per record as MCE_GET_RECORD_LEN reports it. Default: probed from the data. */
  readonly recordLength?: number;
  readonly file?: string;
  /** File offset of `bytes[0]`, for messages. */
  readonly fileOffset?: number;
}

export interface StructMceResult {
  readonly records: MceRecord[];
  readonly notes: InputNote[];
  readonly recordLength: number;
}

const CANDIDATES = [128, 120, 104, 88];

/**
 * Guesses the record length of a dump: the candidate length that divides the data and for which every record's
 * `finished` byte is 1 (the kernel sets it on each logged record). Falls back to the current 128.
 */
export function probeRecordLength(bytes: Uint8Array): number {
  for (const len of CANDIDATES) {
    if (bytes.length === 0 || bytes.length % len !== 0) continue;
    let ok = true;
    for (let at = 0; at < bytes.length; at += len) {
      if (bytes[at + STRUCT_MCE.finished] !== 1) {
        ok = false;
        break;
      }
    }
    if (ok) return len;
  }
  return STRUCT_MCE.size;
}

/**
 * Reads consecutive records. A trailing partial record, and records whose `finished` byte is 0 (the kernel was still
 * writing them), are reported as notes with their byte offset; all whole records are returned.
 * @throws MceError `ERR_MCE_RECORD` when the record length is below the oldest ABI's; `ERR_MCE_INPUT` when the bytes
 * show no evidence of being struct mce records (see {@link requireEvidence}).
 */
export function readStructMce(bytes: Uint8Array, options: StructMceOptions = {}): StructMceResult {
  const len = options.recordLength ?? probeRecordLength(bytes);
  const file = options.file;
  const base = options.fileOffset ?? 0;
  if (!Number.isInteger(len) || len < MIN_RECORD_LENGTH) {
    throw new MceError(
      'ERR_MCE_RECORD',
      `record length ${len} is shorter than any struct mce (${MIN_RECORD_LENGTH} bytes)`,
      {
        location: { file },
      },
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const records: MceRecord[] = [];
  const notes: InputNote[] = [];
  const whole = bytes.length - (bytes.length % len);
  requireEvidence(view, whole, len, file, base);
  for (let at = 0; at < whole; at += len) {
    if (bytes[at + STRUCT_MCE.finished] !== 1) {
      notes.push({
        location: { file, offset: base + at },
        message: 'record not finished by the kernel (finished = 0): skipped',
      });
      continue;
    }
    records.push(structMceAt(view, at, len, { kind: 'struct-mce', file, offset: base + at }));
  }
  if (whole < bytes.length) {
    notes.push({
      location: { file, offset: base + whole },
      message: `truncated record: ${bytes.length - whole} of ${len} bytes: skipped`,
    });
  }
  return { records, notes, recordLength: len };
}

/** MCG_STATUS bits the architecture defines (RIPV, EIPV, MCIP, LMCE_S); the others read as zero. */
const MCG_STATUS_DEFINED = 0xfn;

/**
 * The evidence that bytes are struct mce records before any is reported: a first finished record whose MCi_STATUS
 * has VAL set (the kernel logs no other) and whose MCG_STATUS sets no reserved bit. Random bytes pass by chance
 * about once in 2^69.
 * @throws MceError `ERR_MCE_INPUT` at the offset of the record that fails, or of the input when none is finished.
 */
function requireEvidence(view: DataView, whole: number, len: number, file: string | undefined, base: number): void {
  let at = 0;
  while (at < whole && view.getUint8(at + STRUCT_MCE.finished) !== 1) at += len;
  const expected = 'expected struct mce records (finished = 1, MCi_STATUS.VAL set, no reserved MCG_STATUS bit)';
  if (at >= whole)
    throw new MceError('ERR_MCE_INPUT', `no finished ${len}-byte record: ${expected}`, {
      location: { file, offset: base },
    });
  const valid = view.getBigUint64(at + STRUCT_MCE.status, true) >> 63n === 1n;
  const mcg = view.getBigUint64(at + STRUCT_MCE.mcgstatus, true);
  if (!valid || (mcg & ~MCG_STATUS_DEFINED) !== 0n)
    throw new MceError(
      'ERR_MCE_INPUT',
      `not a machine-check record (${valid ? `MCG_STATUS 0x${mcg.toString(16)}` : 'MCi_STATUS.VAL clear'}): ${expected}`,
      { location: { file, offset: base + at } },
    );
}

/** Reads one record of `len` bytes at `at`; fields beyond `len` stay unknown. */
export function structMceAt(view: DataView, at: number, len: number, source: MceRecord['source']): MceRecord {
  // Most registers of a record are zero (IP, SYND, IPID on Intel, PPIN...): they share the 0n constant instead of
  // each allocating a BigInt. The record is built in one literal, in MceRecord's field order (one hidden class).
  const u64 = (o: number) =>
    o + 8 > len || (view.getUint32(at + o, true) === 0 && view.getUint32(at + o + 4, true) === 0)
      ? 0n
      : view.getBigUint64(at + o, true);
  const extcpu = view.getUint32(at + STRUCT_MCE.extcpu, true);
  return {
    cpu: extcpu !== 0 ? extcpu : view.getUint8(at + STRUCT_MCE.cpu),
    bank: view.getUint8(at + STRUCT_MCE.bank),
    status: u64(STRUCT_MCE.status),
    misc: u64(STRUCT_MCE.misc),
    addr: u64(STRUCT_MCE.addr),
    mcgstatus: u64(STRUCT_MCE.mcgstatus),
    mcgcap: u64(STRUCT_MCE.mcgcap),
    ip: u64(STRUCT_MCE.ip),
    cs: view.getUint8(at + STRUCT_MCE.cs),
    tsc: u64(STRUCT_MCE.tsc),
    time: u64(STRUCT_MCE.time),
    cpuvendor: view.getUint8(at + STRUCT_MCE.cpuvendor),
    cpuid: view.getUint32(at + STRUCT_MCE.cpuid, true),
    socketid: view.getUint32(at + STRUCT_MCE.socketid, true),
    apicid: view.getUint32(at + STRUCT_MCE.apicid, true),
    synd: len >= STRUCT_MCE.ipid + 8 ? u64(STRUCT_MCE.synd) : 0n,
    ipid: u64(STRUCT_MCE.ipid),
    ppin: u64(STRUCT_MCE.ppin),
    microcode: len >= STRUCT_MCE.microcode + 4 ? view.getUint32(at + STRUCT_MCE.microcode, true) : 0,
    source,
  };
}

/** Encodes records as the kernel writes them (for tests, fixtures and `mce-inject`-style replay). */
export function encodeStructMce(records: readonly MceRecord[], recordLength: number = STRUCT_MCE.size): Buffer {
  const out = Buffer.alloc(records.length * recordLength);
  const v = new DataView(out.buffer, out.byteOffset, out.byteLength);
  records.forEach((r, i) => {
    const at = i * recordLength;
    const put64 = (o: number, x: bigint) => {
      if (o + 8 <= recordLength) v.setBigUint64(at + o, x, true);
    };
    put64(STRUCT_MCE.status, r.status);
    put64(STRUCT_MCE.misc, r.misc);
    put64(STRUCT_MCE.addr, r.addr);
    put64(STRUCT_MCE.mcgstatus, r.mcgstatus);
    put64(STRUCT_MCE.ip, r.ip);
    put64(STRUCT_MCE.tsc, r.tsc);
    put64(STRUCT_MCE.time, r.time);
    v.setUint8(at + STRUCT_MCE.cpuvendor, r.cpuvendor ?? 0);
    v.setUint32(at + STRUCT_MCE.cpuid, r.cpuid, true);
    v.setUint8(at + STRUCT_MCE.cs, r.cs);
    v.setUint8(at + STRUCT_MCE.bank, r.bank);
    v.setUint8(at + STRUCT_MCE.cpu, r.cpu & 0xff);
    v.setUint8(at + STRUCT_MCE.finished, 1);
    v.setUint32(at + STRUCT_MCE.extcpu, r.cpu, true);
    v.setUint32(at + STRUCT_MCE.socketid, r.socketid ?? 0, true);
    v.setUint32(at + STRUCT_MCE.apicid, r.apicid ?? 0, true);
    put64(STRUCT_MCE.mcgcap, r.mcgcap);
    put64(STRUCT_MCE.synd, r.synd);
    put64(STRUCT_MCE.ipid, r.ipid);
    put64(STRUCT_MCE.ppin, r.ppin);
    if (STRUCT_MCE.microcode + 4 <= recordLength) v.setUint32(at + STRUCT_MCE.microcode, r.microcode, true);
  });
  return out;
}
