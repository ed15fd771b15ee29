/**
 * The architectural MCA error code (IA32_MCi_STATUS bits 15:0), Intel SDM vol. 3B ch. 16, "Interpreting the MCA Error
 * Codes": simple codes (table "IA32_MCi_Status [15:0] Simple Error Code Encoding") and compound codes (TLB, memory
 * hierarchy, bus and interconnect, memory controller) with their sub-fields and SDM mnemonics. AMD uses the same
 * encoding for its error codes (AMD64 APM vol. 2, "Error Codes").
 */

/** What part of the machine an error code points at. */
export type ErrorClass =
  | 'generic'
  | 'internal'
  | 'tlb'
  | 'cache'
  | 'memory-controller'
  | 'bus'
  | 'io'
  | 'thermal'
  | 'unknown';

export interface McaCode {
  readonly code: number;
  readonly class: ErrorClass;
  /** SDM mnemonic, e.g. `DCACHEL0_DRD_ERR`, `MC_GEN_CHANNEL0_ERR`, `BUSLG_OBS_ERR_IO_TIMEOUT_ERR`. */
  readonly mnemonic: string;
  /** Readable description, e.g. `Data CACHE Level-0 Data-Read Error`. */
  readonly description: string;
  /** Bit 12: corrected errors in the same region went unreported (correction report filtering). */
  readonly filtered: boolean;
  /** Compound sub-fields that apply. */
  readonly transactionType?: 'Instruction' | 'Data' | 'Generic' | 'Reserved';
  /** Memory hierarchy level 0..2, or 'generic' (LL = 11). */
  readonly level?: 0 | 1 | 2 | 'generic';
  readonly request?: string;
  readonly participation?: string;
  readonly timeout?: boolean;
  readonly memoryOrIo?: string;
  /** Memory controller transaction (MMM) and channel (CCCC; undefined when 1111, "not specified"). */
  readonly memoryTransaction?: string;
  readonly channel?: number;
}

const SIMPLE: Readonly<Record<number, [string, string, ErrorClass]>> = {
  0: ['NO_ERR', 'No Error', 'generic'],
  1: ['UNCLASSIFIED', 'Unclassified', 'generic'],
  2: ['MICROCODE_ROM_PARITY', 'Microcode ROM parity error', 'internal'],
  3: ['EXTERNAL_ERR', 'External error', 'bus'],
  4: ['FRC_ERR', 'FRC error', 'internal'],
  5: ['INTERNAL_PARITY', 'Internal parity error', 'internal'],
  6: ['SMM_CODE_ACCESS_VIOLATION', 'SMM Handler Code Access Violation', 'internal'],
  1024: ['INTERNAL_TIMER', 'Internal Timer error', 'internal'],
};

const TT = ['Instruction', 'Data', 'Generic', 'Reserved'] as const;
const TT_SHORT = ['I', 'D', 'G', 'R'] as const;
const LL_SHORT = ['L0', 'L1', 'L2', 'LG'] as const;
const RRRR: readonly [string, string][] = [
  ['ERR', 'Generic'],
  ['RD', 'Read'],
  ['WR', 'Write'],
  ['DRD', 'Data-Read'],
  ['DWR', 'Data-Write'],
  ['IRD', 'Instruction-Fetch'],
  ['PREFETCH', 'Prefetch'],
  ['EVICT', 'Eviction'],
  ['SNOOP', 'Snoop'],
];
const PP: readonly [string, string][] = [
  ['SRC', 'Local-CPU-originated-request'],
  ['RES', 'Responded-to-request'],
  ['OBS', 'Observed-error-as-third-party'],
  ['', 'Generic'],
];
const II: readonly [string, string][] = [
  ['M', 'Memory-access'],
  ['', 'Reserved'],
  ['IO', 'IO'],
  ['', 'Other-transaction'],
];
const MMM: readonly [string, string][] = [
  ['GEN', 'Generic undefined request'],
  ['RD', 'Memory read error'],
  ['WR', 'Memory write error'],
  ['AC', 'Address/Command error'],
  ['MS', 'Memory scrubbing error'],
  ['RES5', 'Reserved 5'],
  ['RES6', 'Reserved 6'],
  ['RES7', 'Reserved 7'],
];

function levelOf(ll: number): 0 | 1 | 2 | 'generic' {
  return ll === 3 ? 'generic' : (ll as 0 | 1 | 2);
}

function levelText(ll: number): string {
  return ll === 3 ? 'Generic-Level' : `Level-${ll}`;
}

const CACHE: (McaCode | undefined)[] = [];

/** Decodes an MCA error code. Unknown encodings decode to class `unknown` with the code in the text. */
export function decodeMcaCode(raw: number): McaCode {
  const code = raw & 0xffff;
  let c = CACHE[code];
  if (c === undefined) CACHE[code] = c = Object.freeze(decodeUncached(code));
  return c;
}

function decodeUncached(raw: number): McaCode {
  const filtered = (raw & 0x1000) !== 0;
  const code = raw & 0xefff;
  const simple = SIMPLE[code];
  if (simple !== undefined)
    return { code: raw, class: simple[2], mnemonic: simple[0], description: simple[1], filtered };
  if (code >> 10 === 1) {
    return {
      code: raw,
      class: 'internal',
      mnemonic: 'INTERNAL_UNCLASSIFIED',
      description: `Internal unclassified error: ${hex4(code)}`,
      filtered,
    };
  }
  if (code >> 2 === 3) {
    const ll = code & 3;
    return {
      code: raw,
      class: 'cache',
      mnemonic: `${LL_SHORT[ll]}_ERR`,
      description: `${levelText(ll)} Generic cache hierarchy error`,
      filtered,
      level: levelOf(ll),
    };
  }
  if (code >> 4 === 1) {
    const ll = code & 3;
    const tt = (code >> 2) & 3;
    return {
      code: raw,
      class: 'tlb',
      mnemonic: `${TT_SHORT[tt]}TLB${LL_SHORT[ll]}_ERR`,
      description: `${TT[tt]} TLB ${levelText(ll)} Error`,
      filtered,
      transactionType: TT[tt],
      level: levelOf(ll),
    };
  }
  if (code >> 7 === 1) return memoryController(raw, code, filtered, '');
  if (code >> 8 === 1) {
    const ll = code & 3;
    const tt = (code >> 2) & 3;
    const r = RRRR[(code >> 4) & 0xf];
    if (r === undefined) return unknown(raw, filtered);
    return {
      code: raw,
      class: 'cache',
      mnemonic: `${TT_SHORT[tt]}CACHE${LL_SHORT[ll]}_${r[0]}_ERR`,
      description: `${TT[tt]} CACHE ${levelText(ll)} ${r[1]} Error`,
      filtered,
      transactionType: TT[tt],
      level: levelOf(ll),
      request: r[1],
    };
  }
  // 0000 0010 1MMM CCCC: memory errors reported as the cache of a 2LM / far memory ("memory as cache").
  if (code >> 7 === 5) return memoryController(raw, code, filtered, 'Memory as cache: ');
  if (code >> 11 === 1) {
    const ll = code & 3;
    const ii = II[(code >> 2) & 3]!;
    const r = RRRR[(code >> 4) & 0xf];
    const timeout = ((code >> 8) & 1) === 1;
    const pp = PP[(code >> 9) & 3]!;
    if (r === undefined) return unknown(raw, filtered);
    const io = code === 0x0e0b;
    return {
      code: raw,
      class: io ? 'io' : 'bus',
      mnemonic: `BUS${LL_SHORT[ll]}_${pp[0] ? `${pp[0]}_` : ''}${r[0]}_${ii[0] ? `${ii[0]}_` : ''}${timeout ? 'TIMEOUT' : 'NOTIMEOUT'}_ERR`,
      description: io
        ? 'I/O error (IOMCA)'
        : `BUS error: ${levelText(ll)} ${pp[1]} ${r[1]} ${ii[1]} ${timeout ? 'Request-timed-out' : 'Request-did-not-timeout'}`,
      filtered,
      level: levelOf(ll),
      request: r[1],
      participation: pp[1],
      timeout,
      memoryOrIo: ii[1],
    };
  }
  return unknown(raw, filtered);
}

function memoryController(raw: number, code: number, filtered: boolean, prefix: string): McaCode {
  const m = MMM[(code >> 4) & 7]!;
  const c = code & 0xf;
  const channel = c === 0xf ? 'unspecified' : String(c);
  return {
    code: raw,
    class: 'memory-controller',
    mnemonic: `MC_${m[0]}_CHANNEL${c === 0xf ? 'N' : c}_ERR`,
    description: `${prefix}MEMORY CONTROLLER ${m[0]}_CHANNEL${channel}_ERR`,
    filtered,
    memoryTransaction: m[1],
    ...(c === 0xf ? {} : { channel: c }),
  };
}

function unknown(raw: number, filtered: boolean): McaCode {
  return {
    code: raw,
    class: 'unknown',
    mnemonic: 'UNKNOWN',
    description: `Unknown Error ${(raw & 0xefff).toString(16)}`,
    filtered,
  };
}

function hex4(n: number): string {
  return n.toString(16);
}
