import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KmemError } from './errors.ts';
import { readKmemtrace } from './inputs.ts';
import { decodeKmemtrace } from './kmemtrace-abi.ts';
import { encodeKmemtrace, type KmemtraceRecord } from './testing/kmemtrace-writer.ts';

const SITE = 0xffffffff81234560n;
const PTR = 0xffff888100abc000n;

const records: KmemtraceRecord[] = [
  {
    event: 'alloc',
    type: 0,
    callSite: SITE,
    ptr: PTR,
    bytesReq: 100,
    bytesAlloc: 128,
    gfpFlags: 0xcc0,
    node: 0,
    ts: 1000,
  },
  {
    event: 'alloc',
    type: 1,
    callSite: SITE + 8n,
    ptr: PTR + 0x100n,
    bytesReq: 64,
    bytesAlloc: 64,
    gfpFlags: 0x20,
    ts: 2000,
  },
  { event: 'free', type: 0, callSite: SITE + 16n, ptr: PTR, ts: 3000 },
];

function thrown(fn: () => unknown): KmemError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(KmemError);
    return error as KmemError;
  }
  throw new Error('expected a KmemError');
}

describe('kmemtrace v1, original layout (56-byte records)', () => {
  it('decodes every field of the packed records', () => {
    const bytes = encodeKmemtrace(records);
    expect(bytes.length).toBe(3 * 56);
    const d = decodeKmemtrace(bytes, { cpu: 1 });
    expect(d.layout).toBe('original');
    expect(
      d.events.map((e) => [e.op, e.allocator, e.tsNs, e.cpu, e.bytesReq, e.bytesAlloc, e.gfpFlags, e.node]),
    ).toEqual([
      ['alloc', 'kmalloc', 1000, 1, 100, 128, 0xcc0, 0],
      ['alloc', 'cache', 2000, 1, 64, 64, 0x20, -1],
      ['free', 'kmalloc', 3000, 1, 0, 0, 0, -1],
    ]);
    expect(d.keys.address(d.events[0]!.callSite)).toBe(SITE);
    expect(d.keys.address(d.events[0]!.ptr)).toBe(PTR);
    expect(d.keys.address(d.events[1]!.ptr)).toBe(PTR + 0x100n);
    expect(d.events[2]!.ptr).toBe(d.events[0]!.ptr);
  });

  it('skips trailing bytes of longer records and records of unknown event or type ids by event_size', () => {
    const bytes = encodeKmemtrace([
      { ...records[0]!, extra: 24 },
      { event: 7, type: 0, callSite: SITE, ptr: PTR, ts: 1500, extra: 8 },
      { ...records[1]!, type: 9 },
      records[2]!,
    ]);
    const d = decodeKmemtrace(bytes);
    expect(d.skipped).toBe(2);
    expect(d.events.map((e) => [e.op, e.tsNs, e.bytesAlloc])).toEqual([
      ['alloc', 1000, 128],
      ['free', 3000, 0],
    ]);
  });

  it('a truncated record is an error at its byte offset; lenient mode keeps the events before it', () => {
    const bytes = encodeKmemtrace(records).subarray(0, 2 * 56 + 30);
    const e = thrown(() => decodeKmemtrace(bytes, { file: 'cpu0' }));
    expect(e.code).toBe('ERR_KMEM_RELAY_RECORD');
    expect(e.location).toEqual({ file: 'cpu0', offset: 112 });
    expect(e.message).toMatch(/^cpu0: byte 112: truncated record: event size 56, 30 bytes left/);
    const d = decodeKmemtrace(bytes, { lenient: true });
    expect(d.events.length).toBe(2);
    expect(d.diagnostics).toEqual([expect.stringMatching(/byte 112: truncated record.*2 events before it kept/)]);
    const header = thrown(() => decodeKmemtrace(encodeKmemtrace(records).subarray(0, 58)));
    expect(header.message).toMatch(/byte 56: truncated record: 2 bytes left, a record header needs 4/);
  });

  it('an event size below the layout is an error (the size cannot be trusted to skip by)', () => {
    const bytes = encodeKmemtrace(records);
    bytes.writeUInt16LE(12, 56 + 2);
    const e = thrown(() => decodeKmemtrace(bytes, { layout: 'original' }));
    expect(e.location.offset).toBe(56);
    expect(e.message).toMatch(/event size 12 is below the 56 bytes of a original alloc/);
    const zeros = thrown(() => decodeKmemtrace(Buffer.alloc(64), { layout: 'original' }));
    expect(zeros.message).toMatch(/byte 0: event size 0/);
  });

  it('honours the ABI version: 1 is read, any other refused', () => {
    expect(decodeKmemtrace(encodeKmemtrace(records), { abiVersion: 1 }).events.length).toBe(3);
    const e = thrown(() => decodeKmemtrace(encodeKmemtrace(records), { abiVersion: 2 }));
    expect(e.code).toBe('ERR_KMEM_RELAY_ABI');
    expect(e.message).toMatch(/ABI version 2 is not supported/);
  });
});

describe('kmemtrace v1, mainline layout (Linux 2.6.28: 24-byte header, 24-byte alloc stats)', () => {
  it('is detected from the record sizes and decoded, the sequence number ordering events', () => {
    const bytes = encodeKmemtrace(records, 'mainline');
    expect(bytes.length).toBe(48 + 48 + 24);
    const d = decodeKmemtrace(bytes);
    expect(d.layout).toBe('mainline');
    expect(d.events.map((e) => [e.op, e.allocator, e.tsNs, e.bytesReq, e.bytesAlloc, e.gfpFlags, e.node])).toEqual([
      ['alloc', 'kmalloc', 1000, 100, 128, 0xcc0, 0],
      ['alloc', 'cache', 2000, 64, 64, 0x20, -1],
      ['free', 'kmalloc', 3000, 0, 0, 0, -1],
    ]);
    const cut = thrown(() => decodeKmemtrace(bytes.subarray(0, 100)));
    expect(cut.location.offset).toBe(96);
  });
});

describe('kmemtrace relay directories', () => {
  it('merge cpuN files by timestamp with their CPU and read abi_version', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kmemtrace-'));
    writeFileSync(join(dir, 'cpu0'), encodeKmemtrace([records[0]!, records[2]!]));
    writeFileSync(join(dir, 'cpu1'), encodeKmemtrace([records[1]!]));
    writeFileSync(join(dir, 'abi_version'), '1\n');
    const source = readKmemtrace(dir);
    expect([...source.events].map((e) => [e.tsNs, e.cpu])).toEqual([
      [1000, 0],
      [2000, 1],
      [3000, 0],
    ]);
    expect(source.siteName([...source.events][0]!.callSite)).toBe('0xffffffff81234560');
    writeFileSync(join(dir, 'abi_version'), '3\n');
    expect(thrown(() => readKmemtrace(dir)).code).toBe('ERR_KMEM_RELAY_ABI');
    const other = join(dir, 'sub');
    mkdirSync(other);
    writeFileSync(join(other, 'abi_version'), 'one');
    writeFileSync(join(other, 'cpu0'), encodeKmemtrace(records));
    expect(thrown(() => readKmemtrace(other)).message).toMatch(/abi_version holds 'one'/);
  });
});

describe('kmemtrace decoder fuzz', () => {
  const valid = encodeKmemtrace(
    Array.from({ length: 40 }, (_, i) => ({ ...records[i % 3]!, ts: i * 10, ...(i % 7 === 0 ? { extra: 16 } : {}) })),
  );
  it('mutated, truncated and random inputs give events or a KmemError, never anything else', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(valid.length - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 12 }),
        fc.nat(valid.length),
        fc.boolean(),
        fc.constantFrom<'original' | 'mainline' | undefined>('original', 'mainline', undefined),
        (flips, cut, lenient, layout) => {
          const bytes = Buffer.from(valid.subarray(0, cut));
          for (const [at, v] of flips) if (at < bytes.length) bytes[at] = v;
          try {
            const d = decodeKmemtrace(bytes, { lenient, ...(layout ? { layout } : {}) });
            expect(d.events.length).toBeLessThanOrEqual(Math.floor(bytes.length / 24));
          } catch (error) {
            expect(error).toBeInstanceOf(KmemError);
            expect(lenient).toBe(false);
          }
        },
      ),
      { numRuns: 400 },
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
        try {
          decodeKmemtrace(bytes);
        } catch (error) {
          expect(error).toBeInstanceOf(KmemError);
        }
      }),
      { numRuns: 300 },
    );
  });
});
