/**
 * The demo source, for machines without tracefs or root: a synthetic producer of kmem, sched and mce events with the
 * layouts of Linux 6.18, and of branch records (`bts:branch`, evtrace's own event class: the kernel has no BTS
 * tracepoint), written as raw pages through the same pipeline as a recording (raw-pages directory, then
 * trace.dat or CTF). Every output says it is a demo: a `DEMO` file in the raw directory, the trace.dat `uname`
 * option, the CTF `env`, task names starting with `demo-`, and the recorder's result (`demo: true`).
 */
import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import {
  compileRecordEncoder,
  type EventClass,
  FTRACE_COMMON_FIELDS_TEXT,
  HEADER_EVENT_TEXT,
  headerPageText,
  kernelPageLayout,
  packPages,
  parseFormatFile,
  type TimedRecord,
} from '@evtrace/trace-format';
import { outputError } from '../errors.ts';
import { matchEvents, parseAvailableEvents } from '../instance/catalog.ts';
import type { RecordResult } from '../record/options.ts';
import { createOutputDir } from '../record/raw-dir.ts';

/** What every demo output carries to say it is one. */
export const DEMO_LABEL = 'evtrace demo: synthetic events, not recorded from a kernel';

/** Format files with the field layouts of Linux 6.18 (print formats shortened). */
const FORMATS: Record<string, string> = {
  'kmem:kmalloc': `name: kmalloc\nID: 658\nformat:\n${FTRACE_COMMON_FIELDS_TEXT}
\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;
\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;
\tfield:size_t bytes_req;\toffset:24;\tsize:8;\tsigned:0;
\tfield:size_t bytes_alloc;\toffset:32;\tsize:8;\tsigned:0;
\tfield:unsigned long gfp_flags;\toffset:40;\tsize:8;\tsigned:0;
\tfield:int node;\toffset:48;\tsize:4;\tsigned:1;

print fmt: "call_site=%pS ptr=%p bytes_req=%zu bytes_alloc=%zu gfp_flags=0x%lx node=%d", (void *)REC->call_site, REC->ptr, REC->bytes_req, REC->bytes_alloc, REC->gfp_flags, REC->node
`,
  'kmem:kfree': `name: kfree\nID: 657\nformat:\n${FTRACE_COMMON_FIELDS_TEXT}
\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;
\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;

print fmt: "call_site=%pS ptr=%p", (void *)REC->call_site, REC->ptr
`,
  'sched:sched_switch': `name: sched_switch\nID: 372\nformat:\n${FTRACE_COMMON_FIELDS_TEXT}
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;

print fmt: "prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%ld ==> next_comm=%s next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, REC->prev_state, REC->next_comm, REC->next_pid, REC->next_prio
`,
  'sched:sched_wakeup': `name: sched_wakeup\nID: 374\nformat:\n${FTRACE_COMMON_FIELDS_TEXT}
\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;

print fmt: "comm=%s pid=%d prio=%d target_cpu=%03d", REC->comm, REC->pid, REC->prio, REC->target_cpu
`,
  // include/trace/events/mce.h since PPIN and microcode were added (6.10), before the vendor data array.
  'mce:mce_record': `name: mce_record\nID: 97\nformat:\n${FTRACE_COMMON_FIELDS_TEXT}
\tfield:u64 mcgcap;\toffset:8;\tsize:8;\tsigned:0;
\tfield:u64 mcgstatus;\toffset:16;\tsize:8;\tsigned:0;
\tfield:u64 status;\toffset:24;\tsize:8;\tsigned:0;
\tfield:u64 addr;\toffset:32;\tsize:8;\tsigned:0;
\tfield:u64 misc;\toffset:40;\tsize:8;\tsigned:0;
\tfield:u64 synd;\toffset:48;\tsize:8;\tsigned:0;
\tfield:u64 ipid;\toffset:56;\tsize:8;\tsigned:0;
\tfield:u64 ip;\toffset:64;\tsize:8;\tsigned:0;
\tfield:u64 tsc;\toffset:72;\tsize:8;\tsigned:0;
\tfield:u64 ppin;\toffset:80;\tsize:8;\tsigned:0;
\tfield:u64 walltime;\toffset:88;\tsize:8;\tsigned:0;
\tfield:u32 cpu;\toffset:96;\tsize:4;\tsigned:0;
\tfield:u32 cpuid;\toffset:100;\tsize:4;\tsigned:0;
\tfield:u32 apicid;\toffset:104;\tsize:4;\tsigned:0;
\tfield:u32 socketid;\toffset:108;\tsize:4;\tsigned:0;
\tfield:u8 cs;\toffset:112;\tsize:1;\tsigned:0;
\tfield:u8 bank;\toffset:113;\tsize:1;\tsigned:0;
\tfield:u8 cpuvendor;\toffset:114;\tsize:1;\tsigned:0;
\tfield:u32 microcode;\toffset:116;\tsize:4;\tsigned:0;

print fmt: "CPU: %d, MCGc/s: %llx/%llx, MC%d: %016Lx, IPID: %016Lx, ADDR: %016Lx, MISC: %016Lx, SYND: %016Lx, RIP: %02x:<%016Lx>, TSC: %llx, PPIN: %llx, vendor: %u, CPUID: %x, time: %llu, socket: %u, APIC: %x, microcode: %x", REC->cpu, REC->mcgcap, REC->mcgstatus, REC->bank, REC->status, REC->ipid, REC->addr, REC->misc, REC->synd, REC->cs, REC->ip, REC->tsc, REC->ppin, REC->cpuvendor, REC->cpuid, REC->walltime, REC->socketid, REC->apicid, REC->microcode
`,
  // evtrace's own class, not a kernel tracepoint: one Branch Trace Store record (source, destination, and the
  // record's third quadword, whose bit 4 says the branch was predicted).
  'bts:branch': `name: branch\nID: 2001\nformat:\n${FTRACE_COMMON_FIELDS_TEXT}
\tfield:unsigned long from;\toffset:8;\tsize:8;\tsigned:0;
\tfield:unsigned long to;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned long flags;\toffset:24;\tsize:8;\tsigned:0;

print fmt: "from=%pS to=%pS flags=0x%lx", (void *)REC->from, (void *)REC->to, REC->flags
`,
};

/**
 * How often each event is drawn, relative to the others (1 when absent): machine checks are rare even on a
 * failing DIMM.
 */
const WEIGHTS: Record<string, number> = { 'mce:mce_record': 0.005 };

/** Memory-controller banks of an Intel server part (where corrected DRAM errors are reported). */
const MCE_BANKS = [7, 8, 13, 14];
/** Branches between a few kernel text addresses: [from, to]. */
const BRANCHES: [bigint, bigint][] = [
  [0xffffffff81a0125an, 0xffffffff81b2f0c0n],
  [0xffffffff81b2f11fn, 0xffffffff81c44e18n],
  [0xffffffff81c44e60n, 0xffffffff81b2f124n],
  [0xffffffff81d0a812n, 0xffffffff81a01230n],
];

/** The events the demo source produces. */
export const DEMO_EVENTS = Object.keys(FORMATS);

/** Options of {@link recordDemo}. */
export interface DemoOptions {
  readonly events: readonly string[];
  /** The raw-pages directory to create (its parent must exist). */
  readonly dir: string;
  /**
   * The directory is readable by every user (0755 less the umask). Default false: its owner only (0700), since
   * recordings hold kernel addresses.
   */
  readonly share?: boolean;
  /** Stops after this many ms. Default 1000. */
  readonly durationMs?: number;
  readonly signal?: AbortSignal;
  /** CPUs to simulate. Default 2. */
  readonly cpus?: number;
  /** Events per second per CPU. Default 20000. */
  readonly rate?: number;
  /** Seed of the pseudo-random producer. Default 1. */
  readonly seed?: number;
}

const LAYOUT = kernelPageLayout(4096);

const TASKS = [
  { pid: 4101, comm: 'demo-worker' },
  { pid: 4102, comm: 'demo-alloc' },
  { pid: 4103, comm: 'demo-net' },
  { pid: 4104, comm: 'demo-io' },
];
const CALL_SITES = [0xffffffff81a01230n, 0xffffffff81b2f0c0n, 0xffffffff81c44e18n, 0xffffffff81d0a7f4n];
const SIZES = [8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096];

/** xorshift32: a small deterministic generator. */
function random(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

/** One simulated CPU: its current task and its live allocations (freed later by kfree). */
class DemoCpu {
  readonly cpu: number;
  current: number;
  readonly live: bigint[] = [];
  nextPtr: bigint;
  constructor(cpu: number) {
    this.cpu = cpu;
    this.current = cpu % TASKS.length;
    this.nextPtr = 0xffff888100000000n + BigInt(cpu) * 0x10000000n;
  }
}

/** The metadata files of a demo raw-pages directory, as the recorder copies them from tracefs. */
function writeDemoMetadata(dir: string, names: readonly string[]): void {
  mkdirSync(join(dir, 'events'));
  writeFileSync(join(dir, 'events', 'header_page'), headerPageText(LAYOUT));
  writeFileSync(join(dir, 'events', 'header_event'), HEADER_EVENT_TEXT);
  for (const n of names) {
    const [system, event] = n.split(':') as [string, string];
    mkdirSync(join(dir, 'events', system, event), { recursive: true });
    writeFileSync(join(dir, 'events', system, event, 'format'), FORMATS[n]!);
  }
  writeFileSync(join(dir, 'buffer_subbuf_size_kb'), '4\n');
  writeFileSync(join(dir, 'trace_clock'), '[local] global\n');
  writeFileSync(join(dir, 'saved_cmdlines'), TASKS.map((t) => `${t.pid} ${t.comm}\n`).join(''));
  writeFileSync(join(dir, 'DEMO'), `${DEMO_LABEL}\n`);
}

/** Appends pages to a `cpuN.raw`; a failed write (a full disk) cuts the file back to its last whole page. */
function appendPages(fd: number, file: string, bytes: Uint8Array): void {
  try {
    for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
  } catch (error) {
    try {
      const size = fstatSync(fd).size;
      ftruncateSync(fd, size - (size % LAYOUT.pageSize));
    } catch {}
    throw outputError(file, error);
  }
}

/**
 * Produces synthetic events for the selected demo events into a raw-pages directory, in real time (so durations and
 * stops behave as in a recording). The result has the shape of a recording's, with no loss.
 *
 * @throws TracefsError `ERR_TRACEFS_EVENT` when a pattern matches no demo event; `ERR_TRACEFS_OUTPUT` when the
 * directory cannot be created.
 */
export async function recordDemo(options: DemoOptions): Promise<RecordResult> {
  const selected = matchEvents(parseAvailableEvents(DEMO_EVENTS.join('\n')), options.events);
  const names = selected.map((e) => `${e.system}:${e.event}`);
  createOutputDir(options.dir, options.share === true);
  const classes: EventClass[] = names.map((n) => parseFormatFile(FORMATS[n]!, { system: n.split(':')[0]! }));
  const encode = new Map(classes.map((c) => [c.name, compileRecordEncoder(c)]));
  try {
    writeDemoMetadata(options.dir, names);
  } catch (error) {
    // Nothing recorded yet: a full disk leaves nothing behind.
    rmSync(options.dir, { recursive: true, force: true });
    const path = (error as NodeJS.ErrnoException).path;
    throw outputError(typeof path === 'string' ? path : options.dir, error);
  }
  const cpuCount = options.cpus ?? 2;
  const rate = options.rate ?? 20_000;
  const rnd = random(options.seed ?? 1);
  const cpus = Array.from({ length: cpuCount }, (_, i) => new DemoCpu(i));
  const outs = cpus.map((c) => openSync(join(options.dir, `cpu${c.cpu}.raw`), 'w'));
  const counts = new Map(names.map((n) => [n, 0]));
  let pages = 0;
  let dataBytes = 0;
  let rawBytes = 0;
  const t0 = performance.now();
  let last = process.hrtime.bigint();
  const durationMs = options.durationMs ?? 1000;
  const weights = names.map((n) => WEIGHTS[n] ?? 1);
  const weightSum = weights.reduce((a, b) => a + b, 0);
  const pick = () => {
    let r = rnd() * weightSum;
    for (let i = 0; i < names.length - 1; i++) if ((r -= weights[i]!) < 0) return names[i]!;
    return names[names.length - 1]!;
  };
  const event = (c: DemoCpu, name: string, tsNs: bigint): Record<string, unknown> | undefined => {
    const task = TASKS[c.current]!;
    switch (name) {
      case 'mce:mce_record': {
        // A corrected memory read error as an Intel memory controller reports it: MCi_STATUS has VAL, MISCV and
        // ADDRV set, a corrected-error count of 1 and MCA code 0x009X (memory read, channel X); MISC says the
        // address is physical with 4 KiB granularity.
        const channel = BigInt(Math.floor(rnd() * 4));
        return {
          mcgcap: 0x1000c14n, // 20 banks, CMCI, threshold-based error status, software error recovery
          mcgstatus: 0n,
          status: 0x8c00004000010090n | channel,
          addr: 0x1a2b3c000n + BigInt(Math.floor(rnd() * 0x4000)) * 0x1000n,
          misc: 0x8cn,
          synd: 0n,
          ipid: 0n,
          ip: 0n,
          tsc: (tsNs * 5n) / 2n, // a 2.5 GHz invariant TSC
          ppin: 0x2b5e3f1a7c9d0e41n,
          walltime: BigInt(Math.floor(Date.now() / 1000)),
          cpu: c.cpu,
          cpuid: 0x50657, // family 6 model 0x55 stepping 7
          apicid: c.cpu * 2,
          socketid: 0,
          cs: 0,
          bank: MCE_BANKS[Math.floor(rnd() * MCE_BANKS.length)]!,
          cpuvendor: 0, // X86_VENDOR_INTEL
          microcode: 0x5003604,
        };
      }
      case 'bts:branch': {
        const [from, to] = BRANCHES[Math.floor(rnd() * BRANCHES.length)]!;
        return { from, to, flags: rnd() < 0.97 ? 0x10n : 0n };
      }
      case 'kmem:kmalloc': {
        const req = SIZES[Math.floor(rnd() * SIZES.length)]! - Math.floor(rnd() * 4);
        const ptr = c.nextPtr;
        c.nextPtr += 0x100n;
        c.live.push(ptr);
        const site = CALL_SITES[Math.floor(rnd() * CALL_SITES.length)]!;
        return {
          call_site: site,
          ptr,
          bytes_req: BigInt(req),
          bytes_alloc: BigInt(SIZES.find((s) => s >= req)!),
          gfp_flags: 0xcc0n,
          node: 0,
        };
      }
      case 'kmem:kfree': {
        const ptr = c.live.length > 0 ? c.live.splice(Math.floor(rnd() * c.live.length), 1)[0]! : 0n;
        return { call_site: CALL_SITES[Math.floor(rnd() * CALL_SITES.length)]!, ptr };
      }
      case 'sched:sched_switch': {
        const next = (c.current + 1 + Math.floor(rnd() * (TASKS.length - 1))) % TASKS.length;
        const fields = {
          prev_comm: task.comm,
          prev_pid: task.pid,
          prev_prio: 120,
          prev_state: rnd() < 0.5 ? 1n : 0n,
          next_comm: TASKS[next]!.comm,
          next_pid: TASKS[next]!.pid,
          next_prio: 120,
        };
        c.current = next;
        return fields;
      }
      default: {
        const woken = TASKS[Math.floor(rnd() * TASKS.length)]!;
        return { comm: woken.comm, pid: woken.pid, prio: 120, target_cpu: Math.floor(rnd() * cpuCount) };
      }
    }
  };
  try {
    for (;;) {
      const stop = options.signal?.aborted || performance.now() - t0 >= durationMs;
      const now = process.hrtime.bigint();
      const n = Math.max(1, Math.round((Number(now - last) / 1e9) * rate));
      for (const c of cpus) {
        const records: TimedRecord[] = [];
        for (let i = 0; i < n; i++) {
          const name = pick();
          const ts = last + ((now - last) * BigInt(i)) / BigInt(n);
          const pid = TASKS[c.current]!.pid;
          const data = encode.get(name)!(event(c, name, ts) as never, { common_pid: pid } as never);
          records.push({ tsNs: ts, data });
          counts.set(name, counts.get(name)! + 1);
          dataBytes += data.length + 4;
        }
        const bytes = packPages(records, LAYOUT);
        appendPages(outs[c.cpu]!, join(options.dir, `cpu${c.cpu}.raw`), bytes);
        pages += bytes.length / LAYOUT.pageSize;
        rawBytes += bytes.length;
      }
      last = now;
      if (stop) break;
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    for (const fd of outs) closeSync(fd);
  }
  let total = 0;
  for (const v of counts.values()) total += v;
  return {
    dir: options.dir,
    instance: 'demo',
    pageSize: LAYOUT.pageSize,
    events: counts,
    total,
    lost: cpus.map((c) => ({ cpu: c.cpu, overrun: 0, dropped: 0, commitOverrun: 0, missedPages: 0 })),
    pages,
    dataBytes,
    rawBytes,
    eventClasses: classes,
    userSpaceFilters: new Map(),
    priority: undefined,
    realtime: undefined,
    durationMs: performance.now() - t0,
    demo: true,
  };
}
