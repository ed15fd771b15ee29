/**
 * AMD families 0Fh-16h (K8 to Jaguar): banks are fixed by number, and the northbridge (bank 4) says what failed in
 * its extended error code (MC4_STATUS bits 19:16 on K8, 20:16 from family 10h). DRAM ECC and chipkill errors carry
 * the ECC syndrome (bits 54:47, with bits 31:24 above them for chipkill and from family 10h), link errors the
 * HyperTransport link (bits 39:36). K8 codes are named as mcelog names them, later families' as the kernel's
 * drivers/edac/mce_amd.c does.
 */

import type { AmdDecoding } from './amd.ts';
import { bit, bits } from './bits.ts';
import type { ErrorClass } from './mca-code.ts';

const BANKS = [
  'Data Cache',
  'Instruction Cache',
  'Bus Unit',
  'Load Store Unit',
  'Northbridge',
  'Execution Unit',
  'Floating Point Unit',
];

/** mcelog's K8 northbridge codes (4 bits). */
const K8_NB = [
  'RAM ECC error',
  'CRC error',
  'Sync error',
  'Master abort',
  'Target abort',
  'GART error',
  'RMW error',
  'Watchdog error',
  'RAM Chipkill ECC error',
  'DEV Error',
  'Link Data Error',
  'Link Protocol Error',
  'NB Array Error',
  'DRAM Parity Error',
  'Link Retry',
  'Table Walk Data Error',
];

/** The kernel's family 10h-16h northbridge codes 0-0Eh, then 1Ch-1Fh. */
const F10_NB: Readonly<Record<number, string>> = {
  0: 'DRAM ECC error detected on the NB',
  1: 'CRC error detected on HT link',
  2: 'Link-defined sync error packets detected on HT link',
  3: 'HT Master abort',
  4: 'HT Target abort',
  5: 'Invalid GART PTE entry during GART table walk',
  6: 'Unsupported atomic RMW received from an IO link',
  7: 'Watchdog timeout due to lack of progress',
  8: 'DRAM ECC error detected on the NB',
  9: 'SVM DMA Exclusion Vector error',
  10: 'HT data error detected on link',
  11: 'Protocol error (link, L3, probe filter)',
  12: 'NB internal arrays parity error',
  13: 'DRAM addr/ctl signals parity error',
  14: 'IO link transmission error',
  28: 'L3 data cache ECC error',
  29: 'L3 cache tag error',
  30: 'L3 LRU parity bits error',
  31: 'ECC Error in the Probe Filter directory',
};

/** What failed, by northbridge code: DRAM is the DIMM's, links the link's, GART/DEV/IO-link faults the device's. */
const NB_CLASS: Readonly<Record<number, ErrorClass>> = {
  0: 'memory-controller',
  1: 'bus',
  2: 'bus',
  3: 'bus',
  4: 'bus',
  5: 'io',
  6: 'io',
  7: 'internal',
  8: 'memory-controller',
  9: 'io',
  10: 'bus',
  11: 'bus',
  12: 'internal',
  13: 'memory-controller',
  14: 'bus',
  15: 'io',
  25: 'internal',
  28: 'cache',
  29: 'cache',
  30: 'cache',
  31: 'cache',
};

/** Link-numbered codes: CRC, sync, master and target abort, RMW. */
const LINK_CODES = new Set([1, 2, 3, 4, 6]);

/** Decodes a record of AMD families 0Fh-16h; `family` selects K8's or the later codes. */
export function decodeLegacyAmd(bankNo: number, status: bigint, family?: number): AmdDecoding {
  const k8 = family === undefined || family <= 0xf;
  const xec = k8 ? bits(status, 16, 19) : bits(status, 16, 20);
  const name = BANKS[bankNo];
  if (name === undefined) {
    return { bankName: `bank ${bankNo}`, xec, unknown: `bank ${bankNo} is not a known bank of these AMD families` };
  }
  const bankName = `${name} (bank ${bankNo})`;
  if (bankNo !== 4) return { bankName, unit: name, xec };
  const text = k8 ? `Northbridge ${K8_NB[xec]}` : northbridgeText(xec, status, family);
  if (text === undefined) {
    return {
      bankName,
      unit: name,
      xec,
      unknown: `northbridge extended error code 0x${xec.toString(16)} has no meaning on family ${family?.toString(16)}h`,
    };
  }
  const details: string[] = [];
  let channel: number | undefined;
  if (xec === 0 || xec === 8) {
    // K8's plain ECC syndrome is 8 bits; chipkill's, and every one from family 10h, 16.
    const low = bits(status, 47, 54);
    const syndrome = k8 && xec === 0 ? low : (bits(status, 24, 31) << 8) | low;
    details.push(`${xec === 8 ? 'Chipkill ' : ''}ECC syndrome 0x${syndrome.toString(16)}`);
    channel = bit(status, 41) ? 1 : 0;
  } else if (LINK_CODES.has(xec)) {
    details.push(`link number ${bits(status, 36, 39)}`);
  }
  if (bit(status, 40)) details.push('found by scrub');
  return {
    bankName,
    unit: name,
    bankType: 'nb',
    class: NB_CLASS[xec],
    xec,
    xecText: text,
    channel,
    details,
  };
}

function northbridgeText(xec: number, status: bigint, family: number | undefined): string | undefined {
  // Family 11h has no DRAM ECC; 0Fh's table walk error is a GART or a DMA exclusion vector walk by the MCA code.
  if ((xec === 0 || xec === 8) && family === 0x11) return undefined;
  if (xec === 0xf) {
    const ec = bits(status, 0, 15);
    if ((ec & 0xfff0) === 0x0010) return 'GART Table Walk data error';
    if ((ec & 0xf800) === 0x0800) return 'DMA Exclusion Vector Table Walk error';
    return undefined;
  }
  if (xec === 0x19) return family === 0x15 || family === 0x16 ? 'Compute Unit Data Error' : undefined;
  return F10_NB[xec];
}
