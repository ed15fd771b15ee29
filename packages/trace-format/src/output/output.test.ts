import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import eventSchema from '../../schemas/event.json' with { type: 'json' };
import { parseFormatFile } from '../ftrace/format-file.ts';
import { hexFields } from '../ftrace/hex-fields.ts';
import type { TraceEvent } from '../model/types.ts';
import { createJsonFormatter, eventClassSchema, eventToJsonLine, jsonValue } from './json.ts';
import { writePerfettoJson } from './perfetto-json.ts';
import { ftraceTimestamp } from './text.ts';

const SWITCH = parseFormatFile(
  `name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;

print fmt: "x"
`,
  { system: 'sched' },
);

const KMALLOC = parseFormatFile(
  `name: kmalloc
ID: 300
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;
\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;
\tfield:size_t bytes_req;\toffset:24;\tsize:8;\tsigned:0;
\tfield:unsigned int gfp_flags;\toffset:32;\tsize:4;\tsigned:0;

print fmt: "call_site=%pS ptr=%p bytes_req=%zu gfp_flags=%x", (void *)REC->call_site, REC->ptr, REC->bytes_req, REC->gfp_flags
`,
  { system: 'kmem' },
);

const validateEvent = new Ajv2020({ strict: true }).compile(eventSchema);

const sw = (tsNs: bigint, cpu: number, prev: [string, number], next: [string, number]): TraceEvent => ({
  tsNs,
  cpu,
  eventClass: SWITCH,
  fields: { prev_comm: prev[0], prev_pid: prev[1], next_comm: next[0], next_pid: next[1] },
  scopes: { 'event.context': { common_type: 372, common_pid: prev[1] } },
});

describe('JSON lines', () => {
  it('types integers by their class: numbers up to 32 bits, decimal strings at 64 bits, hex for pointers', () => {
    const line = eventToJsonLine(sw(12345678901234567890n, 1, ['a', 1], ['b', 2]));
    expect(line.endsWith('}\n')).toBe(true);
    expect(JSON.parse(line)).toEqual({
      ts_ns: '12345678901234567890',
      cpu: 1,
      event: 'sched:sched_switch',
      pid: 1,
      comm: null,
      flags: null,
      fields: { prev_comm: 'a', prev_pid: 1, next_comm: 'b', next_pid: 2 },
    });
    const e = (fields: TraceEvent['fields']): TraceEvent => ({
      tsNs: 5n,
      cpu: 0,
      eventClass: KMALLOC,
      fields,
      scopes: { 'event.context': { common_pid: 9, common_flags: 0x0d, common_preempt_count: 0x12 } },
    });
    const comm = createJsonFormatter({ comm: (pid) => (pid === 9 ? 'nine' : undefined) });
    const small = JSON.parse(comm(e({ call_site: 0xffffffff8123abcdn, ptr: 0n, bytes_req: 8n, gfp_flags: 0xcc0 })));
    const big = JSON.parse(comm(e({ call_site: 1n, ptr: 2n ** 64n - 1n, bytes_req: 2n ** 63n, gfp_flags: -1 })));
    expect(small).toMatchObject({ pid: 9, comm: 'nine' });
    expect(small.flags).toEqual({
      irqs_off: true,
      need_resched: true,
      preempt_resched: false,
      hardirq: true,
      softirq: false,
      nmi: false,
      preempt_depth: 2,
      migrate_disable: 1,
    });
    // call_site is an unsigned long printed with %pS, gfp_flags an unsigned int printed with %x.
    expect(small.fields).toEqual({ call_site: '0xffffffff8123abcd', ptr: '0x0', bytes_req: '8', gfp_flags: '0xcc0' });
    expect(big.fields).toEqual({
      call_site: '0x1',
      ptr: '0xffffffffffffffff',
      bytes_req: '9223372036854775808',
      gfp_flags: '0xffffffff',
    });
    expect(validateEvent(small) && validateEvent(big)).toBe(true);
    // The class's own schema pins each field's type: a decimal call_site or a numeric bytes_req is refused.
    const ajv = new Ajv2020({ strict: true });
    ajv.addSchema(eventSchema);
    const kmalloc = ajv.compile(eventClassSchema(KMALLOC));
    expect(kmalloc(small) && kmalloc(big)).toBe(true);
    expect(kmalloc({ ...small, fields: { ...small.fields, call_site: '18446744071586209136' } })).toBe(false);
    expect(kmalloc({ ...small, fields: { ...small.fields, bytes_req: 8 } })).toBe(false);
    expect(kmalloc({ ...small, event: 'kmem:kfree' })).toBe(false);
  });

  it('writes every field kind as its class says, the line being the JSON text of those values', () => {
    const cls = parseFormatFile(
      `name: every
ID: 301
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:u8 a;\toffset:8;\tsize:1;\tsigned:0;
\tfield:s16 b;\toffset:10;\tsize:2;\tsigned:1;
\tfield:unsigned int c;\toffset:12;\tsize:4;\tsigned:0;
\tfield:int d;\toffset:16;\tsize:4;\tsigned:1;
\tfield:u64 e;\toffset:24;\tsize:8;\tsigned:0;
\tfield:s64 f;\toffset:32;\tsize:8;\tsigned:1;
\tfield:void * g;\toffset:40;\tsize:8;\tsigned:0;
\tfield:char h[16];\toffset:48;\tsize:16;\tsigned:0;
\tfield:__data_loc char[] i;\toffset:64;\tsize:4;\tsigned:0;
\tfield:int j[2];\toffset:68;\tsize:8;\tsigned:1;

print fmt: "c=%x d=%x g=%p", REC->c, REC->d, REC->g
`,
      { system: 'test' },
    );
    const int = (bits: number, signed: boolean) =>
      signed
        ? fc.integer({ min: -(2 ** (bits - 1)), max: 2 ** (bits - 1) - 1 })
        : fc.integer({ min: 0, max: 2 ** bits - 1 });
    const text = fc.oneof(fc.string(), fc.string({ unit: 'binary' }));
    const values = fc.record({
      a: int(8, false),
      b: int(16, true),
      c: int(32, false),
      d: int(32, true),
      e: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
      f: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
      g: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
      h: text,
      i: text,
      j: fc.array(int(32, true), { minLength: 2, maxLength: 2 }),
    });
    const head = fc.record({
      ts: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
      cpu: fc.option(fc.nat(4095)),
      pid: fc.option(fc.integer({ min: -1, max: 2 ** 22 })),
      comm: fc.option(text),
      flags: fc.option(fc.nat(255)),
      pc: fc.nat(255),
      buffer: fc.option(text),
    });
    const hex = (v: number | bigint, bits: number) => `0x${BigInt.asUintN(bits, BigInt(v)).toString(16)}`;
    // Two events in a row share the writer's per-class and per-task state, as a trace's events do.
    fc.assert(
      fc.property(fc.array(fc.tuple(head, values), { minLength: 1, maxLength: 3 }), (events) => {
        const write = createJsonFormatter({
          comm: (pid) => events.find(([h]) => h.pid === pid)?.[0].comm ?? undefined,
        });
        for (const [h, v] of events) {
          const line = write({
            tsNs: h.ts,
            cpu: h.cpu,
            eventClass: cls,
            fields: v,
            scopes: {
              'event.context': {
                ...(h.pid !== null ? { common_pid: h.pid } : {}),
                ...(h.flags !== null ? { common_flags: h.flags } : {}),
                common_preempt_count: h.pc,
              },
              ...(h.buffer !== null ? { buffer: { name: h.buffer } } : {}),
            },
          } as TraceEvent);
          const comm = h.pid !== null ? (events.find(([x]) => x.pid === h.pid)?.[0].comm ?? null) : null;
          const expected = {
            ts_ns: String(h.ts),
            cpu: h.cpu,
            ...(h.buffer !== null ? { buffer: h.buffer } : {}),
            event: 'test:every',
            pid: h.pid,
            comm,
            flags:
              h.flags === null
                ? null
                : JSON.parse(
                    eventToJsonLine({
                      tsNs: 0n,
                      cpu: 0,
                      eventClass: cls,
                      fields: {},
                      scopes: { 'event.context': { common_flags: h.flags, common_preempt_count: h.pc } },
                    }).trim(),
                  ).flags,
            fields: {
              a: v.a,
              b: v.b,
              c: hex(v.c, 32),
              d: hex(v.d, 32),
              e: String(v.e),
              f: String(v.f),
              g: hex(v.g, 64),
              h: v.h,
              i: v.i,
              j: v.j,
            },
          };
          expect(line).toBe(`${JSON.stringify(expected)}\n`);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('keeps integers exact in values typed by themselves (Perfetto args)', () => {
    expect(jsonValue(2n ** 53n - 1n)).toBe(2 ** 53 - 1);
    expect(jsonValue(2n ** 53n)).toBe('9007199254740992');
    expect(jsonValue([1n, [2n ** 64n - 1n], { a: 3n }])).toEqual([1, ['18446744073709551615'], { a: 3 }]);
  });

  it('finds the fields print fmt shows as addresses or hex, casts and %% aside', () => {
    expect([
      ...hexFields(
        '"a=%pS b=%p c=%lu d=%#lx %% e=%*d f=%08x g=%pM", REC->a, (void *)REC->b, REC->c, (unsigned long)(REC->d), 3, REC->e, REC->f, REC->g',
      ),
    ]).toEqual(['a', 'b', 'd', 'f']);
    expect([...hexFields('"%s=%x", __get_str(name), REC->v + 1')]).toEqual([]);
    // mm_page_alloc's: the pfn a condition guards is the pfn.
    const pageAlloc =
      '"page=%p pfn=0x%lx order=%d", REC->pfn != -1UL ? (((struct page *)vmemmap_base) + (REC->pfn)) : ((void *)0), REC->pfn != -1UL ? REC->pfn : 0, REC->order';
    expect([...hexFields(pageAlloc)]).toEqual(['pfn']);
    expect([...hexFields(undefined)]).toEqual([]);
  });

  it('fuzz: any text, and real print formats cut and spliced anywhere, give a set of field names and never throw', () => {
    const real = [KMALLOC.printFormat!, SWITCH.printFormat!, '"page=%p pfn=0x%lx", REC->pfn != -1UL ? REC->pfn : 0, 0'];
    const mutated = fc
      .tuple(
        fc.constantFrom(...real),
        fc.array(fc.tuple(fc.nat(), fc.nat(8), fc.string({ maxLength: 6 })), { maxLength: 5 }),
      )
      .map(([text, edits]) => {
        let out = text;
        for (const [at, cut, insert] of edits) {
          const i = at % (out.length + 1);
          out = out.slice(0, i) + insert + out.slice(i + cut);
        }
        return out;
      });
    fc.assert(
      fc.property(fc.oneof(fc.string(), mutated), (text) => {
        for (const name of hexFields(text)) expect(name).toMatch(/^\w+$/);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('Perfetto JSON', () => {
  it('writes instant events, per-CPU running slices from sched_switch, and task names', () => {
    const events = [
      sw(1_000_000n, 0, ['swapper/0', 0], ['bash', 42]),
      sw(1_500_000n, 1, ['swapper/1', 0], ['make', 7]),
      sw(3_000_500n, 0, ['bash', 42], ['swapper/0', 0]),
      sw(4_000_000n, 1, ['make', 7], ['cc', 8]),
    ];
    let text = '';
    const n = writePerfettoJson(events, (chunk) => (text += chunk), { cmdlines: new Map([[8, 'cc1']]) });
    expect(n).toBe(4);
    const json = JSON.parse(text);
    const of = (ph: string) => json.traceEvents.filter((e: { ph: string }) => e.ph === ph);
    expect(of('i').map((e: { ts: number; tid: number }) => [e.ts, e.tid])).toEqual([
      [1000, 0],
      [1500, 0],
      [3000.5, 42],
      [4000, 7],
    ]);
    expect(of('X')).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'bash (42)', ts: 1000, dur: 2000.5, tid: 0x7fff0000 }),
        expect.objectContaining({ name: 'make (7)', ts: 1500, dur: 2500, tid: 0x7fff0001 }),
        expect.objectContaining({ name: 'cc (8)', ts: 4000, dur: 0, tid: 0x7fff0001 }),
      ]),
    );
    const names = of('M')
      .filter((e: { name: string }) => e.name === 'thread_name')
      .map((e: { tid: number; args: { name: string } }) => [e.tid, e.args.name]);
    expect(names).toEqual(
      expect.arrayContaining([
        [42, 'bash (42)'],
        [7, 'make (7)'],
        [0, 'swapper (0)'],
        [0x7fff0000, 'CPU 0'],
      ]),
    );
  });
});

describe('ftrace text pieces', () => {
  it('rounds time stamps to the nearest microsecond as trace-cmd does, carrying into the seconds', () => {
    expect(ftraceTimestamp(12_524_002_600n)).toBe('12.524003');
    expect(ftraceTimestamp(12_524_002_499n)).toBe('12.524002');
    expect(ftraceTimestamp(1_999_999_700n)).toBe('2.000000');
    expect(ftraceTimestamp(1_999_999_700n, true)).toBe('1.999999700');
  });
});
