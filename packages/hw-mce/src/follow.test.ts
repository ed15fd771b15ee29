import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LineBatches, readGrowth } from './follow.ts';

const RECORD = [
  'mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 16: 9c2040000000011b\n',
  'mce: [Hardware Error]: TSC 0 ADDR 1f4a3c000 SYND 5d0006201f IPID 9600150f00 \n',
  'mce: [Hardware Error]: PROCESSOR 2:a00f11 TIME 1763781200 SOCKET 0 APIC 6\n',
].join('');

describe('LineBatches: whole lines of a growing input, a batch at a time', () => {
  it("joins a line split across chunks, and holds an unfinished line until its end or the input's", () => {
    const b = new LineBatches({ file: 'kern.log' });
    b.push(Buffer.from(RECORD.slice(0, 40)));
    expect([b.pending, b.take()]).toEqual([0, undefined]);
    b.push(Buffer.from(RECORD.slice(40, -1)));
    // Two whole lines wait; the PROCESSOR line has no end yet.
    expect(b.pending).toBe(RECORD.indexOf('mce: [Hardware Error]: PROCESSOR'));
    b.push(Buffer.from(RECORD.slice(-1)));
    const whole = b.take();
    expect(whole?.records.map((r) => [r.bank, r.cpuvendor, r.cpuid, r.ipid])).toEqual([
      [16, 2, 0xa00f11, 0x9600150f00n],
    ]);
    expect(whole?.notes).toEqual([]);
    b.push(Buffer.from(RECORD.slice(0, -1)));
    const atEnd = b.take(true);
    expect(atEnd?.records.map((r) => r.cpuid)).toEqual([0xa00f11]);
  });

  it('decodes every batch as the kind the first one had', () => {
    const b = new LineBatches();
    b.push(Buffer.from(RECORD));
    expect(b.take()?.records[0]?.ipid).toBe(0x9600150f00n);
    b.push(Buffer.from('CPU 0 BANK 4\nSTATUS 0x9c2040000000011b\n'));
    expect(b.take()?.kind).toBe('kernel-log');
  });
});

describe('readGrowth: what a file gained', () => {
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-growth-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads from the offset, at most max bytes a call, and from the start again when the file shrank', () => {
    const f = join(dir, 'log');
    writeFileSync(f, 'abcdef');
    expect(readGrowth(f, 0, 4)).toEqual({ bytes: Buffer.from('abcd'), offset: 4 });
    expect(readGrowth(f, 4, 4)).toEqual({ bytes: Buffer.from('ef'), offset: 6 });
    expect(readGrowth(f, 6)).toEqual({ bytes: Buffer.alloc(0), offset: 6 });
    appendFileSync(f, 'gh');
    expect(readGrowth(f, 6).bytes.toString()).toBe('gh');
    writeFileSync(f, 'xy');
    expect(readGrowth(f, 8)).toEqual({ bytes: Buffer.from('xy'), offset: 2 });
  });
});
