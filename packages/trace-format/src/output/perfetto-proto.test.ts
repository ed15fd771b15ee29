import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseFormatFile } from '../ftrace/format-file.ts';
import { openRawPagesDir } from '../ftrace/raw-dir.ts';
import type { EventClass, TraceEvent } from '../model/types.ts';
import { captureRawPages, kernelEvents } from '../testing/capture.ts';
import { findTracefs, hasTool } from '../testing/tracefs.ts';
import { writePerfettoTrace } from './perfetto-proto.ts';
import { perfettoProtoRoot, perfettoSchema } from './perfetto-schema.ts';

/** A decoded packet, 64-bit values as decimal strings, only the fields present. */
interface Packet {
  timestamp?: string;
  ftrace_events?: { cpu?: number; event?: FtraceEvent[] };
  process_tree?: { threads?: { tid: number; tgid?: number; name?: string }[] };
}
interface FtraceEvent {
  timestamp: string;
  pid?: number;
  event: string;
  [oneof: string]: unknown;
}

/** Decodes a whole trace with the vendored .proto files. */
function decode(bytes: Uint8Array): Packet[] {
  const { Trace } = perfettoSchema();
  const trace = Trace.toObject(Trace.decode(bytes), { longs: String, oneofs: true }) as { packet?: Packet[] };
  return trace.packet ?? [];
}

/** The events of every bundle, with their bundle's CPU, in file order. */
const bundled = (packets: Packet[]): (FtraceEvent & { cpu?: number })[] =>
  packets.flatMap((p) => (p.ftrace_events?.event ?? []).map((e) => ({ ...e, cpu: p.ftrace_events!.cpu })));

const encode = (events: Iterable<TraceEvent>, options?: Parameters<typeof writePerfettoTrace>[2]) => {
  const chunks: Uint8Array[] = [];
  const n = writePerfettoTrace(events, (b) => chunks.push(b), options);
  return { n, chunks, bytes: Buffer.concat(chunks) };
};

const format = (system: string, name: string, id: number, fields: string) =>
  parseFormatFile(
    `name: ${name}\nID: ${id}\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n${fields}\nprint fmt: "x"\n`,
    { system },
  );
const field = (decl: string, offset: number, size: number, signed: 0 | 1) =>
  `\tfield:${decl};\toffset:${offset};\tsize:${size};\tsigned:${signed};\n`;

const SWITCH = format(
  'sched',
  'sched_switch',
  1,
  field('char prev_comm[16]', 8, 16, 0) +
    field('pid_t prev_pid', 24, 4, 1) +
    field('int prev_prio', 28, 4, 1) +
    field('long prev_state', 32, 8, 1) +
    field('char next_comm[16]', 40, 16, 0) +
    field('pid_t next_pid', 56, 4, 1) +
    field('int next_prio', 60, 4, 1),
);
const WAKING = format(
  'sched',
  'sched_waking',
  2,
  field('char comm[16]', 8, 16, 0) +
    field('pid_t pid', 24, 4, 1) +
    field('int prio', 28, 4, 1) +
    field('int target_cpu', 32, 4, 1),
);
const RENAME = format(
  'task',
  'task_rename',
  3,
  field('pid_t pid', 8, 4, 1) +
    field('char oldcomm[16]', 12, 16, 0) +
    field('char newcomm[16]', 28, 16, 0) +
    field('short oom_score_adj', 44, 2, 1),
);
const PRINT = format('ftrace', 'print', 4, field('unsigned long ip', 8, 8, 0) + field('char buf[]', 16, 0, 0));
const KMALLOC = format(
  'kmem',
  'kmalloc',
  5,
  field('unsigned long call_site', 8, 8, 0) + field('size_t bytes_req', 16, 8, 0) + field('int node', 24, 4, 1),
);

const EXEC = format(
  'sched',
  'sched_process_exec',
  7,
  field('__data_loc char[] filename', 8, 4, 0) + field('pid_t pid', 12, 4, 1) + field('pid_t old_pid', 16, 4, 1),
);
const NEWTASK = format(
  'task',
  'task_newtask',
  8,
  field('pid_t pid', 8, 4, 1) +
    field('char comm[16]', 12, 16, 0) +
    field('u64 clone_flags', 32, 8, 0) +
    field('short oom_score_adj', 40, 2, 1),
);

const ev = (tsNs: bigint, cpu: number | null, eventClass: EventClass, pid: number, fields: TraceEvent['fields']) => ({
  tsNs,
  cpu,
  eventClass,
  fields,
  scopes: { 'event.context': { common_type: eventClass.id, common_pid: pid } },
});

describe('Perfetto protobuf trace', () => {
  const events: TraceEvent[] = [
    ev(500n, 1, EXEC, 42, { filename: '/bin/bash', pid: 42, old_pid: 42 }),
    ev(1_000n, 0, WAKING, 0, { comm: 'bash', pid: 42, prio: 120, target_cpu: 0 }),
    ev(2_000n, 0, SWITCH, 0, {
      prev_comm: 'swapper/0',
      prev_pid: 0,
      prev_prio: 120,
      prev_state: 0,
      next_comm: 'bash',
      next_pid: 42,
      next_prio: 120,
    }),
    ev(3_000n, 1, RENAME, 42, { pid: 42, oldcomm: 'bash', newcomm: 'make', oom_score_adj: -1000 }),
    ev(4_000n, 1, PRINT, 42, { ip: 0xffffffff81000000n, buf: 'B|42|build\n' }),
    // Past 2^53 on either side, and an epoch-scale timestamp: exact on the wire.
    ev(1_700_000_000_123_456_789n, 1, KMALLOC, 42, {
      call_site: 0xffffffff81234567n,
      bytes_req: 2n ** 64n - 1n,
      node: -1,
    }),
    ev(1_700_000_000_123_456_790n, 0, SWITCH, 42, {
      prev_comm: 'make',
      prev_pid: 42,
      prev_prio: 120,
      prev_state: 0x100,
      next_comm: 'swapper/0',
      next_pid: 0,
      next_prio: 120,
    }),
    ev(1_700_000_000_123_456_791n, null, KMALLOC, 7, { call_site: 1n, bytes_req: 8n, node: 0 }),
    // A thread of the exec'd task's group (CLONE_THREAD), then a process of its own.
    ev(1_700_000_000_123_456_792n, 1, NEWTASK, 42, { pid: 43, comm: 'make', clone_flags: 0x10f00n, oom_score_adj: 0 }),
    ev(1_700_000_000_123_456_793n, 1, NEWTASK, 42, { pid: 50, comm: 'cc', clone_flags: 0x11n, oom_score_adj: 0 }),
  ];

  it('writes bundles per CPU with sched and task events in Perfetto’s own fields, others as generic events', () => {
    const { n, chunks, bytes } = encode(events, { cmdlines: new Map([[7, 'kworker/0:1']]), bundleEvents: 2 });
    expect(n).toBe(events.length);
    const packets = decode(bytes);
    // One packet per write: bundles as they fill (two events each), the rest at the end, then the thread names.
    expect(packets.length).toBe(chunks.length);
    expect(
      packets.map((p) => (p.ftrace_events ? `cpu${p.ftrace_events.cpu}:${p.ftrace_events.event?.length}` : 'tree')),
    ).toEqual(['cpu0:2', 'cpu1:2', 'cpu1:2', 'cpu0:2', 'cpu1:2', 'tree']);
    const got = bundled(packets);
    expect(got.map((e) => [e.cpu, e.timestamp, e.pid, e.event])).toEqual([
      [0, '1000', 0, 'sched_waking'],
      [0, '2000', 0, 'sched_switch'],
      [1, '500', 42, 'generic'],
      [1, '3000', 42, 'task_rename'],
      [1, '4000', 42, 'print'],
      [1, '1700000000123456789', 42, 'generic'],
      [0, '1700000000123456790', 42, 'sched_switch'],
      [0, '1700000000123456791', 7, 'generic'],
      [1, '1700000000123456792', 42, 'generic'],
      [1, '1700000000123456793', 42, 'generic'],
    ]);
    expect(got[0]!.sched_waking).toEqual({ comm: 'bash', pid: 42, prio: 120, target_cpu: 0 });
    expect(got[1]!.sched_switch).toEqual({
      prev_comm: 'swapper/0',
      prev_pid: 0,
      prev_prio: 120,
      prev_state: '0',
      next_comm: 'bash',
      next_pid: 42,
      next_prio: 120,
    });
    expect(got[3]!.task_rename).toEqual({ pid: 42, oldcomm: 'bash', newcomm: 'make', oom_score_adj: -1000 });
    expect(got[4]!.print).toEqual({ ip: String(0xffffffff81000000n), buf: 'B|42|build\n' });
    expect((got[6]!.sched_switch as { prev_state: string }).prev_state).toBe('256');
    expect(got[5]!.generic).toEqual({
      event_name: 'kmalloc',
      field: [
        { name: 'call_site', uint_value: String(0xffffffff81234567n), value: 'uint_value' },
        { name: 'bytes_req', uint_value: '18446744073709551615', value: 'uint_value' },
        { name: 'node', int_value: '-1', value: 'int_value' },
      ],
    });
    // Only tasks whose thread group the trace shows: 42 exec'd, 43 is its thread, 50 a process of its own. Task 7
    // is named by its saved cmdline only, and Perfetto would file it under pid 0 without a group: left out.
    expect(packets.at(-1)).toEqual({
      timestamp: '1700000000123456793',
      data: 'process_tree',
      process_tree: {
        processes: [
          { pid: 42, cmdline: ['make'], cmdline_is_comm: true },
          { pid: 50, cmdline: ['cc'], cmdline_is_comm: true },
        ],
        threads: [
          { tid: 42, tgid: 42, name: 'make' },
          { tid: 43, tgid: 42, name: 'make' },
          { tid: 50, tgid: 50, name: 'cc' },
        ],
      },
    });
  });

  it('keeps memory bounded: every bundle is written once it holds bundleEvents events', () => {
    const many = function* () {
      for (let i = 0; i < 10_000; i++)
        yield ev(BigInt(i), i % 4, KMALLOC, 1, { call_site: 0n, bytes_req: 1n, node: 0 });
    };
    let pending = 0;
    let largest = 0;
    const n = writePerfettoTrace(
      many(),
      (b) => {
        largest = Math.max(largest, b.length);
        pending++;
      },
      { bundleEvents: 100 },
    );
    expect(n).toBe(10_000);
    // No task's thread group is known here, so no process tree follows the bundles.
    expect(pending).toBe(100);
    // A bundle of 100 such events is a few kilobytes.
    expect(largest).toBeLessThan(100 * 64);
  });

  it('fuzz: any timestamps, CPUs, bundle sizes and 64-bit values come back exactly, event for event', () => {
    const cls = format(
      'test',
      'values',
      6,
      field('unsigned long u', 8, 8, 0) + field('long i', 16, 8, 1) + field('char s[16]', 24, 16, 0),
    );
    const arb = fc.record({
      tsNs: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
      cpu: fc.option(fc.nat(7), { nil: null }),
      u: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
      i: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
      s: fc.string({ maxLength: 15 }),
    });
    fc.assert(
      fc.property(fc.array(arb, { maxLength: 40 }), fc.integer({ min: 1, max: 8 }), (specs, bundleEvents) => {
        const input = specs.map((x) => ev(x.tsNs, x.cpu, cls, 1, { u: x.u, i: x.i, s: x.s }));
        const { n, bytes } = encode(input, { bundleEvents });
        expect(n).toBe(input.length);
        const got = bundled(decode(bytes));
        // Per CPU, events keep their order; an event without a CPU is in CPU 0's bundle.
        const byCpu = (cpu: number) => got.filter((e) => e.cpu === cpu);
        for (let cpu = 0; cpu < 8; cpu++) {
          const want = specs.filter((x) => (x.cpu ?? 0) === cpu);
          expect(
            byCpu(cpu).map((e) => {
              const f = (
                e.generic as { field: { name: string; str_value?: string; int_value?: string; uint_value?: string }[] }
              ).field;
              return [e.timestamp, f[0]!.uint_value, f[1]!.int_value, f[2]!.str_value];
            }),
          ).toEqual(want.map((x) => [String(x.tsNs), String(x.u), String(x.i), x.s]));
        }
      }),
      { numRuns: 60 },
    );
  });

  it.skipIf(!hasTool('protoc'))(
    `decodes with protoc against the same .proto files${hasTool('protoc') ? '' : ' (skipped: protoc from Debian protobuf-compiler not installed)'}`,
    () => {
      const file = join(mkdtempSync(join(tmpdir(), 'evtrace-pf-')), 't.pftrace');
      writeFileSync(file, encode(events, { bundleEvents: 2 }).bytes);
      const text = execFileSync(
        'protoc',
        ['-I', perfettoProtoRoot(), '--decode=perfetto.protos.Trace', 'protos/perfetto/trace/trace.proto'],
        { input: execFileSync('cat', [file]), encoding: 'utf8' },
      );
      expect(text.match(/^packet \{/gm)?.length).toBe(6);
      expect(text.match(/^\s+sched_switch \{/gm)?.length).toBe(2);
      expect(text).toContain('timestamp: 1700000000123456789');
      expect(text).toContain('uint_value: 18446744073709551615');
      expect(text).toContain('int_value: -1');
      expect(text).toContain('newcomm: "make"');
      // Nothing protoc does not know: every tag is a field of Perfetto's schema.
      expect(text).not.toMatch(/^\s*\d+: /m);
    },
  );
});

const tracefs = findTracefs();
const root = process.getuid?.() === 0 && 'path' in tracefs ? tracefs.path : undefined;
const why = root === undefined ? ('why' in tracefs ? tracefs.why : 'not root') : '';

/** An integer as the kernel's `fields` option prints it: `0x1f (31)`, `0x1f` or `31`. */
function kernelInt(text: string): bigint {
  const m = /\((-?\d+)\)$/.exec(text) ?? /^(0x[0-9a-f]+|-?\d+)$/.exec(text);
  if (m === null) throw new Error(`not an integer: ${text}`);
  return BigInt(m[1]!);
}

describe.skipIf(root === undefined)(
  `a kernel recording as a Perfetto trace, against the kernel's own trace file (Perfetto's trace processor is not packaged for Debian nor reachable from npm here, so Perfetto's schema is the judge)${why ? ` (skipped: ${why})` : ''}`,
  { timeout: 60_000 },
  () => {
    it('holds every event the kernel printed, with its CPU, time, task and fields', async () => {
      const c = await captureRawPages(
        root!,
        ['sched/sched_switch', 'sched/sched_waking', 'task/task_rename', 'sched/sched_process_exec'],
        () => {
          execFileSync('sh', ['-c', 'printf pf-renamed > /proc/self/comm; ls /proc/self > /dev/null'], {
            stdio: 'ignore',
          });
        },
      );
      const reader = openRawPagesDir(c.dir);
      const { n, bytes } = encode(reader.events(), { cmdlines: reader.metadata.cmdlines });
      const kernel = kernelEvents(c).sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : a.cpu - b.cpu));
      expect(n).toBe(kernel.length);
      const packets = decode(bytes);
      for (const p of packets) expect(p.ftrace_events !== undefined || p.process_tree !== undefined).toBe(true);
      const ours = bundled(packets).sort((a, b) =>
        BigInt(a.timestamp) < BigInt(b.timestamp)
          ? -1
          : BigInt(a.timestamp) > BigInt(b.timestamp)
            ? 1
            : a.cpu! - b.cpu!,
      );
      expect(ours.map((e) => `${e.timestamp}/${e.cpu}/${e.pid}`)).toEqual(
        kernel.map((k) => `${k.ts}/${k.cpu}/${k.pid}`),
      );
      const kinds = new Set<string>();
      ours.forEach((e, i) => {
        const k = kernel[i]!;
        const native = e.event === 'generic' ? undefined : (e[e.event] as Record<string, unknown>);
        kinds.add(e.event);
        if (native === undefined) {
          const g = e.generic as {
            event_name: string;
            field: { name: string; str_value?: string; int_value?: string; uint_value?: string }[];
          };
          expect(g.event_name).toBe(k.name);
          expect(g.field.map((f) => f.name).sort()).toEqual([...k.fields.keys()].sort());
          for (const f of g.field) {
            const text = k.fields.get(f.name)!;
            if (f.str_value !== undefined) expect(f.str_value, `${k.name}.${f.name}`).toBe(text);
            else expect(BigInt(f.int_value ?? f.uint_value!), `${k.name}.${f.name}`).toBe(kernelInt(text));
          }
          return;
        }
        expect(e.event).toBe(k.name);
        for (const [name, text] of k.fields) {
          const v = native[name];
          expect(v, `${k.name}.${name} in Perfetto's fields`).toBeDefined();
          if (typeof v === 'string' && !/^-?\d+$/.test(v)) expect(v, `${k.name}.${name}`).toBe(text);
          else expect(BigInt(v as string | number), `${k.name}.${name}`).toBe(kernelInt(text));
        }
      });
      expect([...kinds].sort()).toEqual(['generic', 'sched_switch', 'sched_waking', 'task_rename']);
      // The renamed shell exec'd while recorded: it leads its own group, under its latest name.
      const threads = packets.at(-1)!.process_tree!.threads!;
      const shell = threads.find((t) => t.name === 'pf-renamed');
      expect(shell, 'the renamed shell in the process tree').toBeDefined();
      expect(shell!.tgid).toBe(shell!.tid);
    });
  },
);
