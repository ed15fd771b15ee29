/**
 * The demo source of the evtrace agent: synthetic events of the demo catalogue ({@link DEMO_EVENTS}) as ftrace
 * pages, delivered into the agent's ring buffers like the kernel source's, for machines without root or tracefs.
 * Its metadata and event classes are the demo recorder's own (so a trace-shot reads exactly like `record --demo`);
 * field values are drawn per field type, at a steady rate in real time.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  compileRecordEncoder,
  type EventClass,
  type EventSource,
  type FieldValue,
  FTRACE_PAGE_RECORD,
  kernelPageLayout,
  type PageSink,
  packPages,
  type RecordEncoder,
  type SourceCpuCounters,
  type TimedRecord,
} from '@evtrace/trace-format';
import { outputError, TracefsError } from '../errors.ts';
import { countPageRecords, type PageCount } from '../pages/pages.ts';
import { recordDemo } from './record-demo.ts';

/** Options of {@link DemoSource}. */
export interface DemoSourceOptions {
  readonly events: readonly string[];
  /** Simulated CPUs. Default 2. */
  readonly cpus?: number;
  /** Events per second per CPU. Default 5000. */
  readonly rate?: number;
  /** Seed of the generator. Default 1. */
  readonly seed?: number;
}

const LAYOUT = kernelPageLayout(4096);
/** At most this much time is produced by one poll: a stalled loop does not come back to a flood. */
const MAX_CATCH_UP_NS = 200_000_000n;
const PIDS = [4101, 4102, 4103, 4104];

type Gen = () => FieldValue;

/** A value generator for one field, from its C type and size. */
function generator(name: string, cType: string, size: number, signed: boolean, rnd: () => number): Gen {
  if (/\bchar\b/.test(cType) && (cType.includes('[') || cType.includes('*'))) {
    const names = ['demo-worker', 'demo-alloc', 'demo-net', 'demo-io'];
    return () => names[Math.floor(rnd() * names.length)]!;
  }
  // Addresses look like kernel text and slab addresses; everything else is a small number.
  if (size === 8 && /call_site|ptr|addr|^from$|^to$|^ip$/.test(name))
    return /ptr|addr/.test(name)
      ? () => 0xffff888100000000n + BigInt(Math.floor(rnd() * 0x100000)) * 0x40n
      : () => 0xffffffff81000000n + BigInt(Math.floor(rnd() * 0x1000000));
  if (size === 8) return () => BigInt(Math.floor(rnd() * 4096));
  return () => Math.floor(rnd() * Math.min(4096, 2 ** (size * 8 - (signed ? 1 : 0))));
}

interface Producer {
  readonly encode: RecordEncoder;
  readonly fields: readonly [string, Gen][];
}

/** The live demo source. */
export class DemoSource implements EventSource {
  readonly kind = 'demo';
  readonly demo = true;
  cpus: readonly number[] = [];
  readonly pageSize = LAYOUT.pageSize;
  eventClasses: readonly EventClass[] = [];
  readonly #options: DemoSourceOptions;
  #metaDir: string | undefined;
  #producers: Producer[] = [];
  #sinks: readonly PageSink[] = [];
  #counters: { events: number; lost: number; bytes: number; lastTs: number }[] = [];
  #last = 0n;
  #rnd: () => number;
  #running = false;
  readonly #byType = new Float64Array(65536);
  readonly #count: PageCount = { records: 0, dataBytes: 0, missed: false, corruptAt: -1 };

  constructor(options: DemoSourceOptions) {
    this.#options = options;
    let s = (options.seed ?? 1) >>> 0 || 1;
    this.#rnd = () => {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      return (s >>> 0) / 2 ** 32;
    };
  }

  async prepare(): Promise<void> {
    const n = this.#options.cpus ?? 2;
    if (!Number.isInteger(n) || n < 1 || n > 1024)
      throw new TracefsError('ERR_TRACEFS_SETTING', `cpus must be 1..1024, not ${n}`);
    // The demo recorder writes the metadata and gives the classes (its one instant of pages is not used).
    const root = mkdtempSync(join(tmpdir(), 'evtrace-demo-source-'));
    const dir = join(root, 'meta');
    try {
      this.eventClasses = (
        await recordDemo({ events: this.#options.events, dir, durationMs: 0, cpus: 1 })
      ).eventClasses;
    } catch (error) {
      rmSync(root, { recursive: true, force: true });
      throw error;
    }
    this.#metaDir = dir;
    this.cpus = Array.from({ length: n }, (_, i) => i);
    this.#producers = this.eventClasses.map((c) => ({
      encode: compileRecordEncoder(c),
      fields: (c.ftrace?.fields ?? [])
        .filter((f) => !f.common)
        .map((f) => [f.name, generator(f.name, f.cType, f.size, f.signed, this.#rnd)] as [string, Gen]),
    }));
  }

  writeMetadata(dir: string): void {
    const from = this.#metaDir!;
    try {
      for (const e of readdirSync(from, { withFileTypes: true, recursive: true })) {
        const rel = join(e.parentPath, e.name).slice(from.length + 1);
        if (/^cpu\d+\.raw$/.test(rel)) continue;
        if (e.isDirectory()) mkdirSync(join(dir, rel), { recursive: true });
        else copyFileSync(join(from, rel), join(dir, rel));
      }
    } catch (error) {
      throw outputError(dir, error);
    }
  }

  start(sinks: readonly PageSink[]): void {
    if (this.#producers.length === 0)
      throw new TracefsError('ERR_TRACEFS_SETTING', 'DemoSource: await prepare() before start()');
    this.#sinks = sinks;
    this.#counters = sinks.map(() => ({ events: 0, lost: 0, bytes: 0, lastTs: 0 }));
    this.#last = process.hrtime.bigint();
    this.#running = true;
  }

  poll(): number {
    if (!this.#running) return 0;
    const now = process.hrtime.bigint();
    const from = now - this.#last > MAX_CATCH_UP_NS ? now - MAX_CATCH_UP_NS : this.#last;
    const n = Math.floor((Number(now - from) / 1e9) * (this.#options.rate ?? 5000));
    if (n === 0) return 0;
    this.#last = now;
    let fastest = 0;
    const rnd = this.#rnd;
    for (let i = 0; i < this.#sinks.length; i++) {
      const records: TimedRecord[] = [];
      let bytes = 0;
      for (let k = 0; k < n; k++) {
        const p = this.#producers[Math.floor(rnd() * this.#producers.length)]!;
        const fields: Record<string, FieldValue> = {};
        for (const [name, gen] of p.fields) fields[name] = gen();
        const data = p.encode(fields, { common_pid: PIDS[Math.floor(rnd() * PIDS.length)]! });
        records.push({ tsNs: from + ((now - from) * BigInt(k)) / BigInt(n), data });
        bytes += data.length + 4;
      }
      const pages = packPages(records, LAYOUT);
      const c = this.#counters[i]!;
      const sink = this.#sinks[i]!;
      for (let at = 0; at < pages.length; at += LAYOUT.pageSize) {
        const page = pages.subarray(at, at + LAYOUT.pageSize);
        const ts = Math.max(c.lastTs, Number(page.readBigUInt64LE(0)));
        c.lastTs = ts;
        const inPage = countPageRecords(page, 0, LAYOUT, this.#byType, this.#count).records;
        if (sink.writeBytes(FTRACE_PAGE_RECORD, page, ts)) c.events += inPage;
        else c.lost += inPage;
      }
      c.bytes += bytes;
      sink.flush();
      fastest = Math.max(fastest, bytes);
    }
    return fastest;
  }

  stop(): void {
    this.poll();
    this.#running = false;
  }

  counters(): readonly SourceCpuCounters[] {
    return this.#counters.map((c, cpu) => ({ cpu, events: c.events, lost: c.lost, bytes: c.bytes }));
  }

  close(): void {
    this.#running = false;
    if (this.#metaDir !== undefined) rmSync(join(this.#metaDir, '..'), { recursive: true, force: true });
    this.#metaDir = undefined;
  }
}
