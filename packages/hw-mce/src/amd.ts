/**
 * AMD decoding. Zen (families 17h and later) uses Scalable MCA: each bank says what it is in MCA_IPID (HardwareID
 * bits 43:32, McaType bits 63:48), the extended error code XEC sits in MCA_STATUS bits 21:16, and a UMC bank's
 * channel is the instance id's top bits (IPID bits 31:20) with the chip select in MCA_SYND bits 2:0. Bank types and
 * XEC meanings are those of the AMD PPRs as the Linux kernel (drivers/edac/mce_amd.c) and rasdaemon
 * (mce-amd-smca.c) list them. Families 10h-16h name their banks by number.
 */
import { bits } from './bits.ts';
import type { ErrorClass } from './mca-code.ts';

export interface SmcaBank {
  /** Short name as the kernel spells it (`umc`, `ls`, `l3_cache`...). */
  readonly type: string;
  readonly name: string;
  readonly class: ErrorClass;
  /** Extended error code meanings, indexed by XEC. */
  readonly xec: readonly string[];
}

const LS = [
  'Load queue parity',
  'Store queue parity',
  'Miss address buffer payload parity',
  'L1 TLB parity',
  'DC Tag error type 5',
  'DC tag error type 6',
  'DC tag error type 1',
  'Internal error type 1',
  'Internal error type 2',
  'Sys Read data error thread 0',
  'Sys read data error thread 1',
  'DC tag error type 2',
  'DC data error type 1 (poison consumption)',
  'DC data error type 2',
  'DC data error type 3',
  'DC tag error type 4',
  'L2 TLB parity',
  'PDC parity error',
  'DC tag error type 3',
  'DC tag error type 5',
  'L2 fill data error',
];
const IF = [
  'microtag probe port parity error',
  'IC microtag or full tag multi-hit error',
  'IC full tag parity',
  'IC data array parity',
  'PRQ Parity Error',
  'L0 ITLB parity error',
  'L1-TLB parity error',
  'L2-TLB parity error',
  'BPQ snoop parity on Thread 0',
  'BPQ snoop parity on Thread 1',
  'BP L1-BTB Multi-Hit Error',
  'BP L2-BTB Multi-Hit Error',
  'L2 Cache Response Poison error',
  'System Read Data error',
];
const L2 = [
  'L2M Tag Multiple-Way-Hit error',
  'L2M Tag or State Array ECC Error',
  'L2M Data Array ECC Error',
  'Hardware Assert Error',
];
const DE = [
  'Micro-op cache tag array parity error',
  'Micro-op cache data array parity error',
  'IBB Register File parity error',
  'Micro-op queue parity error',
  'Instruction dispatch queue parity error',
  'Fetch address FIFO parity error',
  'Patch RAM data parity error',
  'Patch RAM sequencer parity error',
  'Micro-op fetch queue parity error',
  'Hardware Assertion MCA Error',
];
const EX = [
  'Watchdog timeout error',
  'Physical register file parity error',
  'Flag register file parity error',
  'Immediate displacement register file parity error',
  'Address generator payload parity error',
  'EX payload parity error',
  'Checkpoint queue parity error',
  'Retire dispatch queue parity error',
  'Retire status queue parity error',
  'Scheduler queue parity error',
  'Branch buffer queue parity error',
  'Hardware Assertion error',
];
const FP = [
  'Physical register file (PRF) parity error',
  'Freelist (FL) parity error',
  'Schedule queue parity error',
  'NSQ parity error',
  'Retire queue (RQ) parity error',
  'Status register file (SRF) parity error',
  'Hardware assertion',
];
const L3 = [
  'Shadow tag macro ECC error',
  'Shadow tag macro multi-way-hit error',
  'L3M tag ECC error',
  'L3M tag multi-way-hit error',
  'L3M data ECC error',
  'SDP Parity Error from XI',
  'L3 victim queue Data Fabric error',
  'L3 Hardware Assertion',
];
const CS = [
  'Illegal request',
  'Address violation',
  'Security violation',
  'Illegal response',
  'Unexpected response',
  'Request or Probe Parity Error',
  'Read Response Parity Error',
  'Atomic request parity error',
  'Probe Filter ECC Error',
];
const PIE = [
  'Hardware assert',
  'Register security violation',
  'Link error',
  'Poison data consumption',
  'A deferred error was detected in the DF',
];
const UMC = [
  'DRAM ECC error',
  'Data poison error on DRAM',
  'SDP parity error',
  'Advanced peripheral bus error',
  'Command/address parity error',
  'Write data CRC error',
  'DCQ SRAM ECC error',
  'AES SRAM ECC error',
  'ECS Row Error',
  'ECS Error',
  'UMC Throttling Error',
  'Read CRC Error',
];

function bank(type: string, name: string, cls: ErrorClass, xec: readonly string[] = []): SmcaBank {
  return { type, name, class: cls, xec };
}

/** SMCA bank types by (HardwareID << 16 | McaType). */
const SMCA: ReadonlyMap<number, SmcaBank> = new Map([
  [0xb0_0000, bank('ls', 'Load Store Unit', 'cache', LS)],
  [0xb0_0010, bank('ls_v2', 'Load Store Unit', 'cache')],
  [0xb0_0001, bank('if', 'Instruction Fetch Unit', 'cache', IF)],
  [0xb0_0002, bank('l2_cache', 'L2 Cache', 'cache', L2)],
  [0xb0_0003, bank('de', 'Decode Unit', 'internal', DE)],
  [0xb0_0005, bank('ex', 'Execution Unit', 'internal', EX)],
  [0xb0_0006, bank('fp', 'Floating Point Unit', 'internal', FP)],
  [0xb0_0007, bank('l3_cache', 'L3 Cache', 'cache', L3)],
  [0x2e_0000, bank('cs', 'Coherent Slave', 'bus', CS)],
  [0x2e_0001, bank('pie', 'Power, Interrupts, etc.', 'bus', PIE)],
  [0x2e_0002, bank('cs_v2', 'Coherent Slave', 'bus')],
  [0x2e_0004, bank('ma_llc', 'Memory Attached Last Level Cache', 'cache')],
  [0x96_0000, bank('umc', 'Unified Memory Controller', 'memory-controller', UMC)],
  [0x96_0001, bank('umc_v2', 'Unified Memory Controller V2', 'memory-controller')],
  [0x05_0000, bank('pb', 'Parameter Block', 'internal')],
  [0xff_0000, bank('psp', 'Platform Security Processor', 'internal')],
  [0xff_0001, bank('psp_v2', 'Platform Security Processor', 'internal')],
  [0x01_0000, bank('smu', 'System Management Unit', 'internal')],
  [0x01_0001, bank('smu_v2', 'System Management Unit', 'internal')],
  [0x01_0002, bank('mp5', 'Microprocessor 5 Unit', 'internal')],
  [0x01_0003, bank('mpdma', 'MPDMA Unit', 'internal')],
  [0x18_0000, bank('nbio', 'Northbridge IO Unit', 'io')],
  [0x46_0000, bank('pcie', 'PCI Express Unit', 'io')],
  [0x46_0001, bank('pcie_v2', 'PCI Express Unit', 'io')],
  [0x50_0000, bank('xgmi_pcs', 'Ext Global Memory Interconnect PCS Unit', 'bus')],
  [0x6c_0000, bank('nbif', 'NBIF Unit', 'io')],
  [0x80_0000, bank('shub', 'System Hub Unit', 'io')],
  [0xa8_0000, bank('sata', 'SATA Unit', 'io')],
  [0xaa_0000, bank('usb', 'USB Unit', 'io')],
  [0x170_0000, bank('usr_dp', 'Ultra Short Reach Data Plane Controller', 'bus')],
  [0x180_0000, bank('usr_cp', 'Ultra Short Reach Control Plane Controller', 'bus')],
  [0x241_0000, bank('gmi_pcs', 'Global Memory Interconnect PCS Unit', 'bus')],
  [0x259_0000, bank('xgmi_phy', 'Ext Global Memory Interconnect PHY Unit', 'bus')],
  [0x267_0000, bank('wafl_phy', 'WAFL PHY Unit', 'bus')],
  [0x269_0000, bank('gmi_phy', 'Global Memory Interconnect PHY Unit', 'bus')],
]);

export interface AmdDecoding {
  readonly bankName: string;
  /** The unit's name without the bank number (`Unified Memory Controller`), when the bank type is known. */
  readonly unit?: string;
  readonly bankType?: string;
  readonly class?: ErrorClass;
  readonly xec: number;
  readonly xecText?: string;
  readonly channel?: number;
  readonly chipSelect?: number;
  /** The node (socket) the IPID's InstanceIdHi names, when set. */
  readonly unknown?: string;
}

/** Decodes an AMD Scalable MCA record from its IPID, status and syndrome. */
export function decodeSmca(bankNo: number, status: bigint, ipid: bigint, synd: bigint): AmdDecoding {
  const xec = bits(status, 16, 21);
  if (ipid === 0n) {
    return {
      bankName: `bank ${bankNo}`,
      xec,
      unknown: 'no MCA_IPID in the record: the SMCA bank type (and so the extended error code) cannot be decoded',
    };
  }
  const hwid = bits(ipid, 32, 43);
  const mcaType = bits(ipid, 48, 63);
  const b = SMCA.get(hwid * 0x10000 + mcaType);
  if (b === undefined) {
    return {
      bankName: `bank ${bankNo}`,
      xec,
      unknown: `unknown SMCA bank type (IPID HardwareID 0x${hwid.toString(16)}, McaType 0x${mcaType.toString(16)})`,
    };
  }
  const xecText = b.xec[xec];
  const umc = b.type === 'umc' && xec === 0;
  // One literal (no spreads): this runs per record.
  return {
    bankName: `${b.name} (bank ${bankNo})`,
    unit: b.name,
    bankType: b.type,
    class: b.class,
    xec,
    xecText,
    channel: umc ? bits(ipid, 20, 31) : undefined,
    chipSelect: umc ? bits(synd, 0, 2) : undefined,
    unknown:
      xecText === undefined && b.xec.length > 0
        ? `extended error code ${xec} of the ${b.type} bank is not known`
        : b.xec.length === 0
          ? `extended error codes of the ${b.type} bank are not decoded`
          : undefined,
  };
}

const LEGACY_BANKS = [
  'Data Cache',
  'Instruction Cache',
  'Bus Unit',
  'Load Store Unit',
  'Northbridge',
  'Execution Unit',
  'Floating Point Unit',
];

/** AMD families 0Fh-16h: banks are fixed by number. */
export function decodeLegacyAmd(bankNo: number, status: bigint): AmdDecoding {
  const xec = bits(status, 16, 20);
  const name = LEGACY_BANKS[bankNo];
  return name === undefined
    ? { bankName: `bank ${bankNo}`, xec, unknown: `bank ${bankNo} is not a known bank of these AMD families` }
    : { bankName: `${name} (bank ${bankNo})`, xec };
}
