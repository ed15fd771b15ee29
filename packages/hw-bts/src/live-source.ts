/**
 * Branch traces as a live source of the evtrace agent ({@link EventSource} of @evtrace/trace-format): the branches
 * of one program, as `bts:branch` events in ftrace pages, into a session's ring buffer.
 *
 * Two backends. `hardware`: Branch Trace Store through the kernel (`perf_event_open` of the `intel_bts` PMU); the
 * source asks the kernel first and, when it refuses (a virtual machine, a CPU without BTS), fails to prepare with
 * the kernel's own answer. `qemu`: the program runs under QEMU user mode (`-d in_asm,exec,nochain`), a SOFTWARE
 * source: exact control flow of the real program, but no prediction flags and no kernel branches; its metadata
 * carries a `SOURCE` file saying so. Branches are delivered when the program ends (or the session stops it): the
 * capture's log or perf.data is read whole then.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import {
  compileRecordEncoder,
  type EventClass,
  type EventSource,
  FTRACE_COMMON_FIELDS_TEXT,
  FTRACE_PAGE_RECORD,
  HEADER_EVENT_TEXT,
  headerPageText,
  kernelPageLayout,
  type PageSink,
  packPages,
  parseFormatFile,
  type SourceCpuCounters,
  type TimedRecord,
} from '@evtrace/trace-format';
import { countPageRecords, globToRegExp, type PageCount } from '@evtrace/tracefs';
import type { BranchList } from './branch.ts';
import { BtsError } from './errors.ts';
import { decodePerfData } from './perf-data.ts';
import { describeProbe, probeBts, probeLbr } from './perf-event.ts';
import { captureQemu, parseQemuLog } from './qemu.ts';

/** Options of {@link BtsSource}. */
export interface BtsSourceOptions {
  /** The program and its arguments. */
  readonly command: readonly string[];
  /** `hardware` (BTS through the kernel) or `qemu` (software). */
  readonly backend: 'hardware' | 'qemu';
  /** Event patterns the session asked for: each must match `bts:branch`, the one event of this source. */
  readonly events?: readonly string[];
  /** Where the PMUs are listed. Default `/sys/bus/event_source/devices`. */
  readonly devices?: string;
}

/** The `bts:branch` class: evtrace's own (the kernel has no BTS tracepoint), one BTS record per event. */
export const BTS_BRANCH_FORMAT = `name: branch
ID: 2001
format:
${FTRACE_COMMON_FIELDS_TEXT}
\tfield:unsigned long from;\toffset:8;\tsize:8;\tsigned:0;
\tfield:unsigned long to;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned long flags;\toffset:24;\tsize:8;\tsigned:0;

print fmt: "from=%pS to=%pS flags=0x%lx", (void *)REC->from, (void *)REC->to, REC->flags
`;

/** What the metadata says of the QEMU backend. */
export const QEMU_SOURCE_LABEL =
  'evtrace bts: SOFTWARE source, the program run under QEMU user mode (exact control flow; no prediction flags, no kernel branches; not branch-trace hardware)';

const LAYOUT = kernelPageLayout(4096);
/** BTS flags word: bit 4 set = predicted. */
const PREDICTED = 1n << 4n;

/** The live branch source. */
export class BtsSource implements EventSource {
  readonly kind: string;
  readonly demo = false;
  readonly cpus: readonly number[] = [0];
  readonly pageSize = LAYOUT.pageSize;
  eventClasses: readonly EventClass[] = [];
  readonly #o: BtsSourceOptions;
  #work: string | undefined;
  #sink: PageSink | undefined;
  #abort: AbortController | undefined;
  #done: Promise<void> | undefined;
  #finished = false;
  #delivered = false;
  #pid = 0;
  #failure: BtsError | undefined;
  readonly #c = { events: 0, lost: 0, bytes: 0 };

  constructor(options: BtsSourceOptions) {
    this.#o = options;
    this.kind = options.backend === 'qemu' ? 'bts-qemu' : 'bts';
  }

  /** The kernel's answers for the hardware backend, one line each. */
  static probe(devices?: string): { ok: boolean; said: string } {
    const bts = probeBts(devices);
    return { ok: bts.ok, said: `${describeProbe(bts)}; ${describeProbe(probeLbr())}` };
  }

  prepare(): void {
    const o = this.#o;
    if (o.command.length === 0 || o.command[0] === '')
      throw new BtsError('ERR_BTS_ARGUMENT', 'a branch source needs the program to trace (-- PROGRAM ARGS...)');
    for (const pattern of o.events ?? []) {
      const colon = pattern.indexOf(':');
      const system = globToRegExp(colon < 0 ? pattern : pattern.slice(0, colon));
      const event = globToRegExp(colon < 0 ? '*' : pattern.slice(colon + 1));
      if (!system.test('bts') || !event.test('branch'))
        throw new BtsError('ERR_BTS_ARGUMENT', `unknown event '${pattern}': a branch source records bts:branch only`);
    }
    if (o.backend === 'hardware') {
      const p = BtsSource.probe(o.devices);
      if (!p.ok)
        throw new BtsError(
          'ERR_BTS_UNSUPPORTED',
          `no branch-trace hardware: ${p.said}. The software source (--source bts-qemu) runs the program under QEMU`,
        );
    }
    this.eventClasses = [parseFormatFile(BTS_BRANCH_FORMAT, { system: 'bts' })];
    this.#work = mkdtempSync(join(tmpdir(), 'evtrace-bts-source-'));
  }

  writeMetadata(dir: string): void {
    mkdirSync(join(dir, 'events', 'bts', 'branch'), { recursive: true });
    writeFileSync(join(dir, 'events', 'header_page'), headerPageText(LAYOUT));
    writeFileSync(join(dir, 'events', 'header_event'), HEADER_EVENT_TEXT);
    writeFileSync(join(dir, 'events', 'bts', 'branch', 'format'), BTS_BRANCH_FORMAT);
    writeFileSync(join(dir, 'buffer_subbuf_size_kb'), '4\n');
    writeFileSync(join(dir, 'trace_clock'), '[local] global\n');
    writeFileSync(join(dir, 'saved_cmdlines'), '');
    if (this.#o.backend === 'qemu') writeFileSync(join(dir, 'SOURCE'), `${QEMU_SOURCE_LABEL}\n`);
  }

  start(sinks: readonly PageSink[]): void {
    if (this.#work === undefined) throw new BtsError('ERR_BTS_ARGUMENT', 'BtsSource: prepare() before start()');
    if (this.#done !== undefined) throw new BtsError('ERR_BTS_ARGUMENT', 'the program was run already');
    this.#sink = sinks[0];
    this.#abort = new AbortController();
    const [program, ...args] = this.#o.command as [string, ...string[]];
    const finish = () => {
      this.#finished = true;
    };
    const fail = (error: unknown) => {
      this.#failure =
        error instanceof BtsError
          ? error
          : new BtsError('ERR_BTS_CAPTURE', `capture failed: ${(error as Error).message}`, {}, error);
      finish();
    };
    if (this.#o.backend === 'qemu') {
      this.#done = captureQemu(program, args, {
        log: join(this.#work, 'qemu.log'),
        stdio: 'ignore',
        signal: this.#abort.signal,
        onSpawn: (pid) => {
          this.#pid = pid;
        },
      }).then(finish, fail);
    } else {
      const out = join(this.#work, 'bts.perf.data');
      const child = spawn('perf', ['record', '-e', 'intel_bts//u', '-o', out, '--', program, ...args], {
        stdio: 'ignore',
        signal: this.#abort.signal,
      });
      this.#pid = child.pid ?? 0;
      this.#done = new Promise<void>((resolve) => {
        child.on('error', (error) => {
          if ((error as { name?: string }).name !== 'AbortError') fail(error);
          resolve();
        });
        child.on('close', () => {
          finish();
          resolve();
        });
      });
    }
  }

  poll(): number {
    if (this.#failure !== undefined) {
      const f = this.#failure;
      this.#failure = undefined;
      throw f;
    }
    if (!this.#finished || this.#delivered) return 0;
    return this.#deliver();
  }

  /** Reads the capture whole and writes its branches as pages. */
  #deliver(): number {
    this.#delivered = true;
    const sink = this.#sink!;
    const branches = this.#read();
    const encode = compileRecordEncoder(this.eventClasses[0]!);
    const base = process.hrtime.bigint();
    const records: TimedRecord[] = [];
    let bytes = 0;
    for (let i = 0; i < branches.length; i++) {
      const b = branches.at(i);
      const predicted = b.flags.includes('predicted') ? PREDICTED : 0n;
      const data = encode({ from: b.from, to: b.to, flags: predicted }, { common_pid: b.tid ?? this.#pid });
      // Capture order is branch order: one nanosecond apart keeps it through any merge by time.
      records.push({ tsNs: base + BigInt(i), data });
      bytes += data.length;
    }
    const pages = packPages(records, LAYOUT);
    const byType = new Float64Array(65536);
    const count: PageCount = { records: 0, dataBytes: 0, missed: false, corruptAt: -1 };
    let sent = 0;
    for (let at = 0; at < pages.length; at += LAYOUT.pageSize) {
      const page = pages.subarray(at, at + LAYOUT.pageSize);
      const n = countPageRecords(page, 0, LAYOUT, byType, count).records;
      if (sink.writeBytes(FTRACE_PAGE_RECORD, page, Number(page.readBigUInt64LE(0)))) sent += n;
      else this.#c.lost += n;
    }
    sink.flush();
    this.#c.events += sent;
    this.#c.bytes += bytes;
    return bytes;
  }

  #read(): BranchList {
    const work = this.#work!;
    if (this.#o.backend === 'qemu') {
      let text: string;
      try {
        text = readFileSync(join(work, 'qemu.log'), 'utf8');
      } catch (error) {
        throw new BtsError(
          'ERR_BTS_CAPTURE',
          `QEMU wrote no log for ${basename(this.#o.command[0]!)}: ${(error as NodeJS.ErrnoException).code}`,
          {},
          error,
        );
      }
      return parseQemuLog(text, { source: 'qemu.log' }).branches;
    }
    return decodePerfData(readFileSync(join(work, 'bts.perf.data'))).branches;
  }

  stop(): void {
    if (this.#done === undefined) return;
    // A program still running is stopped: what its capture holds so far is delivered.
    if (!this.#finished) {
      this.#abort?.abort();
      this.#finished = true;
    }
    if (!this.#delivered) {
      try {
        this.#deliver();
      } catch {
        // Nothing readable yet (the program was stopped before QEMU wrote its first block).
      }
    }
  }

  counters(): readonly SourceCpuCounters[] {
    return [{ cpu: 0, ...this.#c }];
  }

  close(): void {
    this.#abort?.abort();
    if (this.#work !== undefined) rmSync(this.#work, { recursive: true, force: true });
    this.#work = undefined;
  }
}
