/**
 * One hardware branch stream shared by several tracing contexts. Each context selects a slice (one task by tid or
 * pid, one CPU, or everything; user space, kernel space or both) and keeps it in its own circular buffer: an
 * @evtrace/ringbuf flight recorder (overwrite mode) sized by the context's memory budget, which counts what it
 * overwrote. Tasks are known from the records themselves (perf samples say their tid) or from sched_switch events
 * that say who runs on each CPU from then on.
 */
import { RingBuffer } from '@evtrace/ringbuf';
import { BRANCH_KINDS, type BranchKind, BranchList } from './branch.ts';
import { BtsError } from './errors.ts';

/** Which addresses a context sees. Decided by the branch's source address, as gdb does. */
export type AddressSpace = 'user' | 'kernel' | 'all';

/** x86-64: kernel addresses have the top bit set (gdb's test); the user/kernel boundary. */
export const X86_64_KERNEL_BOUNDARY = 0x8000_0000_0000_0000n;

/**
 * Whether branch `i` belongs to `space`. `user` keeps branches whose source is below the boundary, which drops the
 * kernel-to-user returns the hardware leaks into a user-only trace (gdb filters them the same way); `kernel` keeps
 * those whose source is at or above it.
 */
export function inSpace(list: BranchList, i: number, space: AddressSpace, boundary = X86_64_KERNEL_BOUNDARY): boolean {
  if (space === 'all') return true;
  const bhi = Number(boundary >> 32n);
  const blo = Number(boundary & 0xffffffffn);
  const hi = list.fromHi[i]!;
  const kernel = hi > bhi || (hi === bhi && list.fromLo[i]! >= blo);
  return space === 'kernel' ? kernel : !kernel;
}

/** A new list with the branches of `space` only. */
export function selectSpace(list: BranchList, space: AddressSpace, boundary = X86_64_KERNEL_BOUNDARY): BranchList {
  return space === 'all' ? list : list.filter((i) => inSpace(list, i, space, boundary));
}

/** What one tracing context selects and how much memory it may hold. */
export interface ContextSpec {
  readonly name: string;
  /** Only this thread. */
  readonly tid?: number;
  /** Only threads of this process (needs {@link BranchMultiplexer.setProcess} or sched_switch pids). */
  readonly pid?: number;
  /** Only this CPU. */
  readonly cpu?: number;
  /** Default `all`. */
  readonly space?: AddressSpace;
  /** Bytes of circular buffer (rounded down to 4 KiB pages, at least two). Default 64 KiB. */
  readonly budgetBytes?: number;
}

/** A sched_switch: from `time` on, `tid` (of process `pid`) runs on `cpu`. */
export interface TaskSwitch {
  readonly time: number;
  readonly cpu: number;
  readonly tid: number;
  readonly pid?: number;
}

const PAGE = 4096;
const RECORD_TYPE = 1;
const PAYLOAD = 28;

/** One context's buffer and counters. */
export class TraceContext {
  readonly spec: ContextSpec;
  readonly #ring: RingBuffer;
  readonly #writer: ReturnType<RingBuffer['writer']>;
  readonly #boundaryHi: number;
  readonly #boundaryLo: number;
  /** Branches this context selected. */
  seen = 0;

  constructor(spec: ContextSpec, boundary: bigint) {
    const budget = spec.budgetBytes ?? 64 * 1024;
    if (!Number.isFinite(budget) || budget < 2 * PAGE)
      throw new BtsError('ERR_BTS_ARGUMENT', `context ${spec.name}: budget ${budget} bytes is below two 4 KiB pages`);
    this.spec = spec;
    this.#ring = RingBuffer.create({ pageSize: PAGE, pageCount: Math.floor(budget / PAGE), mode: 'overwrite' });
    this.#writer = this.#ring.writer();
    this.#boundaryHi = Number(boundary >> 32n);
    this.#boundaryLo = Number(boundary & 0xffffffffn);
  }

  /** Bytes of buffer memory this context holds. */
  get budgetBytes(): number {
    return this.#ring.pageCount * PAGE;
  }

  /** Whether the context takes branch `i` run by task (tid, pid). */
  accepts(list: BranchList, i: number, tid: number, pid: number): boolean {
    const s = this.spec;
    if (s.tid !== undefined && s.tid !== tid) return false;
    if (s.pid !== undefined && s.pid !== pid) return false;
    if (s.cpu !== undefined && s.cpu !== list.cpu[i]) return false;
    const space = s.space ?? 'all';
    if (space === 'all') return true;
    const hi = list.fromHi[i]!;
    const kernel = hi > this.#boundaryHi || (hi === this.#boundaryHi && list.fromLo[i]! >= this.#boundaryLo);
    return space === 'kernel' ? kernel : !kernel;
  }

  /** Stores branch `i` (attributed to `tid`) in the ring, overwriting the oldest pages when full. */
  store(list: BranchList, i: number, tid: number): void {
    const w = this.#writer;
    const off = w.reserve(RECORD_TYPE, PAYLOAD);
    const v = w.view;
    v.setUint32(off, list.fromLo[i]!, true);
    v.setUint32(off + 4, list.fromHi[i]!, true);
    v.setUint32(off + 8, list.toLo[i]!, true);
    v.setUint32(off + 12, list.toHi[i]!, true);
    v.setUint32(off + 16, list.flags[i]! | (list.kind[i]! << 8), true);
    v.setInt32(off + 20, tid, true);
    v.setInt32(off + 24, list.cpu[i]!, true);
    w.commit();
    this.seen++;
  }

  /** What the buffer holds now, oldest first (a non-consuming snapshot), and how many were overwritten. */
  contents(): { branches: BranchList; lost: number } {
    this.#writer.flush();
    const snap = this.#ring.snapshot();
    const out = new BranchList(256);
    while (snap.next()) {
      const v = snap.view;
      const o = snap.offset;
      const packed = v.getUint32(o + 16, true);
      out.push(v.getUint32(o + 4, true), v.getUint32(o, true), v.getUint32(o + 12, true), v.getUint32(o + 8, true), {
        flags: packed & 0xff,
        kind: (BRANCH_KINDS[packed >> 8] ?? 'unknown') as BranchKind,
        tid: v.getInt32(o + 20, true),
        cpu: v.getInt32(o + 24, true),
      });
    }
    return { branches: out, lost: this.seen - out.length };
  }
}

/**
 * Routes one branch stream to many contexts. Feed branches (and sched_switch events) in time order; a branch's task
 * is its own tid when the source gave one, else the task last switched in on its CPU.
 */
export class BranchMultiplexer {
  readonly #contexts: TraceContext[];
  readonly #running = new Map<number, { tid: number; pid: number }>();
  readonly #pids = new Map<number, number>();

  constructor(specs: readonly ContextSpec[], options: { boundary?: bigint } = {}) {
    const names = new Set<string>();
    for (const s of specs) {
      if (names.has(s.name)) throw new BtsError('ERR_BTS_ARGUMENT', `two contexts are named ${s.name}`);
      names.add(s.name);
    }
    const boundary = options.boundary ?? X86_64_KERNEL_BOUNDARY;
    this.#contexts = specs.map((s) => new TraceContext(s, boundary));
  }

  /** Records that thread `tid` belongs to process `pid` (for pid contexts). */
  setProcess(tid: number, pid: number): void {
    this.#pids.set(tid, pid);
  }

  /** A sched_switch: `sw.tid` runs on `sw.cpu` from now on. */
  switchTask(sw: TaskSwitch): void {
    if (sw.pid !== undefined) this.#pids.set(sw.tid, sw.pid);
    this.#running.set(sw.cpu, { tid: sw.tid, pid: sw.pid ?? this.#pids.get(sw.tid) ?? -1 });
  }

  /** Routes branch `i` of `list` to every context that selects it. */
  push(list: BranchList, i: number): void {
    let tid = list.tid[i]!;
    let pid: number;
    if (tid < 0) {
      const run = this.#running.get(list.cpu[i]!);
      tid = run?.tid ?? -1;
      pid = run?.pid ?? -1;
    } else pid = this.#pids.get(tid) ?? -1;
    for (const c of this.#contexts) if (c.accepts(list, i, tid, pid)) c.store(list, i, tid);
  }

  /**
   * Routes a whole list, applying each of `switches` (sorted by time) before the first branch at or after its time
   * (a tie goes to the switch). Branches without a time (NaN) see every switch applied: feed such a stream branch by
   * branch with {@link push} and {@link switchTask} in its own order instead.
   */
  pushAll(list: BranchList, switches: readonly TaskSwitch[] = []): void {
    let s = 0;
    for (let i = 0; i < list.length; i++) {
      const t = list.time[i]!;
      while (s < switches.length && !(switches[s]!.time > t)) this.switchTask(switches[s++]!);
      this.push(list, i);
    }
  }

  /** The context named `name`. */
  context(name: string): TraceContext {
    const c = this.#contexts.find((x) => x.spec.name === name);
    if (c === undefined) throw new BtsError('ERR_BTS_ARGUMENT', `no context named ${name}`);
    return c;
  }

  /** Every context. */
  get contexts(): readonly TraceContext[] {
    return this.#contexts;
  }
}
