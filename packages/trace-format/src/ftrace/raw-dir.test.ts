import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import type { TraceEvent } from '../model/types.ts';
import { type Capture, captureRawPages, type KernelEvent, kernelEvents, smallWorkload } from '../testing/capture.ts';
import { expectSameAsReport, reportRaw } from '../testing/tracecmd.ts';
import { FUZZ_BUDGET_MS, findTracefs, hasTool, LIVE_TIMEOUT_MS } from '../testing/tracefs.ts';
import { cpuEvents, EventTable } from './events.ts';
import { compilePrintFormat } from './print-fmt.ts';
import { listRawCpuFiles, openRawPagesDir, RAW_FINALIZING_FILE, RAW_HEAD_ROOM_FILE } from './raw-dir.ts';
import { writeTraceDat } from './tracedat/write-events.ts';

function sameValue(ours: unknown, theirs: string, size: number): boolean {
  if (typeof ours === 'string') return ours === theirs;
  if (typeof ours === 'number' || typeof ours === 'bigint') {
    const dec = /\((-?\d+)\)$/.exec(theirs);
    const hex = /^0x([0-9a-f]+)$/.exec(theirs);
    const v = dec !== null ? BigInt(dec[1]!) : hex !== null ? BigInt(`0x${hex[1]}`) : undefined;
    return v !== undefined && BigInt.asUintN(size * 8, BigInt(ours)) === BigInt.asUintN(size * 8, v);
  }
  return false;
}

function compare(ours: TraceEvent[], theirs: KernelEvent[]): void {
  const key = (ts: bigint, cpu: number) => `${ts}/${cpu}`;
  const sortedTheirs = [...theirs].sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : a.cpu - b.cpu));
  expect(ours.map((e) => key(e.tsNs, e.cpu!))).toEqual(sortedTheirs.map((e) => key(e.ts, e.cpu)));
  ours.forEach((e, i) => {
    const k = sortedTheirs[i]!;
    expect(e.eventClass.id).toBe(k.id);
    expect(e.eventClass.ftrace?.event).toBe(k.name);
    expect(e.scopes?.['event.context']?.common_pid).toBe(k.pid);
    for (const f of e.eventClass.ftrace!.fields) {
      if (f.common) continue;
      const text = k.fields.get(f.name);
      expect(text, `${k.name}.${f.name} printed by the kernel`).toBeDefined();
      expect(sameValue(e.fields[f.name], text!, f.size), `${k.name}.${f.name}: ${e.fields[f.name]} vs ${text}`).toBe(
        true,
      );
    }
  });
}

const tracefs = findTracefs();
const root = process.getuid?.() === 0 && 'path' in tracefs ? tracefs.path : undefined;
const why = root === undefined ? ('why' in tracefs ? tracefs.why : 'not root') : '';

describe.skipIf(root === undefined)(
  `raw pages from a private tracefs instance${why ? ` (skipped: ${why})` : ''}`,
  { timeout: LIVE_TIMEOUT_MS },
  () => {
    let first: Capture | undefined;

    it('decode to the same events as the instance trace file (4 KiB sub-buffers)', async () => {
      const c = (first = await captureRawPages(
        root!,
        ['kmem/kmalloc', 'sched/sched_switch', 'sched/sched_process_exec'],
        smallWorkload,
      ));
      const reader = openRawPagesDir(c.dir);
      expect(reader.metadata.page.pageSize).toBe(4096);
      const ours = [...reader.events()];
      expect(ours.length).toBeGreaterThan(20);
      compare(ours, kernelEvents(c));
      expect(reader.warnings).toEqual([]);
    });

    it('render print fmt as the kernel does in its trace file, for a dozen kinds of events', async () => {
      const events = [
        'kmem/kmalloc',
        'kmem/kfree',
        'kmem/kmem_cache_alloc',
        'kmem/kmem_cache_free',
        'kmem/mm_page_alloc',
        'sched/sched_switch',
        'sched/sched_wakeup',
        'sched/sched_process_exec',
        'sched/sched_process_fork',
        'sched/sched_process_exit',
        'timer/hrtimer_start',
        'timer/timer_start',
        'irq/softirq_entry',
        'workqueue/workqueue_queue_work',
        'signal/signal_generate',
      ];
      const c = await captureRawPages(root!, events, smallWorkload);
      const reader = openRawPagesDir(c.dir);
      const kallsyms = reader.metadata.kallsyms();
      const kernel = c.plainText
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('#'))
        .map((l) => /^\s*.*-\d+\s+\[(\d+)\]\s+\S+\s+(\d+)\.(\d+): (\w+): (.*)$/.exec(l))
        .map((m) => ({ cpu: Number(m![1]), name: m![4]!, body: m![5]! }));
      const ours = [...reader.events()];
      const key = (cpu: number, name: string) => `${cpu} ${name}`;
      // Same multiset order per CPU: the kernel's file interleaves CPUs by time, as evtrace does.
      const byCpu = (list: { cpu: number; name: string; body: string }[]) =>
        [0, 1, 2, 3].map((cpu) => list.filter((e) => e.cpu === cpu));
      const printers = new Map<unknown, ReturnType<typeof compilePrintFormat>>();
      const rendered = ours.map((e) => {
        if (!printers.has(e.eventClass)) printers.set(e.eventClass, compilePrintFormat(e.eventClass));
        return {
          cpu: e.cpu!,
          name: e.eventClass.ftrace!.event,
          body: printers.get(e.eventClass)?.(e, kallsyms, 'kernel') ?? '',
        };
      });
      const mine = byCpu(rendered);
      const theirs = byCpu(kernel);
      let compared = 0;
      const kinds = new Set<string>();
      mine.forEach((list, cpu) => {
        expect(list.map((e) => key(e.cpu, e.name))).toEqual(theirs[cpu]!.map((e) => key(e.cpu, e.name)));
        list.forEach((e, i) => {
          if (e.body === '') return; // a format beyond the evaluator
          expect(e.body, `${e.name} on CPU ${cpu}`).toBe(theirs[cpu]![i]!.body);
          compared++;
          kinds.add(e.name);
        });
      });
      expect(compared).toBeGreaterThan(20);
      expect(kinds.size).toBeGreaterThanOrEqual(5);
    });

    it('never fail with anything but a TraceFormatError on mutated real pages, strict or lenient', () => {
      const c = first!;
      const reader = openRawPagesDir(c.dir);
      const table = new EventTable(reader.metadata);
      const pages = Buffer.concat([0, 1].map((cpu) => readFileSync(join(c.dir, `cpu${cpu}.raw`))));
      fc.assert(
        fc.property(
          fc.array(fc.tuple(fc.nat(pages.length - 1), fc.integer({ min: 0, max: 255 })), {
            minLength: 1,
            maxLength: 16,
          }),
          fc.boolean(),
          (edits, lenient) => {
            const bytes = Buffer.from(pages);
            for (const [pos, v] of edits) bytes[pos] = v;
            const warnings: string[] = [];
            try {
              let n = 0;
              for (const _ of cpuEvents(
                reader.metadata,
                table,
                { cpu: 0, bytes, file: 'cpu0.raw' },
                { lenient, warn: (w) => warnings.push(w) },
              ))
                n++;
              expect(n).toBeLessThanOrEqual(bytes.length / 8);
            } catch (e) {
              expect(lenient).toBe(false);
              expect(e).toBeInstanceOf(TraceFormatError);
              expect((e as Error).message).toMatch(/^cpu0\.raw: byte \d+: /);
            }
          },
        ),
        { numRuns: 200, interruptAfterTimeLimit: FUZZ_BUDGET_MS },
      );
    });

    it('keep every whole page before a cut in a cpuN.raw and name the cut; strictly, the cut is an error', () => {
      const c = first!;
      const original = openRawPagesDir(c.dir);
      const key = (e: TraceEvent) => `${e.cpu} ${e.tsNs} ${e.eventClass.name}`;
      const all = [...original.events()].map(key);
      const pageSize = original.metadata.page.pageSize;
      const dir = mkdtempSync(join(tmpdir(), 'evtrace-cut-'));
      cpSync(c.dir, dir, { recursive: true });
      const sizes = [0, 1].map((cpu) => readFileSync(join(c.dir, `cpu${cpu}.raw`)).length);
      fc.assert(
        fc.property(fc.nat(1), fc.nat(), (cpu, pos) => {
          const file = join(dir, `cpu${cpu}.raw`);
          const at = pos % (sizes[cpu]! + 1);
          writeFileSync(file, readFileSync(join(c.dir, `cpu${cpu}.raw`)).subarray(0, at));
          // What the kernel's trace file shows from the whole pages before the cut.
          const whole = at - (at % pageSize);
          const kept = [...original.cpuPages()].find((p) => p.cpu === cpu)!;
          const before = [
            ...cpuEvents(
              original.metadata,
              new EventTable(original.metadata),
              { ...kept, bytes: (kept.bytes as Buffer).subarray(0, whole) },
              { warn: () => {} },
            ),
          ].map(key);
          const lenient = openRawPagesDir(dir, { lenient: true });
          const got = [...lenient.events()].map(key);
          expect(got.filter((k) => !k.startsWith(`${cpu} `))).toEqual(all.filter((k) => !k.startsWith(`${cpu} `)));
          expect(got.filter((k) => k.startsWith(`${cpu} `))).toEqual(before);
          if (whole === at) {
            expect([...openRawPagesDir(dir).events()].map(key)).toEqual(got);
          } else {
            const named = `${file}: byte ${whole}: the file ends inside a page (${at - whole} of its ${pageSize} bytes)`;
            expect(lenient.warnings).toContain(
              `${named}; CPU ${cpu}: the ${whole / pageSize} whole pages before it kept`,
            );
            expect(() => [...openRawPagesDir(dir).events()]).toThrow(named);
          }
          writeFileSync(file, readFileSync(join(c.dir, `cpu${cpu}.raw`)));
        }),
        { numRuns: 25, interruptAfterTimeLimit: FUZZ_BUDGET_MS },
      );
      rmSync(dir, { recursive: true, force: true });
    });

    it('skip the head room before the pages, and read a file being finalized only where finalizing says', () => {
      const c = first!;
      const want = [...openRawPagesDir(c.dir).events()].map((e) => [e.tsNs, e.cpu, e.fields]);
      expect(want.length).toBeGreaterThan(20);
      const dir = mkdtempSync(join(tmpdir(), 'evtrace-headroom-'));
      cpSync(c.dir, dir, { recursive: true });
      const room = 3 * 4096;
      writeFileSync(join(dir, RAW_HEAD_ROOM_FILE), `${room}\n`);
      // Not zeros: a reader that read the room as pages would fail or invent events.
      const junk = Buffer.alloc(room, 0xa5);
      const pages = [0, 1].map((cpu) => readFileSync(join(c.dir, `cpu${cpu}.raw`)));
      for (const cpu of [0, 1]) writeFileSync(join(dir, `cpu${cpu}.raw`), Buffer.concat([junk, pages[cpu]!]));
      const read = () => [...openRawPagesDir(dir).events()].map((e) => [e.tsNs, e.cpu, e.fields]);
      expect(read()).toEqual(want);
      // CPU 1's file with a trace.dat head written over its room and other pages appended after its own.
      const end = room + pages[1]!.length;
      writeFileSync(join(dir, 'cpu1.raw'), Buffer.concat([junk, pages[1]!, pages[0]!]));
      writeFileSync(join(dir, RAW_FINALIZING_FILE), `1 ${room} ${end}\n`);
      expect(listRawCpuFiles(dir).map((f) => [f.cpu, f.start, f.end])).toEqual([
        [0, room, undefined],
        [1, room, end],
      ]);
      expect(read()).toEqual(want);
      writeFileSync(join(dir, RAW_FINALIZING_FILE), `1 ${room}\n`);
      expect(() => openRawPagesDir(dir)).toThrow(/bad finalizing "1 12288"/);
    });

    it('decode with 16 KiB sub-buffers, the size taken from buffer_subbuf_size_kb', async () => {
      const c = await captureRawPages(root!, ['kmem/kmalloc', 'sched/sched_switch'], smallWorkload, 16);
      const reader = openRawPagesDir(c.dir);
      expect(reader.metadata.page.pageSize).toBe(16384);
      const events = [...reader.events()];
      compare(events, kernelEvents(c));
      if (hasTool('trace-cmd')) {
        // Written as trace.dat with the same page size, trace-cmd reads the same events.
        const dat = join(c.dir, 'p16.dat');
        const meta = reader.metadata;
        writeTraceDat(dat, reader.eventClasses, events, {
          pageSize: meta.page.pageSize,
          cmdlines: meta.cmdlines,
          ...(meta.kallsymsText !== undefined ? { kallsyms: meta.kallsymsText } : {}),
        });
        expectSameAsReport(events, reportRaw(dat), meta.kallsyms());
      }
    });

    it('reports the events an overwriting buffer lost, as the page flags say, and still matches the trace file', async () => {
      const c = await captureRawPages(
        root!,
        ['kmem/kmalloc'],
        () => {
          for (let i = 0; i < 6; i++) smallWorkload();
        },
        undefined,
        8,
      );
      const overrun = [...c.stats]
        .filter(([, text]) => Number(/^overrun: (\d+)/m.exec(text)?.[1]) > 0)
        .map(([cpu]) => cpu);
      expect(overrun.length).toBeGreaterThan(0);
      const reader = openRawPagesDir(c.dir);
      compare([...reader.events()], kernelEvents(c));
      for (const cpu of overrun) {
        expect(reader.warnings.some((w) => new RegExp(`CPU ${cpu}: .* events lost before this page`).test(w))).toBe(
          true,
        );
      }
    });

    it('reports a corrupt page with file and offset, and in lenient mode keeps every other page', async () => {
      const c = await captureRawPages(root!, ['kmem/kmalloc'], () => {
        for (let i = 0; i < 20; i++) smallWorkload();
      });
      const cpuFile = ['cpu0.raw', 'cpu1.raw']
        .map((n) => join(c.dir, n))
        .sort((a, b) => readFileSync(b).length - readFileSync(a).length)[0]!;
      const bytes = readFileSync(cpuFile);
      expect(bytes.length).toBeGreaterThanOrEqual(2 * c.pageSize);
      const before = [...openRawPagesDir(c.dir).events()];
      // Claim more data than a page can hold in the first page's commit word.
      bytes.writeUInt32LE(0xffff, 8);
      writeFileSync(cpuFile, bytes);
      expect(() => [...openRawPagesDir(c.dir).events()]).toThrow(TraceFormatError);
      expect(() => [...openRawPagesDir(c.dir).events()]).toThrow(new RegExp(`${cpuFile}: byte 8: commit says`));
      // A broken format fails the directory, or with lenient leaves that event out.
      const formatFile = join(c.dir, 'events', 'kmem', 'kmalloc', 'format');
      const format = readFileSync(formatFile, 'utf8');
      writeFileSync(formatFile, format.replace('offset:8;', 'offset:x;'));
      expect(() => openRawPagesDir(c.dir)).toThrow(/kmalloc\/format:\d+:1: malformed field line/);
      const noFormat = openRawPagesDir(c.dir, { lenient: true });
      expect(noFormat.warnings[0]).toMatch(/malformed field line.*; event left out/);
      expect(noFormat.eventClasses.length).toBe(0);
      writeFileSync(formatFile, format);
      const lenient = openRawPagesDir(c.dir, { lenient: true });
      const after = [...lenient.events()];
      expect(lenient.warnings.some((w) => w.includes('rest of the page skipped'))).toBe(true);
      const firstPageTs = new Set(before.filter((e) => !after.includes(e)).map((e) => e.tsNs));
      expect(after.length).toBeLessThan(before.length);
      expect(after.length).toBeGreaterThan(0);
      expect(firstPageTs.size).toBeGreaterThan(0);
    });
  },
);

describe('listRawCpuFiles', () => {
  it('takes any head_room and finalizing text either as numbers or as a TraceFormatError naming the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'evtrace-extents-'));
    for (const cpu of [0, 1, 3]) writeFileSync(join(dir, `cpu${cpu}.raw`), Buffer.alloc(0));
    fc.assert(
      fc.property(fc.option(fc.string()), fc.option(fc.string()), (room, finalizing) => {
        for (const [name, text] of [
          [RAW_HEAD_ROOM_FILE, room],
          [RAW_FINALIZING_FILE, finalizing],
        ] as const) {
          if (text === null) rmSync(join(dir, name), { force: true });
          else writeFileSync(join(dir, name), text);
        }
        try {
          const files = listRawCpuFiles(dir);
          expect(files.map((f) => f.cpu)).toEqual([0, 1, 3]);
          for (const f of files) {
            expect(Number.isSafeInteger(f.start) && f.start >= 0).toBe(true);
            if (f.end !== undefined) expect(Number.isSafeInteger(f.end)).toBe(true);
          }
        } catch (e) {
          expect(e).toBeInstanceOf(TraceFormatError);
          expect((e as TraceFormatError).message).toMatch(/bad (head_room|finalizing) /);
          expect((e as TraceFormatError).message).toContain(dir);
        }
      }),
      { numRuns: 300 },
    );
    writeFileSync(join(dir, RAW_HEAD_ROOM_FILE), '8192\n');
    writeFileSync(join(dir, RAW_FINALIZING_FILE), '3 8192 20480\n');
    expect(listRawCpuFiles(dir).map((f) => [f.cpu, f.start, f.end])).toEqual([
      [0, 8192, undefined],
      [1, 8192, undefined],
      [3, 8192, 20480],
    ]);
  });
});
