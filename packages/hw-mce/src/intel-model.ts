/**
 * Intel model-specific decoding: the MCi_STATUS bits 31:16 and MCi_MISC fields that the Intel SDM vol. 4 ("Model-
 * Specific Registers", machine-check sections per family) and vol. 3B ch. 17 define per CPU family, with the memory
 * channel and DIMM where the registers (or the bank number) carry them. Families without a table here still get the
 * architectural decoding; `unknown` says what was left out.
 */
import { bit, bits, field, hi32, lo32 } from './bits.ts';
import type { CpuKind } from './cpu.ts';
import {
  decodeDiamond,
  decodeGranite,
  decodeI10nm,
  decodeSandyIvy,
  decodeSapphireUncore,
  decodeServerUncore,
  knightsChannel,
  SERVER_UNCORE,
  sapphireImcLine,
} from './intel-families.ts';
import { decodeFsbIntel } from './intel-legacy.ts';
import type { McaCode } from './mca-code.ts';

/** What the model-specific registers add. */
export interface ModelDecoding {
  /** Lines for operators, e.g. `Memory DIMM ID of error: 1`. */
  readonly details: readonly string[];
  /** Named fields for JSON. */
  readonly fields: Readonly<Record<string, number | string | boolean>>;
  readonly channel?: number;
  readonly dimm?: number;
  /** How a corrected memory error was corrected, when not by ECC ("mirroring with channel failover"). */
  readonly correctedBy?: string;
  /** A unit name for the bank (`M2M`, `MemCtrl`, `PCU`, `UPI`, `HBM MemCtrl`), when the family names its banks. */
  readonly unit?: string;
  readonly unknown?: string;
}

const NHM_MEMORY_STATUS: readonly [number, string][] = [
  [16, 'Memory read ECC error'],
  [17, 'Memory ECC error occurred during scrub'],
  [18, 'Memory write parity error'],
  [19, 'Memory error in half of redundant memory'],
  [20, 'Memory reserved 20'],
  [21, 'Memory access out of range'],
  [22, 'Memory internal RTID invalid'],
  [23, 'Memory address parity error'],
  [24, 'Memory byte enable parity error'],
];

const QPI_STATUS: readonly [number, string][] = [
  [16, 'QPI header had bad parity'],
  [17, 'QPI Data packet had bad parity'],
  [18, 'Number of QPI retries exceeded'],
  [19, 'Received QPI data packet that was poisoned by sender'],
  [20, 'QPI reserved 20'],
  [21, 'QPI reserved 21'],
  [22, 'QPI received unsupported message encoding'],
  [23, 'QPI credit type is not supported'],
  [24, 'Sender sent too many QPI flits to the receiver'],
  [25, 'QPI Sender sent a failed response to receiver'],
  [26, 'Clock jitter detected in internal QPI clocking'],
];

const QPI_MISC: readonly [number, string][] = [
  [14, 'QPI misc reserved 14'],
  [15, 'QPI misc reserved 15'],
  [24, 'QPI Interleave/Head Indication Bit (IIB)'],
];

const SPR_M2M: Readonly<Record<number, string>> = {
  1: 'Read ECC error',
  2: 'Bucket1 error',
  3: 'RdTrkr Parity error',
  5: 'Prefetch channel mismatch',
  7: 'Read completion parity error',
  8: 'Response parity error',
  9: 'Timeout error',
  10: 'CMI reserved credit pool error',
  11: 'CMI total credit count error',
  12: 'CMI credit oversubscription error',
};

const SPR_ECC_MODES = [
  'SDDC 2LM memory mode',
  'SDDC',
  'SDDC+1 2LM memory mode',
  'SDDC+1',
  'ADDDC 2LM memory mode',
  'ADDDC',
  'ADDDC+1 2LM memory mode',
  'ADDDC+1',
  'DDRT read',
];

// Most records add no model-specific lines: they share these (frozen) instead of allocating empty ones.
const NO_DETAILS: readonly string[] = Object.freeze([]);
const NO_FIELDS: Readonly<Record<string, number | string | boolean>> = Object.freeze({});

const MIRROR = ['', 'mirroring with channel failover', 'mirroring. Primary channel scrubbed successfully'] as const;

/** Decodes the model-specific parts of an Intel record. */
export function decodeIntelModel(
  kind: CpuKind,
  bank: number,
  status: bigint,
  misc: bigint,
  code: McaCode,
  apicid?: number,
): ModelDecoding {
  const details = NO_DETAILS;
  const fields = NO_FIELDS;
  const memory = code.class === 'memory-controller';
  // Number halves: BigInt shifts allocate, and this runs per record.
  const sLo = lo32(status);
  const sHi = hi32(status);
  const sb = (b: number) => (b < 32 ? (sLo >>> b) & 1 : (sHi >>> (b - 32)) & 1) === 1;
  const miscValid = sb(59);
  const chan = code.channel;
  switch (kind) {
    case 'nehalem': {
      // Bus errors carry the P6-family bus fields too, and internal errors Xeon 7500's codes (mcelog reads both).
      const details: string[] = decodeFsbIntel('xeon75xx', status, misc);
      const fields: Record<string, number | string | boolean> = {};
      const hex = (v: number) => v.toString(16);
      if (memory) {
        for (const [b, text] of NHM_MEMORY_STATUS) if (sb(b)) details.push(text);
        const low = field(sHi, sLo, 25, 37);
        if (low !== 0) details.push(`Memory MISC reserved 25..37: ${hex(low)}`);
        const count = (sHi >>> 6) & 0x7fff;
        details.push(`Memory corrected error count (CORE_ERR_CNT): ${count}`);
        const high = (sHi >>> 21) & 0xf;
        if (high !== 0) details.push(`Memory MISC reserved 53..56: ${hex(high)}`);
        fields.coreErrCount = count;
        if (miscValid) {
          const mLo = lo32(misc);
          const rtid = mLo & 0xff;
          const dimm = (mLo >>> 16) & 3;
          const channel = (mLo >>> 18) & 3;
          const syndrome = hi32(misc);
          details.push(
            `Memory transaction Tracker ID (RTId): ${rtid.toString(16)}`,
            `Memory DIMM ID of error: ${dimm}`,
            `Memory channel ID of error: ${channel}`,
            `Memory ECC syndrome: ${syndrome.toString(16)}`,
          );
          Object.assign(fields, { rtid, dimm, channel, syndrome });
          return { details, fields, channel, dimm };
        }
      } else if (code.class === 'bus') {
        for (const [b, text] of QPI_STATUS) if (sb(b)) details.push(text);
        if (miscValid) {
          const mLo = lo32(misc);
          const opcode = mLo & 0xff;
          const rtid = (mLo >>> 8) & 0x3f;
          const reserved = (mLo >>> 19) & 0x1f;
          if (opcode !== 0) details.push(`QPI class and opcode of packet with error: ${hex(opcode)}`);
          if (rtid !== 0) details.push(`QPI Request Transaction ID: ${hex(rtid)}`);
          details.push(`QPI Requestor/Home Node ID (RHNID): ${(mLo >>> 16) & 7}`);
          if (reserved !== 0) details.push(`QPI miscreserved 19-23: ${hex(reserved)}`);
          for (const [b, text] of QPI_MISC) if (((mLo >>> b) & 1) === 1) details.push(text);
        }
      }
      return { details, fields, channel: chan };
    }
    case 'sandybridge':
    case 'sandybridge-ep':
    case 'ivybridge-ep':
      return decodeSandyIvy(kind, bank, status, misc, code);
    case 'knightslanding':
    case 'knightsmill':
      return { details, fields, channel: knightsChannel(bank, code) };
    case 'diamondrapids':
      return decodeDiamond(bank, status, misc, code, apicid);
    case 'haswell-ep':
    case 'broadwell-ep': {
      const correctedBy = kind === 'broadwell-ep' ? mirror(bank, status, misc, 41, 42) : undefined;
      const channel = memory && chan !== undefined ? haswellChannel(bank, chan) : undefined;
      const unitLines = decodeServerUncore(SERVER_UNCORE[kind], bank, status);
      return {
        details: unitLines.details.length > 0 ? unitLines.details : details,
        fields,
        unit: unitLines.unit,
        channel,
        correctedBy,
      };
    }
    case 'denverton':
    case 'broadwell-de': {
      const unitLines = decodeServerUncore(SERVER_UNCORE[kind], bank, status);
      return {
        details: unitLines.details.length > 0 ? unitLines.details : details,
        fields,
        unit: unitLines.unit,
        channel: chan,
      };
    }
    case 'skylake-server': {
      const correctedBy = mirror(bank, status, misc, 63, 62);
      const unitLines = decodeServerUncore(SERVER_UNCORE[kind], bank, status);
      const channel = memory && chan !== undefined ? skylakeChannel(bank, chan) : undefined;
      return {
        details: unitLines.details.length > 0 ? unitLines.details : details,
        fields,
        unit: unitLines.unit,
        channel,
        correctedBy,
      };
    }
    case 'icelake-server':
    case 'icelake-d':
    case 'snowridge': {
      const channel = memory && chan !== undefined && bank >= 13 && bank <= 24 ? bank - 13 : undefined;
      const unitLines = decodeI10nm(kind, bank, status, misc);
      return {
        details: unitLines.details.length > 0 ? unitLines.details : details,
        fields,
        unit: unitLines.unit,
        channel,
      };
    }
    case 'sapphirerapids':
    case 'emeraldrapids':
      return sapphire(bank, status, misc, memory && chan !== undefined);
    case 'graniterapids':
    case 'sierraforest':
    case 'clearwaterforest': {
      const channel = memory && chan !== undefined && bank >= 13 && bank <= 24 ? bank - 13 : undefined;
      const unitLines = decodeGranite(bank, status, misc);
      return {
        details: unitLines.details.length > 0 ? unitLines.details : details,
        fields,
        unit: unitLines.unit,
        channel,
      };
    }
    case 'core2':
    case 'dunnington':
    case 'xeon75xx':
    case 'p4':
    case 'tulsa':
    case 'p6old': {
      const lines = decodeFsbIntel(kind, status, misc);
      return { details: lines.length > 0 ? lines : details, fields, channel: chan };
    }
    case 'intel':
      return { details, fields, channel: chan };
    default:
      return {
        details,
        fields,
        channel: chan,
        unknown: 'the model-specific status and MISC bits of this family are not decoded',
      };
  }
}

/** Corrected by mirroring (Broadwell-EP home agents: MISC bits 41/42; Skylake server M2M: bits 63/62). */
function mirror(bank: number, status: bigint, misc: bigint, failover: number, scrubbed: number): string | undefined {
  if (bank !== 7 && bank !== 8) return undefined;
  if (bit(status, 61) || !bit(status, 59)) return undefined;
  if (bit(misc, failover)) return MIRROR[1];
  if (bit(misc, scrubbed)) return MIRROR[2];
  return undefined;
}

/** Haswell/Broadwell EP: home agents 0/1 in banks 7/8, memory controllers in banks 9-12 and 13-16. */
function haswellChannel(bank: number, chan: number): number | undefined {
  if (bank === 7) return chan;
  if (bank === 8) return chan + 4;
  if (bank >= 9 && bank <= 12) return bank - 9;
  if (bank >= 13 && bank <= 16) return bank - 13 + 4;
  return chan;
}

/** Skylake server: M2M 0/1 in banks 7/8, two memory controllers (channels 0-2, 3-5) in banks 13-18. */
const SKX_IMC_CHANNEL: Readonly<Record<number, number>> = { 13: 0, 14: 1, 15: 3, 16: 4, 17: 2, 18: 5 };

function skylakeChannel(bank: number, chan: number): number | undefined {
  if (bank === 7) return chan;
  if (bank === 8) return chan + 3;
  return SKX_IMC_CHANNEL[bank] ?? chan;
}

function sapphire(bank: number, status: bigint, misc: bigint, memory: boolean): ModelDecoding {
  const details: string[] = [];
  const fields: Record<string, number | string | boolean> = {};
  const hbm = bank === 29 || bank === 30 || bank === 31;
  const channel = memory
    ? bank >= 13 && bank <= 20
      ? bank - 13
      : bank === 30 || bank === 31
        ? 8 + bank - 30
        : undefined
    : undefined;
  const at = (b: number) => (channel !== undefined ? { channel: b } : {});
  if (bank === 12 || bank === 29) {
    const text = SPR_M2M[bits(status, 16, 23)];
    if (bits(status, 24, 25) === 1) details.push('HBM Error');
    if (text) details.push(text);
    return { details, fields, unit: hbm ? 'HBM M2M' : 'M2M', ...at(channel ?? 0) };
  }
  if (!((bank >= 13 && bank <= 20) || hbm)) {
    const uncore = decodeSapphireUncore(bank, status);
    return uncore === undefined ? { details, fields } : { details: uncore, fields, unit: bank === 4 ? 'PCU' : 'UPI' };
  }
  const text = sapphireImcLine(bits(status, 24, 31), bits(status, 16, 23));
  if (text) details.push(text);
  const column = bits(misc, 9, 18) << 2;
  const row = bits(misc, 19, 39);
  const dramBank = bits(misc, 39, 40);
  const bankGroup = bits(misc, 37, 38) | (bits(misc, 41, 41) << 2);
  const failedDevice = bits(misc, 43, 48);
  const subrank = bits(misc, 52, 55);
  const rank = bits(misc, 56, 58);
  const eccMode = bits(misc, 59, 62);
  const transient = bit(misc, 63);
  details.push(
    `bank: 0x${dramBank.toString(16)} bankgroup: 0x${bankGroup.toString(16)} row: 0x${row.toString(16)} column: 0x${column.toString(16)}`,
  );
  // An HBM channel names the failed device in two fields (bits 55:51, then 48:43).
  if (!transient && !bit(status, 61)) {
    details.push(`failed device: ${hbm ? `0x${bits(misc, 51, 55).toString(16)},` : ''}0x${failedDevice.toString(16)}`);
  }
  details.push(`rank: 0x${rank.toString(16)} subrank: 0x${subrank.toString(16)}`);
  if (!hbm) details.push(`ecc mode: ${SPR_ECC_MODES[eccMode] ?? 'unknown'}`);
  else if (eccMode === 1 || eccMode === 9) details.push(`HBM ${eccMode === 1 ? 64 : 32}B read`);
  if (transient) details.push('transient');
  Object.assign(fields, { dramBank, bankGroup, row, column, rank, subrank, eccMode, transient });
  if (!transient && !bit(status, 61)) fields.failedDevice = failedDevice;
  return { details, fields, unit: hbm ? 'HBM MemCtrl' : 'MemCtrl', channel };
}
