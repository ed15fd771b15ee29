/**
 * The architectural machine-check registers, bit by bit: Intel SDM vol. 3B ch. 16 ("Machine-Check Architecture":
 * IA32_MCG_CAP, IA32_MCG_STATUS, IA32_MCi_STATUS, IA32_MCi_MISC) and the AMD additions of the AMD64 APM vol. 2 /
 * PPR (Deferred, Poison, TCC, SyndV). Pure functions over the raw register values.
 */

// BigInt arithmetic allocates a new BigInt per operation. Storing a BigInt into a BigUint64Array does not: the
// register is split into 32-bit halves through one scratch word aliased by a Uint32Array, and every field is then
// taken with number operations. (x86 is little-endian: word 0 is the low half.)
const WORD = new BigUint64Array(1);
const HALF = new Uint32Array(WORD.buffer);

/** The low 32 bits of a register, as an unsigned number (no allocation). */
export function lo32(v: bigint): number {
  WORD[0] = v;
  return HALF[0]!;
}

/** The high 32 bits of a register, as an unsigned number (no allocation). */
export function hi32(v: bigint): number {
  WORD[0] = v;
  return HALF[1]!;
}

/** Bits `lo..hi` (inclusive, at most 32 wide) of the 64-bit value with halves `h` (high) and `l` (low). */
export function field(h: number, l: number, lo: number, hi: number): number {
  if (hi < 32) return hi === 31 ? l >>> lo : (l >>> lo) & ((1 << (hi - lo + 1)) - 1);
  if (lo >= 32) return hi === 63 ? h >>> (lo - 32) : (h >>> (lo - 32)) & ((1 << (hi - lo + 1)) - 1);
  // Straddles the halves: bits lo..31 of `l` below bits 0..hi-32 of `h` (exact: at most 32 bits in all).
  const high = hi === 63 ? h : h & ((2 ** (hi - 31) - 1) >>> 0);
  return (l >>> lo) + high * 2 ** (32 - lo);
}

/** Bit `n` (0..63) of a register. */
export function bit(v: bigint, n: number): boolean {
  WORD[0] = v;
  return n < 32 ? ((HALF[0]! >>> n) & 1) === 1 : ((HALF[1]! >>> (n - 32)) & 1) === 1;
}

/** Bits `lo..hi` (inclusive) of a register as a number (at most 32 bits wide). */
export function bits(v: bigint, lo: number, hi: number): number {
  WORD[0] = v;
  return field(HALF[1]!, HALF[0]!, lo, hi);
}

/** High and low 32-bit halves of a register as unsigned numbers. */
export function halves(v: bigint): [hi: number, lo: number] {
  WORD[0] = v;
  return [HALF[1]!, HALF[0]!];
}

/** IA32_MCi_STATUS. */
export interface StatusBits {
  readonly valid: boolean;
  readonly overflow: boolean;
  readonly uncorrected: boolean;
  readonly enabled: boolean;
  readonly miscValid: boolean;
  readonly addrValid: boolean;
  readonly processorContextCorrupt: boolean;
  /** S: signalled through a machine-check exception (software error recovery, MCG_CAP.SER_P). */
  readonly signaled: boolean;
  /** AR: recovery action required (SER). */
  readonly actionRequired: boolean;
  /** Threshold-based error status of corrected errors (MCG_CAP.TES_P): none, green, yellow. */
  readonly threshold: 'none' | 'green' | 'yellow' | 'reserved' | undefined;
  /** Corrected error count (bits 52:38) when MCG_CAP.CMCI_P says it is kept. */
  readonly correctedCount: number | undefined;
  /** Firmware updated the error (bit 37 with SER). */
  readonly firmwareUpdated: boolean;
  /** MCA error code (bits 15:0). */
  readonly mcaCode: number;
  /** Model-specific error code (bits 31:16). */
  readonly modelCode: number;
  /** AMD: the error was deferred (bit 44). */
  readonly deferred: boolean;
  /** AMD: poisoned data was consumed (bit 43). */
  readonly poison: boolean;
  /** AMD: task context corrupt (bit 55). */
  readonly taskContextCorrupt: boolean;
  /** AMD SMCA: MCA_SYND holds a syndrome (bit 53). */
  readonly syndromeValid: boolean;
}

const TRACK = ['none', 'green', 'yellow', 'reserved'] as const;

export function statusBits(status: bigint, mcgcap: bigint, amd: boolean): StatusBits {
  WORD[0] = status;
  const hi = HALF[1]!;
  const lo = HALF[0]!;
  const cap = lo32(mcgcap);
  // Bit n of the register is bit n - 32 of `hi`.
  const h = (n: number) => ((hi >>> (n - 32)) & 1) === 1;
  const uc = h(61);
  const tes = mcgcap === 0n || (cap & (1 << 11)) !== 0;
  return {
    valid: h(63),
    overflow: h(62),
    uncorrected: uc,
    enabled: h(60),
    miscValid: h(59),
    addrValid: h(58),
    processorContextCorrupt: h(57),
    signaled: !amd && h(56),
    actionRequired: !amd && h(55),
    threshold: amd || uc || !tes ? undefined : TRACK[(hi >>> 21) & 3],
    correctedCount: !amd && (cap & (1 << 10)) !== 0 ? (hi >>> 6) & 0x7fff : undefined,
    firmwareUpdated: !amd && (cap & (1 << 24)) !== 0 && h(37),
    mcaCode: lo & 0xffff,
    modelCode: lo >>> 16,
    deferred: amd && h(44),
    poison: amd && h(43),
    taskContextCorrupt: amd && h(55),
    syndromeValid: amd && h(53),
  };
}

/** IA32_MCG_STATUS. */
export interface McgStatusBits {
  /** Restart IP valid: the interrupted program can resume. */
  readonly ripv: boolean;
  /** Error IP valid: the IP points at the instruction that caused the error. */
  readonly eipv: boolean;
  /** A machine-check exception was in progress. */
  readonly mcip: boolean;
  /** The machine check was delivered to this logical processor only (LMCE). */
  readonly lmce: boolean;
}

const MCG_STATUS: readonly McgStatusBits[] = Array.from({ length: 16 }, (_, n) =>
  Object.freeze({ ripv: (n & 1) !== 0, eipv: (n & 2) !== 0, mcip: (n & 4) !== 0, lmce: (n & 8) !== 0 }),
);

/** The architectural bits 3:0 of IA32_MCG_STATUS (shared objects: there are 16). */
export function mcgStatusBits(v: bigint): McgStatusBits {
  return MCG_STATUS[lo32(v) & 0xf]!;
}

/** IA32_MCG_CAP. */
export interface McgCapBits {
  readonly bankCount: number;
  readonly ctl: boolean;
  readonly ext: boolean;
  readonly cmci: boolean;
  readonly tes: boolean;
  readonly extCount: number;
  readonly ser: boolean;
  readonly emc: boolean;
  readonly elog: boolean;
  readonly lmce: boolean;
}

const CAPS = new Map<number, McgCapBits>();

/** IA32_MCG_CAP, decoded once per distinct value (a machine has one). */
export function mcgCapBits(v: bigint): McgCapBits {
  const n = lo32(v);
  let c = CAPS.get(n);
  if (c === undefined) {
    if (CAPS.size > 1024) CAPS.clear();
    CAPS.set(n, (c = Object.freeze(capBits(n))));
  }
  return c;
}

function capBits(n: number): McgCapBits {
  const b = (i: number) => (n & (1 << i)) !== 0;
  return {
    bankCount: n & 0xff,
    ctl: b(8),
    ext: b(9),
    cmci: b(10),
    tes: b(11),
    extCount: (n >>> 16) & 0xff,
    ser: b(24),
    emc: b(25),
    elog: b(26),
    lmce: b(27),
  };
}

/** Address modes of IA32_MCi_MISC bits 8:6 (SDM table "Address Mode in IA32_MCi_MISC[8:6]"). */
const ADDRESS_MODES = [
  'segment offset',
  'linear address',
  'physical address',
  'memory address',
  'reserved',
  'reserved',
  'reserved',
  'generic',
] as const;

/** IA32_MCi_MISC under SER: how MCi_ADDR is to be read. */
export interface MiscBits {
  /** The least significant valid bit of MCi_ADDR (bits 5:0). */
  readonly addressLsb: number;
  readonly addressMode: (typeof ADDRESS_MODES)[number];
}

/** Decodes the architectural part of MCi_MISC; meaningful only with STATUS.MISCV and MCG_CAP.SER_P. */
export function miscBits(misc: bigint): MiscBits {
  return { addressLsb: bits(misc, 0, 5), addressMode: ADDRESS_MODES[bits(misc, 6, 8)]! };
}

/** Text of the set IA32_MCi_STATUS flags, in register order, for operators. */
export function statusFlagNames(s: StatusBits): string[] {
  const out: string[] = [];
  if (!s.valid) out.push('not valid');
  if (s.overflow) out.push('overflow (errors were lost)');
  out.push(s.uncorrected ? 'uncorrected' : s.deferred ? 'deferred' : 'corrected');
  if (s.enabled) out.push('signalling enabled');
  if (s.miscValid) out.push('MISC valid');
  if (s.addrValid) out.push('ADDR valid');
  if (s.processorContextCorrupt) out.push('processor context corrupt');
  if (s.signaled) out.push('signalled (S)');
  if (s.actionRequired) out.push('action required (AR)');
  if (s.poison) out.push('poison consumed');
  if (s.taskContextCorrupt) out.push('task context corrupt');
  if (s.firmwareUpdated) out.push('firmware updated the error');
  if (s.threshold === 'yellow') out.push('threshold yellow: many corrected errors, uncorrected ones may follow');
  return out;
}
