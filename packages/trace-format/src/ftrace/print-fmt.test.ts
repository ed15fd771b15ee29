import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ByteOut } from '../codec/byte-out.ts';
import type { TraceEvent } from '../model/types.ts';
import { findTracefs } from '../testing/tracefs.ts';
import { parseFormatFile } from './format-file.ts';
import { compilePrintFormat, compilePrintWriter, interpretPrintFormat, type PrintStyle } from './print-fmt.ts';
import { readEventFormats } from './raw-dir.ts';
import { compileEventDecoder } from './record.ts';
import { Kallsyms, parsePrintkFormats } from './symbols.ts';

function classWith(printFmt: string) {
  return parseFormatFile(
    `name: ev
ID: 1
format:
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:unsigned long addr;\toffset:8;\tsize:8;\tsigned:0;
\tfield:unsigned int flags;\toffset:16;\tsize:4;\tsigned:0;
\tfield:int ret;\toffset:20;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] name;\toffset:24;\tsize:4;\tsigned:0;
\tfield:u8 mac[4];\toffset:28;\tsize:4;\tsigned:0;
\tfield:unsigned long caller[2];\toffset:32;\tsize:16;\tsigned:0;
\tfield:u8 id[16];\toffset:48;\tsize:16;\tsigned:0;

print fmt: ${printFmt}
`,
    { system: 't' },
  );
}

const fields = {
  addr: 0xffffffff81200010n,
  flags: 0x5,
  ret: -12,
  name: 'eth0',
  mac: [0xde, 0xad, 0xbe, 0xef],
  caller: [0xffffffff81300000n, 0n],
  id: Array.from({ length: 16 }, (_, i) => i * 17),
};
const kallsyms = Kallsyms.parse('ffffffff81200000 T do_thing\nffffffff81300000 t helper\nffffffff81400000 T end\n');

function render(printFmt: string, syms = true, style: PrintStyle = 'trace-cmd'): string | undefined {
  const ec = classWith(printFmt);
  const event: TraceEvent = {
    tsNs: 0n,
    cpu: 0,
    eventClass: ec,
    fields,
    scopes: { 'event.context': { common_pid: 9 } },
  };
  return compilePrintFormat(ec)?.(event, syms ? kallsyms : undefined, style);
}

describe('print fmt evaluation', () => {
  it('prints symbols with %pS/%ps and falls back to hex without kallsyms', () => {
    expect(render('"%pS %ps %p", (void *)REC->addr, (void *)REC->caller[0], REC->addr')).toBe(
      'do_thing+0x10 helper 0xffffffff81200010',
    );
    expect(render('"%pS", (void *)REC->addr', false)).toBe('0xffffffff81200010');
  });

  it('evaluates flags, symbolic values, ternaries, casts and arithmetic like C', () => {
    expect(render('"%s", __print_flags(REC->flags, "|", { 1, "A" }, { 2, "B" }, { 4, "C" })')).toBe('A|C');
    expect(render('"%s", __print_flags(REC->flags | 8, "|", { 1, "A" }, { 4, "C" })')).toBe('A|C|0x8');
    expect(render('"%s", __print_symbolic(REC->ret, { -12, "ENOMEM" }, { -2, "ENOENT" })')).toBe('ENOMEM');
    expect(render('"%s", REC->ret < 0 ? "err" : "ok"')).toBe('err');
    expect(render('"%u %d %x", (unsigned int)REC->ret, (int)(REC->flags << 30), REC->ret')).toBe(
      '4294967284 1073741824 fffffff4',
    );
    expect(render('"%d", ((REC->flags & 4) >> 2) * 10 + 1')).toBe('11');
  });

  it('formats widths, padding, precision and %c, and reads dynamic strings and arrays', () => {
    expect(render('"[%5d|%-5d|%05d|%.2s|%c]", REC->ret, REC->ret, REC->flags, __get_str(name), 65')).toBe(
      '[  -12|-12  |00005|et|A]',
    );
    expect(render('"%s %s", __print_hex(REC->mac, 4), __print_hex_str(REC->mac, 2)')).toBe('de ad be ef dead');
    expect(render('"%#x %llx", REC->flags, REC->addr')).toBe('0x5 ffffffff81200010');
    expect(render('"%Lx %Lu", REC->addr, REC->addr')).toBe('ffffffff81200010 18446744071580942352');
    expect(render('"%s"  " and %s", __get_str(name), "more"')).toBe('eth0 and more');
  });

  it('takes * widths and precisions from the arguments, and reads uint casts, UUIDs, MACs and IPv4 addresses', () => {
    expect(render('"[%.*s|%*d|%-*d]", 3, __get_str(name), 4, REC->flags, -4, REC->flags')).toBe('[eth|   5|5   ]');
    expect(render('"%u", ((uint)(REC->addr >> 32))')).toBe('4294967295');
    expect(render('"%pM %pI4", REC->id, REC->mac')).toBe('00:11:22:33:44:55 222.173.190.239');
    expect(render('"%pU|%pUl", REC->id, REC->id')).toBe(
      '00112233-4455-6677-8899-aabbccddeeff|33221100-5544-7766-8899-aabbccddeeff',
    );
    expect(render('"%pM", REC->mac')).toBeUndefined();
  });

  it('prints NULL %p as (nil) and %pS at a function start with +0x0, as trace-cmd does; the kernel style as before', () => {
    expect(render('"%p %p", REC->caller[1], REC->addr')).toBe('(nil) 0xffffffff81200010');
    expect(render('"%p", REC->caller[1]', true, 'kernel')).toBe('0000000000000000');
    expect(render('"%pS %ps", REC->caller[0], REC->caller[0]')).toBe('helper+0x0 helper');
  });

  it('takes names the kernel left unexpanded as trace-cmd does: a symbol address, else 0 (the kernel style gives up)', () => {
    expect(render('"page=%p pfn=0x%lx", (((struct page *)vmemmap_base) + (REC->flags)), REC->flags')).toBe(
      'page=0x5 pfn=0x5',
    );
    expect(render('"%lx", end + 1')).toBe('ffffffff81400001');
    expect(render('"page=%p", (((struct page *)vmemmap_base) + (REC->flags))', true, 'kernel')).toBeUndefined();
  });

  it("applies trace-cmd's table rules: zero values never print, unknown names only match zero, misses in hex", () => {
    expect(render('"[%s]", __print_flags(REC->flags & 2, "|", { 0, "NONE" }, { 1, "A" })')).toBe('[]');
    expect(render('"[%s]", __print_flags(REC->flags & 2, "|", { 1, "A" }, { SOME_NAME, "Z" })')).toBe('[Z]');
    expect(render('"%s", __print_flags(REC->flags, "|", { 1, "A" }, { SOME_NAME, "Z" })')).toBe('A|0x4');
    expect(render('"%s", __print_symbolic(REC->flags, { HRTIMER_MODE_ABS, "ABS" }, { 5, "FIVE" })')).toBe('FIVE');
    expect(render('"%s", __print_symbolic(REC->flags & 1, { HRTIMER_RESTART, "R" }, { 0, ((void *)0) })')).toBe('R');
    expect(render('"%s", __print_symbolic(REC->flags & 2, { HRTIMER_MODE_ABS, "ABS" })')).toBe('0x0');
    // The `{ 0, NULL }` that ends some tables names a zero by its number.
    expect(render('"%s", __print_symbolic(REC->flags & 2, { 1, "A" }, { 0, ((void *)0) })')).toBe('0');
    expect(render('"%s", __print_symbolic(REC->flags & 2, { 1, "A" }, { 0, ((void *)0) })', true, 'kernel')).toBe(
      '0x0',
    );
  });

  it('reads __builtin_expect(x, hint) as x', () => {
    expect(render('"%d", __builtin_expect(!!(REC->ret < 0), 0) ? 1 : 2')).toBe('1');
  });

  it("prints %s of a pointer field as the printk string at its address (trace.dat's printk section), else in hex", () => {
    const printk = parsePrintkFormats(
      '0xffffffff81200010 : "Start context switch"\n0xffffffff81200020 : "line\\n"\nnot a line\n',
    );
    expect([...printk]).toEqual([
      [0xffffffff81200010n, 'Start context switch'],
      [0xffffffff81200020n, 'line'],
    ]);
    const ec = classWith('"%s", REC->addr');
    const event: TraceEvent = { tsNs: 0n, cpu: 0, eventClass: ec, fields, scopes: {} };
    expect(compilePrintFormat(ec)?.(event, undefined, 'trace-cmd', printk)).toBe('Start context switch');
    expect(compilePrintFormat(ec)?.(event, undefined, 'trace-cmd')).toBe('ffffffff81200010');
  });

  it('returns undefined for constructs outside the evaluator, never throwing', () => {
    expect(render('"%s", some_kernel_helper(REC->addr)')).toBeUndefined();
    expect(render('"%d", REC->missing')).toBeUndefined();
    expect(render('"%d %d", REC->ret')).toBeUndefined();
    expect(render('not a format')).toBeUndefined();
  });
});

const tracefs = findTracefs();
describe.skipIf(!('path' in tracefs))(
  `print fmt coverage of this kernel${'why' in tracefs ? ` (skipped: ${tracefs.why})` : ''}`,
  () => {
    it('compiles the print fmt of at least 95% of the kernel event formats', () => {
      const classes = readEventFormats(`${(tracefs as { path: string }).path}/events`, 8, () => {});
      const compiled = classes.filter((c) => compilePrintFormat(c) !== undefined).length;
      expect(classes.length).toBeGreaterThan(500);
      // The rest name enum constants the kernel did not export (IOPRIO_CLASS_NONE...) or kernel-only helpers.
      expect(compiled / classes.length).toBeGreaterThanOrEqual(0.95);
    });
  },
);

describe("trace-cmd's compiled conversions", () => {
  const other = Kallsyms.parse('ffffffff81200008 T other_thing\nffffffff81300000 t helper\n');
  const kernelClasses = 'path' in tracefs ? readEventFormats(`${tracefs.path}/events`, 8, () => {}) : [];
  const classes = [
    classWith(
      '"a=%pS b=%p c=%d d=%u e=%x f=%#lx g=%s h=%ld i=%lu j=%s", (void *)REC->addr, REC->addr, REC->ret, REC->flags, REC->flags, REC->addr, __get_str(name), REC->ret, REC->addr, REC->flags ? __print_flags(REC->flags, "|", { 1, "ONE" }, { 4, "FOUR" }) : "none"',
    ),
    ...kernelClasses,
  ].filter((c) => c.ftrace !== undefined && compilePrintFormat(c) !== undefined);

  it(`write the bytes of what the step-by-step evaluator prints, for every value a record can hold (${classes.length} classes${'why' in tracefs ? `; the kernel's formats left out: ${tracefs.why}` : ''})`, () => {
    const decoders = new Map(classes.map((c) => [c, compileEventDecoder(c)]));
    const out = new ByteOut(1);
    fc.assert(
      fc.property(
        fc.constantFrom(...classes),
        // Few distinct records, so that values repeat (texts kept per value) and symbols change between passes.
        fc.array(fc.uint8Array({ minLength: 256, maxLength: 256 }), { minLength: 1, maxLength: 4 }),
        (cls, records) => {
          const compiled = compilePrintFormat(cls)!;
          const write = compilePrintWriter(cls)!;
          const interpreted = interpretPrintFormat(cls)!;
          const decode = decoders.get(cls)!;
          for (const syms of [kallsyms, other, undefined, kallsyms]) {
            for (const bytes of [...records, ...records]) {
              // Dynamic fields point anywhere in random bytes: records the decoder refuses are not events.
              let event: TraceEvent;
              try {
                event = decode(Buffer.from(bytes), new DataView(bytes.buffer), 0, bytes.length, 0n, 0);
              } catch {
                continue;
              }
              const expected = interpreted(event, syms, 'trace-cmd');
              expect(compiled(event, syms, 'trace-cmd')).toBe(expected);
              // Written after a line's start: its bytes follow it, or nothing when the evaluator gives up.
              out.length = 0;
              out.text('é ');
              const wrote = write(event, out, syms);
              expect(wrote).toBe(expected !== undefined);
              expect(Buffer.from(out.bytes.subarray(0, out.length))).toEqual(Buffer.from(`é ${expected ?? ''}`));
            }
          }
        },
      ),
      { numRuns: 1000 },
    );
  }, 60_000);
});
