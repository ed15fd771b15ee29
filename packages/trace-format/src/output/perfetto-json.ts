/**
 * The Chrome/Perfetto trace-event JSON format (`{"traceEvents": [...]}`), which ui.perfetto.dev and chrome://tracing
 * open. Each event becomes an instant event on its task's track (ftrace `common_pid`, else its CPU), with its fields
 * as `args`; task names come from the trace's saved cmdlines and from sched_switch events, as metadata events.
 * `sched:sched_switch` events also draw, on one track per CPU, a slice for each task's time on that CPU.
 */
import type { FieldValue, TraceEvent } from '../model/types.ts';
import { jsonValue } from './json.ts';

/** Options of {@link writePerfettoJson}. */
export interface PerfettoOptions {
  /** pid → task name, e.g. an ftrace trace's saved cmdlines. */
  readonly cmdlines?: ReadonlyMap<number, string>;
}

/** Per-CPU tracks get ids above every Linux pid (at most 2^22), as positive numbers every importer accepts. */
const CPU_TRACKS = 0x7fff0000;
const cpuTrack = (cpu: number) => CPU_TRACKS + cpu;

/** Microseconds with nanosecond precision, as a JSON number literal. */
function micros(ns: bigint): string {
  const neg = ns < 0n;
  const a = neg ? -ns : ns;
  return `${neg ? '-' : ''}${a / 1000n}.${String(a % 1000n).padStart(3, '0')}`;
}

/** Writes events as Perfetto JSON through `write` (chunk by chunk); returns the number of events written. */
export function writePerfettoJson(
  events: Iterable<TraceEvent>,
  write: (chunk: string) => void,
  options: PerfettoOptions = {},
): number {
  const names = new Map<number, string>();
  const seen = new Set<number>();
  /** The task running on each CPU since its last sched_switch. */
  const running = new Map<number, { since: bigint; comm: string; pid: number }>();
  let n = 0;
  let lastTs = 0n;
  write('{"displayTimeUnit":"ns","traceEvents":[\n');
  let first = true;
  const emit = (json: string) => {
    write(first ? json : `,\n${json}`);
    first = false;
  };
  for (const e of events) {
    const pid = e.scopes?.['event.context']?.common_pid;
    const f = e.fields;
    if (e.eventClass.ftrace?.event === 'sched_switch') {
      remember(names, f.prev_pid, f.prev_comm);
      remember(names, f.next_pid, f.next_comm);
      if (e.cpu !== null) {
        const track = cpuTrack(e.cpu);
        seen.add(track);
        const was = running.get(e.cpu);
        if (was !== undefined) emit(slice(was, e.tsNs, track));
        running.set(e.cpu, { since: e.tsNs, comm: String(f.next_comm ?? '?'), pid: Number(f.next_pid ?? -1) });
      }
    }
    // Events without a task go on their CPU's track.
    const tid = typeof pid === 'number' ? pid : cpuTrack(e.cpu ?? 0);
    seen.add(tid);
    const colon = e.eventClass.name.indexOf(':');
    const cat = colon > 0 ? e.eventClass.name.slice(0, colon) : 'event';
    const name = colon > 0 ? e.eventClass.name.slice(colon + 1) : e.eventClass.name;
    const args = jsonValue(f as FieldValue) as Record<string, unknown>;
    if (e.cpu !== null) args.cpu = e.cpu;
    lastTs = e.tsNs;
    emit(
      `{"ph":"i","s":"t","name":${JSON.stringify(name)},"cat":${JSON.stringify(cat)},"ts":${micros(e.tsNs)},"pid":${tid},"tid":${tid},"args":${JSON.stringify(args)}}`,
    );
    n++;
  }
  // Tasks still running at the end of the trace get a slice up to the last event.
  for (const [cpu, was] of running) emit(slice(was, lastTs, cpuTrack(cpu)));
  // Names are known only once every sched_switch is seen, so the metadata events come last.
  for (const tid of seen) {
    const name =
      tid >= CPU_TRACKS
        ? `CPU ${tid - CPU_TRACKS}`
        : `${tid === 0 ? 'swapper' : (options.cmdlines?.get(tid) ?? names.get(tid) ?? 'task')} (${tid})`;
    emit(JSON.stringify({ ph: 'M', name: 'thread_name', pid: tid, tid, args: { name } }));
    emit(JSON.stringify({ ph: 'M', name: 'process_name', pid: tid, args: { name } }));
  }
  write('\n]}\n');
  return n;
}

function remember(names: Map<number, string>, pid: FieldValue | undefined, comm: FieldValue | undefined): void {
  if (typeof pid === 'number' && typeof comm === 'string' && pid !== 0) names.set(pid, comm);
}

function slice(was: { since: bigint; comm: string; pid: number }, until: bigint, track: number): string {
  const dur = until > was.since ? until - was.since : 0n;
  return `{"ph":"X","name":${JSON.stringify(`${was.comm} (${was.pid})`)},"cat":"sched","ts":${micros(was.since)},"dur":${micros(dur)},"pid":${track},"tid":${track},"args":{"pid":${was.pid}}}`;
}
