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

interface Verdict {
  readonly inWindow: number;
  readonly total: number;
  readonly naive: number;
  readonly problems: readonly string[];
}

/**
 * Records once: one unfiltered instance with the filters' events and the task-name sources, and one instance per
 * filter with the kernel filter set. Then compares, for each filter, evtrace's selection over the unfiltered
 * recording with what its kernel instance kept.
 */
function session(
  cases: readonly { event: string; expr: string; none?: RegExp }[],
  instances: Instance[],
  options: { nrCpuIds: number; symbols: ReturnType<typeof machineSymbols> },
): Verdict[] {
  const plain = new Instance(tracefs!, 'filters-sel-u');
  instances.push(plain);
  const kernels = cases.map(() => {
    const k = new Instance(tracefs!, 'filters-sel-k');
    instances.push(k);
    return k;
  });
  const events = [...new Set([...cases.map((c) => c.event), ...TRACKING])];
  const setup = (inst: Instance, kb: number, enable: readonly string[]) => {
    writeFileSync(inst.file('tracing_on'), '0');
    writeFileSync(inst.file('buffer_size_kb'), String(kb));
    for (const e of enable) writeFileSync(inst.file('events', e, 'enable'), '1');
  };
  // Large enough that a busy machine does not overwrite the window (16 MiB per CPU unfiltered).
  setup(plain, 16384, events);
  cases.forEach((c, i) => {
    setup(kernels[i]!, 4096, [c.event]);
    writeFileSync(kernels[i]!.file('events', c.event, 'filter'), c.expr);
  });
  const seeds = readFileSync(`${tracefs!.root}/saved_cmdlines`, 'utf8');
  // Every kernel-filtered window encloses the unfiltered one: start them first, stop them last.
  for (const k of kernels) writeFileSync(k.file('tracing_on'), '1');
  writeFileSync(plain.file('tracing_on'), '1');
  workload();
  for (const k of kernels) mark(k, 'evtrace-start');
  mark(plain, 'evtrace-start');
  workload();
  mark(plain, 'evtrace-stop');
  for (const k of kernels) mark(k, 'evtrace-stop');
  writeFileSync(plain.file('tracing_on'), '0');
  for (const k of kernels) writeFileSync(k.file('tracing_on'), '0');
  const lost = [plain, ...kernels].some((inst) =>
    readdirSync(inst.file('per_cpu')).some((cpu) =>
      /(overrun|dropped events): [1-9]/.test(readFileSync(inst.file('per_cpu', cpu, 'stats'), 'utf8')),
    ),
  );
  expect(lost, 'a recording lost events: the comparison would be meaningless').toBe(false);

  const plainRecords = drainRecords(plain, [...events, 'ftrace/print']);
  const markerTime = (text: string) =>
    plainRecords.find((r) => r.eventClass.name === 'ftrace:print' && String(r.fields.buf).startsWith(text))!.tsNs;
  const from = markerTime('evtrace-start');
  const to = markerTime('evtrace-stop');

  return cases.map(({ event, expr, none }, i) => {
    const problems: string[] = [];
    const eventClass = plainRecords.find((r) => r.eventClass.name === event.replace('/', ':'))?.eventClass;
    if (eventClass === undefined) return { inWindow: 0, total: 0, naive: 0, problems: [`no ${event} events recorded`] };
    const filter = parseFilter(expr, eventClass, {
      nrCpuIds: options.nrCpuIds,
      ...(options.symbols ? { symbols: options.symbols } : {}),
    });
    const predicate = compileRecordFilter(filter, eventClass, { nrCpuIds: options.nrCpuIds });
    const tracker = new CommTracker();
    tracker.seedFromSavedCmdlines(seeds);
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
    for (const r of drainRecords(kernels[i]!, [event])) {
      const list = kept.get(r.cpu) ?? [];
      list.push(identity(r));
      kept.set(r.cpu, list);
      // Well inside the unfiltered window (the buffers stamp one event a few µs apart).
      if (r.tsNs > from + MARGIN_NS && r.tsNs < to - MARGIN_NS) keptInside.push(r);
    }
    let total = 0;
    for (const [cpu, ours] of selected) {
      total += ours.length;
      const theirs = kept.get(cpu) ?? [];
      // Ours must appear contiguously in the kernel's list: nothing it kept inside the window is missing.
      // The run can only start where ours[0] stands: try those places only (identities may repeat).
      let found = false;
      for (let at = theirs.indexOf(ours[0]!); at >= 0 && !found; at = theirs.indexOf(ours[0]!, at + 1)) {
        found = ours.every((id, k) => theirs[at + k] === id);
      }
      if (!found) {
        const first = theirs.indexOf(ours[0]!);
        const k = ours.findIndex((id, j) => theirs[first + j] !== id);
        problems.push(
          `CPU ${cpu}: ours ${ours.length} vs kernel ${theirs.length}; first difference ${ours[k]} / ${theirs[first + k]}`,
        );
      }
    }
    const selectedIds = new Map([...selected].map(([cpu, ids]) => [cpu, new Set(ids)]));
    for (const r of keptInside) {
      if (!selectedIds.get(r.cpu)?.has(identity(r))) problems.push(`kernel kept ${identity(r)} on CPU ${r.cpu}`);
    }
    return { inWindow, total, naive, problems };
  });
}

describe.skipIf(!tracefs)(`selection parity with the kernel${why ? ` (skipped: ${why})` : ''}`, () => {
  const instances: Instance[] = [];
  afterAll(() => {
    for (const i of instances) i.remove();
  });
  const options = { nrCpuIds: machineCpuIds() ?? 64, symbols: machineSymbols() };
  let verdicts: Verdict[] | undefined;

  it.each(CASES.map((c, i) => ({ ...c, i })))(
    '$event: $expr',
    ({ event, expr, none, i }) => {
      verdicts ??= session(CASES, instances, options);
      const v = verdicts[i]!;
      console.log(`${event} ${JSON.stringify(expr)}: ${v.inWindow} in window, ${v.total} selected by both`);
      expect(v.problems).toEqual([]);
      if (none) {
        expect(v.total).toBe(0);
        expect(v.naive, 'events a naive end match would select').toBeGreaterThan(0);
      } else {
        expect(v.total).toBeGreaterThan(0);
        expect(v.total).toBeLessThan(v.inWindow);
      }
    },
    60_000,
  );

  it('agrees on 16 generated filters recorded together', () => {
    const generated = generateFilters(16, 7);
    const results = session(generated, instances, options);
    let selected = 0;
    results.forEach((v, i) => {
      selected += v.total;
      expect(v.problems, `${generated[i]!.event} ${generated[i]!.expr}`).toEqual([]);
    });
    console.log(`generated selection: 16 filters, ${selected} events selected by both`);
    expect(selected).toBeGreaterThan(0);
  }, 120_000);
});

/** Valid filters over kmalloc and sched_switch from a seeded generator (numbers, CPU lists, strings, globs, !, parens). */
function generateFilters(count: number, seed: number): { event: string; expr: string }[] {
  let x = seed;
  const rnd = (n: number) => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return (x >>> 8) % n;
  };
  const pick = <T>(a: readonly T[]): T => a[rnd(a.length)]!;
  const preds: Record<string, () => string> = {
    'kmem/kmalloc': () =>
      pick([
        () =>
          `${pick(['bytes_req', 'bytes_alloc', 'gfp_flags', 'common_pid'])} ${pick(['==', '!=', '<', '<=', '>', '>=', '&'])} ${pick(['8', '64', '0x100', '0400', '1000', '4096'])}`,
        () => `node ${pick(['==', '!=', '<', '>='])} ${pick(['-1', '0', '1'])}`,
        () => `CPU ${pick(['==', '!=', '<', '>'])} ${pick(['0', '1'])}`,
        () => `CPU ${pick(['&', '==', '!='])} CPUS{${pick(['0', '1', '0-1'])}}`,
        () => `COMM ${pick(['==', '!=', '~'])} ${pick(['"node"', '"sh"', '"*sh*"', '"kworker*"', '"[a-m]*"', '"?s"'])}`,
      ])(),
    'sched/sched_switch': () =>
      pick([
        () =>
          `${pick(['prev_comm', 'next_comm'])} ${pick(['==', '!=', '~'])} ${pick(['"sh"', '"swapper/1"', '"*work*"', '"kworker*"', '"[!k]*"', '"?[a-z]*"', '"!sh"'])}`,
        () =>
          `${pick(['prev_pid', 'next_pid', 'prev_prio', 'next_prio'])} ${pick(['==', '!=', '<', '>=', '&'])} ${pick(['0', '1', '100', '120'])}`,
        () => `prev_state ${pick(['==', '&', '!='])} ${pick(['0', '1', '2'])}`,
      ])(),
  };
  const out: { event: string; expr: string }[] = [];
  for (let n = 0; n < count; n++) {
    const event = n % 2 === 0 ? 'kmem/kmalloc' : 'sched/sched_switch';
    const expr = (depth: number): string => {
      const r = rnd(depth > 1 ? 1 : 5);
      if (r === 0) return preds[event]!();
      if (r === 1) return `(${expr(depth + 1)})`;
      if (r === 2) return `!(${expr(depth + 1)})`;
      return `${expr(depth + 1)} ${pick(['&&', '||'])} ${expr(depth + 1)}`;
    };
    out.push({ event, expr: `${expr(0)} ${pick(['&&', '||'])} ${expr(0)}` });
  }
  return out;
}
