import { describe, expect, it } from 'vitest';
import { MceError } from '../errors.ts';
import { readMceBuffer } from '../read.ts';
import { emptyRecord, type MceRecord } from '../record.ts';
import { encodeStructMce, probeRecordLength, readStructMce, STRUCT_MCE } from './struct-mce.ts';

function sample(i: number): MceRecord {
  return Object.assign(emptyRecord({ kind: 'struct-mce' }), {
    cpu: 300 + i, // beyond the old u8 cpu field: read from extcpu
    bank: 7,
    status: 0x9c00000000000090n + BigInt(i),
    misc: 0x86n,
    addr: 0x1234000n,
    mcgstatus: 0n,
    mcgcap: 0x1000c16n,
    tsc: 123n,
    time: 1763781121n,
    cpuvendor: 0,
    cpuid: 0x50654,
    socketid: 1,
    apicid: 0x44,
    synd: 0x55n,
    ipid: 0x9600000000n,
    ppin: 0xabcdefn,
    microcode: 0x2007006,
  });
}

describe('struct mce of the /dev/mcelog ABI', () => {
  it('has the offsets of arch/x86/include/uapi/asm/mce.h', () => {
    expect([
      STRUCT_MCE.cpuvendor,
      STRUCT_MCE.cpuid,
      STRUCT_MCE.bank,
      STRUCT_MCE.finished,
      STRUCT_MCE.extcpu,
      STRUCT_MCE.mcgcap,
    ]).toEqual([56, 60, 65, 67, 68, 80]);
    expect([STRUCT_MCE.synd, STRUCT_MCE.ipid, STRUCT_MCE.ppin, STRUCT_MCE.microcode, STRUCT_MCE.size]).toEqual([
      88, 96, 104, 112, 128,
    ]);
  });

  it('reads records of each historic length, fields beyond the length staying unknown', () => {
    for (const len of [128, 120, 104, 88]) {
      const bytes = encodeStructMce([sample(0), sample(1)], len);
      expect(probeRecordLength(bytes)).toBe(len);
      const { records, notes, recordLength } = readStructMce(bytes);
      expect([recordLength, notes.length, records.length]).toEqual([len, 0, 2]);
      const r = records[1]!;
      expect([r.cpu, r.bank, r.status, r.cpuid, r.socketid, r.apicid, r.mcgcap]).toEqual([
        301,
        7,
        0x9c00000000000091n,
        0x50654,
        1,
        0x44,
        0x1000c16n,
      ]);
      expect(r.ipid).toBe(len >= 104 ? 0x9600000000n : 0n);
      expect(r.ppin).toBe(len >= 112 ? 0xabcdefn : 0n);
      expect(r.microcode).toBe(len >= 116 ? 0x2007006 : 0);
      expect(r.source.offset).toBe(len);
    }
  });

  it('reports a truncated tail and unfinished records with byte offsets, keeping the rest', () => {
    const bytes = encodeStructMce([sample(0), sample(1), sample(2)]);
    bytes[128 + STRUCT_MCE.finished] = 0;
    const cut = bytes.subarray(0, 3 * 128 - 40);
    const { records, notes } = readStructMce(cut, { recordLength: 128, file: 'dump' });
    expect(records.map((r) => r.cpu)).toEqual([300]);
    expect(notes).toEqual([
      { location: { file: 'dump', offset: 128 }, message: 'record not finished by the kernel (finished = 0): skipped' },
      { location: { file: 'dump', offset: 256 }, message: 'truncated record: 88 of 128 bytes: skipped' },
    ]);
  });

  it('refuses a record length shorter than any ABI', () => {
    expect(() => readStructMce(Buffer.alloc(64), { recordLength: 64 })).toThrow(MceError);
  });

  it('is detected from its NUL bytes', () => {
    expect(readMceBuffer(encodeStructMce([sample(0)])).kind).toBe('struct-mce');
  });
});
