import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileRecordEncoder } from './encode.ts';
import { parseFormatFile } from './format-file.ts';
import { compileRecordDecoder, RecordError } from './record.ts';

const COMMON = `\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
`;

const DYNAMIC = parseFormatFile(
  `name: dyn
ID: 7
format:
${COMMON}
\tfield:__data_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;
\tfield:__rel_loc u32[] vals;\toffset:12;\tsize:4;\tsigned:0;
\tfield:__data_loc u64[] addrs;\toffset:16;\tsize:4;\tsigned:0;
\tfield:char comm[16];\toffset:20;\tsize:16;\tsigned:0;
\tfield:u8 mac[6];\toffset:36;\tsize:6;\tsigned:0;
\tfield:short delta;\toffset:42;\tsize:2;\tsigned:1;

print fmt: "name=%s", __get_str(name)
`,
  { system: 'test' },
);

const TAIL = parseFormatFile(
  `name: tail
ID: 8
format:
${COMMON}
\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;
\tfield:u32 buf[];\toffset:16;\tsize:0;\tsigned:0;

print fmt: "%lx", REC->ip
`,
  { system: 'test' },
);

describe('ftrace records', () => {
  it('decodes __data_loc and __rel_loc from hand-built bytes (rel offsets count from the end of the field)', () => {
    const b = Buffer.alloc(80);
    b.writeUInt16LE(7, 0);
    b.writeInt32LE(42, 4);
    // name: "hi\0" at record offset 44
    b.write('hi\0', 44);
    b.writeUInt32LE((3 << 16) | 44, 8);
    // vals: two u32 at 48, stored relative to the end of the field (12 + 4 = 16) → 32
    b.writeUInt32LE(5, 48);
    b.writeUInt32LE(6, 52);
    b.writeUInt32LE((8 << 16) | 32, 12);
    // addrs: one u64 at 56
    b.writeBigUInt64LE(0xffffffff81000000n, 56);
    b.writeUInt32LE((8 << 16) | 56, 16);
    b.write('bash', 20);
    Buffer.from([1, 2, 3, 4, 5, 6]).copy(b, 36);
    b.writeInt16LE(-2, 42);
    const d = compileRecordDecoder(DYNAMIC)(b, new DataView(b.buffer, b.byteOffset, b.length), 0, 64);
    expect(d.fields).toEqual({
      name: 'hi',
      vals: [5, 6],
      addrs: [0xffffffff81000000n],
      comm: 'bash',
      mac: [1, 2, 3, 4, 5, 6],
      delta: -2,
    });
    expect(d.common).toEqual({ common_type: 7, common_flags: 0, common_preempt_count: 0, common_pid: 42 });
  });

  it('rejects dynamic data outside the record and records shorter than their fields', () => {
    const b = Buffer.alloc(64);
    b.writeUInt32LE((40 << 16) | 40, 8);
    const decode = compileRecordDecoder(DYNAMIC);
    const view = new DataView(b.buffer, b.byteOffset, b.length);
    expect(() => decode(b, view, 0, 64)).toThrow(RecordError);
    expect(() => decode(b, view, 0, 64)).toThrow(/name: dynamic data \[40, \+40\) outside the 64-byte record/);
    const zero = Buffer.alloc(64);
    const zeroView = new DataView(zero.buffer, zero.byteOffset, zero.length);
    expect(() => decode(zero, zeroView, 0, 20)).toThrow(/record of 20 bytes too short for field comm/);
  });

  it('round-trips any values through the encoder and decoder, tail arrays included', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 40 }).filter((s) => !s.includes('\0')),
        fc.array(fc.integer({ min: 0, max: 0xffffffff }), { maxLength: 10 }),
        fc.array(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), { maxLength: 5 }),
        fc.stringMatching(/^[a-z/0-9]{0,15}$/),
        fc.integer({ min: -32768, max: 32767 }),
        fc.array(fc.integer({ min: 0, max: 0xffffffff }), { maxLength: 20 }),
        (name, vals, addrs, comm, delta, tail) => {
          const fields = { name, vals, addrs, comm, mac: [9, 8, 7, 6, 5, 4], delta };
          const common = { common_type: 7, common_flags: 1, common_preempt_count: 2, common_pid: -5 };
          const bytes = compileRecordEncoder(DYNAMIC)(fields, common);
          const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
          expect(compileRecordDecoder(DYNAMIC)(bytes, view, 0, bytes.length)).toEqual({ fields, common });
          const t = compileRecordEncoder(TAIL)({ ip: 0x1234n, buf: tail }, common);
          const tv = new DataView(t.buffer, t.byteOffset, t.length);
          expect(compileRecordDecoder(TAIL)(t, tv, 0, t.length).fields).toEqual({ ip: 0x1234n, buf: tail });
        },
      ),
      { numRuns: 200 },
    );
  });
});
