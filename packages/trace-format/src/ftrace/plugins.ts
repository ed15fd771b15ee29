/**
 * What libtraceevent's plugins print for the events they handle, as `trace-cmd report` shows them: the kmem
 * plugin's `(call_site)` column before the print format, trace-cmd's own text for `sched_switch`, `sched_wakeup`,
 * `hrtimer_start`, `hrtimer_expire_entry`, `sys_enter_futex` and `tlb_flush`. Compiled per event class, like print
 * formats.
 */
import { type ByteOut, IntKey, KeptTexts } from '../codec/byte-out.ts';
import type { EventClass, FieldValue, TraceEvent } from '../model/types.ts';
import type { Kallsyms } from './symbols.ts';

/** Task names learnt while printing: the sched plugins name the tasks they mention when no name was known. */
export interface TaskNames {
  get(pid: number): string | undefined;
  learn(pid: number, comm: string): void;
}

/**
 * A plugin's text for one event, written after what `out` holds. `prefix` plugins print before the event's print
 * format; the others replace it, and return false, having written nothing, when the print format should be used
 * after all.
 */
export interface EventPlugin {
  readonly prefix: boolean;
  write(event: TraceEvent, out: ByteOut, kallsyms: Kallsyms | undefined, tasks: TaskNames): boolean;
}

/** A plugin whose text is made as a string (undefined: the print format is used after all). */
function textPlugin(
  prefix: boolean,
  print: (event: TraceEvent, kallsyms: Kallsyms | undefined, tasks: TaskNames) => string | undefined,
): EventPlugin {
  return {
    prefix,
    write(event, out, kallsyms, tasks) {
      const text = print(event, kallsyms, tasks);
      if (text === undefined) return false;
      out.text(text);
      return true;
    },
  };
}

const KMEM_CALL_SITE = new Set([
  'kfree',
  'kmalloc',
  'kmalloc_node',
  'kmem_cache_alloc',
  'kmem_cache_alloc_node',
  'kmem_cache_free',
]);

/** The plugin trace-cmd applies to events of this class, if any. */
export function compileEventPlugin(eventClass: EventClass): EventPlugin | undefined {
  const info = eventClass.ftrace;
  if (info === undefined) return undefined;
  const has = (name: string) => info.fields.some((f) => f.name === name && !f.common);
  switch (`${info.system}:${info.event}`) {
    case 'sched:sched_switch':
      return has('prev_pid') && has('next_pid') ? schedSwitch(eventClass) : undefined;
    case 'sched:sched_wakeup':
    case 'sched:sched_wakeup_new':
      return has('pid') ? schedWakeup(has) : undefined;
    case 'timer:hrtimer_start':
    case 'timer:hrtimer_expire_entry':
      return has('timer') || has('hrtimer')
        ? hrtimer(info.event === 'hrtimer_start', has('timer') ? 'timer' : 'hrtimer')
        : undefined;
    case 'syscalls:sys_enter_futex':
      return ['uaddr', 'op', 'val', 'utime', 'uaddr2', 'val3'].every(has) ? futex : undefined;
    case 'tlb:tlb_flush':
      return has('pages') && has('reason') ? tlbFlush : undefined;
    default:
      return info.system === 'kmem' && KMEM_CALL_SITE.has(info.event) && has('call_site') ? callSite() : undefined;
  }
}

const u64 = (v: FieldValue | undefined): bigint =>
  typeof v === 'bigint' ? BigInt.asUintN(64, v) : typeof v === 'number' ? BigInt.asUintN(64, BigInt(v)) : 0n;

/** A number as C's `%lld` prints a field libtraceevent read unsigned: negative narrow fields come out positive. */
function unsignedText(v: FieldValue | undefined, bits: number): string {
  if (typeof v === 'number') return v >= 0 ? String(v) : String(BigInt.asUintN(bits, BigInt(v)));
  return typeof v === 'bigint' ? BigInt.asIntN(64, BigInt.asUintN(bits, v)).toString() : '0';
}

function fieldBits(eventClass: EventClass, name: string): number {
  return (eventClass.ftrace?.fields.find((f) => f.name === name)?.size ?? 8) * 8;
}

/** kmem: `(function+0xoff) ` before the print format when the call site is a known function. */
function callSite(): EventPlugin {
  // Call sites repeat: their text is kept per address, for the symbols it was looked up in.
  const kept = new KeptTexts(1 << 16);
  const key = new IntKey();
  let symbols: Kallsyms | undefined;
  return {
    prefix: true,
    write(event, out, kallsyms) {
      if (kallsyms === undefined) return true;
      if (kallsyms !== symbols) {
        symbols = kallsyms;
        kept.clear();
      }
      const value = event.fields.call_site;
      const keyed = key.of(value);
      if (keyed && kept.write(key, out)) return true;
      const sym = kallsyms.lookup(u64(value));
      // The offset is printed as a C int.
      const text = sym === undefined ? '' : `(${sym.name}+0x${(Number(sym.offset) >>> 0).toString(16)}) `;
      if (keyed) kept.keep(key, text, out);
      else out.text(text);
      return true;
    },
  };
}

/**
 * The letters of `prev_state`'s bits as libtraceevent 1.7's sched_switch plugin prints them (trace-cmd 3.1 as Debian
 * ships it): a fixed table, which calls TASK_IDLE `W` where the kernel's own format says `I`.
 */
const STATE_LETTERS = 'SDTtZXxW';

function schedSwitch(eventClass: EventClass): EventPlugin {
  const letters = STATE_LETTERS;
  const pidBits = fieldBits(eventClass, 'prev_pid');
  const hasState = eventClass.ftrace?.fields.some((f) => f.name === 'prev_state') === true;
  const state = (v: FieldValue | undefined) => {
    const bits = Number(u64(v) & 0xffffffffn);
    let out = '';
    for (let i = 0; i < letters.length; i++) if (bits & (1 << i)) out += out === '' ? letters[i] : `|${letters[i]}`;
    return out === '' ? 'R' : out;
  };
  return textPlugin(false, (event, _kallsyms, tasks) => {
    const f = event.fields;
    const prev = task(f.prev_comm, f.prev_pid, pidBits, tasks);
    const next = task(f.next_comm, f.next_pid, pidBits, tasks);
    const prevPrio = f.prev_prio === undefined ? '' : `[${prio(f.prev_prio)}] `;
    const nextPrio = f.next_prio === undefined ? '' : ` [${prio(f.next_prio)}]`;
    return `${prev} ${prevPrio}${hasState ? state(f.prev_state) : ''} ==> ${next}${nextPrio}`;
  });
}

function schedWakeup(has: (name: string) => boolean): EventPlugin {
  const success = has('success');
  const target = has('target_cpu');
  return textPlugin(false, (event, _kallsyms, tasks) => {
    const f = event.fields;
    let out = task(f.comm, f.pid, 32, tasks);
    if (f.prio !== undefined) out += ` [${unsignedText(f.prio, 32)}]`;
    if (success) out += ` success=${unsignedText(f.success, 32)}`;
    if (target) out += ` CPU:${unsignedText(f.target_cpu, 32).padStart(3, '0')}`;
    return out;
  });
}

/** `comm:pid`, teaching trace-cmd's table of task names a name it did not know yet. */
function task(comm: FieldValue | undefined, pid: FieldValue | undefined, bits: number, tasks: TaskNames): string {
  const name = typeof comm === 'string' ? comm : '';
  const id = unsignedText(pid, bits);
  if (typeof comm === 'string') {
    const n = Number(id);
    if (n !== 0 && tasks.get(n) === undefined) tasks.learn(n, name);
  }
  return typeof comm === 'string' ? `${name}:${id}` : id;
}

/** A priority as C's `(int)` of the value prints it. */
const prio = (v: FieldValue) =>
  String(typeof v === 'bigint' ? BigInt.asIntN(32, v) : typeof v === 'number' ? v | 0 : 0);

/** `function=name/0xdelta`, the delta printed as trace-cmd computes it (start minus address, unsigned). */
function functionText(addr: bigint, kallsyms: Kallsyms | undefined): string {
  const sym = kallsyms?.lookup(addr);
  if (sym === undefined) return `0x${addr.toString(16).padStart(8, '0')}`;
  return `${sym.name}/0x${BigInt.asUintN(64, -sym.offset).toString(16)}`;
}

function hrtimer(start: boolean, timerField: string): EventPlugin {
  return textPlugin(false, (event, kallsyms) => {
    const f = event.fields;
    const timer = `hrtimer=0x${u64(f[timerField]).toString(16)}`;
    const fn = f.function === undefined ? '' : ` function=${functionText(u64(f.function), kallsyms)}`;
    if (start) return `${timer}${fn} expires=${u64(f.expires)} softexpires=${u64(f.softexpires)}`;
    return `${timer} now=${u64(f.now)}${fn}`;
  });
}

/** sys_enter_futex: the operation by name, then the arguments it uses. */
const FUTEX_OPS: readonly (readonly [string, string?, string?, string?, string?])[] = [
  ['FUTEX_WAIT', 'val=0x', 'utime=0x'],
  ['FUTEX_WAKE', 'val='],
  ['FUTEX_FD', 'val='],
  ['FUTEX_REQUEUE', 'val=', 'val2=', 'uaddr2=0x'],
  ['FUTEX_CMP_REQUEUE', 'val=', 'val2=', 'uaddr2=0x', 'val3=0x'],
  ['FUTEX_WAKE_OP', 'val=', 'val2=', 'uaddr2=0x', 'val3=0x'],
  ['FUTEX_LOCK_PI', undefined, 'utime=0x'],
  ['FUTEX_UNLOCK_PI'],
  ['FUTEX_TRYLOCK_PI'],
  ['FUTEX_WAIT_BITSET', 'val=0x', 'utime=0x', undefined, 'val3=0x'],
  ['FUTEX_WAKE_BITSET', 'val=', undefined, undefined, 'val3=0x'],
  ['FUTEX_WAIT_REQUEUE_PI', 'val=0x', 'utime=0x', 'uaddr2=0x', 'val3=0x'],
  ['FUTEX_CMP_REQUEUE_PI', 'val=', 'val2=', 'uaddr2=0x', 'val3=0x'],
];
const FUTEX_PRIVATE_FLAG = 128n;
const FUTEX_CLOCK_REALTIME = 256n;

/** `0x%08llx` for labels ending in 0x, `%llu` for the others. */
const futexArg = (label: string, v: bigint) =>
  ` ${label}${label.endsWith('0x') ? v.toString(16).padStart(8, '0') : v.toString()}`;

const futex: EventPlugin = textPlugin(false, (event) => {
  const f = event.fields;
  const op = u64(f.op);
  const entry = FUTEX_OPS[Number(op & ~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME) & 0xffffffffn)];
  if (entry === undefined) return undefined;
  const [name, val, utime, uaddr2, val3] = entry;
  let out = `op=${name}`;
  if (op & FUTEX_PRIVATE_FLAG) out += '|FUTEX_PRIVATE_FLAG';
  if (op & FUTEX_CLOCK_REALTIME) out += '|FUTEX_CLOCK_REALTIME';
  out += ` uaddr=0x${u64(f.uaddr).toString(16).padStart(8, '0')}`;
  if (val !== undefined) out += futexArg(val, u64(f.val));
  if (utime !== undefined) out += futexArg(utime, u64(f.utime));
  if (uaddr2 !== undefined) out += futexArg(uaddr2, u64(f.uaddr2));
  if (val3 !== undefined) out += futexArg(val3, u64(f.val3));
  return out;
});

const TLB_FLUSH_REASONS = ['flush on task switch', 'remote shootdown', 'local shootdown', 'local mm shootdown'];

/** tlb_flush: the page count as a signed long, the reason by name (when known) and number. */
const tlbFlush: EventPlugin = textPlugin(false, (event) => {
  const reason = u64(event.fields.reason);
  const name = reason < 4n ? ` reason=${TLB_FLUSH_REASONS[Number(reason)]}` : ' reason=';
  return `pages=${BigInt.asIntN(64, u64(event.fields.pages))}${name} (${BigInt.asIntN(64, reason)})`;
});
