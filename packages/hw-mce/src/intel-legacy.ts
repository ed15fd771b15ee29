/**
 * Model-specific MCi_STATUS bits of the front-side-bus Intel families: P6 (PPro to Pentium III), Core 2, Xeon 7400
 * (Dunnington), Pentium 4 / NetBurst Xeon, Xeon 7100 (Tulsa), and the internal errors of Xeon 7500 (Nehalem-EX). The
 * bit meanings are the Intel SDM vol. 3B appendix E ("Interpreting the MCA Error Codes", per family) as mcelog reads
 * them; lines are worded as mcelog prints them, so its output judges these tables.
 */
import { hi32, lo32 } from './bits.ts';
import type { CpuKind } from './cpu.ts';

/** A field `width` bits wide at `at`: its meanings by value (value 0 included when the SDM names it). */
type Field = readonly [at: number, width: number, names: Readonly<Record<number, string>>];

const BUS_QUEUE_REQUEST: Readonly<Record<number, string>> = {
  0: 'BQ_DCU_READ_TYPE',
  2: 'BQ_IFU_DEMAND_TYPE',
  3: 'BQ_IFU_DEMAND_NC_TYPE',
  4: 'BQ_DCU_RFO_TYPE',
  5: 'BQ_DCU_RFO_LOCK_TYPE',
  6: 'BQ_DCU_ITOM_TYPE',
  8: 'BQ_DCU_WB_TYPE',
  10: 'BC_DCU_WCEVICT_TYPE',
  11: 'BQ_DCU_WCLINE_TYPE',
  12: 'BQ_DCU_BTM_TYPE',
  13: 'BQ_DCU_INTACK_TYPE',
  14: 'BQ_DCU_INVALL2_TYPE',
  15: 'BQ_DCU_FLUSHL2_TYPE',
  16: 'BQ_DCU_PART_RD_TYPE',
  18: 'BQ_DCU_PART_WR_TYPE',
  20: 'BQ_DCU_SPEC_CYC_TYPE',
  24: 'BQ_DCU_IO_RD_TYPE',
  25: 'BQ_DCU_IO_WR_TYPE',
  28: 'BQ_DCU_LOCK_RD_TYPE',
  29: 'BQ_DCU_LOCK_WR_TYPE',
  30: 'BQ_DCU_SPLOCK_RD_TYPE',
};
const BUS_QUEUE_ERROR: Readonly<Record<number, string>> = {
  0: 'BQ_ERR_HARD_TYPE',
  1: 'BQ_ERR_DOUBLE_TYPE',
  2: 'BQ_ERR_AERR2_TYPE',
  4: 'BQ_ERR_SINGLE_TYPE',
  5: 'BQ_ERR_AERR1_TYPE',
};
const flag = (at: number, text: string): Field => [at, 1, { 1: text }];

/** P6-family bus errors (request type, error type and flags), shared by P6, Core 2, Dunnington and Xeon 7500. */
const P6_BUS: readonly Field[] = [
  [19, 5, BUS_QUEUE_REQUEST],
  [25, 3, BUS_QUEUE_ERROR],
  flag(30, 'internal BINIT'),
  flag(36, 'received parity error on response transaction'),
  flag(38, 'timeout BINIT (ROB timeout). No micro-instruction retired for some time'),
  flag(42, 'bus transaction received hard error response'),
  flag(43, 'failure that caused IERR'),
  flag(44, 'two failing bus transactions with address parity error (AERR)'),
  flag(45, 'uncorrectable ECC error'),
  flag(46, 'correctable ECC error'),
];
const P6OLD_BUS: readonly Field[] = [
  flag(28, 'FRC error'),
  flag(29, 'BERR on this CPU'),
  flag(35, 'BINIT received from external bus'),
  flag(37, 'Received hard error response on split transaction (Bus BINIT)'),
];
const CORE2_BUS: readonly Field[] = [
  flag(28, 'MCE driven'),
  flag(29, 'MCE is observed'),
  flag(31, 'BINIT observed'),
  flag(34, 'PIC or FSB data parity error'),
  flag(37, 'FSB address parity error detected'),
];
const P4_BUS: readonly Field[] = [
  flag(16, 'FSB address parity'),
  flag(17, 'Response hard fail'),
  flag(18, 'Response parity'),
  flag(19, 'PIC and FSB data parity'),
  flag(20, 'Invalid PIC request(Signature=0xF04H)'),
  flag(21, 'Pad state machine'),
  flag(22, 'Pad strobe glitch'),
  flag(23, 'Pad address glitch'),
];
const DUNNINGTON_BUS: readonly Field[] = [
  flag(16, 'Parity error detected during FSB request phase'),
  flag(20, 'Hard Failure response received for a local transaction'),
  flag(21, 'Parity error on FSB response field detected'),
  flag(22, 'Parity data error on inbound data detected'),
];
const TULSA_BUS: readonly Field[] = [
  flag(16, 'Parity error detected during FSB request phase'),
  flag(17, "Partity error detected on Core 0 request's address field"),
  flag(18, "Partity error detected on Core 1 request's address field"),
  flag(20, 'Parity error on FSB response field detected'),
  flag(21, 'FSB data parity error on inbound date detected'),
  flag(22, 'Data parity error on data received from Core 0 detected'),
  flag(23, 'Data parity error on data received from Core 1 detected'),
  flag(24, 'Detected an Enhanced Defer parity error phase A or phase B'),
  flag(25, 'Data ECC event to error on inbound data correctable or uncorrectable'),
  flag(26, 'Pad logic detected a data strobe glitch or sequencing error'),
  flag(27, 'Pad logic detected a request strobe glitch or sequencing error'),
];

/** Internal errors (MCA code 0x0400) of Dunnington and Tulsa: the model-specific code (bits 31:16) picks a table. */
const FRONT_ERRORS: Readonly<Record<number, string>> = {
  1: 'Inclusion error from core 0',
  2: 'Inclusion error from core 1',
  3: 'Write Exclusive error from core 0',
  4: 'Write Exclusive error from core 1',
  5: 'Inclusion error from FSB',
  6: 'SNP stall error from FSB',
  7: 'Write stall error from FSB',
  8: 'FSB Arbiter Timeout error',
};
const DUNNINGTON_FRONT = {
  ...FRONT_ERRORS,
  10: 'Inclusion error from core 2',
  11: 'Write exclusive error from core 2',
};
const TULSA_FRONT = { ...FRONT_ERRORS, 9: 'CBC OOD Queue Underflow/overflow' };
const QUEUE_FULL = 'Intel Cache Safe Technology Queue full error\nor disabled ways in a set overflow';
const DUNNINGTON_INTERNAL = {
  2: 'Internal timeout error',
  3: 'Internal timeout error',
  4: QUEUE_FULL,
  5: 'Quiet cycle timeout error (correctable)',
};
const TULSA_INTERNAL = {
  1: 'Enhanced Intel SpeedStep Technology TM1-TM2 Error',
  2: 'Internal timeout error',
  3: 'Internal timeout error',
  4: QUEUE_FULL,
};

/** Xeon 7500 internal errors (MCA code 0x0001), bits 28:24. */
const XEON7500_INTERNAL: Readonly<Record<number, string>> = {
  0: 'No Error',
  3: 'Reset firmware did not complete',
  8: 'Received an invalid CMPD',
  10: 'Invalid Power Management Request',
  13: 'Invalid S-state transition',
  17: 'VID controller does not match POC controller selected',
  26: 'MSID from POC does not match CPU MSID',
};

/** The model-specific lines of a record of these families (empty when the registers add nothing). */
export function decodeFsbIntel(kind: CpuKind, status: bigint, misc: bigint): string[] {
  const lo = lo32(status);
  const mcaCode = lo & 0xffff;
  // Most records are none of these families' special cases: no closures, one empty list.
  if (mcaCode >>> 11 !== 1 && kind !== 'dunnington' && kind !== 'tulsa' && !(kind === 'xeon75xx' && mcaCode === 1)) {
    return [];
  }
  const hi = hi32(status);
  const field = (at: number, width: number) =>
    at >= 32 ? (hi >>> (at - 32)) & ((1 << width) - 1) : (lo >>> at) & ((1 << width) - 1);
  const out: string[] = [];
  const fields = (list: readonly Field[], value: (at: number, width: number) => number = field) => {
    for (const [at, width, names] of list) {
      // An unlisted non-zero value is shown as mcelog shows it, `<bit:value>`.
      const v = value(at, width);
      const text = names[v] ?? (v === 0 ? undefined : `<${at}:${v.toString(16)}>`);
      if (text !== undefined) out.push(text);
    }
  };
  const mca = lo & 0xffff;
  // Bus and interconnect errors: MCA codes 0000 1PPT RRRR IILL.
  if (mca >>> 11 === 1) {
    if (kind === 'p4' || kind === 'tulsa') fields(P4_BUS);
    else {
      fields(P6_BUS);
      fields(kind === 'p6old' ? P6OLD_BUS : CORE2_BUS);
      const syndrome = field(47, 8);
      if (syndrome !== 0) out.push(`ECC syndrome: ${syndrome.toString(16)}`);
    }
  }
  const model = lo >>> 16;
  if (kind === 'dunnington' || kind === 'tulsa') {
    const dunnington = kind === 'dunnington';
    if (kind === 'tulsa') {
      const corrected = field(32, 8);
      if (corrected !== 0) out.push(`Corrected events: ${corrected}`);
      const syndrome = field(44, 8);
      if (((hi >>> 20) & 1) === 1 && syndrome !== 0) out.push(`ECC syndrome: ${syndrome.toString(16)}`);
      if (((hi >>> 27) & 1) === 1) out.push(`MISC format ${field(40, 2).toString(16)} value ${misc.toString(16)}`);
    }
    if (mca === 0x0e0f) fields(dunnington ? DUNNINGTON_BUS : TULSA_BUS);
    else if (mca === 0x0400) {
      const own = (at: number, width: number) => (model >>> at) & ((1 << width) - 1);
      if ((model & 0xfff0) === 0) fields([[0, 4, dunnington ? DUNNINGTON_FRONT : TULSA_FRONT]], own);
      else if ((model & 0xf0ff) === 0) fields([[8, 4, dunnington ? DUNNINGTON_INTERNAL : TULSA_INTERNAL]], own);
      else if ((model & 0xfff0) === 0xc000 || (model & 0xfff0) === 0xe000) {
        const what = (model & 0xfff0) === 0xc000 ? 'Correctable' : 'Uncorrectable';
        const sources = dunnington ? ['', 'core 0', 'core 1', 'core 2'] : ['FSB', 'core 0', 'core 1'];
        for (let b = dunnington ? 1 : 0; b < sources.length; b++) {
          if (((model >>> b) & 1) === 1) out.push(`${what} ECC event on outgoing ${sources[b]} data`);
        }
      }
    }
  }
  if (kind === 'xeon75xx' && mca === 0x0001) {
    const text = XEON7500_INTERNAL[field(24, 5)];
    if (text !== undefined) out.push(text);
    const low = field(16, 8);
    if (low !== 0) out.push(`Internal machine check status reserved 16..23: ${low.toString(16)}`);
    const high = Number((status >> 32n) & 0x1ffffffn);
    if (high !== 0) out.push(`Internal machine check status reserved 32..56: ${high.toString(16)}`);
  }
  return out;
}
