import { describe, expect, it } from 'vitest';
import { decodeMce } from '../decode.ts';
import { readMceBuffer } from '../read.ts';
import { readMceText } from './text.ts';
import { readTraceText } from './trace-text.ts';

/** Two records as the kernel's __print_mce logs them (arch/x86/kernel/cpu/mce/core.c, 6.x), behind three prefixes. */
const KERNEL_LOG = `Nov 22 03:12:01 db7 kernel: mce: [Hardware Error]: Machine check events logged
Nov 22 03:12:01 db7 kernel: mce: [Hardware Error]: CPU 2: Machine Check: 0 Bank 7: cc00008000010090
Nov 22 03:12:01 db7 kernel: mce: [Hardware Error]: TSC 0 ADDR 1234567000 MISC 90868002800208c
Nov 22 03:12:01 db7 kernel: mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1763781121 SOCKET 1 APIC 44 microcode 2007006
Nov 22 03:12:01 db7 kernel: mce: [Hardware Error]: PPIN 2b0c3a4d1e5f6071
Nov 22 03:12:01 db7 kernel: e1000e: eth0 NIC Link is Up
[ 8123.456789] mce: [Hardware Error]: CPU 5: Machine Check Exception: 5 Bank 1: bd80000000100134
[ 8123.456790] mce: [Hardware Error]: RIP !INEXACT! 33:<00007f1234567890>
[ 8123.456791] mce: [Hardware Error]: TSC 1d2c3b4a ADDR 7f001000 MISC 86
[ 8123.456792] mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1763781200 SOCKET 0 APIC 5 microcode 2007006
2026-11-22T03:15:00.123456+00:00 db7 kernel: mce: [Hardware Error]: CPU 9: Machine Check: 0 Bank 17: 9c00004001010091
2026-11-22T03:15:00.123457+00:00 db7 kernel: mce: [Hardware Error]: TSC 0 ADDR abc000 MISC 8c SYND 0 IPID 0
2026-11-22T03:15:00.123458+00:00 db7 kernel: mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1763781300 SOCKET 1 APIC 4c microcode 2007006
`;

describe('kernel log text (dmesg, syslog, journald prefixes)', () => {
  it('reads three records with PPIN and SOCKET ... APIC tokens, skipping other messages with a count', () => {
    const { records, notes } = readMceText(KERNEL_LOG, { kind: 'kernel-log', file: 'kern.log' });
    expect(records.length).toBe(3);
    const [a, b, c] = records as [
      NonNullable<(typeof records)[0]>,
      NonNullable<(typeof records)[0]>,
      NonNullable<(typeof records)[0]>,
    ];
    expect([a.cpu, a.bank, a.status, a.mcgstatus]).toEqual([2, 7, 0xcc00008000010090n, 0n]);
    expect([a.addr, a.misc, a.cpuid, a.time, a.socketid, a.apicid]).toEqual([
      0x1234567000n,
      0x90868002800208cn,
      0x50654,
      1763781121n,
      1,
      0x44,
    ]);
    expect(a.ppin).toBe(0x2b0c3a4d1e5f6071n);
    expect(a.microcode).toBe(0x2007006);
    expect(a.source.line).toBe(2);
    expect([b.cpu, b.bank, b.mcgstatus, b.cs, b.ip]).toEqual([5, 1, 5n, 0x33, 0x7f1234567890n]);
    expect([c.cpu, c.bank, c.socketid, c.apicid]).toEqual([9, 17, 1, 0x4c]);
    expect(notes).toEqual([
      { location: { file: 'kern.log' }, message: '1 log lines unrelated to machine checks were skipped' },
    ]);
    expect(decodeMce(b).severity).toBe('srar');
  });

  it('is detected as kernel-log', () => {
    expect(readMceBuffer(Buffer.from(KERNEL_LOG)).kind).toBe('kernel-log');
  });
});

describe('mcelog text: --ascii input, decoded output, --raw output', () => {
  it('reads mcelog --raw output (CPU and BANK on their own lines)', () => {
    const raw = `CPU 3\nBANK 8\nTSC 0x2a\nRIP 0x10:0xffffffff81000000\nMISC 0x0\nADDR 0x5000\nSTATUS 0x9c00000000000090\nMCGSTATUS 0x0\nPROCESSOR 0:0x406f1\nTIME 1700000000\nSOCKETID 1\nAPICID 12\nMCGCAP 0x1000c14\n\n`;
    const { records, notes } = readMceText(raw);
    expect(notes).toEqual([]);
    expect(records.length).toBe(1);
    const r = records[0]!;
    expect([r.cpu, r.bank, r.tsc, r.cs, r.ip, r.addr, r.status, r.cpuid, r.time, r.socketid, r.mcgcap]).toEqual([
      3,
      8,
      0x2an,
      0x10,
      0xffffffff81000000n,
      0x5000n,
      0x9c00000000000090n,
      0x406f1,
      1700000000n,
      1,
      0x1000c14n,
    ]);
  });

  it('keeps every good record around garbage lines, bad values and a record without STATUS, naming line and column', () => {
    const text = [
      'CPU 0 BANK 2',
      'STATUS 0x8800000000000080',
      '',
      'this is not mcelog',
      'CPU 1 BANK 3',
      'STATUS 0xnothex',
      'CPU 2 BANK 4',
      'STATUS 0x9c00000000000151',
      'MISC 0x12 ADDR 0xfffffffffffffffff',
    ].join('\n');
    const { records, notes } = readMceText(text, { file: 'x.txt' });
    expect(records.map((r) => [r.cpu, r.bank])).toEqual([
      [0, 2],
      [2, 4],
    ]);
    expect(records[1]!.misc).toBe(0x12n);
    expect(notes.map((n) => [n.location.line, n.location.column, n.message])).toEqual([
      [4, 1, 'not a machine-check line, ignored: this is not mcelog'],
      [6, 8, "bad STATUS value '0xnothex'"],
      [5, undefined, 'record without a STATUS value: skipped'],
      [9, 16, "bad ADDR value '0xfffffffffffffffff'"],
    ]);
  });

  it('reads a record per CPU line when several follow without blank lines (mce-inject style)', () => {
    const gen = (cpu: number) =>
      `# cache error\nCPU ${cpu} 2\nPROCESSOR 0:0x106a0\nMCGCAP 0x800\nSTATUS 0x8820000000000105\n`;
    const { records } = readMceText(gen(0) + gen(1) + gen(2));
    expect(records.map((r) => r.cpu)).toEqual([0, 1, 2]);
    expect(decodeMce(records[0]!).status.threshold).toBe('green');
  });
});

describe('mce:mce_record text, the three print-format layouts of include/trace/events/mce.h', () => {
  const v1 =
    '  <idle>-0  [002] d.h. 100.000001: mce_record: CPU: 2, MCGc/s: 1000c14/5, MC1: bd80000000100134, ADDR/MISC: 000000007f001000/0000000000000086, RIP: 33:<00007f1234567890>, TSC: 1d2c3b4a, PROCESSOR: 0:50654, TIME: 1763781200, SOCKET: 0, APIC: 5';
  const v2 =
    'mce_record: CPU: 2, MCGc/s: 1000c14/5, MC1: bd80000000100134, IPID: 0000000000000000, ADDR/MISC: 000000007f001000/0000000000000086, SYND: 0000000000000000, RIP: 33:<00007f1234567890>, TSC: 1d2c3b4a, PROCESSOR: 0:50654, TIME: 1763781200, SOCKET: 0, APIC: 5';
  const v3 =
    'mce_record: CPU: 2, MCGc/s: 1000c14/5, MC1: bd80000000100134, IPID: 0000000000000000, ADDR: 000000007f001000, MISC: 0000000000000086, SYND: 0000000000000000, RIP: 33:<00007f1234567890>, TSC: 1d2c3b4a, PPIN: 0, vendor: 0, CPUID: 50654, time: 1763781200, socket: 0, APIC: 5, microcode: 2007006';
  it('reads the same registers from each layout', () => {
    const { records, notes } = readTraceText([v1, v2, v3, 'mce_record: garbled'].join('\n'), { file: 't.txt' });
    expect(records.length).toBe(3);
    for (const r of records) {
      expect([
        r.cpu,
        r.mcgcap,
        r.mcgstatus,
        r.bank,
        r.status,
        r.addr,
        r.misc,
        r.cs,
        r.ip,
        r.tsc,
        r.cpuid,
        r.time,
        r.socketid,
        r.apicid,
      ]).toEqual([
        2,
        0x1000c14n,
        5n,
        1,
        0xbd80000000100134n,
        0x7f001000n,
        0x86n,
        0x33,
        0x7f1234567890n,
        0x1d2c3b4an,
        0x50654,
        1763781200n,
        0,
        5,
      ]);
    }
    expect(records[2]!.microcode).toBe(0x2007006);
    expect(notes).toEqual([
      {
        location: { file: 't.txt', line: 4, column: 1 },
        message: 'mce_record line without CPU, MCGc/s and MCi_STATUS: skipped',
      },
    ]);
    expect(readMceBuffer(Buffer.from(v1)).kind).toBe('trace-text');
  });
});

describe('IPID and SYND lines in mcelog --ascii input (what an SMCA record pasted from the kernel log needs)', () => {
  it('an AMD Zen UMC record with IPID and SYND lines decodes to its channel and chip select', () => {
    const text =
      'CPU 3 BANK 16\nSTATUS 0x9c2040000000011b\nADDR 0x1f4a3c000\nIPID 0x9600150f00\nSYND 0x5d0006201f\nPROCESSOR 2:0xa00f11\n';
    const { records, notes } = readMceText(text, { file: 'smca.txt' });
    expect(notes).toEqual([]);
    const d = decodeMce(records[0]!);
    expect([d.amd?.bankType, d.location.channel, d.location.chipSelect, d.class]).toEqual([
      'umc',
      1,
      7,
      'memory-controller',
    ]);
  });
});

describe('SYND1 and SYND2 of the kernel log (newer SMCA parts): the FRU text', () => {
  it('reads both registers and decodes their FRU text; registers that are not text add none', () => {
    const fru = Buffer.from('CPU0_DIMM_A1\0\0\0\0', 'latin1');
    const [s1, s2] = [fru.readBigUInt64LE(0), fru.readBigUInt64LE(8)];
    const log = (synd1: bigint, synd2: bigint) =>
      [
        'mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 16: 9c2040000000011b',
        `mce: [Hardware Error]: TSC 0 ADDR 1f4a3c000 SYND 5d0006201f SYND1 ${synd1.toString(16)} SYND2 ${synd2.toString(16)} IPID 9600150f00 `,
        'mce: [Hardware Error]: PROCESSOR 2:b00f21 TIME 1763781200 SOCKET 0 APIC 6 microcode b002116',
      ].join('\n');
    const { records, notes } = readMceText(log(s1, s2), { kind: 'kernel-log' });
    expect(notes).toEqual([]);
    expect([records[0]!.synd, records[0]!.synd1, records[0]!.synd2]).toEqual([0x5d0006201fn, s1, s2]);
    expect(decodeMce(records[0]!).details).toContain('FRU text: CPU0_DIMM_A1');
    const binary = readMceText(log(0x0102030405060708n, 0n), { kind: 'kernel-log' }).records[0]!;
    expect(decodeMce(binary).details.some((l) => l.startsWith('FRU text'))).toBe(false);
  });
});
