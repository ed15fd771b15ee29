/**
 * Sandy/Ivy Bridge EP, Knights Landing/Mill and Diamond Rapids records built from the documented encodings (Intel SDM
 * vol. 3B/4 machine-check tables for these families: MCi_STATUS MSCOD fields, the iMC's extended MCi_MISC logging with
 * failing ranks, the memory banks' channel numbering; mcelog's decoders as the second reading of the same tables),
 * each register value written out from its fields here, not taken from evtrace's output.
 */
import { describe, expect, it } from 'vitest';
import { cpuidOf, identifyCpu } from './cpu.ts';
import { decodeMce } from './decode.ts';
import { emptyRecord, type MceRecord } from './record.ts';

const VAL = 1n << 63n;
const UC = 1n << 61n;
const EN = 1n << 60n;
const MISCV = 1n << 59n;
const ADDRV = 1n << 58n;
/** OTHER_INFO[1] of Diamond Rapids memory banks: MCi_MISC holds the DRAM address. */
const OTHER_INFO_1 = 1n << 33n;

const mscod = (v: number) => BigInt(v) << 16n;
const at = (v: number, bit: number) => BigInt(v) << BigInt(bit);

function rec(cpuid: number, fields: Partial<MceRecord>): MceRecord {
  return Object.assign(emptyRecord({ kind: 'mcelog-ascii' }), {
    cpuvendor: 0,
    cpuid,
    mcgcap: 0x1000c16n,
    socketid: 0,
    apicid: 0,
    ...fields,
  });
}

const SNB_EP = cpuidOf(6, 0x2d, 7);
const IVB_EP = cpuidOf(6, 0x3e, 4);
const KNL = cpuidOf(6, 0x57, 1);
const KNM = cpuidOf(6, 0x85, 0);
const DMR = cpuidOf(0x13, 0x01, 0);

describe('the families are identified from CPUID', () => {
  it.each([
    [SNB_EP, 'sandybridge-ep'],
    [IVB_EP, 'ivybridge-ep'],
    [KNL, 'knightslanding'],
    [KNM, 'knightsmill'],
    [DMR, 'diamondrapids'],
  ])('cpuid %s is %s', (cpuid, kind) => {
    expect(identifyCpu(0, cpuid).kind).toBe(kind);
  });
});

describe('Sandy Bridge EP and Ivy Bridge EP/EX', () => {
  // Corrected patrol scrub error (MSCOD bit 19) in iMC bank 8, MCACOD 0x00c1: memory scrubbing, channel 1; extended
  // logging: first device valid (MISC 62) failing rank 5 (50:46), second device valid (63) failing rank 2 (55:51).
  const scrub = rec(SNB_EP, {
    bank: 8,
    status: VAL | EN | MISCV | ADDRV | mscod(0x0008) | 0x00c1n,
    misc: (1n << 62n) | at(5, 46) | (1n << 63n) | at(2, 51) | 0x8cn,
    addr: 0x12345000n,
  });

  it('decodes the iMC flags and turns the failing ranks into the channel and DIMM', () => {
    const d = decodeMce(scrub);
    expect(d.cpu.kind).toBe('sandybridge-ep');
    expect(d.class).toBe('memory-controller');
    expect(d.location).toMatchObject({ unit: 'MemCtrl', channel: 1, dimm: 1 });
    expect(d.details).toEqual([
      'Corrected patrol scrub error',
      'Failing device: channel 1 rank 5 (DIMM 1)',
      'Second failing device: channel 1 rank 2 (DIMM 0)',
    ]);
    expect(d.fields).toMatchObject({ firstFailingRank: 5, secondFailingRank: 2 });
    expect(d.unknown).toEqual([]);
  });

  it('takes no DIMM from MISC for uncorrected errors (extended logging covers corrected ones) nor without the valid bits', () => {
    const uc = decodeMce({ ...scrub, status: scrub.status | UC | mscod(0x0010) });
    expect(uc.location.channel).toBe(1);
    expect(uc.location.dimm).toBeUndefined();
    expect(uc.details).toEqual(['Corrected patrol scrub error', 'Uncorrected patrol scrub error']);
    const noValid = decodeMce({ ...scrub, misc: at(5, 46) });
    expect(noValid.location.dimm).toBeUndefined();
  });

  it('Ivy Bridge EP: iMC banks 9-16 with two more flags; ranks 6-7 name DIMM 1 and say it may be 2', () => {
    const d = decodeMce(
      rec(IVB_EP, {
        bank: 12,
        status: VAL | EN | MISCV | ADDRV | mscod(0x0080) | 0x0092n, // bit 23: corrected memory read error, channel 2
        misc: (1n << 62n) | at(7, 46),
      }),
    );
    expect(d.location).toMatchObject({ unit: 'MemCtrl', channel: 2, dimm: 1 });
    expect(d.details).toEqual([
      'Corrected memory read error',
      'Failing device: channel 2 rank 7 (DIMM 1, or 2 on a channel with three DIMMs)',
    ]);
    // Bank 8 is not an iMC bank on Ivy Bridge EP.
    expect(decodeMce(rec(IVB_EP, { bank: 8, status: VAL | mscod(0x0080) | 0x0092n })).details).toEqual([]);
  });

  it('decodes the PCU (bank 4) codes of each generation and QPI banks', () => {
    // MSCOD 19:16 = 3 (Bad_OpCode), 31:24 = 0x7b: an Ivy Bridge code, unknown on Sandy Bridge.
    const status = VAL | UC | EN | mscod(0x7b03) | 0x0402n;
    expect(decodeMce(rec(IVB_EP, { bank: 4, status })).details).toEqual([
      'Bad_OpCode',
      'MC_PCIE_R2PCIE-RW_BLOCK_ACK_TIMEOUT',
    ]);
    expect(decodeMce(rec(SNB_EP, { bank: 4, status })).details).toEqual(['Bad_OpCode', '<24:7b>']);
    expect(decodeMce(rec(SNB_EP, { bank: 4, status: VAL | mscod(0x8100) | 0x0402n })).details).toEqual([
      'No error',
      'MC_RECOVERABLE_DIE_THERMAL_TOO_HOT',
    ]);
    expect(decodeMce(rec(SNB_EP, { bank: 6, status: VAL | 0x0e0fn })).location.unit).toBe('QPI');
    expect(decodeMce(rec(IVB_EP, { bank: 5, status: VAL | 0x0e0fn })).location.unit).toBe('QPI');
  });
});

describe('Knights Landing and Knights Mill', () => {
  it.each([
    [KNL, 13, 2, 2],
    [KNL, 15, 2, 5],
    [KNM, 15, 0, 3],
  ])('cpuid %s bank %i MCACOD channel %i is channel %i', (cpuid, bank, chan, channel) => {
    const d = decodeMce(rec(cpuid, { bank, status: VAL | EN | ADDRV | BigInt(0x0090 | chan), addr: 0x4000n }));
    expect(d.class).toBe('memory-controller');
    expect(d.location.channel).toBe(channel);
    expect(d.unknown).toEqual([]);
  });
});

describe('Diamond Rapids', () => {
  // MCCHAN bank 20, logged by a CPU whose APIC ID has bit 2 set (IMH 1): channel 20 - 19 + 8 = 9. MSCOD table 0x00
  // entry 0x80: a correctable demand read error; MCACOD 0x0090. MISC: column 0x55 (18:9, times 4), row 0x1234 (36:19),
  // bank 2 (38:37), bank group 5 (41:39), failed device valid (42) device 0x11 (48:44), subchannel 1 (49),
  // subrank 3 (54:51), chip select 2 (56:55), ECC mode 4 (61:58): ADDDC 80b 1LM.
  const misc =
    at(0x55, 9) |
    at(0x1234, 19) |
    at(2, 37) |
    at(5, 39) |
    at(1, 42) |
    at(0x11, 44) |
    at(1, 49) |
    at(3, 51) |
    at(2, 55) |
    at(4, 58);
  const read = rec(DMR, {
    bank: 20,
    apicid: 4,
    status: VAL | EN | MISCV | ADDRV | OTHER_INFO_1 | mscod(0x0080) | 0x0090n,
    misc,
    addr: 0x1f00000n,
  });

  it('names the IMH and channel, the MSCOD, and the DRAM address of MCi_MISC', () => {
    const d = decodeMce(read);
    expect(d.cpu.kind).toBe('diamondrapids');
    expect(d.location).toMatchObject({ unit: 'IMH1 MCCHAN', channel: 9 });
    expect(d.details).toEqual([
      'IMH1 MCCHAN: Transient or Correctable Error for Demand or Underfill Reads',
      'bank: 0x2 bankgroup: 0x5 row: 0x1234 column: 0x154',
      'chipselect: 0x2 subrank: 0x3 subchan: 0x1',
      'failed device: 0x11',
      'ecc mode: ADDDC 80b 1LM',
    ]);
    expect(d.fields).toMatchObject({ row: 0x1234, column: 0x154, chipSelect: 2, eccMode: 4, failedDevice: 0x11 });
    expect(d.unknown).toEqual([]);
  });

  it('reads MISC only with MISCV and OTHER_INFO[1], and not for MSCOD 0800h and above; IMH 0 numbers channels from 0', () => {
    expect(decodeMce({ ...read, status: read.status & ~OTHER_INFO_1 }).details).toHaveLength(1);
    // MSCOD 0880h: table 08h has no entry 80h (said as such), and MISC holds proprietary data, not an address.
    expect(decodeMce({ ...read, status: read.status | mscod(0x0800) }).details).toEqual(['IMH1 MCCHAN: <16:80>']);
    expect(decodeMce({ ...read, apicid: 3 }).location).toMatchObject({ unit: 'IMH0 MCCHAN', channel: 1 });
    expect(decodeMce({ ...read, misc: misc | (1n << 63n) }).details.at(-1)).toBe('transient');
  });

  it('decodes the CBB and IMH Punits and UPI', () => {
    expect(decodeMce(rec(DMR, { bank: 4, status: VAL | UC | 0x040bn })).details).toEqual([
      'CBB Punit: Scan-at-Field Error',
    ]);
    expect(decodeMce(rec(DMR, { bank: 4, status: VAL | UC | mscod(0x0830) | 0x0402n })).details).toEqual([
      'CBB Punit: MCA_PCODE_WATCHDOG',
    ]);
    expect(decodeMce(rec(DMR, { bank: 11, apicid: 4, status: VAL | UC | mscod(0x7e00) | 0x0402n })).details).toEqual([
      'IMH1 Punit: MCA_RECOVERABLE_DIE_THERMAL_TOO_HOT',
    ]);
    expect(decodeMce(rec(DMR, { bank: 11, status: VAL | UC | mscod(0x0003) | 0x0402n })).details).toEqual([
      'IMH0 Punit: Power Management Unit microcontroller double-bit ECC error',
    ]);
    expect(decodeMce(rec(DMR, { bank: 18, status: VAL | mscod(0x0203) | 0x0e0fn })).details).toEqual([
      'UPI: Link degraded',
    ]);
  });
});
