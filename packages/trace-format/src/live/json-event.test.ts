import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import { parseFormatFile } from '../ftrace/format-file.ts';
import { hexFields } from '../ftrace/hex-fields.ts';
import type { EventClass, FieldClass, FieldValue, IntegerClass, TraceEvent } from '../model/types.ts';
import { findTracefs } from '../testing/tracefs.ts';
import { encodeJsonEvent, eventComm, JsonEventDecoder, TASK_SCOPE } from './json-event.ts';

const int = (size: number, signed: boolean, base: 10 | 16 = 10): IntegerClass => ({
  kind: 'int',
  size,
  signed,
  align: 8,
  byteOrder: 'le',
  base,
  encoding: 'none',
});
const CHAR: IntegerClass = { ...int(8, true), encoding: 'utf8' };

/** Field classes as the format files and CTF describe them: every kind the writer types. */
const fieldClass: fc.Arbitrary<FieldClass> = fc.letrec<{ type: FieldClass }>((tie) => ({
  type: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc
      .record({ size: fc.constantFrom(8, 16, 32, 64, 1, 12, 48), signed: fc.boolean(), hex: fc.boolean() })
      .map(({ size, signed, hex }) => int(size, signed, hex ? 16 : 10)),
    fc.constant<FieldClass>({ kind: 'float', expDig: 11, mantDig: 53, align: 8, byteOrder: 'le' }),
    fc.constant<FieldClass>({ kind: 'string', encoding: 'utf8' }),
    fc.constant<FieldClass>({ kind: 'dynamic', relative: false, element: CHAR, isString: true }),
    fc.integer({ min: 1, max: 16 }).map((length): FieldClass => ({ kind: 'array', element: CHAR, length })),
    fc
      .record({ element: tie('type'), length: fc.integer({ min: 0, max: 4 }) })
      .map(({ element, length }): FieldClass => ({ kind: 'array', element, length })),
    tie('type').map((element): FieldClass => ({ kind: 'sequence', element, lengthRef: 'n' })),
    fc
      .uniqueArray(fc.record({ name: fc.stringMatching(/^[a-z_][a-z0-9_]{0,8}$/), type: tie('type') }), {
        selector: (m) => m.name,
        maxLength: 3,
      })
      .map((members): FieldClass => ({ kind: 'struct', members, minAlign: 8 })),
  ),
})).type;

/** A value of a field class, as a reader decodes it (bigints beyond 53 bits, text for character arrays). */
function arbitraryValue(type: FieldClass): fc.Arbitrary<FieldValue> {
  switch (type.kind) {
    case 'int': {
      const min = type.signed ? -(1n << BigInt(type.size - 1)) : 0n;
      const max = type.signed ? (1n << BigInt(type.size - 1)) - 1n : (1n << BigInt(type.size)) - 1n;
      return fc.bigInt({ min, max }).map((v) => (type.size > 53 ? v : Number(v)));
    }
    case 'float':
      return fc.double({ noNaN: true, noDefaultInfinity: true }).filter((v) => !Object.is(v, -0));
    case 'string':
      return fc.option(fc.string({ unit: 'grapheme' }), { nil: null });
    case 'dynamic':
      return type.isString ? fc.string() : fc.array(arbitraryValue(type.element), { maxLength: 4 });
    case 'array':
      if (type.element.kind === 'int' && type.element.encoding !== 'none') return fc.string({ maxLength: type.length });
      return fc.array(arbitraryValue(type.element), { minLength: type.length, maxLength: type.length });
    case 'sequence':
      return fc.array(arbitraryValue(type.element), { maxLength: 4 });
    case 'struct':
      return fc.record(Object.fromEntries(type.members.map((m) => [m.name, arbitraryValue(m.type)])));
    default:
      throw new Error(`no values for ${type.kind}`);
  }
}

/** An event class: its members, some printed in hex by its print fmt (as kmem's `%pS` call sites). */
const eventClass: fc.Arbitrary<EventClass> = fc
  .record({
    name: fc.stringMatching(/^[a-z]{1,6}:[a-z_]{1,10}$/),
    members: fc.uniqueArray(
      fc.record({ name: fc.stringMatching(/^[a-z_][a-z0-9_]{0,10}$/), type: fieldClass, shownHex: fc.boolean() }),
      { selector: (m) => m.name, maxLength: 6 },
    ),
  })
  .map(({ name, members }) => {
    const hex = members.filter((m) => m.shownHex && m.type.kind === 'int');
    const printFormat = `"${hex.map((m) => `${m.name}=%lx`).join(' ')}"${hex.map((m) => `, REC->${m.name}`).join('')}`;
    return {
      id: 1,
      name,
      streamId: 0,
      payload: { kind: 'struct', members: members.map(({ name, type }) => ({ name, type })), minAlign: 8 },
      printFormat,
    } satisfies EventClass;
  });

/** An event of a class in the form the decoder gives: ftrace's common fields in `event.context`, comm in `task`. */
function eventOf(cls: EventClass): fc.Arbitrary<TraceEvent> {
  return fc
    .record({
      tsNs: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
      cpu: fc.option(fc.nat(4096), { nil: null }),
      fields: fc.record(Object.fromEntries(cls.payload.members.map((m) => [m.name, arbitraryValue(m.type)]))),
      pid: fc.option(fc.integer({ min: -1, max: 4_194_304 }), { nil: null }),
      comm: fc.option(fc.string({ maxLength: 16 }), { nil: null }),
      flags: fc.option(fc.record({ bits: fc.subarray([0x01, 0x04, 0x08, 0x10, 0x20, 0x40]), count: fc.nat(0xff) }), {
        nil: null,
      }),
      buffer: fc.option(fc.stringMatching(/^[a-z]{1,8}$/), { nil: null }),
    })
    .map(({ tsNs, cpu, fields, pid, comm, flags, buffer }) => {
      const context: Record<string, FieldValue> = {};
      if (pid !== null) context.common_pid = pid;
      if (flags !== null) {
        context.common_flags = flags.bits.reduce((a, b) => a | b, 0);
        context.common_preempt_count = flags.count;
      }
      const scopes: Record<string, Record<string, FieldValue>> = {};
      if (Object.keys(context).length > 0) scopes['event.context'] = context;
      // The writer names a task only for an event that has one.
      if (pid !== null && comm !== null) scopes[TASK_SCOPE] = { comm };
      if (buffer !== null) scopes.buffer = { name: buffer };
      return {
        tsNs,
        cpu,
        eventClass: cls,
        fields,
        ...(Object.keys(scopes).length > 0 ? { scopes } : {}),
      } as TraceEvent;
    });
}

const classAndEvents = eventClass.chain((cls) =>
  fc.tuple(fc.constant(cls), fc.array(eventOf(cls), { minLength: 1, maxLength: 5 })),
);

describe('the JSON event codec', () => {
  it('decodes what it encodes: the same event, typed by its class, and the same line again', () => {
    fc.assert(
      fc.property(classAndEvents, ([cls, events]) => {
        const decoder = new JsonEventDecoder([cls]);
        for (const e of events) {
          const line = encodeJsonEvent(e);
          const back = decoder.decodeLine(line);
          expect(back).toEqual(e);
          expect(back.eventClass).toBe(cls);
          expect(encodeJsonEvent(back)).toBe(line);
        }
      }),
      { numRuns: 100 },
    );
  });

  it('reads an object already parsed (a member of a protocol message) as it reads the line', () => {
    fc.assert(
      fc.property(classAndEvents, ([cls, events]) => {
        const decoder = new JsonEventDecoder([cls]);
        for (const e of events) expect(decoder.decode(JSON.parse(encodeJsonEvent(e)))).toEqual(e);
      }),
      { numRuns: 40 },
    );
  });

  it('keeps addresses and 64-bit integers exact and puts pid, comm and flags where the file readers keep them', () => {
    const kmalloc: EventClass = {
      id: 7,
      name: 'kmem:kmalloc',
      streamId: 0,
      payload: {
        kind: 'struct',
        minAlign: 8,
        members: [
          { name: 'call_site', type: int(64, false) },
          { name: 'ptr', type: int(64, false) },
          { name: 'bytes_req', type: int(64, false) },
          { name: 'node', type: int(32, true) },
        ],
      },
      printFormat: '"call_site=%pS ptr=%p bytes_req=%zu node=%d", REC->call_site, REC->ptr, REC->bytes_req, REC->node',
    };
    const line =
      '{"ts_ns":"18446744073709551615","cpu":3,"event":"kmem:kmalloc","pid":4102,"comm":"demo-alloc","flags":{"irqs_off":true,"need_resched":false,"preempt_resched":false,"hardirq":true,"softirq":false,"nmi":false,"preempt_depth":2,"migrate_disable":1},"fields":{"call_site":"0xffffffff819af340","ptr":"0xffff888003a2b000","bytes_req":"9007199254740993","node":-1}}';
    const e = new JsonEventDecoder([kmalloc]).decodeLine(line);
    expect(e.tsNs).toBe(18446744073709551615n);
    expect(e.fields).toEqual({
      call_site: 0xffffffff819af340n,
      ptr: 0xffff888003a2b000n,
      bytes_req: 9007199254740993n,
      node: -1,
    });
    expect(e.scopes?.['event.context']).toEqual({ common_pid: 4102, common_flags: 0x09, common_preempt_count: 0x12 });
    expect(eventComm(e)).toBe('demo-alloc');
    expect(encodeJsonEvent(e)).toBe(`${line}\n`);
  });

  it('names the line, byte column and member of what does not fit, and never throws anything else', () => {
    const cls: EventClass = {
      id: 1,
      name: 'kmem:kfree',
      streamId: 0,
      payload: { kind: 'struct', minAlign: 8, members: [{ name: 'ptr', type: int(64, false, 16) }] },
    };
    const decoder = new JsonEventDecoder([cls]);
    const good =
      '{"ts_ns":"5","cpu":0,"event":"kmem:kfree","pid":null,"comm":"é","flags":null,"fields":{"ptr":"0x10"}}';
    expect(decoder.decodeLine(good).fields.ptr).toBe(16n);
    const fail = (line: string) => {
      try {
        decoder.decodeLine(line, { file: 'events.jsonl', line: 3 });
      } catch (error) {
        expect(error).toBeInstanceOf(TraceFormatError);
        expect((error as TraceFormatError).code).toBe('ERR_TRACE_JSON_EVENT');
        return (error as TraceFormatError).message;
      }
      throw new Error(`decoded ${line}`);
    };
    // A number where the class says an address: the member and the column of its value (after a 2-byte é).
    const number = good.replace('"0x10"', '16');
    expect(fail(number)).toBe(
      `events.jsonl:3:${Buffer.byteLength(number.slice(0, number.indexOf('16}'))) + 1}: fields.ptr: expected a "0x..." string (a unsigned 64-bit integer the format shows in hex) or null`,
    );
    // Broken JSON: where the grammar breaks.
    expect(fail(good.replace('"cpu":0,', '"cpu":0,,'))).toMatch(/^events\.jsonl:3:22: not JSON: expected a string$/);
    expect(fail(good.slice(0, 40))).toMatch(/^events\.jsonl:3:41: not JSON/);
    expect(fail(good.replace('kmem:kfree', 'kmem:kmalloc'))).toMatch(/3:30: event: no event class "kmem:kmalloc"/);
    expect(fail(good.replace('"ptr":"0x10"', '"ptr":"0x10","len":1'))).toMatch(/fields\.len: not a field of the class/);
    expect(fail(good.replace('"fields":{"ptr":"0x10"}', '"fields":{}'))).toMatch(/fields\.ptr: missing/);
    expect(fail(good.replace('"ts_ns":"5"', '"ts_ns":5'))).toMatch(/3:10: ts_ns: expected nanoseconds/);
    // Nesting deeper than any event: refused, not scanned into a stack overflow.
    expect(fail(`${'['.repeat(100_000)}${']'.repeat(100_000)}`)).toBe(
      'events.jsonl:3:1: the line: an event must be a JSON object',
    );

    const mutated = fc
      .tuple(fc.constant(good), fc.array(fc.tuple(fc.nat(), fc.nat(4), fc.string({ maxLength: 6 })), { maxLength: 5 }))
      .map(([seed, edits]) => {
        let s = seed;
        for (const [at, cut, insert] of edits) {
          const i = at % (s.length + 1);
          s = s.slice(0, i) + insert + s.slice(i + cut);
        }
        return s;
      });
    fc.assert(
      fc.property(
        fc.oneof(
          mutated,
          fc.string(),
          fc.jsonValue().map((v) => JSON.stringify(v)),
        ),
        (line) => {
          try {
            decoder.decodeLine(line);
          } catch (error) {
            expect(error).toBeInstanceOf(TraceFormatError);
            const { code, location } = error as TraceFormatError;
            expect(code).toBe('ERR_TRACE_JSON_EVENT');
            expect(location.line).toBe(1);
            expect(location.column).toBeGreaterThanOrEqual(1);
            expect(location.column).toBeLessThanOrEqual(Buffer.byteLength(line) + 1);
          }
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('infers a class for an event it was not given when asked (a stream that does not describe its classes)', () => {
    const decoder = new JsonEventDecoder([], { infer: true });
    const e = decoder.decodeLine(
      '{"ts_ns":"1","cpu":0,"event":"kmem:kfree","pid":7,"comm":null,"flags":null,"fields":{"call_site":"0xff","ptr":"18446612682702000000","n":3,"s":"x"}}',
    );
    expect(e.fields).toEqual({ call_site: 0xffn, ptr: 18446612682702000000n, n: 3, s: 'x' });
    const members = Object.fromEntries(e.eventClass.payload.members.map((m) => [m.name, m.type]));
    expect(members).toMatchObject({
      call_site: { kind: 'int', base: 16 },
      ptr: { kind: 'int' },
      s: { kind: 'string' },
    });
    expect(decoder.eventClasses.map((c) => c.name)).toEqual(['kmem:kfree']);
  });
});

const tracefs = findTracefs();
const why = 'why' in tracefs ? tracefs.why : '';

describe.skipIf(why !== '')(
  `the JSON event codec over this kernel's event formats${why ? ` (skipped: ${why})` : ''}`,
  () => {
    it('decodes what it encodes for events of every class the kernel describes', () => {
      const root = join((tracefs as { path: string }).path, 'events');
      const classes: EventClass[] = [];
      for (const system of readdirSync(root, { withFileTypes: true })) {
        if (!system.isDirectory()) continue;
        for (const event of readdirSync(join(root, system.name), { withFileTypes: true })) {
          if (!event.isDirectory()) continue;
          const file = join(root, system.name, event.name, 'format');
          try {
            classes.push(parseFormatFile(readFileSync(file, 'utf8'), { file }));
          } catch {
            // Formats the parser refuses are not the codec's to judge.
          }
        }
      }
      expect(classes.length).toBeGreaterThan(100);
      // Classes with fields the format prints in hex: the case typing by value would get wrong.
      expect(classes.some((c) => hexFields(c.printFormat).size > 0)).toBe(true);
      const decoder = new JsonEventDecoder(classes);
      fc.assert(
        fc.property(
          fc.constantFrom(...classes).chain((cls) => eventOf(cls)),
          (e) => {
            const line = encodeJsonEvent(e);
            const back = decoder.decodeLine(line);
            expect(back).toEqual(e);
            expect(encodeJsonEvent(back)).toBe(line);
          },
        ),
        { numRuns: 150 },
      );
    }, 30_000);
  },
);
