/**
 * AMD Zen (families 17h and later) Scalable MCA. Each bank says what it is in MCA_IPID: HardwareID (bits 43:32) and
 * McaType (bits 63:48) name the bank type, the instance id (bits 31:0) which instance; the extended error code XEC
 * sits in MCA_STATUS bits 21:16. The bank type decides what failed, so it decides the class and the part to replace:
 * a Unified Memory Controller's DRAM errors are memory errors located to channel (IPID bits 31:20) and chip select
 * (MCA_SYND bits 2:0), whatever the generic MCA code says. Bank names and XEC meanings are the AMD PPRs' as the
 * Linux kernel (arch/x86/kernel/cpu/mce/amd.c, drivers/edac/mce_amd.c) and rasdaemon (mce-amd-smca.c) list them.
 * Families 0Fh-16h are decoded in `amd-legacy.ts`.
 */
import { bit, bits } from './bits.ts';
import type { ErrorClass } from './mca-code.ts';

export interface SmcaBank {
  /** The bank type, as the SMCA_* names of the kernel and rasdaemon spell it in lower case (`umc`, `ls`, `l3_cache`...). */
  readonly type: string;
  readonly name: string;
  readonly class: ErrorClass;
  /** Extended error code meanings, indexed by XEC (`Reserved` where the PPR reserves the code). */
  readonly xec: readonly string[];
  /** XECs whose fault lies elsewhere than the bank's class says (a memory controller's own SRAM is the CPU's). */
  readonly xecClass?: Readonly<Record<number, ErrorClass>>;
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
  'Error on SCB cacheline state or address field',
  'Error on SCB data, commit pipe 0',
  'Error on SCB data, commit pipe 1',
  'Error on SCB data for non-cacheable DRAM or IO',
  'System Read Data Error detected by write combine buffer',
  'Hardware Asserts',
];
const LS_V2 = [
  'An ECC error was detected on a data cache read by a probe or victimization',
  'An ECC error or L2 poison was detected on a data cache read by a load',
  'An ECC error was detected on a data cache read-modify-write by a store',
  'An ECC error or poison bit mismatch was detected on a tag read by a probe or victimization',
  'An ECC error or poison bit mismatch was detected on a tag read by a load',
  'An ECC error or poison bit mismatch was detected on a tag read by a store',
  'An ECC error was detected on an EMEM read by a load',
  'An ECC error was detected on an EMEM read-modify-write by a store',
  'A parity error was detected in an L1 TLB entry by any access',
  'A parity error was detected in an L2 TLB entry by any access',
  'A parity error was detected in a PWC entry by any access',
  'A parity error was detected in an STQ entry by any access',
  'A parity error was detected in an LDQ entry by any access',
  'A parity error was detected in a MAB entry by any access',
  'A parity error was detected in an SCB entry state field by any access',
  'A parity error was detected in an SCB entry address field by any access',
  'A parity error was detected in an SCB entry data field by any access',
  'A parity error was detected in a WCB entry by any access',
  'A poisoned line was detected in an SCB entry by any access',
  'A SystemReadDataError error was reported on read data returned from L2 for a load',
  'A SystemReadDataError error was reported on read data returned from L2 for an SCB store',
  'A SystemReadDataError error was reported on read data returned from L2 for a WCB store',
  'A hardware assertion error was reported',
  'A parity error was detected in an STLF, SCB EMEM entry, store data mask or SRB store data by any access',
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
  'Hardware Assertion Error',
  'L1-TLB Multi-Hit',
  'L2-TLB Multi-Hit',
  'BSR Parity Error',
  'CT MCE',
];
const L2 = [
  'L2M Tag Multiple-Way-Hit error',
  'L2M Tag or State Array ECC Error',
  'L2M Data Array ECC Error',
  'Hardware Assert Error',
  'SDP Read Response Parity Error',
  'Error initiated by programmable state machine',
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
  'Spec Map parity error',
  'Retire Map parity error',
];
const FP = [
  'Physical register file (PRF) parity error',
  'Freelist (FL) parity error',
  'Schedule queue parity error',
  'NSQ parity error',
  'Retire queue (RQ) parity error',
  'Status register file (SRF) parity error',
  'Hardware assertion',
  'Physical K mask register file (KRF) parity error',
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
  'XI WCB Parity Poison Creation event',
  'Machine check error initiated by DSM action',
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
const CS_V2_HEAD = [
  'Illegal Request',
  'Address Violation',
  'Security Violation',
  'Illegal Response',
  'Unexpected Response',
  'Request or Probe Parity Error',
  'Read Response Parity Error',
  'Atomic Request Parity Error',
  'SDP read response had no match in the CS queue',
];
const CS_V2 = [
  ...CS_V2_HEAD,
  'Probe Filter Protocol Error',
  'Probe Filter ECC Error',
  'SDP read response had an unexpected RETRY error',
  'Counter overflow error',
  'Counter underflow error',
  'Illegal Request on the no data channel',
  'Address Violation on the no data channel',
  'Security Violation on the no data channel',
  'Hardware Assert Error',
  'Shadow Tag Array Protocol Error',
  'Shadow Tag ECC Error',
  'Shadow Tag Transaction Error',
];
/** Genoa, Bergamo, Siena and Turin dense (revision guide erratum 1384) report CS errors under reassigned codes. */
const CS_V2_ERRATUM = [
  ...CS_V2_HEAD,
  'SDP read response had an unexpected RETRY error',
  'Counter overflow error',
  'Counter underflow error',
  'Probe Filter Protocol Error',
  'Probe Filter ECC Error',
  'Illegal Request on the no data channel',
  'Address Violation on the no data channel',
  'Security Violation on the no data channel',
  'Hardware Assert Error',
];
const PIE = [
  'Hardware assert',
  'Register security violation',
  'Link error',
  'Poison data consumption',
  'A deferred error was detected in the DF',
  'Watch Dog Timer',
  'An SRAM ECC error was detected in the CNLI block',
  'Register access during DF Cstate',
  'DSM Error',
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
  'Reserved',
  'Reserved',
  'Reserved',
  'Reserved',
  'RFM SRAM ECC error',
];
/** MI300's memory controllers (family 19h models 90h-9Fh) with on-package HBM. */
const UMC_HBM = [
  'DRAM On Die ECC error',
  'Data poison error',
  'SDP parity error',
  'Reserved',
  'Address/Command parity error',
  'HBM Write data parity error',
  'Consolidated SRAM ECC error',
  'Reserved',
  'Reserved',
  'Rdb SRAM ECC error',
  'Thermal throttling',
  'HBM Read Data Parity error',
  'Reserved',
  'UMC FW Error',
  'SRAM Parity Error',
  'HBM CRC Error',
];
const UMC_V2 = [
  'DRAM ECC error',
  'Data poison error',
  'SDP parity error',
  'Reserved',
  'Address/Command parity error',
  'Write data parity error',
  'DCQ SRAM ECC error',
  'Reserved',
  'Read data parity error',
  'Rdb SRAM ECC error',
  'RdRsp SRAM ECC error',
  'LM32 MP errors',
];
const MA_LLC = [
  'Counter overflow error',
  'Counter underflow error',
  'Write Data Parity Error',
  'Read Response Parity Error',
  'Cache Tag ECC Error Macro 0',
  'Cache Tag ECC Error Macro 1',
  'Cache Data ECC Error',
];
const PB = ['An ECC error in the Parameter Block RAM array'];
const PSP = ['An ECC or parity error in a PSP RAM instance'];
const PSP_V2 = [
  'High SRAM ECC or parity error',
  'Low SRAM ECC or parity error',
  'Instruction Cache Bank 0 ECC or parity error',
  'Instruction Cache Bank 1 ECC or parity error',
  'Instruction Tag Ram 0 parity error',
  'Instruction Tag Ram 1 parity error',
  'Data Cache Bank 0 ECC or parity error',
  'Data Cache Bank 1 ECC or parity error',
  'Data Cache Bank 2 ECC or parity error',
  'Data Cache Bank 3 ECC or parity error',
  'Data Tag Bank 0 parity error',
  'Data Tag Bank 1 parity error',
  'Data Tag Bank 2 parity error',
  'Data Tag Bank 3 parity error',
  'Dirty Data Ram parity error',
  'TLB Bank 0 parity error',
  'TLB Bank 1 parity error',
  'System Hub Read Buffer ECC or parity error',
  'FUSE IP SRAM ECC or parity error',
  'PCRU FUSE SRAM ECC or parity error',
  'SIB SRAM parity error',
  'mpASP SECEMC Error',
  'mpASP A5 Hang',
  'SIB WDT error',
];
const SMU = ['An ECC or parity error in an SMU RAM instance'];
/** The microcontrollers' caches: SMU v2, MP5 and MPDMA list the same arrays. */
const MP_CACHES = [
  'Data Cache Bank A ECC or parity error',
  'Data Cache Bank B ECC or parity error',
  'Data Tag Cache Bank A ECC or parity error',
  'Data Tag Cache Bank B ECC or parity error',
  'Instruction Cache Bank A ECC or parity error',
  'Instruction Cache Bank B ECC or parity error',
  'Instruction Tag Cache Bank A ECC or parity error',
  'Instruction Tag Cache Bank B ECC or parity error',
];
const MP_SRAM = ['High SRAM ECC or parity error', 'Low SRAM ECC or parity error'];
const SMU_V2 = [
  ...MP_SRAM,
  ...MP_CACHES,
  'System Hub Read Buffer ECC or parity error',
  'PHY RAS ECC Error',
  ...Array.from({ length: 46 }, () => 'Reserved'),
  'A correctable error from a GFX Sub-IP',
  'A fatal error from a GFX Sub-IP',
  'Reserved',
  'Reserved',
  'A poison error from a GFX Sub-IP',
  'Reserved',
];
const MP5 = [...MP_SRAM, ...MP_CACHES, 'Fuse SRAM ECC or parity error'];
const MPDMA = [
  'Main SRAM [31:0] bank ECC or parity error',
  'Main SRAM [63:32] bank ECC or parity error',
  'Main SRAM [95:64] bank ECC or parity error',
  'Main SRAM [127:96] bank ECC or parity error',
  ...MP_CACHES,
  ...MP_CACHES,
  ...MP_CACHES,
  'System Hub Read Buffer ECC or parity error',
  'MPDMA TVF DVSEC Memory ECC or parity error',
  'MPDMA TVF MMIO Mailbox0 ECC or parity error',
  'MPDMA TVF MMIO Mailbox1 ECC or parity error',
  'MPDMA TVF Doorbell Memory ECC or parity error',
  ...[0, 1, 2].map((n) => `MPDMA TVF SDP Slave Memory ${n} ECC or parity error`),
  ...[0, 1, 2, 3, 4, 5, 6].map((n) => `MPDMA TVF SDP Master Memory ${n} ECC or parity error`),
  'SDP Watchdog Timer expired',
  'MPDMA PTE Command FIFO ECC or parity error',
  'MPDMA PTE Hub Data FIFO ECC or parity error',
  'MPDMA PTE Internal Data FIFO ECC or parity error',
  'MPDMA PTE Command Memory DMA ECC or parity error',
  'MPDMA PTE Command Memory Internal ECC or parity error',
  'MPDMA TVF SDP Master Memory 7 ECC or parity error',
];
const NBIO = [
  'ECC or Parity error',
  'PCIE error',
  'External SDP ErrEvent error',
  'SDP Egress Poison error',
  'Internal Poison error',
  'Internal system fatal error event',
];
const PCIE = [
  'CCIX PER Message logging',
  'CCIX Read Response with Status: Non-Data Error',
  'CCIX Write Response with Status: Non-Data Error',
  'CCIX Read Response with Status: Data Error',
  'CCIX Non-okay write response with data error',
];
const PCIE_V2 = ['SDP Data Parity Error logging'];
const XGMI_PCS = [
  'Data Loss Error',
  'Training Error',
  'Flow Control Acknowledge Error',
  'Rx Fifo Underflow Error',
  'Rx Fifo Overflow Error',
  'CRC Error',
  'BER Exceeded Error',
  'Tx Vcid Data Error',
  'Replay Buffer Parity Error',
  'Data Parity Error',
  'Replay Fifo Overflow Error',
  'Replay Fifo Underflow Error',
  'Elastic Fifo Overflow Error',
  'Deskew Error',
  'Flow Control CRC Error',
  'Data Startup Limit Error',
  'FC Init Timeout Error',
  'Recovery Timeout Error',
  'Ready Serial Timeout Error',
  'Ready Serial Attempt Error',
  'Recovery Attempt Error',
  'Recovery Relock Attempt Error',
  'Replay Attempt Error',
  'Sync Header Error',
  'Tx Replay Timeout Error',
  'Rx Replay Timeout Error',
  'LinkSub Tx Timeout Error',
  'LinkSub Rx Timeout Error',
  'Rx CMD Pocket Error',
];
/** The three PHY bank types (xGMI, WAFL, GMI) share their codes. */
const PHY = ['RAM ECC Error', 'ARC instruction buffer parity error', 'ARC data buffer parity error', 'PHY APB error'];
/** NBIF and SHUB share their codes. */
const NBIF = ['Timeout error from GMI', 'SRAM ECC error', 'NTB Error Event', 'SDP Parity error'];
const SATA = [0, 1, 2, 3, 4, 5, 6, 7].map((n) => `Parity error for port ${n}`);
const USB = [
  'Parity error or ECC error for S0 RAM0',
  'Parity error or ECC error for S0 RAM1',
  'Parity error or ECC error for S0 RAM2',
  'Parity error for PHY RAM0',
  'Parity error for PHY RAM1',
  'AXI Slave Response error',
];
const USR_DP = [
  'Mst CMD Error',
  'Mst Rx FIFO Error',
  'Mst Deskew Error',
  'Mst Detect Timeout Error',
  'Mst FlowControl Error',
  'Mst DataValid FIFO Error',
  'Mac LinkState Error',
  'Deskew Error',
  'Init Timeout Error',
  'Init Attempt Error',
  'Recovery Timeout Error',
  'Recovery Attempt Error',
  'Eye Training Timeout Error',
  'Data Startup Limit Error',
  'LS0 Exit Error',
  'PLL powerState Update Timeout Error',
  'Rx FIFO Error',
  'Lcu Error',
  'Conv CECC Error',
  'Conv UECC Error',
  'Reserved',
  'Rx DataLoss Error',
  'Replay CECC Error',
  'Replay UECC Error',
  'CRC Error',
  'BER Exceeded Error',
  'FC Init Timeout Error',
  'FC Init Attempt Error',
  'Replay Timeout Error',
  'Replay Attempt Error',
  'Replay Underflow Error',
  'Replay Overflow Error',
];
const USR_CP = [
  'Packet Type Error',
  'Rx FIFO Error',
  'Deskew Error',
  'Rx Detect Timeout Error',
  'Data Parity Error',
  'Data Loss Error',
  'Lcu Error',
  'HB1 Handshake Timeout Error',
  'HB2 Handshake Timeout Error',
  'Clk Sleep Rsp Timeout Error',
  'Clk Wake Rsp Timeout Error',
  'Reset Attack Error',
  'Remote Link Fatal Error',
];
const GMI_PCS = [
  'Data Loss Error',
  'Training Error',
  'Replay Parity Error',
  'Rx Fifo Underflow Error',
  'Rx Fifo Overflow Error',
  'CRC Error',
  'BER Exceeded Error',
  'Tx Fifo Underflow Error',
  'Replay Buffer Parity Error',
  'Tx Overflow Error',
  'Replay Fifo Overflow Error',
  'Replay Fifo Underflow Error',
  'Elastic Fifo Overflow Error',
  'Deskew Error',
  'Offline Error',
  'Data Startup Limit Error',
  'FC Init Timeout Error',
  'Recovery Timeout Error',
  'Ready Serial Timeout Error',
  'Ready Serial Attempt Error',
  'Recovery Attempt Error',
  'Recovery Relock Attempt Error',
  'Deskew Abort Error',
  'Rx Buffer Error',
  'Rx LFDS Fifo Overflow Error',
  'Rx LFDS Fifo Underflow Error',
  'LinkSub Tx Timeout Error',
  'LinkSub Rx Timeout Error',
  'Rx CMD Packet Error',
  'LFDS Training Timeout Error',
  'LFDS FC Init Timeout Error',
  'Data Loss Error',
];

function bank(
  type: string,
  name: string,
  cls: ErrorClass,
  xec: readonly string[],
  xecClass?: Readonly<Record<number, ErrorClass>>,
): SmcaBank {
  return xecClass ? { type, name, class: cls, xec, xecClass } : { type, name, class: cls, xec };
}

// The class says which part to replace: the core's units and the on-die fabric and microcontrollers are the CPU's
// (`cache` / `internal`), I/O units the device's (`io`), die-to-die links the link's (`bus`), DRAM the DIMM's.
const UMC_NAME = 'Unified Memory Controller';
/** A memory controller's own SRAM and internal buses fail inside the CPU package, not on the DIMM. */
const ON_DIE = 'internal';
const BANKS = {
  ls: bank('ls', 'Load Store Unit', 'cache', LS),
  ls_v2: bank('ls_v2', 'Load Store Unit', 'cache', LS_V2),
  if: bank('if', 'Instruction Fetch Unit', 'cache', IF),
  l2_cache: bank('l2_cache', 'L2 Cache', 'cache', L2),
  de: bank('de', 'Decode Unit', 'internal', DE),
  ex: bank('ex', 'Execution Unit', 'internal', EX),
  fp: bank('fp', 'Floating Point Unit', 'internal', FP),
  l3_cache: bank('l3_cache', 'L3 Cache', 'cache', L3),
  cs: bank('cs', 'Coherent Slave', 'internal', CS),
  cs_v2: bank('cs_v2', 'Coherent Slave', 'internal', CS_V2),
  cs_v2_quirk: bank('cs_v2_quirk', 'Coherent Slave', 'internal', CS_V2_ERRATUM),
  pie: bank('pie', 'Power, Interrupts, etc.', 'internal', PIE),
  umc: bank('umc', UMC_NAME, 'memory-controller', UMC, { 2: ON_DIE, 3: ON_DIE, 6: ON_DIE, 7: ON_DIE, 16: ON_DIE }),
  umc_quirk: bank('umc_quirk', UMC_NAME, 'memory-controller', UMC_HBM, {
    2: ON_DIE,
    6: ON_DIE,
    9: ON_DIE,
    13: ON_DIE,
    14: ON_DIE,
  }),
  umc_v2: bank('umc_v2', 'Unified Memory Controller V2', 'memory-controller', UMC_V2, {
    2: ON_DIE,
    6: ON_DIE,
    9: ON_DIE,
    10: ON_DIE,
    11: ON_DIE,
  }),
  ma_llc: bank('ma_llc', 'Memory Attached Last Level Cache', 'cache', MA_LLC),
  pb: bank('pb', 'Parameter Block', 'internal', PB),
  psp: bank('psp', 'Platform Security Processor', 'internal', PSP),
  psp_v2: bank('psp_v2', 'Platform Security Processor', 'internal', PSP_V2),
  smu: bank('smu', 'System Management Unit', 'internal', SMU),
  smu_v2: bank('smu_v2', 'System Management Unit', 'internal', SMU_V2),
  mp5: bank('mp5', 'Microprocessor 5 Unit', 'internal', MP5),
  mpdma: bank('mpdma', 'MPDMA Unit', 'internal', MPDMA),
  nbio: bank('nbio', 'Northbridge IO Unit', 'io', NBIO),
  pcie: bank('pcie', 'PCI Express Unit', 'io', PCIE),
  pcie_v2: bank('pcie_v2', 'PCI Express Unit', 'io', PCIE_V2),
  xgmi_pcs: bank('xgmi_pcs', 'Ext Global Memory Interconnect PCS Unit', 'bus', XGMI_PCS),
  nbif: bank('nbif', 'NBIF Unit', 'io', NBIF),
  shub: bank('shub', 'System Hub Unit', 'io', NBIF),
  sata: bank('sata', 'SATA Unit', 'io', SATA),
  usb: bank('usb', 'USB Unit', 'io', USB),
  usr_dp: bank('usr_dp', 'Ultra Short Reach Data Plane Controller', 'bus', USR_DP),
  usr_cp: bank('usr_cp', 'Ultra Short Reach Control Plane Controller', 'bus', USR_CP),
  gmi_pcs: bank('gmi_pcs', 'Global Memory Interconnect PCS Unit', 'bus', GMI_PCS),
  xgmi_phy: bank('xgmi_phy', 'Ext Global Memory Interconnect PHY Unit', 'bus', PHY),
  wafl_phy: bank('wafl_phy', 'WAFL PHY Unit', 'bus', PHY),
  gmi_phy: bank('gmi_phy', 'Global Memory Interconnect PHY Unit', 'bus', PHY),
} as const satisfies Record<string, SmcaBank>;

/** Every SMCA bank type this decoder knows, by the kernel's short name. */
export const SMCA_BANKS: Readonly<Record<keyof typeof BANKS, SmcaBank>> = BANKS;

/** `HardwareID << 16 | McaType` of each bank type (the quirk tables have no IPID of their own). */
export const SMCA_IPIDS: ReadonlyMap<number, SmcaBank> = new Map([
  [0xb0_0000, BANKS.ls],
  [0xb0_0010, BANKS.ls_v2],
  [0xb0_0001, BANKS.if],
  [0xb0_0002, BANKS.l2_cache],
  [0xb0_0003, BANKS.de],
  [0xb0_0005, BANKS.ex],
  [0xb0_0006, BANKS.fp],
  [0xb0_0007, BANKS.l3_cache],
  [0x2e_0000, BANKS.cs],
  [0x2e_0001, BANKS.pie],
  [0x2e_0002, BANKS.cs_v2],
  [0x2e_0004, BANKS.ma_llc],
  [0x96_0000, BANKS.umc],
  [0x96_0001, BANKS.umc_v2],
  [0x05_0000, BANKS.pb],
  [0xff_0000, BANKS.psp],
  [0xff_0001, BANKS.psp_v2],
  [0x01_0000, BANKS.smu],
  [0x01_0001, BANKS.smu_v2],
  [0x01_0002, BANKS.mp5],
  [0x01_0003, BANKS.mpdma],
  [0x18_0000, BANKS.nbio],
  [0x46_0000, BANKS.pcie],
  [0x46_0001, BANKS.pcie_v2],
  [0x50_0000, BANKS.xgmi_pcs],
  [0x6c_0000, BANKS.nbif],
  [0x80_0000, BANKS.shub],
  [0xa8_0000, BANKS.sata],
  [0xaa_0000, BANKS.usb],
  [0x170_0000, BANKS.usr_dp],
  [0x180_0000, BANKS.usr_cp],
  [0x241_0000, BANKS.gmi_pcs],
  [0x259_0000, BANKS.xgmi_phy],
  [0x267_0000, BANKS.wafl_phy],
  [0x269_0000, BANKS.gmi_phy],
]);

/**
 * The bank type after the family's errata: Genoa-class parts (family 19h models 10h-1Fh, 60h-7Bh, A0h-AFh; family 1Ah
 * models 40h-4Fh) report Coherent Slave errors with reassigned codes, and MI300 (family 19h models 90h-9Fh) has HBM
 * memory controllers with their own codes, both under the common IPIDs.
 */
function erratumBank(b: SmcaBank, family: number | undefined, model: number | undefined): SmcaBank {
  if (model === undefined) return b;
  if (b === BANKS.cs_v2) {
    const genoa =
      family === 0x19
        ? (model >= 0x10 && model <= 0x1f) || (model >= 0x60 && model <= 0x7b) || (model >= 0xa0 && model <= 0xaf)
        : family === 0x1a && model >= 0x40 && model <= 0x4f;
    return genoa ? BANKS.cs_v2_quirk : b;
  }
  if (b === BANKS.umc && family === 0x19 && model >= 0x90 && model <= 0x9f) return BANKS.umc_quirk;
  return b;
}

/**
 * The FRU text newer SMCA parts leave in MCA_SYND1 and MCA_SYND2: sixteen ASCII bytes, little-endian, NUL-padded
 * (the kernel's vendor data, which rasdaemon reads as FRU text). Undefined unless the bytes are such a text.
 */
export function fruText(synd1: bigint | undefined, synd2: bigint | undefined): string | undefined {
  if (synd1 === undefined && synd2 === undefined) return undefined;
  const bytes = Buffer.alloc(16);
  bytes.writeBigUInt64LE(synd1 ?? 0n, 0);
  bytes.writeBigUInt64LE(synd2 ?? 0n, 8);
  const end = bytes.indexOf(0);
  const text = bytes.toString('latin1', 0, end < 0 ? 16 : end);
  if (text === '' || !/^[\x20-\x7e]+$/.test(text)) return undefined;
  // NUL padding only: a text with bytes after its end is not one.
  return end < 0 || bytes.subarray(end).every((b) => b === 0) ? text : undefined;
}

export interface AmdDecoding {
  /** `Unified Memory Controller (bank 16)`, or `bank N` when the bank type is unknown. */
  readonly bankName: string;
  /** The unit's name without the bank number (`Unified Memory Controller`), when the bank type is known. */
  readonly unit?: string;
  readonly bankType?: string;
  /** What failed, by the bank type and extended error code; undefined when neither says. */
  readonly class?: ErrorClass;
  readonly xec: number;
  readonly xecText?: string;
  readonly channel?: number;
  readonly chipSelect?: number;
  /** Decoded facts beyond the XEC (syndromes, link numbers, HBM die). */
  readonly details?: readonly string[];
  readonly unknown?: string;
}

/** Decodes an AMD Scalable MCA record from its IPID, status and syndrome; family and model select errata tables. */
export function decodeSmca(
  bankNo: number,
  status: bigint,
  ipid: bigint,
  synd: bigint,
  family?: number,
  model?: number,
): AmdDecoding {
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
  const known = SMCA_IPIDS.get(hwid * 0x10000 + mcaType);
  if (known === undefined) {
    return {
      bankName: `bank ${bankNo}`,
      xec,
      unknown: `unknown SMCA bank type (IPID HardwareID 0x${hwid.toString(16)}, McaType 0x${mcaType.toString(16)})`,
    };
  }
  const b = erratumBank(known, family, model);
  const text = b.xec[xec];
  const xecText = text === 'Reserved' ? undefined : text;
  const unknown =
    text === undefined
      ? `extended error code ${xec} of the ${b.type} bank is not known`
      : xecText === undefined
        ? `extended error code ${xec} of the ${b.type} bank is reserved`
        : undefined;
  const cls = b.xecClass?.[xec] ?? b.class;
  // One literal per outcome (no spreads): this runs per record.
  if (b === BANKS.umc) {
    // The channel is the instance's; the chip select is in the syndrome of a DRAM ECC error.
    const chipSelect = xec === 0 && (bit(status, 53) || synd !== 0n) ? bits(synd, 0, 2) : undefined;
    return {
      bankName: `${b.name} (bank ${bankNo})`,
      unit: b.name,
      bankType: b.type,
      class: cls,
      xec,
      xecText,
      channel: bits(ipid, 20, 31),
      chipSelect,
      unknown,
    };
  }
  if (b === BANKS.umc_v2 || b === BANKS.umc_quirk) {
    // HBM stacks: a v2 controller's instance names the PHY (two per UMC) and bits 15:12 the HBM channel; MI300's
    // InstanceIdHi names the die.
    const umc = bits(ipid, 20, 31);
    const hbm = b === BANKS.umc_v2 ? bits(ipid, 12, 15) + (umc % 2 === 1 ? 4 : 0) : undefined;
    return {
      bankName: `${b.name} (bank ${bankNo})`,
      unit: b.name,
      bankType: b.type,
      class: cls,
      xec,
      xecText,
      channel: hbm,
      details:
        hbm === undefined ? [`memory die ${bits(ipid, 44, 47) >> 2}`] : [`HBM channel ${hbm}, UMC PHY ${umc >> 1}`],
      unknown,
    };
  }
  return { bankName: `${b.name} (bank ${bankNo})`, unit: b.name, bankType: b.type, class: cls, xec, xecText, unknown };
}
