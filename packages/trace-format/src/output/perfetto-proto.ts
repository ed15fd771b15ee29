/**
 * Perfetto's native trace format: a `perfetto.protos.Trace`, written packet by packet. Events go into one
 * `FtraceEventBundle` per CPU, as Perfetto's own ftrace data source writes them: `sched_switch`, `sched_wakeup`,
 * `sched_waking`, `task_rename` and `ftrace:print` in Perfetto's own fields (its CPU, thread-state and atrace views
 * are built from these), every other event as a `GenericFtraceEvent` with its fields. A `ProcessTree` packet at the end
 * describes the tasks whose thread group the trace shows (see perfetto-tasks.ts), named by their latest COMM.
 */
import type { EventClass, FieldValue, TraceEvent } from '../model/types.ts';
import { jsonValue } from './json.ts';
import { perfettoSchema } from './perfetto-schema.ts';
import { PerfettoTasks } from './perfetto-tasks.ts';

/** Options of {@link writePerfettoTrace}. */
export interface PerfettoTraceOptions {
  /** pid → task name, e.g. an ftrace trace's saved cmdlines. */
  readonly cmdlines?: ReadonlyMap<number, string>;
  /** Events per bundle before it is written: what bounds the memory, per CPU. */
  readonly bundleEvents?: number;
}

/** A 64-bit value as protobufjs takes it without loss: a number when exact, else a Long-like pair of 32-bit halves. */
type U64 = number | { readonly low: number; readonly high: number };

function u64(v: bigint): U64 {
  if (v >= 0n && v <= MAX_SAFE) return Number(v);
  const u = BigInt.asUintN(64, v);
  return { low: Number(u & 0xffffffffn) | 0, high: Number(u >> 32n) | 0 };
}
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A 32-bit protobuf integer from a decoded field, when it is one. */
function int32(v: FieldValue | undefined): number | undefined {
  if (typeof v === 'number' && Number.isInteger(v)) return v | 0;
  if (typeof v === 'bigint') return Number(BigInt.asIntN(32, v));
  return undefined;
}

function int64(v: FieldValue | undefined): U64 | undefined {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'bigint') return u64(v);
  return undefined;
}

const str = (v: FieldValue | undefined): string | undefined => (typeof v === 'string' ? v : undefined);

type Fields = TraceEvent['fields'];
/** An `FtraceEvent` as protobufjs encodes it; members left undefined are not written. */
type Ftrace = Record<string, unknown>;

/**
 * The events Perfetto has fields of its own for, by `system:event`: each gives the event's message, or undefined when
 * the fields are not the kernel's (then the event is written as a generic one).
 */
const NATIVE: Readonly<Record<string, (ts: U64, task: number | undefined, f: Fields) => Ftrace | undefined>> = {
  'sched:sched_switch': (timestamp, pid, f) =>
    typeof f.prev_pid === 'number' && typeof f.next_pid === 'number'
      ? {
          timestamp,
          pid,
          sched_switch: {
            prev_comm: str(f.prev_comm),
            prev_pid: f.prev_pid | 0,
            prev_prio: int32(f.prev_prio),
            prev_state: int64(f.prev_state),
            next_comm: str(f.next_comm),
            next_pid: f.next_pid | 0,
            next_prio: int32(f.next_prio),
          },
        }
      : undefined,
  'sched:sched_waking': (timestamp, pid, f) =>
    typeof f.pid === 'number' ? { timestamp, pid, sched_waking: wakeup(f) } : undefined,
  'sched:sched_wakeup': (timestamp, pid, f) =>
    typeof f.pid === 'number' ? { timestamp, pid, sched_wakeup: wakeup(f) } : undefined,
  // Kernels since 6.13 leave out task_rename's pid: the renamed task is the one recording it.
  'task:task_rename': (timestamp, pid, f) => {
    const renamed = int32(f.pid) ?? pid;
    return renamed === undefined
      ? undefined
      : {
          timestamp,
          pid,
          task_rename: {
            pid: renamed,
            oldcomm: str(f.oldcomm),
            newcomm: str(f.newcomm),
            oom_score_adj: int32(f.oom_score_adj),
          },
        };
  },
  'ftrace:print': (timestamp, pid, f) =>
    typeof f.buf === 'string' ? { timestamp, pid, print: { ip: int64(f.ip), buf: f.buf } } : undefined,
};

function wakeup(f: Fields): object {
  return {
    comm: str(f.comm),
    pid: int32(f.pid),
    prio: int32(f.prio),
    success: int32(f.success),
    target_cpu: int32(f.target_cpu),
  };
}

/** What is looked up once per event class. */
interface ClassInfo {
  /** `system:event` for ftrace classes, else the class's name. */
  readonly key: string;
  readonly native: ((ts: U64, task: number | undefined, f: Fields) => Ftrace | undefined) | undefined;
  readonly name: string;
  /** The fields declared unsigned (ftrace's format files, else the CTF integer classes). */
  readonly unsigned: ReadonlySet<string>;
}

const infoOf = new WeakMap<EventClass, ClassInfo>();
function classInfo(c: EventClass): ClassInfo {
  let info = infoOf.get(c);
  if (info === undefined) {
    const key = c.ftrace !== undefined ? `${c.ftrace.system}:${c.ftrace.event}` : c.name;
    const unsigned =
      c.ftrace !== undefined
        ? c.ftrace.fields.filter((x) => !x.signed).map((x) => x.name)
        : c.payload.members
            .filter((m) =>
              m.type.kind === 'int' ? !m.type.signed : m.type.kind === 'enum' && !m.type.container.signed,
            )
            .map((m) => m.name);
    info = { key, native: NATIVE[key], name: c.ftrace?.event ?? c.name, unsigned: new Set(unsigned) };
    infoOf.set(c, info);
  }
  return info;
}

/** A field as `GenericFtraceEvent.Field`: integers as they are declared, text as text, anything else as JSON. */
function genericField(name: string, v: FieldValue, unsigned: boolean): object | undefined {
  if (v === null) return undefined;
  if (typeof v === 'string') return { name, str_value: v };
  if (typeof v === 'boolean') return { name, uint_value: v ? 1 : 0 };
  if (typeof v === 'number' && Number.isSafeInteger(v))
    return unsigned && v >= 0 ? { name, uint_value: v } : { name, int_value: v };
  if (typeof v === 'bigint') return unsigned && v >= 0n ? { name, uint_value: u64(v) } : { name, int_value: u64(v) };
  return { name, str_value: JSON.stringify(jsonValue(v)) };
}

function generic(timestamp: U64, pid: number | undefined, info: ClassInfo, fields: Fields): Ftrace {
  const field: object[] = [];
  for (const name in fields) {
    const out = genericField(name, fields[name]!, info.unsigned.has(name));
    if (out !== undefined) field.push(out);
  }
  return { timestamp, pid, generic: { event_name: info.name, field } };
}

/** The task an event was recorded in: ftrace's `common_pid`, else a CTF context's `tid`. */
function taskOf(e: TraceEvent): number | undefined {
  const ctx = e.scopes?.['event.context'];
  const pid = ctx?.common_pid ?? ctx?.tid;
  return typeof pid === 'number' && pid >= 0 ? pid : undefined;
}

/**
 * Writes events as a Perfetto protobuf trace through `write`, one packet at a time (a bundle per CPU is written when it
 * holds `bundleEvents` events, and every bundle at the end); returns the number of events written. An event without a
 * CPU goes into CPU 0's bundle, as Perfetto reads a bundle without one.
 */
export function writePerfettoTrace(
  events: Iterable<TraceEvent>,
  write: (bytes: Uint8Array) => void,
  options: PerfettoTraceOptions = {},
): number {
  const { Trace } = perfettoSchema();
  const limit = Math.max(1, options.bundleEvents ?? 1024);
  const packet = (p: object) => write(Trace.encode({ packet: [p] }).finish());
  const bundles = new Map<number, object[]>();
  const flush = (cpu: number, event: object[]) => {
    packet({ ftrace_events: { cpu, event } });
    bundles.set(cpu, []);
  };
  const tasks = new PerfettoTasks(options.cmdlines);
  let n = 0;
  let last: bigint | undefined;
  for (const e of events) {
    const f = e.fields;
    const info = classInfo(e.eventClass);
    const ts = u64(e.tsNs);
    const task = taskOf(e);
    const event = info.native?.(ts, task, f) ?? generic(ts, task, info, f);
    tasks.observe(info.key, task, f);
    const cpu = e.cpu ?? 0;
    let bundle = bundles.get(cpu);
    if (bundle === undefined) bundles.set(cpu, (bundle = []));
    bundle.push(event);
    if (bundle.length >= limit) flush(cpu, bundle);
    last = e.tsNs;
    n++;
  }
  for (const [cpu, bundle] of bundles) if (bundle.length > 0) flush(cpu, bundle);
  // Names are final only once every event is seen: the latest COMM of a task, else its saved cmdline.
  const processTree = tasks.processTree();
  if (processTree !== undefined)
    packet({ ...(last !== undefined ? { timestamp: u64(last) } : {}), process_tree: processTree });
  return n;
}
