/**
 * journalctl's JSON and export outputs, made by the real tools: entries written in the journal export format are
 * stored into a journal file by systemd-journal-remote and printed back by `journalctl --file F -o json|export`.
 * Their MESSAGEs are what the kernel logs for an AMD Zen UMC error (arch/x86/kernel/cpu/mce/core.c, __print_mce,
 * Linux 6.x: the SYND and IPID of Scalable MCA on the TSC line).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeMce } from '../decode.ts';
import { readMceBuffer } from '../read.ts';
import { readJournalExport, readJournalJson } from './journal.ts';

const REMOTE = '/lib/systemd/systemd-journal-remote';
const BOOT = '0123456789abcdef0123456789abcdef';

const KERNEL_LINES = [
  'mce: [Hardware Error]: Machine check events logged',
  'mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 16: 9c2040000000011b',
  'mce: [Hardware Error]: TSC 0 ADDR 1f4a3c000 MISC d01a000000000000 SYND 5d0006201f IPID 9600150f00 ',
  'mce: [Hardware Error]: PROCESSOR 2:a00f11 TIME 1763781200 SOCKET 1 APIC 6 microcode a0011d1',
  'e1000e: eth0 NIC Link is Up',
  'mce: [Hardware Error]: CPU 4: Machine Check: 0 Bank 16: 9c2040000000011b',
  'mce: [Hardware Error]: TSC 0 ADDR 2f4a3c000 SYND 5d00062019 IPID 9600250f00 ',
  'mce: [Hardware Error]: PROCESSOR 2:a00f11 SOCKET 0 APIC 8',
];

/** The export format, one entry per kernel line, a microsecond apart. */
function exportText(): string {
  return KERNEL_LINES.map(
    (message, i) =>
      `__REALTIME_TIMESTAMP=${1763781300000000 + i}\n__MONOTONIC_TIMESTAMP=${1000 + i}\n_BOOT_ID=${BOOT}\n` +
      `_TRANSPORT=kernel\nSYSLOG_IDENTIFIER=kernel\nPRIORITY=2\nMESSAGE=${message}\n\n`,
  ).join('');
}

/** journalctl comes with systemd, the writer of journal files with systemd-journal-remote. */
const journalMissing = !existsSync(REMOTE)
  ? 'systemd-journal-remote is not installed (apt-get install systemd-journal-remote)'
  : spawnSync('journalctl', ['--version'], { stdio: 'ignore' }).status !== 0
    ? 'journalctl is not installed (apt-get install systemd)'
    : '';

describe.skipIf(journalMissing !== '')(
  `journalctl -o json and -o export (needs systemd-journal-remote to write the journal file)${journalMissing ? ` (skipped: ${journalMissing})` : ''}`,
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'evtrace-journal-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const journal = join(dir, 'kernel.journal');
    writeFileSync(join(dir, 'in.export'), exportText());
    execFileSync(REMOTE, ['-o', journal, join(dir, 'in.export')], { stdio: 'ignore' });
    const out = (format: string) => execFileSync('journalctl', ['--file', journal, '-o', format]);

    for (const format of ['json', 'export'] as const) {
      it(`journalctl -o ${format}: detected, two UMC records with IPID and SYND, dated by the entry when TIME is absent`, () => {
        const r = readMceBuffer(out(format), { file: `k.${format}` });
        expect(r.kind).toBe(`journal-${format}`);
        expect(r.records.length).toBe(2);
        const [a, b] = r.records as [NonNullable<(typeof r.records)[0]>, NonNullable<(typeof r.records)[0]>];
        expect([a.cpu, a.bank, a.ipid, a.synd, a.time, a.socketid]).toEqual([
          3,
          16,
          0x9600150f00n,
          0x5d0006201fn,
          1763781200n,
          1,
        ]);
        expect([b.cpu, b.ipid, b.synd, b.time]).toEqual([4, 0x9600250f00n, 0x5d00062019n, 1763781300n]);
        if (format === 'json') expect([a.source.line, b.source.line]).toEqual([2, 6]);
        else expect(b.source.offset).toBeGreaterThan(a.source.offset ?? Number.POSITIVE_INFINITY);
        const d = decodeMce(b);
        expect(d.summary).toMatch(
          /^corrected memory error: DRAM ECC error \(socket 0, Unified Memory Controller, channel 2, chip select 1, /,
        );
        expect(r.notes.map((n) => n.message)).toEqual(['1 log lines unrelated to machine checks were skipped']);
      });
    }
  },
);

describe('journalctl -o export: binary fields and damage', () => {
  const entry = (message: Buffer) =>
    Buffer.concat([
      Buffer.from('__REALTIME_TIMESTAMP=1763781300000000\nMESSAGE\n'),
      Buffer.from(new BigUint64Array([BigInt(message.length)]).buffer),
      message,
      Buffer.from('\n\n'),
    ]);

  it('reads a MESSAGE stored as a binary field (journalctl does so for one holding newlines)', () => {
    const lines = Buffer.from(KERNEL_LINES.slice(1, 4).join('\n'));
    const r = readJournalExport(entry(lines), { file: 'bin.export' });
    expect(r.records.map((x) => [x.bank, x.ipid])).toEqual([[16, 0x9600150f00n]]);
  });

  it('a size beyond the input is a note with its byte offset, not a crash', () => {
    const bytes = entry(Buffer.from(KERNEL_LINES[1]!));
    bytes.writeBigUInt64LE(1n << 40n, '__REALTIME_TIMESTAMP=1763781300000000\nMESSAGE\n'.length);
    const r = readJournalExport(bytes, { file: 'bad.export' });
    expect(r.records).toEqual([]);
    expect(r.notes).toEqual([
      {
        location: { file: 'bad.export', offset: 46 },
        message: 'journal export field MESSAGE says 1099511627776 bytes, which the input does not hold',
      },
    ]);
  });
});

describe('journal readers never throw (fast-check)', () => {
  it('arbitrary bytes as export and arbitrary lines as JSON give records and notes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) => {
        const head = Buffer.from('__CURSOR=s\nMESSAGE\n');
        const r = readJournalExport(Buffer.concat([head, bytes]));
        expect(Array.isArray(r.records) && Array.isArray(r.notes)).toBe(true);
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.json(), fc.string()), { maxLength: 8 }), (lines) => {
        const r = readJournalJson(lines.join('\n'));
        expect(Array.isArray(r.records) && Array.isArray(r.notes)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
