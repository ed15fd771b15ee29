import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import type { ByteOrder, EventClass, FieldClass, FieldValue, IntegerClass, StructClass } from '../model/types.ts';
import { ctfFixtureCases, sharedFixtures } from './fixtures.ts';
import { openCtfTrace } from './reader.ts';
import { createBabeltraceTextFormatter } from './text.ts';
import { type CtfEventInput, createCtfWriter, type EventHeaderKind, writeCtfTrace } from './writer.ts';

const bt2 = spawnSync('babeltrace2', ['--version'], { encoding: 'utf8' });
const haveBt2 = bt2.status === 0;
const root = mkdtempSync(join(tmpdir(), 'evtrace-ctf-writer-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function int(order: ByteOrder, size: number, signed = false, align = 8, base: 2 | 8 | 10 | 16 = 10): IntegerClass {
  return { kind: 'int', size, signed, align, byteOrder: order, base, encoding: 'none' };
}

function struct(members: [string, FieldClass][], minAlign = 1): StructClass {
  return { kind: 'struct', minAlign, members: members.map(([name, type]) => ({ name, type })) };
}

/** An event class using every CTF field class, in the given byte order. */
function everyFieldClass(order: ByteOrder): EventClass {
  const payload = struct([
    ['u8', int(order, 8)],
    ['s16', int(order, 16, true)],
    ['bits3', int(order, 3, false, 1)],
    ['bits13s', int(order, 13, true, 1)],
    ['u64', int(order, 64)],
    ['s64', int(order, 64, true)],
    ['hex32', int(order, 32, false, 8, 16)],
    ['oct12', int(order, 12, false, 1, 8)],
    ['bin5', int(order, 5, false, 1, 2)],
    ['u40', int(order, 40, false, 1)],
    ['f32', { kind: 'float', expDig: 8, mantDig: 24, align: 8, byteOrder: order }],
    ['f64', { kind: 'float', expDig: 11, mantDig: 53, align: 64, byteOrder: order }],
    [
      'state',
      {
        kind: 'enum',
        container: int(order, 8),
        mappings: [
          { label: 'IDLE', ranges: [[0, 0]] },
          { label: 'BUSY', ranges: [[1, 9]] },
          { label: 'ANY', ranges: [[0, 200]] },
        ],
      },
    ],
    ['text', { kind: 'string', encoding: 'utf8' }],
    ['triple', { kind: 'array', element: int(order, 16), length: 3 }],
    ['comm', { kind: 'array', element: { ...int(order, 8), encoding: 'utf8' }, length: 16 }],
    ['_count', int(order, 32)],
    ['values', { kind: 'sequence', element: int(order, 32, true), lengthRef: '_count' }],
    [
      'inner',
      struct(
        [
          ['x', int(order, 8)],
          ['name', { kind: 'string', encoding: 'utf8' }],
        ],
        32,
      ),
    ],
    [
      'choice',
      {
        kind: 'variant',
        tagRef: 'state',
        options: [
          { name: 'IDLE', type: int(order, 16) },
          { name: 'BUSY', type: { kind: 'string', encoding: 'utf8' } },
        ],
      },
    ],
  ]);
  return { id: 3, name: 'test:every_class', streamId: 0, payload };
}

/** Negation without -0, which deep equality tells apart from the 0 a reader returns. */
const neg = (x: number) => (x === 0 ? 0 : -x);

function sample(k: number): { [name: string]: FieldValue } {
  return {
    u8: k % 256,
    s16: neg(100 * k),
    bits3: k % 8,
    bits13s: neg(k),
    u64: 2n ** 64n - 1n - BigInt(k),
    s64: -(2n ** 63n) + BigInt(k),
    hex32: 0xdeadbeef - k,
    oct12: 0o7777 - k,
    bin5: k % 32,
    u40: 2 ** 40 - 1 - k,
    f32: 1.5 * k,
    f64: k / 8,
    state: k % 2,
    text: `line ${k}: "quoted" \\ tab\t`,
    triple: [k, k + 1, 65535],
    comm: `task-${k}`,
    _count: k % 5,
    values: Array.from({ length: k % 5 }, (_, j) => neg(j * 1000)),
    inner: { x: k % 7, name: 'ïnner' },
    choice: (k % 2 === 1 ? { BUSY: 'busy' } : { IDLE: 40000 }) as FieldValue,
  };
}

function writeSample(dir: string, order: ByteOrder, eventHeader: EventHeaderKind, count: number): CtfEventInput[] {
  const every = everyFieldClass(order);
  const one: EventClass = { id: 9, name: 'one_u64', streamId: 0, payload: struct([['value', int(order, 64)]]) };
  const writer = createCtfWriter(dir, {
    byteOrder: order,
    eventHeader,
    packetSize: 512,
    env: { hostname: 'testhost' },
  });
  const events: CtfEventInput[] = [];
  let t = 1_700_000_000_000_000_000n;
  for (let k = 0; k < count; k++) {
    // Gaps from 1 ns to beyond 2^32 ns exercise compact and extended headers.
    t += k % 10 === 9 ? 5_000_000_000n : BigInt(1 + k * 997);
    events.push({ eventClass: every, tsNs: t, cpu: k % 3, fields: sample(k) });
    events.push({ eventClass: one, tsNs: t, cpu: k % 3, fields: { value: BigInt(k) * 0x1_0000_0001n } });
  }
  for (const e of events) writer.writeEvent(e);
  writer.close();
  return events;
}

describe('CTF writer round trip through the evtrace reader', () => {
  for (const order of ['le', 'be'] as const) {
    for (const header of ['compact', 'large'] as const) {
      it(`reads back every field class exactly (${order}, ${header} header)`, () => {
        const dir = join(root, `rt-${order}-${header}`);
        const written = writeSample(dir, order, header, 60);
        const reader = openCtfTrace(dir);
        const read = [...reader.events()];
        expect(read.length).toBe(written.length);
        // The reader merges the per-CPU streams by time; the writer's input is already in time order per CPU.
        const key = (e: { tsNs: bigint; eventClass: { name: string } }) => `${e.tsNs}:${e.eventClass.name}`;
        const byKey = new Map(written.map((e) => [key(e), e]));
        for (const e of read) {
          const w = byKey.get(key(e))!;
          expect(e.fields).toEqual(w.fields);
          expect(e.cpu).toBe(w.cpu);
        }
      });
    }
  }

  it('grows a packet for an event larger than the packet size and splits packets otherwise', () => {
    const dir = join(root, 'big');
    const cls: EventClass = {
      id: 0,
      name: 'blob',
      streamId: 0,
      payload: struct([['s', { kind: 'string', encoding: 'utf8' }]]),
    };
    const writer = createCtfWriter(dir, { packetSize: 128 });
    const big = 'x'.repeat(1000);
    writer.writeEvent({ eventClass: cls, tsNs: 10n, fields: { s: 'small' } });
    writer.writeEvent({ eventClass: cls, tsNs: 20n, fields: { s: big } });
    writer.writeEvent({ eventClass: cls, tsNs: 30n, fields: { s: 'after' } });
    writer.close();
    const values = [...openCtfTrace(dir).events()].map((e) => e.fields.s);
    expect(values).toEqual(['small', big, 'after']);
    expect(statSync(join(dir, 'stream_0')).size).toBeGreaterThan(1000);
  });

  it('rejects values that do not fit their class and time going backwards on one CPU', () => {
    const dir = join(root, 'bad');
    const cls: EventClass = { id: 0, name: 'e', streamId: 0, payload: struct([['v', int('le', 8)]]) };
    const writer = createCtfWriter(dir);
    expect(() => writer.writeEvent({ eventClass: cls, tsNs: 5n, fields: { v: 256 } })).toThrow(/e\.v: 256 is not/);
    writer.writeEvent({ eventClass: cls, tsNs: 5n, fields: { v: 1 } });
    expect(() => writer.writeEvent({ eventClass: cls, tsNs: 4n, fields: { v: 1 } })).toThrow(TraceFormatError);
    writer.close();
    expect([...openCtfTrace(dir).events()].map((e) => e.fields.v)).toEqual([1]);
  });

  it.skipIf(!existsSync('/dev/full'))('closes every stream when the disk is full, and says ENOSPC', () => {
    const dir = join(root, 'full');
    mkdirSync(dir);
    // Writes to /dev/full fail with ENOSPC, as on a full disk.
    symlinkSync('/dev/full', join(dir, 'stream_1'));
    const cls: EventClass = { id: 0, name: 'e', streamId: 0, payload: struct([['v', int('le', 8)]]) };
    const fds = () => readdirSync('/proc/self/fd').length;
    const before = fds();
    const writer = createCtfWriter(dir, { packetSize: 128 });
    writer.writeEvent({ eventClass: cls, tsNs: 5n, cpu: 0, fields: { v: 1 } });
    writer.writeEvent({ eventClass: cls, tsNs: 6n, cpu: 1, fields: { v: 2 } });
    expect(() => writer.close()).toThrow(expect.objectContaining({ code: 'ENOSPC' }));
    expect(fds()).toBe(before);
  });

  it('keeps hostile field names as plain data', () => {
    const dir = join(root, 'hostile');
    const cls: EventClass = {
      id: 0,
      name: 'x"y\\z',
      streamId: 0,
      payload: struct([
        ['__proto__', int('le', 8)],
        ['constructor', int('le', 8)],
        ['struct', int('le', 8)],
      ]),
    };
    const fields = JSON.parse('{"__proto__": 7, "constructor": 8, "struct": 9}');
    const writer = createCtfWriter(dir);
    writer.writeEvent({ eventClass: cls, tsNs: 1n, fields });
    writer.close();
    const [e] = [...openCtfTrace(dir).events()];
    expect(e!.eventClass.name).toBe('x"y\\z');
    expect(Object.getPrototypeOf(e!.fields)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(e!.fields, '__proto__')?.value).toBe(7);
    expect(e!.fields.constructor).toBe(8);
    expect(e!.fields.struct).toBe(9);
    const bad: EventClass = { ...cls, payload: struct([['a b', int('le', 8)]]) };
    const w2 = createCtfWriter(join(root, 'hostile2'));
    expect(() => w2.writeEvent({ eventClass: bad, tsNs: 1n, fields: { 'a b': 1 } })).toThrow(/not a valid TSDL/);
    w2.close();
  });
});

describe.skipIf(!haveBt2)(
  `babeltrace2 reads what evtrace writes${haveBt2 ? '' : ' (skipped: babeltrace2 is not installed (apt-get install babeltrace2))'}`,
  () => {
    for (const order of ['le', 'be'] as const) {
      for (const header of ['compact', 'large'] as const) {
        it(`prints every field class with the written values (${order}, ${header} header)`, () => {
          const dir = join(root, `bt2-${order}-${header}`);
          writeSample(dir, order, header, 40);
          const run = spawnSync('babeltrace2', ['--clock-gmt', dir], { encoding: 'utf8', maxBuffer: 1 << 26 });
          expect(run.stderr).toBe('');
          expect(run.status).toBe(0);
          const theirs = run.stdout.trimEnd().split('\n');
          const reader = openCtfTrace(dir);
          const format = createBabeltraceTextFormatter({ trace: reader.trace });
          const ours = Array.from(reader.events(), format);
          expect(theirs.length).toBe(80);
          expect(ours).toEqual(theirs);
          // Spot-check values in babeltrace2's own words, independent of our formatter.
          expect(theirs.some((l) => l.includes('u64 = 18446744073709551615'))).toBe(true);
          expect(theirs.some((l) => l.includes('s64 = -9223372036854775808'))).toBe(true);
          expect(theirs.some((l) => l.includes('hex32 = 0xDEADBEEF'))).toBe(true);
          expect(theirs.some((l) => l.includes('choice = { "busy" }'))).toBe(true);
          expect(readdirSync(dir).sort()).toEqual(['metadata', 'stream_0', 'stream_1', 'stream_2']);
        });
      }
    }
  },
);

const fixtures = sharedFixtures();

/**
 * The CTF writer always records a time and the CPU (`cpu_id`): where the source had neither, babeltrace2's line for
 * the converted trace has them in addition; everything else must be the same.
 */
function withoutAddedScopes(line: string, original: string): string {
  let out = line;
  if (!original.startsWith('[')) out = out.replace(/^\[[^\]]*\] \([^)]*\) /, '');
  if (!original.includes('{ cpu_id = ')) out = out.replace(/\{ cpu_id = \d+ \}, /, '');
  return out;
}

describe.skipIf(!haveBt2 || !fixtures)(
  `writeCtfTrace: babeltrace2 prints converted real traces as it printed the originals${haveBt2 && fixtures ? '' : ' (skipped: babeltrace2 (apt-get install babeltrace2) or ../shared/fixtures absent)'}`,
  () => {
    const cases = fixtures ? ctfFixtureCases(fixtures).succeed : [];
    cases.forEach((c, k) => {
      const order = k % 2 === 0 ? 'be' : 'le';
      it(`${c.name} rewritten ${order}`, () => {
        const out = join(root, `convert-${c.name.replace('/', '-')}-${order}`);
        const n = writeCtfTrace(openCtfTrace(c.dir), out, { byteOrder: order });
        const expected = gunzipSync(readFileSync(c.expectedText!)).toString('utf8').split('\n').filter(Boolean);
        expect(n).toBe(expected.length);
        if (n === 0) return;
        const run = spawnSync('babeltrace2', ['--clock-gmt', out], { encoding: 'utf8', maxBuffer: 1 << 28 });
        expect(run.status).toBe(0);
        const got = run.stdout.trimEnd().split('\n');
        expect(got.map((line, i) => withoutAddedScopes(line, expected[i] ?? ''))).toEqual(expected);
      });
    });
  },
);

describe.skipIf(!haveBt2)(
  `babeltrace2 and the text formatter agree on edge values${haveBt2 ? '' : ' (skipped: babeltrace2 is not installed (apt-get install babeltrace2))'}`,
  () => {
    it('negative hex/octal/binary, unknown labels, NaN/inf/-0 and %g floats, control bytes, nested and empty compounds', () => {
      const o = 'be';
      const f64 = { kind: 'float', expDig: 11, mantDig: 53, align: 8, byteOrder: o } as const;
      const cls: EventClass = {
        id: 0,
        name: 'edge',
        streamId: 0,
        payload: struct([
          ['neg_hex', int(o, 13, true, 1, 16)],
          ['neg_oct', int(o, 8, true, 8, 8)],
          ['neg_bin', int(o, 4, true, 1, 2)],
          ['big_hex', int(o, 64, false, 8, 16)],
          ['senum', { kind: 'enum', container: int(o, 8, true), mappings: [{ label: 'NEG', ranges: [[-5, -1]] }] }],
          ['nolabel', { kind: 'enum', container: int(o, 8), mappings: [{ label: 'A', ranges: [[0, 0]] }] }],
          ['fnan', f64],
          ['finf', f64],
          ['fneg0', f64],
          ['fg', f64],
          ['f32', { kind: 'float', expDig: 8, mantDig: 24, align: 1, byteOrder: o }],
          ['ctrl', { kind: 'string', encoding: 'utf8' }],
          [
            'sarr',
            {
              kind: 'array',
              length: 2,
              element: struct([
                ['x', int(o, 8)],
                ['y', { kind: 'string', encoding: 'utf8' }],
              ]),
            },
          ],
          ['nested', { kind: 'array', length: 2, element: { kind: 'array', length: 2, element: int(o, 8) } }],
          ['empty', struct([])],
          [
            'tag',
            {
              kind: 'enum',
              container: int(o, 8),
              mappings: [
                { label: 'S', ranges: [[0, 0]] },
                { label: 'I', ranges: [[1, 1]] },
              ],
            },
          ],
          [
            'var',
            {
              kind: 'variant',
              tagRef: 'tag',
              options: [
                {
                  name: 'S',
                  type: struct([
                    ['a', int(o, 8)],
                    ['b', int(o, 8)],
                  ]),
                },
                { name: 'I', type: int(o, 32) },
              ],
            },
          ],
          ['n', int(o, 8)],
          ['text', { kind: 'sequence', element: { ...int(o, 8), encoding: 'utf8' }, lengthRef: 'n' }],
        ]),
      };
      const dir = join(root, 'edge');
      const writer = createCtfWriter(dir, { byteOrder: o });
      const floats = [0.1, 1e-5, 123456789, 1e21, 2.5, -2.5e-300, 100000, 999999.5];
      floats.forEach((g, k) => {
        writer.writeEvent({
          eventClass: cls,
          tsNs: BigInt(k + 1),
          fields: {
            neg_hex: -2 - k,
            neg_oct: -3,
            neg_bin: -1,
            big_hex: 0xffffffffffffffffn,
            senum: -3,
            nolabel: 7,
            fnan: Number.NaN,
            finf: k % 2 ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY,
            fneg0: -0,
            fg: g,
            f32: Math.fround(g * 3),
            ctrl: `a\x01b\x7fc\x1b\t\u00e9\u2028${k}`,
            sarr: [
              { x: 1, y: 'p' },
              { x: 2, y: 'q' },
            ],
            nested: [
              [1, 2],
              [3, 4],
            ],
            empty: {},
            tag: k % 2,
            var: k % 2 ? { I: 70000 } : { S: { a: 1, b: 2 } },
            n: k % 2 ? 0 : 3,
            text: k % 2 ? '' : 'abc',
          },
        });
      });
      writer.close();
      const run = spawnSync('babeltrace2', ['--clock-gmt', dir], { encoding: 'utf8' });
      expect(run.status).toBe(0);
      const reader = openCtfTrace(dir);
      const format = createBabeltraceTextFormatter({ trace: reader.trace });
      const ours = Array.from(reader.events(), format);
      expect(ours).toEqual(run.stdout.trimEnd().split('\n'));
      expect(ours[0]).toContain('neg_oct = 0775, neg_bin = 0b1111');
      expect(ours[3]).toContain('fg = 1e+21');
    });
  },
);

// babeltrace2's Python bindings give every value exactly (floats in hexadecimal), beyond what its text shows.
const PY_DUMP = `
import bt2, json, sys
from bt2 import field as F
def conv(f):
    if isinstance(f, F._StringFieldConst): return str(f)
    if isinstance(f, F._RealFieldConst): return float(f).hex()
    if isinstance(f, F._IntegerFieldConst): return str(int(f))
    if isinstance(f, F._StructureFieldConst): return {k: conv(v) for k, v in f.items()}
    if isinstance(f, F._ArrayFieldConst): return [conv(v) for v in f]
    if isinstance(f, F._VariantFieldConst): return {'option': conv(f.selected_option)}
    raise TypeError(type(f))
out = []
for msg in bt2.TraceCollectionMessageIterator(sys.argv[1]):
    if type(msg) is bt2._EventMessageConst:
        out.append({'name': msg.event.name, 'ns': str(msg.default_clock_snapshot.ns_from_origin),
                    'payload': conv(msg.event.payload_field)})
print(json.dumps(out))
`;
const python = '/usr/bin/python3';
const havePyBt2 = spawnSync(python, ['-c', 'import bt2']).status === 0;

/** Python's float.hex() of a number. */
function floatHex(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x < 0 ? '-inf' : 'inf';
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const sign = bits >> 63n ? '-' : '';
  const exp = Number((bits >> 52n) & 0x7ffn);
  const mantissa = (bits & ((1n << 52n) - 1n)).toString(16).padStart(13, '0');
  if (exp === 0) return mantissa === '0000000000000' ? `${sign}0x0.0p+0` : `${sign}0x0.${mantissa}p-1022`;
  const e = exp - 1023;
  return `${sign}0x1.${mantissa}p${e < 0 ? '-' : '+'}${Math.abs(e)}`;
}

/** A written value in the dump's notation, guided by its class. */
function canonical(value: FieldValue, type: FieldClass): unknown {
  switch (type.kind) {
    case 'int':
    case 'enum':
      return String(value);
    case 'float':
      return floatHex(value as number);
    case 'string':
      return value;
    case 'array':
    case 'sequence':
      return typeof value === 'string' ? value : (value as FieldValue[]).map((v) => canonical(v, type.element));
    case 'struct':
      return Object.fromEntries(
        type.members.map((m) => [m.name, canonical((value as Record<string, FieldValue>)[m.name]!, m.type)]),
      );
    case 'variant': {
      const [name, inner] = Object.entries(value as Record<string, FieldValue>)[0]!;
      return { option: canonical(inner, type.options.find((o) => o.name === name)!.type) };
    }
    default:
      throw new Error(`no dump notation for ${type.kind}`);
  }
}

describe.skipIf(!havePyBt2)(
  `babeltrace2's Python bindings read exactly the values written${havePyBt2 ? '' : ' (skipped: python3-bt2 not installed)'}`,
  () => {
    for (const order of ['le', 'be'] as const) {
      for (const header of ['compact', 'large'] as const) {
        it(`every field class, ${order}, ${header} header`, () => {
          const dir = join(root, `py-${order}-${header}`);
          const written = writeSample(dir, order, header, 30);
          const run = spawnSync(python, ['-c', PY_DUMP, dir], { encoding: 'utf8', maxBuffer: 1 << 26 });
          expect(run.status, run.stderr).toBe(0);
          const dumped = JSON.parse(run.stdout) as { name: string; ns: string; payload: unknown }[];
          // babeltrace2 merges the per-CPU streams by time, as our reader does: compare as sets keyed by time+name.
          const key = (name: string, ns: string) => `${ns}:${name}`;
          const expected = new Map(
            written.map((e) => [key(e.eventClass.name, String(e.tsNs)), canonical(e.fields, e.eventClass.payload)]),
          );
          expect(dumped.length).toBe(written.length);
          for (const d of dumped) expect(d.payload).toEqual(expected.get(key(d.name, d.ns)));
        });
      }
    }
  },
);
