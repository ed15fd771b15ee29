import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { TraceEvent } from '@evtrace/trace-format';
import { afterAll, describe, expect, it } from 'vitest';
import { CommTracker } from './comm.ts';
import { compileRecordFilter } from './compile.ts';
import { parseFilter } from './parser.ts';
import { machineCpuIds, machineSymbols } from './testing/machine.ts';
import { drainRecords, identity, mark, type RawRecord } from './testing/recording.ts';
import { findTracefs, Instance } from './testing/tracefs.ts';

/**
 * The judge for semantics: the same events recorded into two instances at once, one filtered by the kernel and one
 * not; evtrace's predicate over the unfiltered recording must select exactly the kernel's events, in order, per CPU,
 * inside the window bounded by trace_marker writes. Records come from trace_pipe_raw, decoded by trace-format.
 */
const { tracefs, why } = findTracefs();
const TRACKING = [
  'sched/sched_switch',
  'sched/sched_wakeup',
  'sched/sched_wakeup_new',
  'sched/sched_process_fork',
  'sched/sched_process_exec',
  'task/task_rename',
  'task/task_newtask',
];

const MARGIN_NS = 50_000n;

/** `none`: the kernel selects nothing although plain string logic would (the char[16] end-match quirk). */
const CASES: { event: string; expr: string; none?: RegExp }[] = [
  { event: 'kmem/kmalloc', expr: 'bytes_req > 128 && node == 0 || bytes_req == 32' },
  { event: 'kmem/kmalloc', expr: '!(bytes_req < 64 || gfp_flags & 0x100) && bytes_alloc <= 0x1000' },
  { event: 'kmem/kmalloc', expr: 'CPU == 0 && bytes_req & 8 || CPU & CPUS{1} && bytes_req < 16' },
  { event: 'kmem/kmalloc', expr: 'COMM ~ "node*" || COMM == "sh" || comm ~ "*kworker*"' },
  { event: 'kmem/kmalloc', expr: 'COMM == "evt-renamed" || common_pid < 0' },
  {
    event: 'kmem/kmalloc',
    expr: 'call_site.function == alloc_fdtable || call_site.function != kfree && bytes_req == 11',
  },
  { event: 'sched/sched_process_exec', expr: 'filename ~ "*/ls" || filename ~ "/usr/*/c?t"' },
  {
    event: 'sched/sched_switch',
    expr: 'prev_comm ~ "*sh" || next_comm ~ "*/0"',
    none: /"prev_comm":"[^"]*sh"|"next_comm":"swapper\/0"/,
  },
  {
    event: 'sched/sched_switch',
    expr: 'prev_comm ~ "kworker*" || next_comm ~ "*sh*" || prev_state & 1 && next_pid != 0',
  },
  { event: 'sched/sched_switch', expr: 'prev_comm ~ "[a-m]*" && !(next_comm == "swapper/0") || next_comm ~ "*1"' },
];

function workload(): void {
  for (let i = 0; i < 4; i++) {
    spawnSync('/bin/sh', [
      '-c',
      'ls /proc > /dev/null; cat /proc/self/status > /dev/null; echo x | tr x y > /dev/null',
    ]);
    // A task that renames itself: its later events carry the new name.
    spawnSync('/bin/sh', [
      '-c',
      'printf evt-renamed > /proc/self/comm; cat /proc/self/status > /dev/null; ls / > /dev/null',
    ]);
  }
  for (let i = 0; i < 200; i++) readdirSync('/proc/self/fd');
}

describe.skipIf(!tracefs)(`selection parity with the kernel${why ? ` (skipped: ${why})` : ''}`, () => {
  const instances: Instance[] = [];
  afterAll(() => {
    for (const i of instances) i.remove();
  });
  const nrCpuIds = machineCpuIds() ?? 64;
  const symbols = machineSymbols();

  it.each(CASES)('$event: $expr', ({ event, expr, none }) => {
    const kernel = new Instance(tracefs!, 'filters-sel-k');
    instances.push(kernel);
    const plain = new Instance(tracefs!, 'filters-sel-u');
    instances.push(plain);
    const events = [...new Set([event, ...TRACKING, 'ftrace/print'])].filter((e) => e !== 'ftrace/print');
    for (const inst of [kernel, plain]) {
      writeFileSync(inst.file('tracing_on'), '0');
      // Large enough that a busy machine does not overwrite the window (16 MiB per CPU).
      writeFileSync(inst.file('buffer_size_kb'), '16384');
      writeFileSync(inst.file('events', event, 'enable'), '1');
    }
    for (const e of events) if (e !== event) writeFileSync(plain.file('events', e, 'enable'), '1');
    writeFileSync(kernel.file('events', event, 'filter'), expr);
    const tracker = new CommTracker();
    tracker.seedFromSavedCmdlines(readFileSync(`${tracefs!.root}/saved_cmdlines`, 'utf8'));
    // The kernel-filtered window encloses the unfiltered one: start A, start B ... stop B, stop A.
    writeFileSync(kernel.file('tracing_on'), '1');
    writeFileSync(plain.file('tracing_on'), '1');
    workload();
    mark(kernel, 'evtrace-start');
    mark(plain, 'evtrace-start');
    workload();
    mark(plain, 'evtrace-stop');
    mark(kernel, 'evtrace-stop');
    writeFileSync(plain.file('tracing_on'), '0');
    writeFileSync(kernel.file('tracing_on'), '0');
    const lost = [kernel, plain].some((inst) =>
      readdirSync(inst.file('per_cpu')).some((cpu) =>
        /(overrun|dropped events): [1-9]/.test(readFileSync(inst.file('per_cpu', cpu, 'stats'), 'utf8')),
      ),
    );
    expect(lost, 'a recording lost events: the comparison would be meaningless').toBe(false);

    const withMarkers = [...events, 'ftrace/print'];
    const plainRecords = drainRecords(plain, withMarkers);
    const kernelRecords = drainRecords(kernel, withMarkers);
    const markerTime = (records: RawRecord[], text: string) =>
      records.find((r) => r.eventClass.name === 'ftrace:print' && String(r.fields.buf).startsWith(text))!.tsNs;
    const from = markerTime(plainRecords, 'evtrace-start');
    const to = markerTime(plainRecords, 'evtrace-stop');

    const eventClass = plainRecords.find((r) => r.eventClass.name === event.replace('/', ':'))?.eventClass;
    expect(eventClass, `no ${event} events recorded`).toBeDefined();
    const filter = parseFilter(expr, eventClass!, { nrCpuIds, ...(symbols ? { symbols } : {}) });
    const predicate = compileRecordFilter(filter, eventClass!, { nrCpuIds });
    const selected = new Map<number, string[]>();
    let inWindow = 0;
    let naive = 0;
    for (const r of plainRecords) {
      const asEvent: TraceEvent = {
        tsNs: r.tsNs,
        cpu: r.cpu,
        eventClass: r.eventClass,
        fields: r.fields,
        scopes: { common: r.common },
      };
      if (r.eventClass === eventClass && r.tsNs > from && r.tsNs < to) {
        inWindow++;
        if (none?.test(identity(r))) naive++;
        const view = new DataView(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength);
        if (predicate(view, r.start, r.length, r.cpu, tracker.resolve(asEvent))) {
          const list = selected.get(r.cpu) ?? [];
          list.push(identity(r));
          selected.set(r.cpu, list);
        }
      }
      tracker.observe(asEvent);
    }
    const kept = new Map<number, string[]>();
    const keptInside: RawRecord[] = [];
    for (const r of kernelRecords) {
      if (r.eventClass.name !== eventClass!.name) continue;
      const list = kept.get(r.cpu) ?? [];
      list.push(identity(r));
      kept.set(r.cpu, list);
      // Well inside the unfiltered window (the two buffers stamp the same event a few µs apart).
      if (r.tsNs > from + MARGIN_NS && r.tsNs < to - MARGIN_NS) keptInside.push(r);
    }
    let total = 0;
    for (const [cpu, ours] of selected) {
      total += ours.length;
      const theirs = kept.get(cpu) ?? [];
      // Ours must appear in the kernel's list contiguously: nothing the kernel kept inside the window is missing.
      const at = theirs.findIndex((_, i) => ours.every((id, k) => theirs[i + k] === id));
      if (at < 0) {
        const first = theirs.indexOf(ours[0]!);
        const k = ours.findIndex((id, j) => theirs[first + j] !== id);
        console.log(
          `CPU ${cpu} diverges at ${k}: ours ${ours[k]} kernel ${theirs[first + k]} (prev ours ${ours[k - 1]})`,
        );
      }
      expect(
        at,
        `CPU ${cpu}: user-space selection of ${ours.length} is not the kernel's (${theirs.length})`,
      ).toBeGreaterThanOrEqual(0);
    }
    for (const r of keptInside) {
      expect(selected.get(r.cpu) ?? [], `the kernel kept an event we rejected on CPU ${r.cpu}`).toContain(identity(r));
    }
    console.log(`${event} ${JSON.stringify(expr)}: ${inWindow} in window, ${total} selected by both`);
    if (none) {
      expect(total).toBe(0);
      expect(naive, 'events a naive end match would select').toBeGreaterThan(0);
    } else {
      expect(total).toBeGreaterThan(0);
      expect(total).toBeLessThan(inWindow);
    }
  });
});
