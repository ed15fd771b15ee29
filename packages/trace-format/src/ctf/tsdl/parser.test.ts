import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../../errors.ts';
import type { IntegerClass, StructClass } from '../../model/types.ts';
import { tokenize } from './lexer.ts';
import { parseTsdl } from './parser.ts';

const HEAD = '/* CTF 1.8 */\ntrace { major = 1; minor = 8; byte_order = be; };\n';

function parseError(text: string): TraceFormatError {
  try {
    parseTsdl(text, { file: 'm.tsdl' });
  } catch (e) {
    if (e instanceof TraceFormatError) return e;
    throw e;
  }
  throw new Error('expected a TSDL error');
}

describe('tokenize', () => {
  it('keeps line and column, drops comments, splits ranges and decodes escapes', () => {
    const tokens = tokenize('a /* x\ny */ b := 0...30; // c\n"q\\"\\n"');
    expect(tokens.map((t) => t.text)).toEqual([
      'a',
      'b',
      ':=',
      '0',
      '...',
      '30',
      ';',
      '"q\\"\\n"',
      '<end of metadata>',
    ]);
    expect(tokens[1]).toMatchObject({ line: 2, column: 6 });
    expect(tokens[7]!.value).toBe('q"\n');
  });
});

describe('parseTsdl', () => {
  it('builds integers with native byte order from the trace block declared later', () => {
    const trace = parseTsdl(`typealias integer { size = 27; align = 1; signed = false; } := uint27_t;
typealias integer { size = 32; } := unsigned int;
trace { major = 1; minor = 8; byte_order = be; uuid = "2A6422D0-6CEE-11E0-8C08-CB07D7B3A564"; };
event { name = "e"; fields := struct { uint27_t a; unsigned int b; integer { size = 8; byte_order = le; base = hex; } c; }; };`);
    const payload = trace.streams.get(0)!.eventClasses.get(0)!.payload;
    const [a, b, c] = payload.members.map((m) => m.type as IntegerClass);
    expect(a).toMatchObject({ size: 27, align: 1, byteOrder: 'be', signed: false });
    expect(b).toMatchObject({ size: 32, align: 8, byteOrder: 'be' });
    expect(c).toMatchObject({ size: 8, byteOrder: 'le', base: 16 });
    expect(trace.uuid).toBe('2a6422d0-6cee-11e0-8c08-cb07d7b3a564');
  });

  it('numbers enumerators on from the last value and keeps string labels', () => {
    const trace = parseTsdl(
      `${HEAD}event { name = e; fields := struct { enum : integer { size = 8; signed = true; } { A, B = 5, "C D", E = -3 ... -1, F } x; }; };`,
    );
    const x = trace.streams.get(0)!.eventClasses.get(0)!.payload.members[0]!.type;
    expect(x.kind === 'enum' && x.mappings).toEqual([
      { label: 'A', ranges: [[0, 0]] },
      { label: 'B', ranges: [[5, 5]] },
      { label: 'C D', ranges: [[6, 6]] },
      { label: 'E', ranges: [[-3, -1]] },
      { label: 'F', ranges: [[0, 0]] },
    ]);
  });

  it('resolves named structs, variants, sequences and multi-dimensional arrays, dropping one underscore', () => {
    const trace = parseTsdl(`${HEAD}
typealias integer { size = 8; } := u8;
struct point { u8 _x; u8 y; } align(16);
stream { event.header := struct { u8 id; }; };
event { name = e; id = 4; fields := struct { struct point p; u8 __len; u8 seq[__len]; u8 grid[2][3]; }; };`);
    const payload = trace.streams.get(0)!.eventClasses.get(4)!.payload;
    expect(payload.members.map((m) => m.name)).toEqual(['p', '_len', 'seq', 'grid']);
    const p = payload.members[0]!.type as StructClass;
    expect(p.minAlign).toBe(16);
    expect(p.members.map((m) => m.name)).toEqual(['x', 'y']);
    expect(payload.members[2]!.type).toMatchObject({ kind: 'sequence', lengthRef: '__len' });
    expect(payload.members[3]!.type).toMatchObject({ kind: 'array', length: 2, element: { kind: 'array', length: 3 } });
  });

  it('reads clocks, env and the timestamp mapping', () => {
    const trace = parseTsdl(`${HEAD}
env { hostname = "h"; vpid = 12; big = 18446744073709551615; neg = -4; };
clock { name = mono; freq = 1000; offset_s = 10; offset = 5; absolute = TRUE; };
stream { event.header := struct { integer { size = 64; map = clock.mono.value; } timestamp; }; };
event { name = e; };`);
    expect(trace.clocks.get('mono')).toMatchObject({
      freq: 1000n,
      offsetSeconds: 10n,
      offsetCycles: 5n,
      absolute: true,
    });
    expect([...trace.env]).toEqual([
      ['hostname', 'h'],
      ['vpid', 12],
      ['big', 18446744073709551615n],
      ['neg', -4],
    ]);
    const ts = trace.streams.get(0)!.eventHeader!.members[0]!.type as IntegerClass;
    expect(ts.mappedClock).toBe('mono');
  });

  it('rejects malformed metadata with file, line and column', () => {
    expect(parseError(`${HEAD}event { name = e; fields := struct { uint32_t x; }; };`).message).toBe(
      "m.tsdl:3:38: unknown type 'uint32_t'",
    );
    expect(
      parseError('trace { major = 1; minor = 8; byte_order = le; }; event { name = e; id = 99999999999999999999; };')
        .message,
    ).toMatch(/^m\.tsdl:1:74: integer literal/);
    expect(parseError('trace { major = 2; minor = 0; byte_order = le; };').message).toMatch(
      /unsupported CTF version 2\.0/,
    );
    expect(parseError('trace { major = 1; minor = 8; };').message).toMatch(/no byte_order/);
    expect(parseError(`${HEAD}event { name = e; fields := struct { integer { size = 65; } x; }; };`).message).toMatch(
      /size 65 is outside 1\.\.64/,
    );
    expect(parseError(`${HEAD}event { name = a; id = 1; }; event { name = b; id = 1; };`).message).toMatch(
      /duplicate event id 1/,
    );
    expect(parseError(`${HEAD}event { name = "x\\q"; };`).message).toMatch(/unknown escape/);
  });

  it('bounds nesting so hostile metadata cannot overflow the stack', () => {
    const deep = `${HEAD}event { name = e; fields := ${'struct { '.repeat(5000)}${'} a; '.repeat(4999)}} ; };`;
    expect(parseError(deep).message).toMatch(/nested deeper than 64/);
    expect(
      parseError(`${HEAD}event { name = e; fields := struct { integer { size = 8; } a${'[1]'.repeat(100)}; }; };`)
        .message,
    ).toMatch(/nested deeper/);
  });
});
