/**
 * Model-specific decoding of three more Intel server families, from the Intel SDM vol. 4 machine-check tables and
 * the encodings mcelog's decoders use for them:
 *
 * - Sandy Bridge (EP) and Ivy Bridge EP/EX: the PCU's MSCOD (bank 4), QPI banks, the iMC banks' MSCOD flags, and —
 *   for corrected iMC errors logged with "MemError Log Enable" — the failing rank of up to two devices in MCi_MISC
 *   (valid bits 62 and 63, ranks in bits 50:46 and 55:51), turned into the DIMM of the channel in MCACOD;
 * - Knights Landing and Knights Mill: the channel of bank 15's memory controller counts on from 3;
 * - Diamond Rapids: CBB and IMH Punit (banks 4, 11), UPI (18) and the IMH memory channels (banks 19-26: channel =
 *   bank - 19 + 8 × IMH, the IMH from APIC ID bit 2), with the DRAM address fields of MCi_MISC when MISCV and
 *   OTHER_INFO[1] (status bit 33) say they are there.
 */
import { field, hi32, lo32 } from './bits.ts';
import type { McaCode } from './mca-code.ts';

/** What these families' registers add (the shape of intel-model's ModelDecoding). */
export interface FamilyDecoding {
  readonly details: readonly string[];
  readonly fields: Readonly<Record<string, number | string | boolean>>;
  readonly channel?: number;
  readonly dimm?: number;
  readonly unit?: string;
}

type Table = Readonly<Record<number, string>>;

/** `name` for a table entry, `<bit:value>` for an unlisted non-zero value (mcelog's notation), nothing for zero. */
function lookup(table: Table, value: number, bit: number): string | undefined {
  return table[value] ?? (value === 0 ? undefined : `<${bit}:${value.toString(16)}>`);
}

function ranges(entries: readonly (readonly [number, number, string])[]): Table {
  const out: Record<number, string> = {};
  for (const [from, to, text] of entries) for (let v = from; v <= to; v++) out[v] = text;
  return out;
}

// --- Sandy Bridge / Ivy Bridge (SDM vol. 3B tables 16-16..16-18 of the 2012 editions) ---

/** PCU MSCOD bits 19:16. */
const PCU_LOW: Table = {
  0: 'No error',
  1: 'Non_IMem_Sel',
  2: 'I_Parity_Error',
  3: 'Bad_OpCode',
  4: 'I_Stack_Underflow',
  5: 'I_Stack_Overflow',
  6: 'D_Stack_Underflow',
  7: 'D_Stack_Overflow',
  8: 'Non-DMem_Sel',
  9: 'D_Parity_Error',
};

/** PCU MSCOD bits 31:24 (Sandy Bridge). */
const SNB_PCU_HIGH: Table = {
  0: 'No Error',
  13: 'MC_IMC_FORCE_SR_S3_TIMEOUT',
  14: 'MC_MC_CPD_UNCPD_ST_TIMEOUT',
  15: 'MC_PKGS_SAFE_WP_TIMEOUT',
  67: 'MC_PECI_MAILBOX_QUIESCE_TIMEOUT',
  92: 'MC_MORE_THAN_ONE_LT_AGENT',
  96: 'MC_INVALID_PKGS_REQ_PCH',
  97: 'MC_INVALID_PKGS_REQ_QPI',
  98: 'MC_INVALID_PKGS_RES_QPI',
  99: 'MC_INVALID_PKGC_RES_PCH',
  100: 'MC_INVALID_PKG_STATE_CONFIG',
  112: 'MC_WATCHDG_TIMEOUT_PKGC_SECONDARY',
  113: 'MC_WATCHDG_TIMEOUT_PKGC_MAIN',
  114: 'MC_WATCHDG_TIMEOUT_PKGS_MAIN',
  122: 'MC_HA_FAILSTS_CHANGE_DETECTED',
  129: 'MC_RECOVERABLE_DIE_THERMAL_TOO_HOT',
};

/** Ivy Bridge adds three codes. */
const IVB_PCU_HIGH: Table = {
  ...SNB_PCU_HIGH,
  68: 'MC_CRITICAL_VR_FAILED',
  69: 'MC_ICC_MAX-NOTSUPPORTED',
  123: 'MC_PCIE_R2PCIE-RW_BLOCK_ACK_TIMEOUT',
};

/** iMC MSCOD flag bits. */
const SNB_IMC_FLAGS: readonly (readonly [number, string])[] = [
  [16, 'Address parity error'],
  [17, 'HA Wrt buffer Data parity error'],
  [18, 'HA Wrt byte enable parity error'],
  [19, 'Corrected patrol scrub error'],
  [20, 'Uncorrected patrol scrub error'],
  [21, 'Corrected spare error'],
  [22, 'Uncorrected spare error'],
];
const IVB_IMC_FLAGS: readonly (readonly [number, string])[] = [
  ...SNB_IMC_FLAGS,
  [23, 'Corrected memory read error'],
  [24, 'iMC, WDB, parity errors'],
];

/**
 * The DIMM of a failing rank. Ranks 0-3 are DIMM 0, 4-5 DIMM 1; ranks 6-7 are DIMM 2 on channels with three DIMMs
 * and DIMM 1 on channels with two, which the registers do not say: DIMM 1 is assumed (as mcelog does without DMI)
 * and the detail line says so.
 */
function rankDimm(rank: number): number | undefined {
  return rank <= 3 ? 0 : rank <= 7 ? 1 : undefined;
}

/** Sandy Bridge (client and EP) and Ivy Bridge EP/EX. */
export function decodeSandyIvy(
  kind: 'sandybridge' | 'sandybridge-ep' | 'ivybridge-ep',
  bank: number,
  status: bigint,
  misc: bigint,
  code: McaCode,
): FamilyDecoding {
  const sLo = lo32(status);
  const sHi = hi32(status);
  const ivb = kind === 'ivybridge-ep';
  if (bank === 4) {
    // One line per field, as mcelog prints them (value 0 is the SDM's "No error").
    const names = [
      lookup(PCU_LOW, (sLo >>> 16) & 0xf, 16),
      lookup(ivb ? IVB_PCU_HIGH : SNB_PCU_HIGH, sLo >>> 24, 24),
    ].filter((n) => n !== undefined);
    return { details: names, fields: {}, unit: 'PCU' };
  }
  if ((kind === 'sandybridge-ep' && (bank === 6 || bank === 7)) || (ivb && bank === 5))
    return { details: [], fields: {}, unit: 'QPI' };
  const imc = ivb ? bank >= 9 && bank <= 16 : bank >= 8 && bank <= 11;
  if (!imc) return { details: [], fields: {} };
  const flags = (ivb ? IVB_IMC_FLAGS : SNB_IMC_FLAGS).filter(([b]) => ((sLo >>> b) & 1) === 1).map(([, t]) => t);
  const details = flags;
  const memory = code.class === 'memory-controller';
  const channel = memory ? code.channel : undefined;
  const fields: Record<string, number | string | boolean> = {};
  let dimm: number | undefined;
  // Extended iMC logging: corrected errors only, and only the EP parts have it.
  const corrected = ((sHi >>> 29) & 1) === 0;
  if (kind !== 'sandybridge' && memory && corrected && channel !== undefined) {
    const mLo = lo32(misc);
    const mHi = hi32(misc);
    for (const [valid, lo, hi, name] of [
      [62, 46, 50, 'first'],
      [63, 51, 55, 'second'],
    ] as const) {
      if (((mHi >>> (valid - 32)) & 1) === 0) continue;
      const rank = field(mHi, mLo, lo, hi);
      const d = rankDimm(rank);
      fields[`${name}FailingRank`] = rank;
      if (name === 'first') dimm = d;
      details.push(
        `${name === 'first' ? 'Failing' : 'Second failing'} device: channel ${channel} rank ${rank}${d === undefined ? '' : ` (DIMM ${d}${rank >= 6 ? ', or 2 on a channel with three DIMMs' : ''})`}`,
      );
    }
  }
  return { details, fields, unit: 'MemCtrl', channel, dimm };
}

/** Knights Landing / Knights Mill: bank 15's memory controller numbers its channels from 3. */
export function knightsChannel(bank: number, code: McaCode): number | undefined {
  if (code.class !== 'memory-controller' || code.channel === undefined) return undefined;
  return code.channel + (bank === 15 ? 3 : 0);
}

// --- Diamond Rapids ---

const CBB_PUNIT: Readonly<Record<number, Table>> = {
  0: {
    1: 'CR4_MCE_CLEAR: MCE when CR4.MCE is clear',
    2: 'MCE_MCIP_SET: MCE when MCIP bit is set',
    3: 'MCE_UNDER_WFS: MCE under WPS',
    4: 'MCE_LT_HANDSHAKE: Unrecoverable error during security flow execution',
    5: 'TRIPLE_FAULT: SW triple fault shutdown',
    6: 'VMX_ABORT: VMX exit consistency check failures',
    7: 'RSM_CONSISTENCY_FAIL: RSM consistency check failures',
    8: 'SMM_PROTECTED_ENTRY_FAIL: Invalid conditions on protected mode SMM entry',
    9: 'UCODE_PATCH_LOAD_FAIL: Unrecoverable error during security flow execution',
  },
  8: {
    22: 'MCA_DVFS_COUNTER_EXPIRED',
    35: 'MCA_UNSUPP_RESP',
    37: 'MCA_FUSA_MBIST',
    38: 'MCA_SA_PLL_LOCKED',
    39: 'MCA_XTAL_FREQ_MON_ERROR',
    40: 'MCA_PMSB_FUSE_PULLER_ERROR',
    41: 'MCA_GPSB_FUSE_PULLER_ERROR',
    48: 'MCA_PCODE_WATCHDOG',
    49: 'MCA_BGR_FUSA_ERR',
    50: 'MCA_CORE_FIVR_ERR',
    51: 'MCA_D2D_FIVR_ERR',
    52: 'MCA_MLC_FIVR_ERR',
    53: 'MCA_RING_FIVR_ERR',
    54: 'MCA_D2D_MONF_PLL_FUSA_0',
    55: 'MCA_D2D_MONF_PLL_FUSA_1',
    56: 'MCA_TOP0_FUSA_PLL_ERR',
    57: 'MCA_BASE_FUSA_PLL_ERR',
    64: 'MCA_UCIE_RESET_BUS_STOP_ON_ERROR',
    65: 'MCA_RSRC_ADAPT_0_ERR',
    66: 'MCA_RSC_ADAPT_1_ERR',
    69: 'MCA_TOP1_FUSA_PLL_ERR',
    70: 'MCA_TOP2_FUSA_PLL_ERR',
    71: 'MCA_TOP3_FUSA_PLL_ERR',
    72: 'UC_PATCH_LOAD_ACK_ERROR',
  },
  12: {
    1: 'MCA_UC_IRAM_DOUBLE_ERROR',
    2: 'MCA_UC_DOUBLE_EXCEPTION_ERROR',
    3: 'MCA_UC_TELEM_SRAM_ERROR',
    4: 'MCA_UC_DRAM_DOUBLE_ERROR',
    5: 'MCA_UC_TPMI_SRAM_ERROR',
  },
  20: { 1: 'MCA_FIVR_HI_YELLOW', 2: 'MCA_FIVR_HI_RED' },
};

/** IMH Punit, MSCOD bits 23:16 when bits 31:24 are zero. */
const IMH_PUNIT_LOW = ranges([
  [0x02, 0x03, 'Power Management Unit microcontroller double-bit ECC error'],
  [0x08, 0x09, 'Power Management Unit microcontroller error'],
  [0x0a, 0x0a, 'Power Management Unit microcontroller Patch Load error'],
  [0x0b, 0x0b, 'Power Management Unit microcontroller POReqValid error'],
  [0x0c, 0x0c, 'Power Management Unit microcontroller RAM address error'],
  [0x0d, 0x0d, 'Power Management Unit microcontroller RAM access error'],
  [
    0x10,
    0x10,
    'Pcode Watchdog Timer expired, or Power Management Unit TeleSRAM double-bit ECC error (MCi_MISC says which)',
  ],
  [0x20, 0x20, 'Power Management Agent signaled Error'],
  [0x30, 0x30, 'Power Management Unit Microcontroller Error'],
  [0xa0, 0xa0, 'Power Management Unit HPMSRAM double-bit ECC error detected'],
  [0xb0, 0xb0, 'Power Management Unit TPMISRAM double-bit ECC error detected'],
]);

/** IMH Punit, MSCOD bits 31:24. */
const IMH_PUNIT_HIGH: Table = {
  9: 'MCA_TSC_DOWNLOAD_TIMEOUT',
  10: 'MCA_INVALID_XTALFREQ_RANGE',
  11: 'MCA_GPSB_TIMEOUT',
  12: 'MCA_PMSB_TIMEOUT',
  13: 'MCA_CFG_ACK_TIMEOUT',
  35: 'MCA_PCU_SVID_ERROR',
  53: 'MCA_SVID_LOADLINE_INVALID',
  54: 'MCA_SVID_ICCMAX_INVALID',
  74: 'MCA_FIVR_PD_HARDERR',
  76: 'MCA_HPM_DOUBLE_BIT_ERROR_DETECTED',
  88: 'MCA_INVALID_MEMORY_FREQUENCY',
  99: 'MCA_SVID_VCCIN_PROTOCOL_ERROR',
  106: 'MCA_SPPR_TIMEOUT',
  111: 'MCA_INVALID_SID_ERROR',
  112: 'MCA_INVALID_REMOTE_LEGACY_AGENT_ERROR',
  113: 'MCA_INVALID_REMOTE_LT_AGENT_ERROR',
  123: 'MCA_THERMAL_SENSOR_INVALID',
  124: 'MCA_CXL_DEVICE_NO_CREDIT',
  126: 'MCA_RECOVERABLE_DIE_THERMAL_TOO_HOT',
  131: 'MCA_PKGS_RECOVERABLE_RESET_PREP_ACK_TIMEOUT',
};

const UPI: Readonly<Record<number, Table>> = {
  0: ranges([
    [0x00, 0x02, 'Internal Parity Error'],
    [0x05, 0x05, 'Internal Parity Error'],
    [0x08, 0x08, 'Internal Queue Overflow Error'],
    [0x09, 0x09, 'UPI link layer buffer overflow'],
    [0x0a, 0x0a, 'Internal Queue Underflow Error'],
    [0x0b, 0x0b, 'UPI link layer buffer underflow'],
    [0x0c, 0x0c, 'Link layer or internal credit overflow'],
    [0x11, 0x12, 'Internal Queue Overflow Error'],
    [0x13, 0x14, 'Internal Queue Underflow Error'],
    [0x21, 0x21, 'Internal Interface Error'],
    [0x23, 0x23, 'Invalid Message'],
    [0x24, 0x24, 'UPI Protocol Error'],
    [0x25, 0x25, 'UPI Interleave Error'],
    [0x28, 0x28, 'Internal Interface Error'],
    [0x29, 0x29, 'Link integrity or initialization error'],
    [0x2a, 0x2d, 'Power Management Transition Error - Timeout'],
    [0x30, 0x30, 'Received poison when poison is disabled'],
    [0x31, 0x31, 'Internal Interface Error'],
  ]),
  2: ranges([
    [0x00, 0x00, 'Link integrity or initialization error'],
    [0x03, 0x03, 'Link degraded'],
    [0x04, 0x07, 'Power Management Transition Error - Timeout'],
  ]),
};

const MCCHAN: Readonly<Record<number, Table>> = {
  0: {
    1: 'CMI Request Address Parity Error (APPP)',
    2: 'CMI Wr data parity error',
    4: 'CMI Wr BE parity error',
    8: 'Transient or Correctable Error for Patrol Reads',
    16: 'UnCorr Patrol Scrub Error',
    32: 'Nontransient or Transient Correctable Error for Spare Reads',
    64: 'UnCorr Spare Error',
    128: 'Transient or Correctable Error for Demand or Underfill Reads',
    160: 'Uncorrectable Error for Demand or Underfill Reads',
    176: 'Poisoned Read Data when Poison Disabled',
    192: 'Read 2LM MetaData Error for Demand, Underfill, or Patrol/Spare',
  },
  1: {
    2: 'WDB Read ECC Error',
    4: 'WDB BE Read Parity Error',
    6: 'WDB Read Persistent ECC Error',
    8: 'DDR Link Fail',
    9: 'Illegal incoming opcode',
  },
  2: { 0: 'DDR CAParity or WrCRC Error', 64: 'Decoder structure error' },
  4: { 0: 'MC internal address parity error' },
  8: {
    19: 'CMI Credit Oversubscription Error',
    20: 'CMI Total Credit Count Error',
    21: 'CMI Reserved Credit Pool Error',
    50: 'MC Internal Errors',
    52: 'MC Tracker RDCMP RF parity error',
    54: 'MC Tracker WRCMP RF parity error',
  },
};

const DMR_ECC_MODES: Table = {
  1: 'SDDC 128b 1LM',
  2: 'SDDC 125b 1LM',
  3: 'SDDC 125b 2LM',
  4: 'ADDDC 80b 1LM',
  5: 'ADDDC 80b 2LM',
  9: '5x8 128b 1LM',
  10: '5x8 125b 1LM',
  11: '5x8 125b 2LM',
};

/** A table chosen by MSCOD bits 31:24, indexed by bits 23:16 (a zero entry names itself when listed). */
function mscod(tables: Readonly<Record<number, Table>>, sLo: number): string | undefined {
  const table = tables[sLo >>> 24];
  if (table === undefined) return undefined;
  const v = (sLo >>> 16) & 0xff;
  return table[v] ?? (v === 0 ? undefined : `<16:${v.toString(16)}>`);
}

/** Diamond Rapids. `apicid` (of the CPU that logged it) names the IMH: APIC ID bit 2. */
export function decodeDiamond(
  bank: number,
  status: bigint,
  misc: bigint,
  code: McaCode,
  apicid: number | undefined,
): FamilyDecoding {
  const sLo = lo32(status);
  const sHi = hi32(status);
  const imh = apicid === undefined ? undefined : (apicid >>> 2) & 1;
  const imhName = imh === undefined ? 'IMH' : `IMH${imh}`;
  if (bank === 4) {
    const what = (sLo & 0xffff) === 0x040b ? 'Scan-at-Field Error' : mscod(CBB_PUNIT, sLo);
    return { details: what ? [`CBB Punit: ${what}`] : [], fields: {}, unit: 'CBB Punit' };
  }
  if (bank === 11) {
    const high = sLo >>> 24;
    const what = high !== 0 ? lookup(IMH_PUNIT_HIGH, high, 24) : lookup(IMH_PUNIT_LOW, (sLo >>> 16) & 0xff, 16);
    return { details: what ? [`${imhName} Punit: ${what}`] : [], fields: {}, unit: `${imhName} Punit` };
  }
  if (bank === 18) {
    const what = mscod(UPI, sLo);
    return { details: what ? [`UPI: ${what}`] : [], fields: {}, unit: 'UPI' };
  }
  if (bank < 19 || bank > 26) return { details: [], fields: {} };
  const details: string[] = [];
  const fields: Record<string, number | string | boolean> = {};
  const what = mscod(MCCHAN, sLo);
  if (what) details.push(`${imhName} MCCHAN: ${what}`);
  // MCi_MISC holds the DRAM address when MISCV and OTHER_INFO[1] are set, and MSCOD is below 0800h.
  if (((sHi >>> 27) & 1) === 1 && ((sHi >>> 1) & 1) === 1 && sLo >>> 16 < 0x800) {
    const h = hi32(misc);
    const l = lo32(misc);
    const f = {
      column: field(h, l, 9, 18) << 2,
      row: field(h, l, 19, 36),
      dramBank: field(h, l, 37, 38),
      bankGroup: field(h, l, 39, 41),
      subChannel: field(h, l, 49, 49),
      subrank: field(h, l, 51, 54),
      chipSelect: field(h, l, 55, 56),
      eccMode: field(h, l, 58, 61),
      transient: field(h, l, 63, 63) === 1,
    };
    const hex = (n: number) => `0x${n.toString(16)}`;
    details.push(
      `bank: ${hex(f.dramBank)} bankgroup: ${hex(f.bankGroup)} row: ${hex(f.row)} column: ${hex(f.column)}`,
      `chipselect: ${hex(f.chipSelect)} subrank: ${hex(f.subrank)} subchan: ${hex(f.subChannel)}`,
    );
    Object.assign(fields, f);
    if (f.transient) details.push('transient');
    else {
      if (field(h, l, 42, 42) === 1) {
        fields.failedDevice = field(h, l, 44, 48);
        details.push(`failed device: ${hex(fields.failedDevice)}`);
      }
      details.push(`ecc mode: ${DMR_ECC_MODES[f.eccMode] ?? 'Invalid/unknown ECC mode'}`);
    }
  }
  const channel = code.class === 'memory-controller' && imh !== undefined ? bank - 19 + 8 * imh : undefined;
  return { details, fields, unit: `${imhName} MCCHAN`, channel };
}

// --- Skylake / Cascade Lake server (SDM vol. 4, Intel Xeon Scalable machine-check MSRs) ---

/** PCU (bank 4) MSCOD bits 31:24. */
const SKX_PCU: Table = {
  0: 'No Error',
  13: 'MCA_DMI_TRAINING_TIMEOUT',
  15: 'MCA_DMI_CPU_RESET_ACK_TIMEOUT',
  16: 'MCA_MORE_THAN_ONE_LT_AGENT',
  30: 'MCA_BIOS_RST_CPL_INVALID_SEQ',
  31: 'MCA_BIOS_INVALID_PKG_STATE_CONFIG',
  37: 'MCA_MESSAGE_CHANNEL_TIMEOUT',
  39: 'MCA_MSGCH_PMREQ_CMP_TIMEOUT',
  48: 'MCA_PKGC_DIRECT_WAKE_RING_TIMEOUT',
  49: 'MCA_PKGC_INVALID_RSP_PCH',
  51: 'MCA_PKGC_WATCHDOG_HANG_CBZ_DOWN',
  52: 'MCA_PKGC_WATCHDOG_HANG_CBZ_UP',
  56: 'MCA_PKGC_WATCHDOG_HANG_C3_UP_SF',
  64: 'MCA_SVID_VCCIN_VR_ICC_MAX_FAILURE',
  65: 'MCA_SVID_COMMAND_TIMEOUT',
  66: 'MCA_SVID_VCCIN_VR_VOUT_FAILURE',
  67: 'MCA_SVID_CPU_VR_CAPABILITY_ERROR',
  68: 'MCA_SVID_CRITICAL_VR_FAILED',
  69: 'MCA_SVID_SA_ITD_ERROR',
  70: 'MCA_SVID_READ_REG_FAILED',
  71: 'MCA_SVID_WRITE_REG_FAILED',
  72: 'MCA_SVID_PKGC_INIT_FAILED',
  73: 'MCA_SVID_PKGC_CONFIG_FAILED',
  74: 'MCA_SVID_PKGC_REQUEST_FAILED',
  75: 'MCA_SVID_IMON_REQUEST_FAILED',
  76: 'MCA_SVID_ALERT_REQUEST_FAILED',
  77: 'MCA_SVID_MCP_VR_ABSENT_OR_RAMP_ERROR',
  78: 'MCA_SVID_UNEXPECTED_MCP_VR_DETECTED',
  81: 'MCA_FIVR_CATAS_OVERVOL_FAULT',
  82: 'MCA_FIVR_CATAS_OVERCUR_FAULT',
  88: 'MCA_WATCHDOG_TIMEOUT_PKGC_SECONDARY',
  89: 'MCA_WATCHDOG_TIMEOUT_PKGC_MAIN',
  90: 'MCA_WATCHDOG_TIMEOUT_PKGS_MAIN',
  97: 'MCA_PKGS_CPD_UNCPD_TIMEOUT',
  99: 'MCA_PKGS_INVALID_REQ_PCH',
  100: 'MCA_PKGS_INVALID_REQ_INTERNAL',
  101: 'MCA_PKGS_INVALID_RSP_INTERNAL',
  107: 'MCA_PKGS_SMBUS_VPP_PAUSE_TIMEOUT',
  129: 'MCA_RECOVERABLE_DIE_THERMAL_TOO_HOT',
};

/** UPI (banks 5, 12, 19) MSCOD bits 21:16. */
const SKX_UPI: Table = {
  0: 'UC Phy Initialization Failure',
  1: 'UC Phy detected drift buffer alarm',
  2: 'UC Phy detected latency buffer rollover',
  16: 'UC LL Rx detected CRC error: unsuccessful LLR: entered abort state',
  17: 'UC LL Rx unsupported or undefined packet',
  18: 'UC LL or Phy control error',
  19: 'UC LL Rx parameter exchange exception',
  31: 'UC LL detected control error from the link-mesh interface',
  32: 'COR Phy initialization abort',
  33: 'COR Phy reset',
  34: 'COR Phy lane failure, recovery in x8 width',
  35: 'COR Phy L0c error corrected without Phy reset',
  36: 'COR Phy L0c error triggering Phy Reset',
  37: 'COR Phy L0p exit error corrected with Phy reset',
  48: 'COR LL Rx detected CRC error - successful LLR without Phy Reinit',
  49: 'COR LL Rx detected CRC error - successful LLR with Phy Reinit',
};

/** UPI "LL or Phy control error" (MSCOD 0x12) flags, bits 22-31. */
const SKX_UPI_CONTROL: readonly string[] = [
  'Phy Control Error',
  'Unexpected Retry.Ack flit',
  'Unexpected Retry.Req flit',
  'RF parity error',
  'Routeback Table error',
  'unexpected Tx Protocol flit (EOP, Header or Data)',
  'Rx Header-or-Credit BGF credit overflow/underflow',
  'Link Layer Reset still in progress when Phy enters L0',
  'Link Layer reset initiated while protocol traffic not idle',
  'Link Layer Tx Parity Error',
];

/** iMC (banks 13-18) MSCOD flags, bits 16-26, when bit 27 is clear. */
const SKX_IMC_FLAGS: readonly string[] = [
  'Address parity error',
  'HA write data parity error',
  'HA write byte enable parity error',
  'Corrected patrol scrub error',
  'Uncorrected patrol scrub error',
  'Corrected spare error',
  'Uncorrected spare error',
  'Any HA read error',
  'WDB read parity error',
  'DDR4 command address parity error',
  'Uncorrected address parity error',
];

/** iMC MSCOD bits 19:16 when bit 27 is set. */
const SKX_IMC_0X8XX: Table = {
  0: 'Unrecognized request type',
  1: 'Read response to an invalid scoreboard entry',
  2: 'Unexpected read response',
  3: 'DDR4 completion to an invalid scoreboard entry',
  4: 'Completion to an invalid scoreboard entry',
  5: 'Completion FIFO overflow',
  6: 'Correctable parity error',
  7: 'Uncorrectable error',
  8: 'Interrupt received while outstanding interrupt was not ACKed',
  9: 'ERID FIFO overflow',
  10: 'Error on Write credits',
  11: 'Error on Read credits',
  12: 'Scheduler error',
  13: 'Error event',
};

/** M2M (banks 7, 8) MSCOD flags, bits 16-23. */
const SKX_M2M: readonly string[] = [
  'MscodDataRdErr',
  'Reserved',
  'MscodPtlWrErr',
  'MscodFullWrErr',
  'MscodBgfErr',
  'MscodTimeout',
  'MscodParErr',
  'MscodBucket1Err',
];

/** Haswell EP/EX PCU MSCOD bits 31:24. */
const HSW_PCU: Table = {
  0: 'No Error',
  9: 'MC_MESSAGE_CHANNEL_TIMEOUT',
  13: 'MC_IMC_FORCE_SR_S3_TIMEOUT',
  14: 'MC_CPD_UNCPD_SD_TIMEOUT',
  19: 'MC_DMI_TRAINING_TIMEOUT',
  21: 'MC_DMI_CPU_RESET_ACK_TIMEOUT',
  30: 'MC_VR_ICC_MAX_LT_FUSED_ICC_MAX',
  37: 'MC_SVID_COMMAN_TIMEOUT',
  41: 'MC_VR_VOUT_MAC_LT_FUSED_SVID',
  43: 'MC_PKGC_WATCHDOG_HANG_CBZ_DOWN',
  44: 'MC_PKGC_WATCHDOG_HANG_CBZ_UP',
  57: 'MC_PKGC_WATCHDOG_HANG_C3_UP_SF',
  68: 'MC_CRITICAL_VR_FAILED',
  69: 'MC_ICC_MAX_NOTSUPPORTED',
  70: 'MC_VID_RAMP_DOWN_FAILED',
  71: 'MC_EXCL_MODE_NO_PMREQ_CMP',
  72: 'MC_SVID_READ_REG_ICC_MAX_FAILED',
  73: 'MC_SVID_WRITE_REG_VOUT_MAX_FAILED',
  75: 'MC_BOOT_VID_TIMEOUT_DRAM_0',
  76: 'MC_BOOT_VID_TIMEOUT_DRAM_1',
  77: 'MC_BOOT_VID_TIMEOUT_DRAM_2',
  78: 'MC_BOOT_VID_TIMEOUT_DRAM_3',
  79: 'MC_SVID_COMMAND_ERROR',
  82: 'MC_FIVR_CATAS_OVERVOL_FAULT',
  83: 'MC_FIVR_CATAS_OVERCUR_FAULT',
  87: 'MC_SVID_PKGC_REQUEST_FAILED',
  88: 'MC_SVID_IMON_REQUEST_FAILED',
  89: 'MC_SVID_ALERT_REQUEST_FAILED',
  96: 'MC_INVALID_PKGS_REQ_PCH',
  97: 'MC_INVALID_PKGS_REQ_QPI',
  98: 'MC_INVALID_PKGS_RSP_QPI',
  99: 'MC_INVALID_PKGS_RSP_PCH',
  100: 'MC_INVALID_PKG_STATE_CONFIG',
  103: 'MC_HA_IMC_RW_BLOCK_ACK_TIMEOUT',
  104: 'MC_IMC_RW_SMBUS_TIMEOUT',
  105: 'MC_HA_FAILSTS_CHANGE_DETECTED',
  106: 'MC_MSGCH_PMREQ_CMP_TIMEOUT',
  112: 'MC_WATCHDOG_TIMEOUT_PKGC_SECONDARY',
  113: 'MC_WATCHDOG_TIMEOUT_PKGC_MAIN',
  114: 'MC_WATCHDOG_TIMEOUT_PKGS_MAIN',
  124: 'MC_BIOS_RST_CPL_INVALID_SEQ',
  125: 'MC_MORE_THAN_ONE_TXT_AGENT',
  129: 'MC_RECOVERABLE_DIE_THERMAL_TOO_HOT',
};

/** Broadwell DE PCU MSCOD bits 31:24. */
const BDW_DE_PCU: Table = {
  0: 'No Error',
  9: 'MC_MESSAGE_CHANNEL_TIMEOUT',
  19: 'MC_DMI_TRAINING_TIMEOUT',
  21: 'MC_DMI_CPU_RESET_ACK_TIMEOUT',
  30: 'MC_VR_ICC_MAX_LT_FUSED_ICC_MAX',
  37: 'MC_SVID_COMMAN_TIMEOUT',
  38: 'MCA_PKGC_DIRECT_WAKE_RING_TIMEOUT',
  41: 'MC_VR_VOUT_MAC_LT_FUSED_SVID',
  43: 'MC_PKGC_WATCHDOG_HANG_CBZ_DOWN',
  44: 'MC_PKGC_WATCHDOG_HANG_CBZ_UP',
  68: 'MC_CRITICAL_VR_FAILED',
  70: 'MC_VID_RAMP_DOWN_FAILED',
  73: 'MC_SVID_WRITE_REG_VOUT_MAX_FAILED',
  75: 'MC_BOOT_VID_TIMEOUT_DRAM_0',
  79: 'MC_SVID_COMMAND_ERROR',
  82: 'MC_FIVR_CATAS_OVERVOL_FAULT',
  83: 'MC_FIVR_CATAS_OVERCUR_FAULT',
  87: 'MC_SVID_PKGC_REQUEST_FAILED',
  88: 'MC_SVID_IMON_REQUEST_FAILED',
  89: 'MC_SVID_ALERT_REQUEST_FAILED',
  98: 'MC_INVALID_PKGS_RSP_QPI',
  100: 'MC_INVALID_PKG_STATE_CONFIG',
  103: 'MC_HA_IMC_RW_BLOCK_ACK_TIMEOUT',
  106: 'MC_MSGCH_PMREQ_CMP_TIMEOUT',
  114: 'MC_WATCHDOG_TIMEOUT_PKGS_MAIN',
  129: 'MC_RECOVERABLE_DIE_THERMAL_TOO_HOT',
};

/** Haswell / Broadwell EP QPI MSCOD bits 21:16. */
const HSW_QPI: Table = {
  2: 'Intel QPI physical layer detected drift buffer alarm',
  3: 'Intel QPI physical layer detected latency buffer rollover',
  16: 'Intel QPI link layer detected control error from R3QPI',
  17: 'Rx entered LLR abort state on CRC error',
  18: 'Unsupported or undefined packet',
  19: 'Intel QPI link layer control error',
  21: 'RBT used un-initialized value',
  32: 'Intel QPI physical layer detected a QPI in-band reset but aborted initialization',
  33: 'Link failover data self healing',
  34: 'Phy detected in-band reset (no width change)',
  35: 'Link failover clock failover',
  48: 'Rx detected CRC error - successful LLR after Phy re-init',
  49: 'Rx detected CRC error - successful LLR without Phy re-init',
};

/** Haswell EP iMC flags, bits 16-25 (Broadwell EP has no bit 23). */
const HSW_IMC_FLAGS: readonly (string | undefined)[] = [
  'DDR3 address parity error',
  'Uncorrected HA write data error',
  'Uncorrected HA data byte enable error',
  'Corrected patrol scrub error',
  'Uncorrected patrol scrub error',
  'Corrected spare error',
  'Uncorrected spare error',
  'Corrected memory read error',
  'iMC write data buffer parity error',
  'DDR4 command address parity error',
];
const BDW_IMC_FLAGS = HSW_IMC_FLAGS.map((f, i) => (i === 7 ? undefined : f));
const BDW_DE_IMC_FLAGS: readonly string[] = [
  'Address parity error',
  'HA Wrt buffer Data parity error',
  'HA Wrt byte enable parity error',
  'Corrected patrol scrub error',
  'Uncorrected patrol scrub error',
  'Corrected spare error',
  'Uncorrected spare error',
  'Corrected memory read error',
  'iMC, WDB, parity errors',
];

/** Denverton iMC (banks 6, 7) flags, bits 16-20. */
const DENVERTON_IMC_FLAGS: readonly string[] = [
  'Cmd/Addr parity',
  'Corrected Demand/Patrol Scrub Error',
  'Uncorrected patrol scrub error',
  'Uncorrected demand read error',
  'WDB read ECC',
];

/** Which bank holds which uncore unit in a server family, and the tables its MSCOD is read with. */
interface UncoreSpec {
  /** Bank 4's MSCOD table, for families whose bank 4 is the PCU. */
  readonly pcu?: Table;
  /** Broadwell DE reads only bits 17:16 as "PCU internal error" and bit 22 as a UBOX error. */
  readonly pcuDe?: boolean;
  readonly link?: { readonly name: string; readonly banks: readonly number[]; readonly table: Table };
  readonly imcBanks: readonly number[];
  readonly imcFlags: readonly (string | undefined)[];
  /** Skylake server: UPI's control-error flags, the M2M banks and the iMC's table when bit 27 is set. */
  readonly skylake?: boolean;
}

const HASWELL_EP: UncoreSpec = {
  pcu: HSW_PCU,
  link: { name: 'QPI', banks: [5, 20, 21], table: HSW_QPI },
  imcBanks: [9, 10, 11, 12, 13, 14, 15, 16],
  imcFlags: HSW_IMC_FLAGS,
};

/** The uncore specs by decoder kind. */
export const SERVER_UNCORE: Readonly<
  Record<'haswell-ep' | 'broadwell-ep' | 'broadwell-de' | 'skylake-server' | 'denverton', UncoreSpec>
> = {
  'haswell-ep': HASWELL_EP,
  'broadwell-ep': { ...HASWELL_EP, imcFlags: BDW_IMC_FLAGS },
  'broadwell-de': { pcu: BDW_DE_PCU, pcuDe: true, imcBanks: [9, 10], imcFlags: BDW_DE_IMC_FLAGS },
  denverton: { imcBanks: [6, 7], imcFlags: DENVERTON_IMC_FLAGS },
  'skylake-server': {
    pcu: SKX_PCU,
    link: { name: 'UPI', banks: [5, 12, 19], table: SKX_UPI },
    imcBanks: [13, 14, 15, 16, 17, 18],
    imcFlags: SKX_IMC_FLAGS,
    skylake: true,
  },
};

/** A server family's uncore bank: its unit (PCU, QPI/UPI, M2M, MemCtrl) and its MSCOD lines, as mcelog reads them. */
export function decodeServerUncore(
  spec: UncoreSpec,
  bank: number,
  status: bigint,
): { details: string[]; unit?: string } {
  const sLo = lo32(status);
  const flags = (names: readonly (string | undefined)[], from: number) => flagLines(names, from, sLo);
  if (bank === 4 && spec.pcu) {
    const mca = sLo & 0xffff & ~(1 << 12);
    const kind =
      mca === 0x402 || mca === 0x403
        ? ['Internal errors']
        : mca === 0x406
          ? ['Intel TXT errors']
          : mca === 0x407
            ? ['Other UBOX Internal errors']
            : [];
    const low = (sLo >>> 16) & 0xf;
    const internal = (spec.pcuDe ? low & 3 : low) !== 0 ? ['PCU internal error'] : [];
    const ubox = spec.pcuDe && ((sLo >>> 20) & 4) !== 0 ? ['Ubox error'] : [];
    return {
      details: [...kind, ...internal, ...ubox, lookupWithZero(spec.pcu, sLo >>> 24, 24)],
      unit: 'PCU',
    };
  }
  if (spec.link?.banks.includes(bank)) {
    const code = (sLo >>> 16) & 0x3f;
    const control = spec.skylake && code === 0x12 ? flags(SKX_UPI_CONTROL, 22) : [];
    const named = spec.skylake ? lookupWithZero(spec.link.table, code, 16) : lookup(spec.link.table, code, 16);
    return { details: named === undefined ? control : [named, ...control], unit: spec.link.name };
  }
  if (spec.skylake && (bank === 7 || bank === 8)) return { details: flags(SKX_M2M, 16), unit: 'M2M' };
  if (spec.imcBanks.includes(bank)) {
    const details =
      spec.skylake && ((sLo >>> 27) & 1) === 1
        ? [lookupWithZero(SKX_IMC_0X8XX, (sLo >>> 16) & 0xf, 16)]
        : flags(spec.imcFlags, 16);
    return { details, unit: 'MemCtrl' };
  }
  return { details: [] };
}

/** The names of the set bits from bit `from` on (an undefined name: a bit without one). */
function flagLines(names: readonly (string | undefined)[], from: number, sLo: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    if (name !== undefined && ((sLo >>> (from + i)) & 1) === 1) out.push(name);
  }
  return out;
}

/** Like {@link lookup}, for tables that name the value 0 too. */
function lookupWithZero(table: Table, value: number, bit: number): string {
  return table[value] ?? `<${bit}:${value.toString(16)}>`;
}

// --- Ice Lake server / D and Snow Ridge (the 10 nm servers) ---

const I10NM_PCU_HIGH: Table = {
  ...ranges([[0x65, 0x7a, 'MCA_PKGS_RESET_PREP_TIMEOUT']]),
  13: 'MCA_LLC_BIST_ACTIVE_TIMEOUT',
  14: 'MCA_DMI_TRAINING_TIMEOUT',
  15: 'MCA_DMI_STRAP_SET_ARRIVAL_TIMEOUT',
  16: 'MCA_DMI_CPU_RESET_ACK_TIMEOUT',
  17: 'MCA_MORE_THAN_ONE_LT_AGENT',
  20: 'MCA_INCOMPATIBLE_PCH_TYPE',
  30: 'MCA_BIOS_RST_CPL_INVALID_SEQ',
  31: 'MCA_BIOS_INVALID_PKG_STATE_CONFIG',
  45: 'MCA_PCU_PMAX_CALIB_ERROR',
  46: 'MCA_TSC100_SYNC_TIMEOUT',
  58: 'MCA_GPSB_TIMEOUT',
  59: 'MCA_PMSB_TIMEOUT',
  62: 'MCA_IOSFSB_PMREQ_CMP_TIMEOUT',
  64: 'MCA_SVID_VCCIN_VR_ICC_MAX_FAILURE',
  66: 'MCA_SVID_VCCIN_VR_VOUT_FAILURE',
  67: 'MCA_SVID_CPU_VR_CAPABILITY_ERROR',
  68: 'MCA_SVID_CRITICAL_VR_FAILED',
  69: 'MCA_SVID_SA_ITD_ERROR',
  70: 'MCA_SVID_READ_REG_FAILED',
  71: 'MCA_SVID_WRITE_REG_FAILED',
  74: 'MCA_SVID_PKGC_REQUEST_FAILED',
  75: 'MCA_SVID_IMON_REQUEST_FAILED',
  76: 'MCA_SVID_ALERT_REQUEST_FAILED',
  77: 'MCA_SVID_MCP_VR_RAMP_ERROR',
  86: 'MCA_FIVR_PD_HARDERR',
  88: 'MCA_WATCHDOG_TIMEOUT_PKGC_SECONDARY',
  89: 'MCA_WATCHDOG_TIMEOUT_PKGC_MAIN',
  90: 'MCA_WATCHDOG_TIMEOUT_PKGS_MAIN',
  91: 'MCA_WATCHDOG_TIMEOUT_MSG_CH_FSM',
  92: 'MCA_WATCHDOG_TIMEOUT_BULK_CR_FSM',
  93: 'MCA_WATCHDOG_TIMEOUT_IOSFSB_FSM',
  96: 'MCA_PKGS_SAFE_WP_TIMEOUT',
  97: 'MCA_PKGS_CPD_UNCPD_TIMEOUT',
  98: 'MCA_PKGS_INVALID_REQ_PCH',
  99: 'MCA_PKGS_INVALID_REQ_INTERNAL',
  100: 'MCA_PKGS_INVALID_RSP_INTERNAL',
  123: 'MCA_PKGS_SMBUS_VPP_PAUSE_TIMEOUT',
  124: 'MCA_PKGS_SMBUS_MCP_PAUSE_TIMEOUT',
  125: 'MCA_PKGS_SMBUS_SPD_PAUSE_TIMEOUT',
  128: 'MCA_PKGC_DISP_BUSY_TIMEOUT',
  129: 'MCA_PKGC_INVALID_RSP_PCH',
  131: 'MCA_PKGC_WATCHDOG_HANG_CBZ_DOWN',
  132: 'MCA_PKGC_WATCHDOG_HANG_CBZ_UP',
  135: 'MCA_PKGC_WATCHDOG_HANG_C2_BLKMASTER',
  136: 'MCA_PKGC_WATCHDOG_HANG_C2_PSLIMIT',
  137: 'MCA_PKGC_WATCHDOG_HANG_SETDISP',
  139: 'MCA_PKGC_ALLOW_L1_ERROR',
  144: 'MCA_RECOVERABLE_DIE_THERMAL_TOO_HOT',
  160: 'MCA_ADR_SIGNAL_TIMEOUT',
  161: 'MCA_BCLK_FREQ_OC_ABOVE_THRESHOLD',
  176: 'MCA_DISPATCHER_RUN_BUSY_TIMEOUT',
};
const I10NM_PCU_MID: Table = {
  4: 'Clock/power IP response timeout',
  5: 'SMBus controller raised SMI',
  9: 'PM controller received invalid transaction',
};
const I10NM_PCU_LOW: Table = {
  1: 'Instruction address out of valid space',
  2: 'Double bit RAM error on Instruction Fetch',
  3: 'Invalid OpCode seen',
  4: 'Stack Underflow',
  5: 'Stack Overflow',
  6: 'Data address out of valid space',
  7: 'Double bit RAM error on Data Fetch',
};
const I10NM_UPI_CONTROL: readonly string[] = [
  'Phy Control Error',
  'Unexpected Retry.Ack flit',
  'Unexpected Retry.Req flit',
  'RF parity error',
  'Routeback Table error',
  'Unexpected Tx Protocol flit (EOP, Header or Data)',
  'Rx Header-or-Credit BGF credit overflow/underflow',
  'Link Layer Reset still in progress when Phy enters L0',
  'Link Layer reset initiated while protocol traffic not idle',
  'Link Layer Tx Parity Error',
];
const I10NM_UPI: Table = {
  0: 'Phy Initialization Failure (NumInit)',
  1: 'Phy Detected Drift Buffer Alarm',
  2: 'Phy Detected Latency Buffer Rollover',
  16: 'LL Rx detected CRC error: unsuccessful LLR (entered Abort state)',
  17: 'LL Rx Unsupported/Undefined packet',
  18: 'LL or Phy Control Error',
  19: 'LL Rx Parameter Exception',
  31: 'LL Detected Control Error',
  32: 'Phy Initialization Abort',
  33: 'Phy Inband Reset',
  34: 'Phy Lane failure, recovery in x8 width',
  35: 'Phy L0c error corrected without Phy reset',
  36: 'Phy L0c error triggering Phy reset',
  37: 'Phy L0p exit error corrected with reset',
  48: 'LL Rx detected CRC error: successful LLR without Phy Reinit',
  49: 'LL Rx detected CRC error: successful LLR with Phy Reinit',
  50: 'Tx received LLR',
};
const I10NM_M2M: readonly string[] = [
  'MC read data error',
  'Reserved',
  'MC partial write data error',
  'Full write data error',
  'M2M clock-domain-crossing buffer (BGF) error',
  'M2M time out',
  'M2M tracker parity error',
  'fatal Bucket1 error',
];
/** iMC MSCOD: bits 31:24 pick the table, bits 23:16 (masked to the table's width) index it. */
const I10NM_IMC: Readonly<Record<number, readonly [mask: number, table: Table]>> = {
  0: [
    0xff,
    {
      1: 'Address parity error',
      2: 'Data parity error',
      3: 'Data ECC error',
      4: 'Data byte enable parity error',
      7: 'Transaction ID parity error',
      8: 'Corrected patrol scrub error',
      16: 'Uncorrected patrol scrub error',
      32: 'Corrected spare error',
      64: 'Uncorrected spare error',
      128: 'Corrected read error',
      160: 'Uncorrected read error',
      192: 'Uncorrected metadata',
    },
  ],
  1: [
    0x1f,
    {
      0: 'WDB read parity error',
      3: 'RPA parity error',
      6: 'DDR_T_DPPP data BE error',
      7: 'DDR_T_DPPP data error',
      8: 'DDR link failure',
      17: 'PCLS CAM error',
      18: 'PCLS data error',
    },
  ],
  2: [
    0x3f,
    { 0: 'DDR command / address parity error', 32: 'HBM command / address parity error', 33: 'HBM data parity error' },
  ],
  4: [0x01, { 0: 'RPQ parity (primary) error' }],
  8: [
    0x3f,
    {
      0: 'DDR-T bad request',
      1: 'DDR Data response to an invalid entry',
      2: 'DDR data response to an entry not expecting data',
      3: 'DDR completion to an invalid entry',
      4: 'DDR-T completion to an invalid entry',
      5: 'DDR data/completion FIFO overflow',
      6: 'DDR-T ERID correctable parity error',
      7: 'DDR-T ERID uncorrectable error',
      8: 'DDR-T interrupt received while outstanding interrupt was not ACKed',
      9: 'ERID FI FO overflow',
      10: 'DDR-T error on FNV write credits',
      11: 'DDR-T error on FNV read credits',
      12: 'DDR-T scheduler error',
      13: 'DDR-T FNV error event',
      14: 'DDR-T FNV thermal event',
      15: 'CMI packet while idle',
      16: 'DDR_T_RPQ_REQ_PARITY_ERR',
      17: 'DDR_T_WPQ_REQ_PARITY_ERR',
      18: '2LM_NMFILLWR_CAM_ERR',
      19: 'CMI_CREDIT_OVERSUB_ERR',
      20: 'CMI_CREDIT_TOTAL_ERR',
      21: 'CMI_CREDIT_RSVD_POOL_ERR',
      22: 'DDR_T_RD_ERROR',
      23: 'WDB_FIFO_ERR',
      24: 'CMI_REQ_FIFO_OVERFLOW',
      25: 'CMI_REQ_FIFO_UNDERFLOW',
      26: 'CMI_RSP_FIFO_OVERFLOW',
      27: 'CMI_RSP_FIFO_UNDERFLOW',
      28: 'CMI _MISC_MC_CRDT_ERRORS',
      29: 'CMI_MISC_MC_ARB_ERRORS',
      30: 'DDR_T_WR_CMPL_FI FO_OVERFLOW',
      31: 'DDR_T_WR_CMPL_FI FO_UNDERFLOW',
      32: 'CMI_RD_CPL_FIFO_OVERFLOW',
      33: 'CMI_RD_CPL_FIFO_UNDERFLOW',
      34: 'TME_KEY_PAR_ERR',
      35: 'TME_CMI_MISC_ERR',
      36: 'TME_CMI_OVFL_ERR',
      37: 'TME_CMI_UFL_ERR',
      38: 'TME_TEM_SECURE_ERR',
      39: 'TME_UFILL_PAR_ERR',
      41: 'INTERNAL_ERR',
      42: 'TME_INTEGRITY_ERR',
      43: 'TME_TDX_ERR',
      44: 'TME_UFILL_TEM_SECURE_ERR',
      45: 'TME_KEY_POISON_ERR',
      46: 'TME_SECURITY_ENGINE_ERR',
    },
  ],
  16: [
    0xff,
    {
      8: 'CORR_PATSCRUB_MIRR2ND_ERR',
      16: 'UC_PATSCRUB_MIRR2ND_ERR',
      32: 'COR_SPARE_MIRR2ND_ERR',
      64: 'UC_SPARE_MIRR2ND_ERR',
      128: 'HA_RD_MIRR2ND_ERR',
      160: 'HA_UNCORR_RD_MIRR2ND_ERR',
    },
  ],
};
const I10NM_ECC_MODES: Table = { 0: 'SDDC memory mode', 1: 'SDDC', 4: 'ADDDC memory mode', 5: 'ADDDC', 8: 'DDRT read' };

type I10nmUnit = 'PCU' | 'UPI' | 'M2M' | 'MemCtrl';
/** Bank units: Ice Lake server's four memory controllers (M2M then three channels each), Ice Lake D's two, Snow Ridge's one. */
function i10nmUnit(kind: 'icelake-server' | 'icelake-d' | 'snowridge', bank: number): I10nmUnit | undefined {
  const mcs = kind === 'icelake-server' ? 4 : kind === 'icelake-d' ? 2 : 1;
  if (bank === 4) return 'PCU';
  if (kind === 'icelake-server' && (bank === 5 || bank === 7 || bank === 8)) return 'UPI';
  if (bank >= 12 && bank < 12 + 4 * mcs) return (bank - 12) % 4 === 0 ? 'M2M' : 'MemCtrl';
  return undefined;
}

/** Ice Lake server / D and Snow Ridge: the bank's unit and its MSCOD lines, the DRAM address fields of an iMC's MISC. */
export function decodeI10nm(
  kind: 'icelake-server' | 'icelake-d' | 'snowridge',
  bank: number,
  status: bigint,
  misc: bigint,
): { details: string[]; unit?: string } {
  const unit = i10nmUnit(kind, bank);
  if (unit === undefined) return { details: [] };
  const sLo = lo32(status);
  const out: string[] = [];
  const put = (t: string | undefined) => {
    if (t !== undefined) out.push(t);
  };
  const bitsOf = (from: number, names: readonly string[]) => {
    for (let i = 0; i < names.length; i++) if (((sLo >>> (from + i)) & 1) === 1) out.push(names[i]!);
  };
  if (unit === 'PCU') {
    const high = sLo >>> 24;
    const mid = (sLo >>> 20) & 0xf;
    const low = (sLo >>> 16) & 0x7;
    if (high !== 0) put(lookup(I10NM_PCU_HIGH, high, 0));
    if (mid !== 0) put(lookup(I10NM_PCU_MID, mid, 0));
    if (low !== 0) put(lookup(I10NM_PCU_LOW, low, 0));
  } else if (unit === 'UPI') {
    if (sLo >>> 22 !== 0) bitsOf(22, I10NM_UPI_CONTROL);
    put(lookupWithZero(I10NM_UPI, (sLo >>> 16) & 0x3f, 0));
  } else if (unit === 'M2M') {
    out.push(`MscodDDRType=0x${((sLo >>> 24) & 3).toString(16)}`, `MscodMiscErrs=0x${(sLo >>> 26).toString(16)}`);
    bitsOf(16, I10NM_M2M);
  } else {
    const entry = I10NM_IMC[sLo >>> 24];
    if (entry !== undefined) {
      const [mask, table] = entry;
      const v = (sLo >>> 16) & 0xff & mask;
      put(table[v] ?? (v === 0 ? undefined : `<0:${v.toString(16)}>`));
    }
    const mLo = lo32(misc);
    const mHi = hi32(misc);
    const transient = mHi >>> 31 === 1;
    out.push(
      `bank: 0x${field(mHi, mLo, 42, 43).toString(16)} bankgroup: 0x${(field(mHi, mLo, 40, 41) | (field(mHi, mLo, 44, 44) << 2)).toString(16)} row: 0x${field(mHi, mLo, 19, 39).toString(16)} column: 0x${(field(mHi, mLo, 9, 18) << 2).toString(16)}`,
    );
    if (!transient && ((hi32(status) >>> 29) & 1) === 0)
      out.push(`failed device: 0x${field(mHi, mLo, 46, 51).toString(16)}`);
    out.push(`rank: 0x${field(mHi, mLo, 56, 58).toString(16)} subrank: 0x${field(mHi, mLo, 52, 55).toString(16)}`);
    out.push(`ecc mode: ${I10NM_ECC_MODES[field(mHi, mLo, 59, 62)] ?? 'unknown'}`);
    if (transient) out.push('transient');
  }
  return { details: out, unit };
}

// --- Granite Rapids, Sierra Forest, Clearwater Forest ---

const GNR_UPI: Table = {
  0: 'UC Phy Initialization Failure (NumInit)',
  1: 'UC Phy Detected Drift Buffer Alarm',
  2: 'UC Phy Detected Latency Buffer Rollover',
  16: 'UC LL Rx detected CRC error: unsuccessful LLR (entered Abort state)',
  17: 'UC LL Rx Unsupported/Undefined packet',
  18: 'UC LL or Phy Control Error',
  19: 'UC LL Rx Parameter Exception',
  20: 'UC LL TDX Failure',
  21: 'UC LL SGX Failure',
  22: 'UC LL Tx SDC Parity Error',
  23: 'UC LL Rx SDC Parity Error',
  24: 'UC LL FLE Failure',
  31: 'UC LL Detected Control Error',
  32: 'COR Phy Initialization Abort',
  33: 'COR Phy Inband Reset',
  34: 'COR Phy Lane failure, recovery in x8 width',
  35: 'COR Phy L0c error corrected without Phy reset',
  36: 'COR Phy L0c error triggering Phy reset',
  37: 'COR Phy L0p exit error corrected with reset',
  48: 'COR LL Rx detected CRC error: successful LLR without Phy Reinit',
  49: 'COR LL Rx detected CRC error: successful LLR with Phy Reinit',
};
const GNR_PUNIT_LOW: Table = {
  ...ranges([
    [0x02, 0x03, 'Power Management Unit microcontroller double-bit ECC error'],
    [0x08, 0x09, 'Power Management Unit microcontroller error'],
  ]),
  10: 'Power Management Unit microcontroller patch load error',
  11: 'Power Management Unit microcontroller POReqValid error',
  16: 'Power Management Unit microcontroller TeleSRAM double-bit ECC error',
  32: 'Power Management Agent signaled error',
  128: 'S3M signaled error',
  160: 'Power Management Unit HPMSRAM double-bit ECC error detected',
  176: 'Power Management Unit TPMISRAM double-bit ECC error detected',
};
const GNR_PUNIT_HIGH: Table = {
  9: 'MCA_TSC_DOWNLOAD_TIMEOUT: TSC download timed out',
  11: 'MCA_GPSB_TIMEOUT: GPSB does not respond within timeout value',
  12: 'MCA_PMSB_TIMEOUT: PMSB does not respond within timeout value',
  16: 'MCA_PMAX_CALIB_ERROR: PMAX calibration error',
  26: 'MCA_DISP_RUN_BUSY_TIMEOUT: Dispatcher busy beyond timeout',
  29: 'MCA_MORE_THAN_ONE_LT_AGENT: During Boot Mode Processing, >1 LT Agent detected',
  35: 'MCA_PCU_SVID_ERROR: SVID error',
  53: 'MCA_SVID_LOADLINE_INVALID: Invalid SVID VCCIN Loadline resistance value',
  54: 'MCA_SVID_ICCMAX_INVALID: Invalid SVID ICCMAX value',
  64: 'MCA_SVID_VIDMAX_INVALID: Invalid SVID VID_MAX value',
  65: 'MCA_SVID_VDDRAMP_INVALID: Invalid ramp voltage for VDD_RAMP',
  72: 'MCA_ITD_FUSE_INVALID: ITD fuse settings are not valid',
  73: 'MCA_SVID_DC_LL_INVALID: ITD fuse settings are not valid',
  74: 'MCA_FIVR_PD_HARDERR: PM event has issued some FIVR Fault',
  76: 'MCA_HPM_DOUBLE_BIT_ERROR_DETECTED: Read from HPM SRAM resulted in Double bit error',
  86: 'SVID_ACTIVE_VID_FUSE_ERROR: Invaid fuse values programmed for SVID Active vid',
};
const GNR_B2CMI: Table = {
  1: 'Read ECC error',
  2: 'Bucket1 error',
  3: 'Tracker Parity error',
  4: 'Security mismatch',
  7: 'Read completion parity error',
  8: 'Response parity error',
  9: 'Timeout error',
  10: 'Address parity error',
  12: 'CMI credit over subscription error',
  13: 'SAI mismatch error',
};
/** MCCHAN MSCOD: bits 31:24 pick the table, bits 23:16 (masked to the table's width) index it. */
const GNR_MCCHAN: Readonly<Record<number, readonly [mask: number, table: Table]>> = {
  0: [
    0xff,
    {
      1: 'Address Parity Error (APPP)',
      2: 'CMI Wr data parity Error on sCH0',
      3: 'CMI Uncorr/Corr ECC error on sCH0',
      4: 'CMI Wr BE parity Error on sCH0',
      5: 'CMI Wr MAC parity Error on sCH0',
      8: 'Corr Patrol Scrub Error',
      16: 'UnCorr Patrol Scrub Error',
      32: 'Corr Spare Error',
      64: 'UnCorr Spare Error',
      128: 'Transient or Correctable Error for Demand or Underfill Reads',
      160: 'Uncorrectable Error for Demand or Underfill Reads',
      176: 'Poison was read from memory when poison was disabled in memory controller',
      192: 'Read 2LM MetaData Error',
    },
  ],
  1: [
    0x0f,
    {
      0: 'WDB Read Parity Error on sCH0',
      2: 'WDB Read Uncorr/Corr ECC Error on sCH0',
      4: 'WDB BE Read Parity Error on sCH0',
      6: 'WDB Read Persistent Corr ECC Error on sCH0',
      8: 'DDR Link Fail',
      9: 'Illegal incoming opcode',
    },
  ],
  2: [0x01, { 0: 'DDR CAParity or WrCRC Error' }],
  4: [0x01, { 0: 'Scheduler address parity error' }],
  8: [0x3f, { 50: 'MC Internal Errors', 51: 'MCTracker Address RF parity error' }],
  32: [
    0x07,
    {
      2: 'CMI Wr data parity Error on sCH1',
      3: 'CMI Uncorr/Corr ECC error on sCH1',
      4: 'CMI Wr BE parity Error on sCH1',
      5: 'CMI Wr MAC parity Error on sCH1',
    },
  ],
  33: [
    0x07,
    {
      0: 'WDB Read Parity Error on sCH1',
      2: 'WDB Read Uncorr/Corr ECC Error on sCH1',
      4: 'WDB BE Read Parity Error on sCH1',
      6: 'WDB Read Persistent Corr ECC Error on sCH1',
    },
  ],
};
const GNR_ECC_MODES: Table = {
  1: 'SDDC 128b 1LM',
  2: 'SDDC 125b 1LM',
  3: 'SDDC 96b 1LM',
  4: 'SDDC 96b 2LM',
  5: 'ADDDC 80b 1LM',
  6: 'ADDDC 80b 2LM',
  7: 'ADDDC 64b 1LM',
  8: '9x4 61b 1LM',
  9: '9x4 32b 1LM',
  10: '9x4 32b 2LM',
};

/** A value masked to its table's width: its name, `<0:value>` when unnamed and non-zero, nothing for an unnamed 0. */
function masked(table: Table, mask: number, value: number): string | undefined {
  const v = value & mask;
  return table[v] ?? (v === 0 ? undefined : `<0:${v.toString(16)}>`);
}

/** Granite Rapids, Sierra and Clearwater Forest: UPI (5), Punit (6), B2CMI (12) and MCCHAN (13-24) banks. */
export function decodeGranite(bank: number, status: bigint, misc: bigint): { details: string[]; unit?: string } {
  const sLo = lo32(status);
  const sHi = hi32(status);
  const out: string[] = [];
  const put = (t: string | undefined) => {
    if (t !== undefined) out.push(t);
  };
  const mscod = sLo >>> 16;
  if (bank === 5) {
    put(masked(GNR_UPI, 0x3f, mscod));
    return { details: out, unit: 'UPI' };
  }
  if (bank === 6) {
    put(masked(GNR_PUNIT_LOW, 0xff, mscod & 0xff));
    put(masked(GNR_PUNIT_HIGH, 0x7f, mscod >>> 8));
    return { details: out, unit: 'Punit' };
  }
  if (bank === 12) {
    put(masked(GNR_B2CMI, 0xf, mscod));
    return { details: out, unit: 'B2CMI' };
  }
  if (bank < 13 || bank > 24) return { details: out };
  const entry = GNR_MCCHAN[mscod >>> 8];
  if (entry !== undefined) put(masked(entry[1], entry[0], mscod & 0xff));
  // MCi_MISC holds the DRAM address when MISCV and OTHER_INFO[1] say so, except for MSCOD 0x800-0x82f.
  if (((sHi >>> 27) & 1) === 1 && ((sHi >>> 1) & 1) === 1 && !(mscod >= 0x800 && mscod <= 0x82f)) {
    const mLo = lo32(misc);
    const mHi = hi32(misc);
    const transient = mHi >>> 31 === 1;
    out.push(
      `bank: 0x${field(mHi, mLo, 37, 38).toString(16)} bankgroup: 0x${field(mHi, mLo, 39, 41).toString(16)} row: 0x${field(mHi, mLo, 19, 36).toString(16)} column: 0x${(field(mHi, mLo, 9, 18) << 2).toString(16)}`,
    );
    if (!transient) out.push(`failed device: 0x${field(mHi, mLo, 43, 48).toString(16)}`);
    out.push(
      `chipselect: 0x${field(mHi, mLo, 55, 57).toString(16)} subrank: 0x${field(mHi, mLo, 51, 54).toString(16)}`,
    );
    out.push(`ecc mode: ${GNR_ECC_MODES[field(mHi, mLo, 58, 61)] ?? 'Invalid/unknown ECC mode'}`);
    if (transient) out.push('transient');
  }
  return { details: out, unit: 'MCCHAN' };
}

// --- Sapphire / Emerald Rapids PCU and UPI (the Ice Lake tables with their own changes) ---

const SPR_PCU_HIGH: Table = { ...I10NM_PCU_HIGH, 192: 'MCA_DISPATCHER_RUN_BUSY_TIMEOUT' };
/** PCU bits 19:16 when the MCA code is 0x40c (a microcode-detected condition). */
const SPR_PCU_MCE: Table = {
  1: 'MCE when CR4.MCE is clear',
  2: 'MCE when MCIP bit is set',
  3: 'MCE under WPS',
  4: 'Unrecoverable error during security flow execution',
  5: 'SW triple fault shutdown',
  6: 'VMX exit consistency check failures',
  7: 'RSM consistency check failures',
  8: 'Invalid conditions on protected mode SMM entry',
  9: 'Unrecoverable error during security flow execution',
};
const SPR_UPI: Table = (() => {
  const t: Record<number, string> = { ...I10NM_UPI, 0: 'Phy Initialization Failure', 21: 'UC LL Rx SGX MAC Error' };
  delete t[0x32];
  return t;
})();

/** Sapphire / Emerald Rapids PCU (bank 4) and UPI (bank 5) lines; undefined for other banks. */
export function decodeSapphireUncore(bank: number, status: bigint): string[] | undefined {
  const sLo = lo32(status);
  const out: string[] = [];
  const put = (t: string | undefined) => {
    if (t !== undefined) out.push(t);
  };
  if (bank === 4) {
    const high = sLo >>> 24;
    const mid = (sLo >>> 20) & 0xf;
    const low = (sLo >>> 16) & 0xf;
    if (high !== 0) put(lookup(SPR_PCU_HIGH, high, 0));
    if (mid !== 0) put(lookup(I10NM_PCU_MID, mid, 0));
    if (low !== 0) put((sLo & 0xffff) === 0x40c ? lookup(SPR_PCU_MCE, low, 0) : lookup(I10NM_PCU_LOW, low & 7, 0));
    return out;
  }
  if (bank === 5) {
    if (sLo >>> 22 !== 0) {
      for (let i = 0; i < I10NM_UPI_CONTROL.length; i++)
        if (((sLo >>> (22 + i)) & 1) === 1) out.push(I10NM_UPI_CONTROL[i]!);
    }
    put(lookupWithZero(SPR_UPI, (sLo >>> 16) & 0x3f, 0));
    return out;
  }
  return undefined;
}

/** Sapphire / Emerald Rapids iMC MSCOD tables: Ice Lake's, with fewer codes in tables 1 and 2. */
const SPR_IMC: Readonly<Record<number, readonly [mask: number, table: Table]>> = {
  ...I10NM_IMC,
  1: [0x0f, { 0: 'WDB read parity error', 8: 'DDR link failure' }],
  2: [0x01, { 0: 'DDR5 command / address parity error' }],
};

/** The line of a Sapphire / Emerald Rapids iMC MSCOD: table `select` (bits 31:24), `value` (bits 23:16). */
export function sapphireImcLine(select: number, value: number): string | undefined {
  const entry = SPR_IMC[select];
  return entry === undefined ? undefined : masked(entry[1], entry[0], value);
}
