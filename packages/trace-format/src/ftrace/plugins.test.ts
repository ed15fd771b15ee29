import { describe, expect, it } from 'vitest';
import type { FieldValue, TraceEvent } from '../model/types.ts';
import { createFtraceTextFormatter } from '../output/text.ts';
import { parseFormatFile } from './format-file.ts';
import { Kallsyms } from './symbols.ts';

/** An event class of `system:name` with the given fields (`type name` or `type name[N]`, 8 bytes apart). */
function eventOf(system: string, name: string, decls: string[], printFmt: string, fields: Record<string, FieldValue>) {
  const lines = decls.map((d, i) => `\tfield:${d};\toffset:${8 + i * 8};\tsize:8;\tsigned:0;`).join('\n');
  const eventClass = parseFormatFile(
    `name: ${name}\nID: 7\nformat:\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n${lines}\n\nprint fmt: ${printFmt}\n`,
    { system },
  );
  return (pid: number, more: Record<string, FieldValue> = {}): TraceEvent => ({
    tsNs: 1_000_000_000n,
    cpu: 1,
    eventClass,
    fields: { ...fields, ...more },
    scopes: { 'event.context': { common_pid: pid } },
  });
}

const kallsyms = Kallsyms.parse(
  'ffffffff81000000 T tick_handler\nffffffff81000100 T kmalloc_caller\nffffffff81000200 T end\n',
);
const body = (line: string) => line.slice(line.indexOf(': ', 30) + 2).replace(/^\S+:\s+/, '');

describe("libtraceevent's plugins, as trace-cmd report prints them", () => {
  const format = createFtraceTextFormatter({ kallsyms: () => kallsyms, cmdlines: new Map([[5, 'known']]) });

  it('sched_switch: comm:pid [prio] state ==> comm:pid [prio], states by trace-cmd 3.1 letters, naming tasks', () => {
    const sw = eventOf(
      'sched',
      'sched_switch',
      [
        'char prev_comm[8]',
        'pid_t prev_pid',
        'int prev_prio',
        'long prev_state',
        'char next_comm[8]',
        'pid_t next_pid',
        'int next_prio',
      ],
      '"prev_comm=%s", REC->prev_comm',
      {
        prev_comm: 'known',
        prev_pid: 5,
        prev_prio: 120,
        prev_state: 0,
        next_comm: 'fresh',
        next_pid: 77,
        next_prio: -1,
      },
    );
    expect(body(format(sw(5)))).toBe('known:5 [120] R ==> fresh:77 [-1]');
    expect(body(format(sw(5, { prev_state: 3 })))).toBe('known:5 [120] S|D ==> fresh:77 [-1]');
    // TASK_IDLE (0x80) is W in trace-cmd 3.1's fixed table, and 0x10 is Z.
    expect(body(format(sw(5, { prev_state: 0x90 })))).toBe('known:5 [120] Z|W ==> fresh:77 [-1]');
    // Pid 77 had no name: the switch taught it, as trace-cmd's plugin registers the comms it prints.
    expect(format(sw(77)).trimStart().startsWith('fresh-77')).toBe(true);
  });

  it('sched_wakeup: comm:pid [prio] CPU:nnn', () => {
    const wake = eventOf('sched', 'sched_wakeup', ['char comm[8]', 'pid_t pid', 'int prio', 'int target_cpu'], '"x"', {
      comm: 'w',
      pid: 9,
      prio: 120,
      target_cpu: 1,
    });
    expect(body(format(wake(5)))).toBe('w:9 [120] CPU:001');
  });

  it('kmem: (function+0xoff) before the print format, nothing where the call site is unknown', () => {
    const kfree = eventOf(
      'kmem',
      'kfree',
      ['unsigned long call_site', 'const void * ptr'],
      '"call_site=%pS ptr=%p", (void *)REC->call_site, REC->ptr',
      {
        call_site: 0xffffffff81000110n,
        ptr: 0n,
      },
    );
    expect(body(format(kfree(5)))).toBe('(kmalloc_caller+0x10) call_site=kmalloc_caller+0x10 ptr=(nil)');
    expect(body(format(kfree(5, { call_site: 0x1000n })))).toBe('call_site=0x1000 ptr=(nil)');
  });

  it('hrtimer_start and hrtimer_expire_entry: function=name/0x(start - address), in hex modulo 2^64', () => {
    const start = eventOf(
      'timer',
      'hrtimer_start',
      ['void * hrtimer', 'void * function', 's64 expires', 's64 softexpires'],
      '"x"',
      { hrtimer: 0xffff888000001000n, function: 0xffffffff81000000n, expires: 10n, softexpires: 9n },
    );
    expect(body(format(start(5)))).toBe(
      'hrtimer=0xffff888000001000 function=tick_handler/0x0 expires=10 softexpires=9',
    );
    expect(body(format(start(5, { function: 0xffffffff81000004n })))).toMatch(
      /function=tick_handler\/0xfffffffffffffffc /,
    );
    expect(body(format(start(5, { function: 0x10n })))).toMatch(/function=0x00000010 /);
    const expire = eventOf('timer', 'hrtimer_expire_entry', ['void * hrtimer', 's64 now', 'void * function'], '"x"', {
      hrtimer: 0x1000n,
      now: 42n,
      function: 0xffffffff81000000n,
    });
    expect(body(format(expire(5)))).toBe('hrtimer=0x1000 now=42 function=tick_handler/0x0');
  });

  it('sys_enter_futex: the operation and its flags by name, then the arguments it uses; the print format past the table', () => {
    const futex = eventOf(
      'syscalls',
      'sys_enter_futex',
      ['u32 * uaddr', 'int op', 'u32 val', 'void * utime', 'u32 * uaddr2', 'u32 val3'],
      '"op: 0x%08lx", ((unsigned long)(REC->op))',
      { uaddr: 0x1234n, op: 9 | 128 | 256, val: 3, utime: 0n, uaddr2: 0n, val3: 0xffffffff },
    );
    expect(body(format(futex(5)))).toBe(
      'op=FUTEX_WAIT_BITSET|FUTEX_PRIVATE_FLAG|FUTEX_CLOCK_REALTIME uaddr=0x00001234 val=0x00000003 utime=0x00000000 val3=0xffffffff',
    );
    expect(body(format(futex(5, { op: 1 })))).toBe('op=FUTEX_WAKE uaddr=0x00001234 val=3');
    expect(body(format(futex(5, { op: 13 })))).toBe('op: 0x0000000d');
  });

  it('tlb_flush: pages as a signed long and the reason by name and number', () => {
    const tlb = eventOf('tlb', 'tlb_flush', ['unsigned long pages', 'int reason'], '"x"', {
      pages: 0xffffffffffffffffn,
      reason: 3,
    });
    expect(body(format(tlb(5)))).toBe('pages=-1 reason=local mm shootdown (3)');
    expect(body(format(tlb(5, { reason: 5 })))).toBe('pages=-1 reason= (5)');
  });

  it('plugins: false prints the kernel formats only, as trace-cmd report -N', () => {
    const plain = createFtraceTextFormatter({ kallsyms: () => kallsyms, plugins: false });
    const kfree = eventOf('kmem', 'kfree', ['unsigned long call_site'], '"call_site=%pS", (void *)REC->call_site', {
      call_site: 0xffffffff81000110n,
    });
    expect(body(plain(kfree(5)))).toBe('call_site=kmalloc_caller+0x10');
  });
});
