import { describe, expect, it } from 'vitest';
import type { TraceEvent } from '../model/types.ts';
import { parseFormatFile } from './format-file.ts';
import { compilePrintFormat } from './print-fmt.ts';
import { Kallsyms } from './symbols.ts';

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
};
const kallsyms = Kallsyms.parse('ffffffff81200000 T do_thing\nffffffff81300000 t helper\nffffffff81400000 T end\n');

function render(printFmt: string, syms = true): string | undefined {
  const ec = classWith(printFmt);
  const event: TraceEvent = {
    tsNs: 0n,
    cpu: 0,
    eventClass: ec,
    fields,
    scopes: { 'event.context': { common_pid: 9 } },
  };
  return compilePrintFormat(ec)?.(event, syms ? kallsyms : undefined);
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
    expect(render('"%s"  " and %s", __get_str(name), "more"')).toBe('eth0 and more');
  });

  it('returns undefined for constructs outside the evaluator, never throwing', () => {
    expect(render('"%s", some_kernel_helper(REC->addr)')).toBeUndefined();
    expect(render('"%d", REC->missing')).toBeUndefined();
    expect(render('"%d %d", REC->ret')).toBeUndefined();
    expect(render('not a format')).toBeUndefined();
  });
});
