/**
 * A corpus built from the documents, not from evtrace's output: MCA error codes and status bits from the Intel SDM
 * vol. 3B ch. 16 (simple and compound error code tables, MCi_STATUS layout, "Machine-Check Error Classification" and
 * the SRAR/SRAO/UCNA encodings of the software-error-recovery tables), and AMD Scalable MCA banks from the AMD PPR
 * (MCA_IPID HardwareID/McaType pairs, UMC extended error codes) as the kernel's drivers/edac/mce_amd.c and rasdaemon's
 * mce-amd-smca.c interpret them.
 */
import { describe, expect, it } from 'vitest';
import { cpuidOf, parseCpuid } from './cpu.ts';
import { decodeMce } from './decode.ts';
import { decodeMcaCode } from './mca-code.ts';
import { emptyRecord, type MceRecord } from './record.ts';

const VAL = 1n << 63n;
const OVER = 1n << 62n;
const UC = 1n << 61n;
const EN = 1n << 60n;
const MISCV = 1n << 59n;
const ADDRV = 1n << 58n;
const PCC = 1n << 57n;
const S = 1n << 56n;
const AR = 1n << 55n;
const SER_P = 1n << 24n;

function rec(fields: Partial<MceRecord>): MceRecord {
  return Object.assign(emptyRecord({ kind: 'mcelog-ascii' }), fields);
}

describe('MCA error codes (Intel SDM vol. 3B, "Interpreting the MCA Error Codes")', () => {
  // [code, class, SDM mnemonic]
  const table: [number, string, string][] = [
    [0x0000, 'generic', 'NO_ERR'],
    [0x0001, 'generic', 'UNCLASSIFIED'],
    [0x0002, 'internal', 'MICROCODE_ROM_PARITY'],
    [0x0003, 'bus', 'EXTERNAL_ERR'],
    [0x0004, 'internal', 'FRC_ERR'],
    [0x0005, 'internal', 'INTERNAL_PARITY'],
    [0x0006, 'internal', 'SMM_CODE_ACCESS_VIOLATION'],
    [0x0400, 'internal', 'INTERNAL_TIMER'],
    [0x0401, 'internal', 'INTERNAL_UNCLASSIFIED'], // 0000 01xx xxxx xxxx
    [0x000c, 'cache', 'L0_ERR'], // 0000 0000 0000 11LL generic cache hierarchy, LL=00
    [0x000f, 'cache', 'LG_ERR'],
    [0x0010, 'tlb', 'ITLBL0_ERR'], // 0000 0000 0001 TTLL: TT=00 instruction
    [0x0015, 'tlb', 'DTLBL1_ERR'], // TT=01 data, LL=01
    [0x001a, 'tlb', 'GTLBL2_ERR'],
    [0x0134, 'cache', 'DCACHEL0_DRD_ERR'], // 0000 0001 RRRR TTLL: RRRR=0011 data read, TT=01, LL=00
    [0x0150, 'cache', 'ICACHEL0_IRD_ERR'], // RRRR=0101 instruction fetch
    [0x017a, 'cache', 'GCACHEL2_EVICT_ERR'], // RRRR=0111 eviction, TT=10, LL=10
    [0x0185, 'cache', 'DCACHEL1_SNOOP_ERR'], // RRRR=1000 snoop
    [0x0080, 'memory-controller', 'MC_GEN_CHANNEL0_ERR'], // 0000 0000 1MMM CCCC
    [0x009f, 'memory-controller', 'MC_RD_CHANNELN_ERR'], // MMM=001 read, CCCC=1111 not specified
    [0x00c3, 'memory-controller', 'MC_MS_CHANNEL3_ERR'], // MMM=100 scrubbing
    [0x00b1, 'memory-controller', 'MC_AC_CHANNEL1_ERR'], // MMM=011 address/command
    [0x0e0b, 'io', 'BUSLG_ERR_IO_NOTIMEOUT_ERR'], // the IOMCA code: PP=11, T=0, RRRR=0000, II=10, LL=11
    [0x0c0f, 'bus', 'BUSLG_OBS_ERR_NOTIMEOUT_ERR'], // 0000 1PPT RRRR IILL: PP=10 observed, II=11 other
    [0x0919, 'bus', 'BUSL1_SRC_RD_IO_TIMEOUT_ERR'], // PP=00 source, T=1, RRRR=0001 read, II=10 IO
  ];
  for (const [code, cls, mnemonic] of table) {
    it(`0x${code.toString(16).padStart(4, '0')} is ${mnemonic} (${cls})`, () => {
      const c = decodeMcaCode(code);
      expect(c.class).toBe(cls);
      expect(c.mnemonic).toBe(mnemonic);
    });
  }

  it('bit 12 is correction report filtering, not part of the code', () => {
    const c = decodeMcaCode(0x1134);
    expect(c.filtered).toBe(true);
    expect(c.mnemonic).toBe('DCACHEL0_DRD_ERR');
  });

  it('compound sub-fields: level, transaction type, request, channel', () => {
    expect(decodeMcaCode(0x0134)).toMatchObject({ level: 0, transactionType: 'Data', request: 'Data-Read' });
    expect(decodeMcaCode(0x0093)).toMatchObject({ channel: 3, memoryTransaction: 'Memory read error' });
    expect(decodeMcaCode(0x009f).channel).toBeUndefined();
    expect(decodeMcaCode(0x0919)).toMatchObject({
      level: 1,
      timeout: true,
      participation: 'Local-CPU-originated-request',
    });
  });

  it('reserved request encodings (RRRR > 1000) and unassigned patterns are unknown, not guessed', () => {
    expect(decodeMcaCode(0x01f0).class).toBe('unknown'); // RRRR = 1111
    expect(decodeMcaCode(0x0234).class).toBe('unknown'); // 0000 0010 0xxx xxxx
  });
});

describe('severity as the kernel grades it, with the SDM class', () => {
  const ser = SER_P | 10n;
  // [what, status, mcgstatus, mcgcap, severity, sdm class]
  const cases: [string, bigint, bigint, bigint, string, string][] = [
    ['corrected ECC (CE)', VAL | EN | MISCV | ADDRV | 0x9fn, 0n, ser, 'corrected', 'CE'],
    [
      'UCNA: UC without S and AR (memory patrol scrub found by polling)',
      VAL | UC | EN | MISCV | ADDRV | 0x9fn,
      0n,
      ser,
      'ucna',
      'UCNA',
    ],
    [
      'SRAO: memory scrubbing error, S=1 AR=0, MCACOD 0xC0-0xCF',
      VAL | UC | EN | MISCV | ADDRV | S | 0xc2n,
      5n,
      ser,
      'srao',
      'SRAO',
    ],
    ['SRAO: L3 explicit writeback, MCACOD 0x17A', VAL | UC | EN | MISCV | ADDRV | S | 0x17an, 5n, ser, 'srao', 'SRAO'],
    [
      'SRAR: data load, MCACOD 0x134, S=1 AR=1',
      VAL | UC | EN | MISCV | ADDRV | S | AR | 0x134n,
      6n,
      ser,
      'srar',
      'SRAR',
    ],
    ['SRAR: instruction fetch, MCACOD 0x150', VAL | UC | EN | MISCV | ADDRV | S | AR | 0x150n, 6n, ser, 'srar', 'SRAR'],
    ['AR with an unknown MCACOD is fatal', VAL | UC | EN | S | AR | 0x17an, 6n, ser, 'fatal', 'UC'],
    ['AR with overflow is fatal', VAL | OVER | UC | EN | S | AR | 0x134n, 6n, ser, 'fatal', 'UC'],
    ['PCC is fatal', VAL | UC | EN | PCC | 0x0005n, 4n, ser, 'fatal', 'UC'],
    ['no restart and no error IP in an exception is fatal', VAL | UC | EN | S | AR | 0x134n, 4n, ser, 'fatal', 'UC'],
    ['uncorrected in an exception without SER is fatal', VAL | UC | EN | 0x0150n, 5n, 10n, 'fatal', 'UC'],
  ];
  for (const [what, status, mcgstatus, mcgcap, severity, sdm] of cases) {
    it(what, () => {
      const d = decodeMce(rec({ status, mcgstatus, mcgcap, cpuvendor: 0, cpuid: cpuidOf(6, 0x55) }));
      expect([d.severity, d.grade.sdmClass]).toEqual([severity, sdm]);
    });
  }

  it('AR without S is an illegal combination: fatal, and said to be impossible', () => {
    const d = decodeMce(
      rec({ status: VAL | UC | EN | AR | 0x134n, mcgstatus: 5n, mcgcap: ser, cpuvendor: 0, cpuid: cpuidOf(6, 0x55) }),
    );
    expect(d.severity).toBe('fatal');
    expect(d.unknown.join('\n')).toMatch(/impossible bit combination/);
  });

  it('an invalid record (VAL clear) is said to be invalid', () => {
    const d = decodeMce(rec({ status: 0x1234n }));
    expect(d.status.valid).toBe(false);
    expect(d.unknown.join('\n')).toMatch(/VAL is clear/);
  });
});

describe('CPU identification (CPUID.1:EAX, SDM vol. 2A)', () => {
  it('folds extended family and model as the SDM says', () => {
    expect(parseCpuid(0x50654)).toEqual({ family: 6, model: 0x55, stepping: 4 });
    expect(parseCpuid(0x806f8)).toEqual({ family: 6, model: 0x8f, stepping: 8 });
    expect(parseCpuid(0xa20f10)).toEqual({ family: 0x19, model: 0x21, stepping: 0 }); // Zen 3, Vermeer
    // Families above 0xF have base family 0xF, so the extended model counts (mcelog drops it: known bug).
    expect(parseCpuid(0x410f10)).toEqual({ family: 0x13, model: 0x11, stepping: 0 });
    expect(parseCpuid(cpuidOf(0x1a, 0x44, 2))).toEqual({ family: 0x1a, model: 0x44, stepping: 2 });
  });

  it('an unknown Intel model decodes the architecture and says so', () => {
    const d = decodeMce(rec({ status: VAL | EN | 0x0134n, cpuvendor: 0, cpuid: cpuidOf(6, 0xfe) }));
    expect(d.cpu.kind).toBe('intel');
    expect(d.code.mnemonic).toBe('DCACHEL0_DRD_ERR');
    expect(d.unknown.join('\n')).toMatch(/family 6 model 254 is not known/);
  });
});

describe('AMD Scalable MCA (AMD PPR; kernel mce_amd.c, rasdaemon mce-amd-smca.c)', () => {
  const zen = { cpuvendor: 2, cpuid: 0xa00f11 }; // family 19h model 01h (Milan)
  const ipid = (hwid: number, mcaType: number, instance: number) =>
    (BigInt(mcaType) << 48n) | (BigInt(hwid) << 32n) | BigInt(instance);
  const CECC = 1n << 46n;
  const DEFERRED = 1n << 44n;
  const POISON = 1n << 43n;

  it('UMC (HardwareID 0x96, McaType 0): DRAM ECC error, channel from the instance id, chip select from SYND', () => {
    const d = decodeMce(
      rec({
        ...zen,
        bank: 15,
        status: VAL | EN | MISCV | ADDRV | CECC | 0x9fn,
        ipid: ipid(0x96, 0, 0x00250000),
        synd: 0x5an,
        addr: 0x12345000n,
      }),
    );
    expect(d.amd?.bankType).toBe('umc');
    expect(d.amd?.xecText).toBe('DRAM ECC error');
    expect(d.location.channel).toBe(2); // 0x00250000 >> 20
    expect(d.location.chipSelect).toBe(2); // 0x5a & 7
    expect(d.class).toBe('memory-controller');
    expect(d.severity).toBe('corrected');
  });

  it('deferred errors (MCA_STATUS bit 44, UC clear) grade as deferred', () => {
    const d = decodeMce(
      rec({ ...zen, bank: 16, status: VAL | EN | DEFERRED | ADDRV | (1n << 16n) | 0x9fn, ipid: ipid(0x96, 0, 0) }),
    );
    expect(d.severity).toBe('deferred');
    expect(d.grade.sdmClass).toBe('DE');
    expect(d.amd?.xecText).toBe('Data poison error on DRAM');
  });

  it('load-store poison consumption in an exception kills the task (SRAR)', () => {
    const d = decodeMce(
      rec({
        ...zen,
        bank: 0,
        status: VAL | UC | EN | POISON | ADDRV | (12n << 16n) | 0x0136n,
        mcgstatus: 5n,
        ipid: ipid(0xb0, 0, 0),
      }),
    );
    expect(d.amd?.bankType).toBe('ls');
    expect(d.amd?.xecText).toBe('DC data error type 1 (poison consumption)');
    expect(d.severity).toBe('srar');
    expect(d.status.poison).toBe(true);
  });

  it('L3 cache (HardwareID 0xB0, McaType 7) and an unknown bank type', () => {
    expect(
      decodeMce(rec({ ...zen, bank: 7, status: VAL | EN | (4n << 16n), ipid: ipid(0xb0, 7, 0) })).amd?.xecText,
    ).toBe('L3M data ECC error');
    const u = decodeMce(rec({ ...zen, bank: 30, status: VAL | EN, ipid: ipid(0x123, 9, 0) }));
    expect(u.amd?.bankType).toBeUndefined();
    expect(u.unknown.join('\n')).toMatch(/unknown SMCA bank type \(IPID HardwareID 0x123, McaType 0x9\)/);
  });

  it('a UMC DRAM ECC error under a cache-hierarchy MCA code (0x011b) is a memory error with DIMM advice', () => {
    // The registers a Milan host logs for a corrected DRAM ECC error (MCA code: generic read, generic level).
    for (const [status, severity] of [
      [VAL | EN | MISCV | ADDRV | (1n << 53n) | CECC | 0x11bn, 'corrected'],
      [VAL | EN | ADDRV | DEFERRED | (1n << 53n) | 0x11bn, 'deferred'],
    ] as const) {
      const d = decodeMce(rec({ ...zen, bank: 16, status, ipid: ipid(0x96, 0, 0x00150f00), synd: 0x5d0006201fn }));
      expect(d.class).toBe('memory-controller');
      expect(d.severity).toBe(severity);
      expect(d.summary).toMatch(
        / memory error: DRAM ECC error \(Unified Memory Controller, channel 1, chip select 7, /,
      );
      expect(d.advice).toMatch(/replace the DIMM on the channel and chip select named above/i);
      expect(d.details).toContain('MCA error code: Generic CACHE Generic-Level Read Error');
    }
  });

  it('a UMC error found by the patrol scrubber (MCA code: memory scrubbing) is a memory error too', () => {
    const d = decodeMce(
      rec({ ...zen, bank: 17, status: VAL | EN | ADDRV | CECC | 0xcfn, ipid: ipid(0x96, 0, 0x00350f00), synd: 0x5n }),
    );
    expect([d.class, d.severity, d.location.channel, d.location.chipSelect]).toEqual([
      'memory-controller',
      'corrected',
      3,
      5,
    ]);
    expect(d.details).toContain('MCA error code: MEMORY CONTROLLER MS_CHANNELunspecified_ERR');
    expect(d.advice).toMatch(/the DIMM on the channel and chip select named above/);
  });

  it("a UMC's own SRAM is the CPU's part, a link PCS bank the link's, an NBIO bank the device's", () => {
    const sram = decodeMce(rec({ ...zen, bank: 16, status: VAL | EN | CECC | (6n << 16n), ipid: ipid(0x96, 0, 0) }));
    expect([sram.class, sram.amd?.xecText]).toEqual(['internal', 'DCQ SRAM ECC error']);
    expect(sram.advice).toMatch(/the CPU in this socket/);
    const link = decodeMce(rec({ ...zen, bank: 20, status: VAL | EN | CECC | (5n << 16n), ipid: ipid(0x50, 0, 0) }));
    expect([link.class, link.amd?.xecText]).toEqual(['bus', 'CRC Error']);
    expect(link.summary).toMatch(
      /^corrected bus\/interconnect error: CRC Error \(Ext Global Memory Interconnect PCS Unit, /,
    );
    const nbio = decodeMce(rec({ ...zen, bank: 21, status: VAL | EN | CECC | (1n << 16n), ipid: ipid(0x18, 0, 0) }));
    expect([nbio.class, nbio.amd?.xecText]).toEqual(['io', 'PCIE error']);
  });

  it("Genoa's CS erratum and MI300's HBM controllers select their own code tables", () => {
    const cs = (cpuid: number) =>
      decodeMce(rec({ cpuvendor: 2, cpuid, bank: 22, status: VAL | EN | (9n << 16n), ipid: ipid(0x2e, 2, 0) })).amd;
    expect(cs(cpuidOf(0x19, 0x01))?.xecText).toBe('Probe Filter Protocol Error');
    expect(cs(cpuidOf(0x19, 0x11))?.xecText).toBe('SDP read response had an unexpected RETRY error');
    expect(cs(cpuidOf(0x1a, 0x44))?.bankType).toBe('cs_v2_quirk');
    const hbm = decodeMce(
      rec({ cpuvendor: 2, cpuid: cpuidOf(0x19, 0x90), bank: 15, status: VAL | EN | CECC, ipid: ipid(0x96, 0, 0) }),
    );
    expect([hbm.amd?.bankType, hbm.amd?.xecText, hbm.class]).toEqual([
      'umc_quirk',
      'DRAM On Die ECC error',
      'memory-controller',
    ]);
  });

  it('a Zen record without IPID says the bank type is unknown', () => {
    const d = decodeMce(rec({ ...zen, bank: 5, status: VAL | EN | 0x0150n }));
    expect(d.unknown.join('\n')).toMatch(/no MCA_IPID/);
    expect(d.code.mnemonic).toBe('ICACHEL0_IRD_ERR');
  });
});

describe('AMD families 0Fh-16h northbridge (mcelog k8.c wording for K8, the kernel mce_amd.c for 10h-16h)', () => {
  const k8 = { cpuvendor: 2, cpuid: cpuidOf(0xf, 0x41) };
  const f10 = { cpuvendor: 2, cpuid: cpuidOf(0x10, 0x04) };
  const CECC_K8 = 1n << 46n;
  const UECC_K8 = 1n << 45n;

  it('K8 DRAM ECC: Northbridge RAM ECC error with its 8-bit syndrome, channel, class memory and DIMM advice', () => {
    // Syndrome 0x5a in bits 54:47, DRAM channel 1 in bit 41, a bus-error MCA code (0x0813: generic read of memory).
    const d = decodeMce(
      rec({
        ...k8,
        bank: 4,
        status: VAL | EN | ADDRV | CECC_K8 | (0x5an << 47n) | (1n << 41n) | 0x0813n,
        addr: 0x1f4a000n,
      }),
    );
    expect(d.amd?.xecText).toBe('Northbridge RAM ECC error');
    expect(d.details).toContain('ECC syndrome 0x5a');
    expect(d.class).toBe('memory-controller');
    expect(d.location.channel).toBe(1);
    expect(d.summary).toMatch(
      /^corrected memory error: Northbridge RAM ECC error \(Northbridge, channel 1, page 0x1f4a, /,
    );
    expect(d.advice).toMatch(/DIMM/);
  });

  it('K8 chipkill: the 16-bit syndrome joins bits 31:24 above bits 54:47', () => {
    const d = decodeMce(
      rec({
        ...k8,
        bank: 4,
        status: VAL | EN | UECC_K8 | UC | (0x12n << 47n) | (0xabn << 24n) | (8n << 16n) | 0x0813n,
      }),
    );
    expect(d.amd?.xecText).toBe('Northbridge RAM Chipkill ECC error');
    expect(d.details).toContain('Chipkill ECC syndrome 0xab12');
    expect(d.class).toBe('memory-controller');
  });

  it('link, GART, watchdog and L3 codes: class and part follow what failed', () => {
    const nb = (cpu: { cpuvendor: number; cpuid: number }, xec: bigint, ec = 0x0800n) =>
      decodeMce(rec({ ...cpu, bank: 4, status: VAL | EN | UC | (3n << 36n) | (xec << 16n) | ec }));
    const crc = nb(k8, 1n);
    expect([crc.amd?.xecText, crc.class]).toEqual(['Northbridge CRC error', 'bus']);
    expect(crc.details).toContain('link number 3');
    expect(crc.advice).toMatch(/link or device/);
    expect([nb(f10, 5n).amd?.xecText, nb(f10, 5n).class]).toEqual([
      'Invalid GART PTE entry during GART table walk',
      'io',
    ]);
    expect([nb(f10, 7n).amd?.xecText, nb(f10, 7n).class]).toEqual([
      'Watchdog timeout due to lack of progress',
      'internal',
    ]);
    expect([nb(f10, 0x1cn).amd?.xecText, nb(f10, 0x1cn).class]).toEqual(['L3 data cache ECC error', 'cache']);
    expect(nb(f10, 0xfn, 0x0010n).amd?.xecText).toBe('GART Table Walk data error');
    expect(nb(f10, 0xfn, 0x0800n).amd?.xecText).toBe('DMA Exclusion Vector Table Walk error');
    const f15 = { cpuvendor: 2, cpuid: cpuidOf(0x15, 0x02) };
    expect(nb(f15, 0x19n).amd?.xecText).toBe('Compute Unit Data Error');
    expect(nb(f10, 0x19n).unknown.join()).toMatch(/northbridge extended error code 0x19 has no meaning on family 10h/);
  });

  it('family 10h DRAM ECC: the kernel wording and a 16-bit syndrome; family 11h has no DRAM ECC', () => {
    const status = VAL | EN | CECC_K8 | (0x34n << 47n) | (0x12n << 24n) | 0x0813n;
    const d = decodeMce(rec({ ...f10, bank: 4, status }));
    expect([d.amd?.xecText, d.class]).toEqual(['DRAM ECC error detected on the NB', 'memory-controller']);
    expect(d.details).toContain('ECC syndrome 0x1234');
    const f11 = decodeMce(rec({ cpuvendor: 2, cpuid: cpuidOf(0x11, 0x03), bank: 4, status }));
    expect(f11.amd?.xecText).toBeUndefined();
    expect(f11.unknown.join()).toMatch(/has no meaning on family 11h/);
  });
});

describe('Intel model-specific memory decoding (SDM vol. 4 machine-check MSRs)', () => {
  it('Nehalem: DIMM and channel from MCi_MISC bits 17:16 and 19:18', () => {
    const d = decodeMce(
      rec({
        cpuvendor: 0,
        cpuid: cpuidOf(6, 0x1a),
        bank: 8,
        status: VAL | EN | MISCV | 0x0091n,
        misc: (2n << 18n) | (1n << 16n),
        socketid: 1,
      }),
    );
    expect(d.location).toMatchObject({ socket: 1, channel: 2, dimm: 1 });
    expect(d.summary).toMatch(/socket 1, channel 2, DIMM 1/);
  });

  it('Skylake server: the iMC channel follows the bank (13,14 -> 0,1; 15,16 -> 3,4)', () => {
    const at = (bank: number) =>
      decodeMce(rec({ cpuvendor: 0, cpuid: cpuidOf(6, 0x55), bank, status: VAL | EN | 0x0090n })).location.channel;
    expect([at(13), at(14), at(15), at(16), at(17), at(18)]).toEqual([0, 1, 3, 4, 2, 5]);
  });

  it('a page is computed from a physical MCi_ADDR', () => {
    const d = decodeMce(
      rec({
        cpuvendor: 0,
        cpuid: cpuidOf(6, 0x55),
        mcgcap: SER_P,
        bank: 13,
        status: VAL | EN | MISCV | ADDRV | 0x0090n,
        misc: 2n << 6n,
        addr: 0x1234567n,
      }),
    );
    expect(d.misc?.addressMode).toBe('physical address');
    expect(d.location.page).toBe(0x1234n);
  });
});
