/**
 * The decoder: one {@link MceRecord} in, one {@link DecodedMce} out — architectural bits, the MCA error code, the
 * model-specific fields of the CPU family, the kernel's severity grade, where the error is (socket, channel, DIMM,
 * page) and what an operator should do. Pure and allocation-light: it runs once per record of a live stream.
 */
import { type AmdDecoding, decodeSmca, fruText } from './amd.ts';
import { decodeLegacyAmd } from './amd-legacy.ts';
import {
  bits,
  type McgCapBits,
  type McgStatusBits,
  type MiscBits,
  mcgCapBits,
  mcgStatusBits,
  miscBits,
  type StatusBits,
  statusBits,
} from './bits.ts';
import { type CpuInfo, type CpuKind, identifyCpu, isIntelKind } from './cpu.ts';
import { decodeIntelModel, type ModelDecoding } from './intel-model.ts';
import { decodeMcaCode, type ErrorClass, type McaCode } from './mca-code.ts';
import type { MceRecord } from './record.ts';
import { type Grade, gradeAmd, gradeIntel, type Severity } from './severity.ts';

/** The kernel's bank number for thermal events (MCE_THERMAL_BANK). */
export const THERMAL_BANK = 128;

/** Where an error is, as far as the record says. */
export interface ErrorLocation {
  readonly cpu: number;
  readonly bank: number;
  readonly socket?: number;
  /** Memory channel (for memory errors), in the family's numbering. */
  readonly channel?: number;
  readonly dimm?: number;
  /** AMD UMC chip select. */
  readonly chipSelect?: number;
  /** Physical address and its page frame number (4 KiB pages) when MCi_ADDR holds a physical address. */
  readonly address?: bigint;
  readonly page?: bigint;
  /** Bank unit name (`M2M`, `MemCtrl`, `Unified Memory Controller`...). */
  readonly unit?: string;
}

export interface DecodedMce {
  readonly record: MceRecord;
  readonly cpu: CpuInfo;
  readonly status: StatusBits;
  readonly mcg: McgStatusBits;
  /** MCG_CAP, when the record carried it. */
  readonly cap: McgCapBits | undefined;
  /** Architectural MCi_MISC fields, when MISCV and SER say they apply. */
  readonly misc: MiscBits | undefined;
  readonly code: McaCode;
  readonly class: ErrorClass;
  readonly grade: Grade;
  readonly severity: Severity;
  readonly location: ErrorLocation;
  /** Model-specific and vendor-specific lines. */
  readonly details: readonly string[];
  readonly fields: Readonly<Record<string, number | string | boolean>>;
  /** How a corrected error was corrected when the registers say (mirroring). */
  readonly correctedBy?: string;
  readonly amd?: AmdDecoding;
  /** What could not be decoded and why. */
  readonly unknown: readonly string[];
  /** One line: how bad, what, where. */
  readonly summary: string;
  /** What to do about it. */
  readonly advice: string;
}

export interface DecodeOptions {
  /** Decode as this CPU instead of the one the record names (`--cpu`). */
  readonly cpu?: CpuKind;
}

const EMPTY: readonly string[] = Object.freeze([]);
const NO_FIELDS: Readonly<Record<string, number | string | boolean>> = Object.freeze({});

/** Decodes one record. Never throws: what cannot be decoded is listed in `unknown`. */
export function decodeMce(r: MceRecord, options: DecodeOptions = {}): DecodedMce {
  const cpu = identifyCpu(r.cpuvendor, r.cpuid, options.cpu);
  const amdCpu = cpu.kind === 'zen' || cpu.kind === 'amd-fam10h' || cpu.kind === 'k8' || cpu.kind === 'amd';
  const status = statusBits(r.status, r.mcgcap, amdCpu);
  const mcg = mcgStatusBits(r.mcgstatus);
  const cap = r.mcgcap === 0n ? undefined : mcgCapBits(r.mcgcap);
  const code = decodeMcaCode(status.mcaCode);
  // Most records are fully known: they share the empty list; the first unknown copies it.
  let unknown: string[] | undefined;
  if (cpu.unknown) (unknown ??= []).push(cpu.unknown);
  let details: readonly string[] = EMPTY;
  let fields: Readonly<Record<string, number | string | boolean>> = NO_FIELDS;
  let cls: ErrorClass = code.class;
  let model: ModelDecoding | undefined;
  let amd: AmdDecoding | undefined;
  const thermal = r.bank === THERMAL_BANK;
  if (thermal) {
    cls = 'thermal';
  } else if (amdCpu) {
    amd =
      cpu.kind === 'zen'
        ? decodeSmca(r.bank, r.status, r.ipid, r.synd, cpu.family, cpu.model)
        : decodeLegacyAmd(r.bank, r.status, cpu.family);
    if (amd.unknown) (unknown ??= []).push(amd.unknown);
    // What failed is the bank's (and its extended code's) to say: AMD's generic MCA codes name a transaction, and
    // a memory controller reports DRAM errors under cache-hierarchy codes.
    if (amd.class) cls = amd.class;
    if (amd.xecText || amd.details || amd.class || r.synd1 !== undefined || r.synd2 !== undefined) {
      const lines: string[] = [];
      if (amd.xecText) lines.push(`${amd.xecText} (extended error code ${amd.xec})`);
      if (amd.details) for (const l of amd.details) lines.push(l);
      if (amd.class) lines.push(`MCA error code: ${code.description}`);
      const fru = cpu.kind === 'zen' ? fruText(r.synd1, r.synd2) : undefined;
      if (fru !== undefined) lines.push(`FRU text: ${fru}`);
      if (lines.length > 0) details = lines;
    }
  } else if (isIntelKind(cpu.kind)) {
    model = decodeIntelModel(cpu.kind, r.bank, r.status, r.misc, code, r.apicid);
    details = model.details;
    fields = model.fields;
    // Say which CPU the missing decoder is for (a forced --cpu has no family of its own).
    if (model.unknown) {
      const which =
        cpu.family === undefined ? cpu.name : `${cpu.name}, family ${cpu.family} model 0x${cpu.model?.toString(16)}`;
      (unknown ??= []).push(`${model.unknown} (${which})`);
    }
  }
  if (code.class === 'io' && status.miscValid) {
    // IOMCA: MCi_MISC names the PCIe root port that reported the error (Intel "Enhanced MCA Logging" for Xeon).
    const port = ioRootPort(r.misc);
    details = [...details, `IO MCA reported by root port ${port}`];
    fields = { ...fields, rootPort: port };
  }
  if (code.class === 'unknown' && !thermal)
    (unknown ??= []).push(`MCA error code 0x${(status.mcaCode & 0xefff).toString(16)} has no architectural meaning`);
  const grade = amdCpu ? gradeAmd(status, r.mcgstatus) : gradeIntel(status, r.mcgstatus, cap?.ser);
  if (grade.impossible) (unknown ??= []).push(`impossible bit combination: ${grade.impossible}`);
  if (!status.valid) (unknown ??= []).push('MCi_STATUS.VAL is clear: the bank did not hold a valid error');
  if (cap === undefined && status.uncorrected && !amdCpu) {
    (unknown ??= []).push(
      'no MCG_CAP in the record: software error recovery support was inferred from the S and AR bits',
    );
  }
  // The address mode in MCi_MISC is architectural only under SER (MCG_CAP.SER_P); elsewhere MISC is model-specific.
  const misc = status.miscValid && cap?.ser === true && !amdCpu ? miscBits(r.misc) : undefined;
  const location = locate(r, status, misc, cls, model, amd);
  return new Decoded(
    r,
    cpu,
    status,
    mcg,
    cap,
    misc,
    code,
    cls,
    grade,
    location,
    details,
    fields,
    model?.correctedBy,
    amd,
    unknown ?? EMPTY,
    thermal,
  );
}

/** A decoded record: one fixed shape, its texts built when first read (a stream that only counts never pays). */
class Decoded implements DecodedMce {
  readonly record: MceRecord;
  readonly cpu: CpuInfo;
  readonly status: StatusBits;
  readonly mcg: McgStatusBits;
  readonly cap: McgCapBits | undefined;
  readonly misc: MiscBits | undefined;
  readonly code: McaCode;
  readonly class: ErrorClass;
  readonly grade: Grade;
  readonly severity: Severity;
  readonly location: ErrorLocation;
  readonly details: readonly string[];
  readonly fields: Readonly<Record<string, number | string | boolean>>;
  readonly correctedBy: string | undefined;
  readonly amd: AmdDecoding | undefined;
  readonly unknown: readonly string[];
  readonly thermal: boolean;
  #summary: string | undefined;
  #advice: string | undefined;
  constructor(
    record: MceRecord,
    cpu: CpuInfo,
    status: StatusBits,
    mcg: McgStatusBits,
    cap: McgCapBits | undefined,
    misc: MiscBits | undefined,
    code: McaCode,
    cls: ErrorClass,
    grade: Grade,
    location: ErrorLocation,
    details: readonly string[],
    fields: Readonly<Record<string, number | string | boolean>>,
    correctedBy: string | undefined,
    amd: AmdDecoding | undefined,
    unknown: readonly string[],
    thermal: boolean,
  ) {
    this.record = record;
    this.cpu = cpu;
    this.status = status;
    this.mcg = mcg;
    this.cap = cap;
    this.misc = misc;
    this.code = code;
    this.class = cls;
    this.grade = grade;
    this.severity = grade.severity;
    this.location = location;
    this.details = details;
    this.fields = fields;
    this.correctedBy = correctedBy;
    this.amd = amd;
    this.unknown = unknown;
    this.thermal = thermal;
  }
  get summary(): string {
    return (this.#summary ??= summarize(this));
  }
  get advice(): string {
    return (this.#advice ??= advise(this.severity, this.class, this.thermal, this.location));
  }
}

function ioRootPort(misc: bigint): string {
  const seg = bits(misc, 32, 39);
  const bus = bits(misc, 24, 31);
  const dev = bits(misc, 19, 23);
  const fn = bits(misc, 16, 18);
  const two = (n: number) => n.toString(16).padStart(2, '0');
  return `${seg.toString(16)}:${two(bus)}:${two(dev)}.${fn.toString(16)}`;
}

function locate(
  r: MceRecord,
  s: StatusBits,
  misc: MiscBits | undefined,
  cls: ErrorClass,
  model: ModelDecoding | undefined,
  amd: AmdDecoding | undefined,
): ErrorLocation {
  const physical = s.addrValid && (misc === undefined || misc.addressMode === 'physical address');
  const channel = model?.channel ?? amd?.channel;
  const unit = model?.unit ?? amd?.unit;
  return {
    cpu: r.cpu,
    bank: r.bank,
    socket: r.socketid,
    channel: channel !== undefined && (cls === 'memory-controller' || amd?.channel !== undefined) ? channel : undefined,
    dimm: model?.dimm,
    chipSelect: amd?.chipSelect,
    address: physical ? r.addr : undefined,
    page: physical ? r.addr >> 12n : undefined,
    unit,
  };
}

const CLASS_TEXT: Readonly<Record<ErrorClass, string>> = {
  generic: 'generic',
  internal: 'internal (CPU core/uncore)',
  tlb: 'TLB',
  cache: 'cache',
  'memory-controller': 'memory',
  bus: 'bus/interconnect',
  io: 'I/O',
  thermal: 'thermal',
  unknown: 'unclassified',
};

const SEVERITY_TEXT: Readonly<Record<Severity, string>> = {
  corrected: 'corrected',
  deferred: 'deferred (poisoned, not yet consumed)',
  ucna: 'uncorrected, no action required (UCNA)',
  srao: 'uncorrected, recovery action optional (SRAO)',
  srar: 'uncorrected, recovery action required (SRAR)',
  fatal: 'FATAL uncorrected',
};

/** `socket 0, channel 1, DIMM 2, page 0x1234` — only what is known. */
export function whereText(l: ErrorLocation): string {
  const parts: string[] = [];
  if (l.socket !== undefined) parts.push(`socket ${l.socket}`);
  if (l.unit) parts.push(l.unit);
  if (l.channel !== undefined) parts.push(`channel ${l.channel}`);
  if (l.dimm !== undefined) parts.push(`DIMM ${l.dimm}`);
  if (l.chipSelect !== undefined) parts.push(`chip select ${l.chipSelect}`);
  if (l.page !== undefined) parts.push(`page 0x${l.page.toString(16)}`);
  parts.push(`CPU ${l.cpu} bank ${l.bank}`);
  return parts.join(', ');
}

function summarize(d: Omit<DecodedMce, 'summary' | 'advice'>): string {
  if (d.class === 'thermal') {
    return `CPU ${d.location.cpu} ${(d.record.status & 1n) === 1n ? 'heated above trip temperature: throttling' : 'back below trip temperature'}`;
  }
  const description = d.amd?.class
    ? (d.amd.xecText ?? `${d.amd.unit} extended error code ${d.amd.xec}`)
    : d.amd?.xecText
      ? `${d.code.description}: ${d.amd.xecText}`
      : d.details.length > 0 && d.cpu.kind.startsWith('sapphire')
        ? `${d.code.description}: ${d.details[0]}`
        : d.code.description;
  const by = d.correctedBy ? ` (corrected by ${d.correctedBy})` : '';
  return `${SEVERITY_TEXT[d.severity]} ${CLASS_TEXT[d.class]} error${by}: ${description} (${whereText(d.location)})`;
}

function advise(sev: Severity, cls: ErrorClass, thermal: boolean, l: ErrorLocation): string {
  if (thermal) return 'Check the cooling (fans, heat sink, air flow) of this CPU; throttling costs performance.';
  const part =
    cls === 'memory-controller'
      ? l.dimm !== undefined
        ? 'the DIMM named above'
        : l.channel !== undefined
          ? `the DIMM on the channel${l.chipSelect !== undefined ? ' and chip select' : ''} named above (EDAC or the board's DIMM map names its slot)`
          : "the DIMM holding the failing address (EDAC or the board's DIMM map names its slot)"
      : cls === 'cache' || cls === 'tlb' || cls === 'internal'
        ? 'the CPU in this socket'
        : cls === 'bus' || cls === 'io'
          ? 'the link or device named above (check the PCIe AER log too)'
          : 'the part named above';
  switch (sev) {
    case 'corrected':
      return `Nothing to do now: the hardware corrected it. If errors keep coming from the same place (the tracker's thresholds say when), plan to replace ${part}.`;
    case 'deferred':
      return `Poisoned data sits in memory and becomes an uncorrected error when read; the kernel offlines the page when it can. Replace ${part} if it repeats.`;
    case 'ucna':
      return `Data was damaged but not consumed: the kernel offlines the page when it holds an address. Watch for repeats; replace ${part} if they come.`;
    case 'srao':
      return `The kernel offlines the damaged page; no running program was hurt. Replace ${part} if it repeats.`;
    case 'srar':
      return `A program consumed damaged data: the kernel killed it (SIGBUS) and offlined the page. Restart what it served; replace ${part} if it repeats.`;
    case 'fatal':
      return `The kernel panics on this error. Replace ${part} before putting the machine back in service.`;
  }
}
