/**
 * One machine-check record as every input yields it: the registers of the bank that reported the error and what the
 * kernel knew about the CPU. Field names follow the kernel's `struct mce` (arch/x86/include/uapi/asm/mce.h).
 */

/** The kernel's X86_VENDOR_* numbers, as `struct mce.cpuvendor` carries them. */
export const X86_VENDOR = {
  intel: 0,
  cyrix: 1,
  amd: 2,
  umc: 3,
  centaur: 5,
  transmeta: 7,
  nsc: 8,
  hygon: 9,
  zhaoxin: 10,
} as const;

/** The input kinds this package reads. */
export type InputKind =
  | 'mcelog-ascii'
  | 'kernel-log'
  | 'journal-json'
  | 'journal-export'
  | 'trace-text'
  | 'struct-mce'
  | 'trace'
  | 'rasdaemon-db'
  | 'edac-sysfs';

/** Where a record came from. */
export interface RecordSource {
  readonly kind: InputKind;
  readonly file?: string | undefined;
  /** 1-based first line of the record in text inputs. */
  readonly line?: number | undefined;
  /** Byte offset of the record in binary inputs. */
  readonly offset?: number | undefined;
}

export interface MceRecord {
  /** Linux CPU number that saw the error (`extcpu`). */
  cpu: number;
  bank: number;
  /** MCi_STATUS. */
  status: bigint;
  /** MCi_MISC (meaningful when STATUS.MISCV). */
  misc: bigint;
  /** MCi_ADDR (meaningful when STATUS.ADDRV). */
  addr: bigint;
  /** IA32_MCG_STATUS. */
  mcgstatus: bigint;
  /** IA32_MCG_CAP; 0 when the input did not carry it. */
  mcgcap: bigint;
  /** Instruction pointer and code segment at the error (0 when unknown). */
  ip: bigint;
  cs: number;
  tsc: bigint;
  /** Wall time in seconds since the epoch (0 when unknown). */
  time: bigint;
  /** Kernel X86_VENDOR number; undefined when the input did not say. */
  cpuvendor: number | undefined;
  /** CPUID leaf 1 EAX (family, model, stepping); 0 when unknown. */
  cpuid: number;
  socketid: number | undefined;
  apicid: number | undefined;
  /** AMD SMCA MCA_SYND and MCA_IPID (0 elsewhere). */
  synd: bigint;
  ipid: bigint;
  /** AMD MCA_SYND1 and MCA_SYND2 (the kernel's vendor data on newer SMCA parts: FRU text), when the input has them. */
  synd1?: bigint;
  synd2?: bigint;
  /** Protected Processor Inventory Number (0 when unknown). */
  ppin: bigint;
  microcode: number;
  source: RecordSource;
}

/** A record with every register zero, for readers to fill in. */
export function emptyRecord(source: RecordSource): MceRecord {
  return {
    cpu: 0,
    bank: 0,
    status: 0n,
    misc: 0n,
    addr: 0n,
    mcgstatus: 0n,
    mcgcap: 0n,
    ip: 0n,
    cs: 0,
    tsc: 0n,
    time: 0n,
    cpuvendor: undefined,
    cpuid: 0,
    socketid: undefined,
    apicid: undefined,
    synd: 0n,
    ipid: 0n,
    ppin: 0n,
    microcode: 0,
    source,
  };
}

/** `0x`-prefixed lower-case hex of a register. */
export function hex(v: bigint | number): string {
  return `0x${v.toString(16)}`;
}
