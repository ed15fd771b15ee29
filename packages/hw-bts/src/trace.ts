/**
 * Branches inside ordinary traces (trace.dat, CTF, raw ftrace pages read by @evtrace/trace-format): `bts:branch`
 * events (from, to, and the BTS flags quadword; evtrace's own class, as tracefs' demo source writes it) beside
 * `sched:sched_switch` events, which say which task each branch belongs to. The trace's kallsyms names kernel
 * addresses.
 */
import {
  type FtraceMetadata,
  type Kallsyms,
  openTrace,
  type TraceEvent,
  TraceFormatError,
} from '@evtrace/trace-format';
import { BranchFlag, BranchList, type Decoded, splitAddress } from './branch.ts';
import { BtsError } from './errors.ts';
import type { BranchMultiplexer, TaskSwitch } from './multiplex.ts';

/** Branches and task switches found in trace events. */
export interface TraceBranches extends Decoded {
  readonly switches: TaskSwitch[];
  /** The kernel symbols the trace carries, when it does. */
  readonly kallsyms?: Kallsyms;
}

const PREDICTED = 0x10n;

function big(v: unknown): bigint | undefined {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  return undefined;
}

/** The task an ftrace event was recorded in (`common_pid`), or -1 when the format has none. */
function ownPid(e: TraceEvent): number {
  const pid = e.scopes?.['event.context']?.common_pid ?? e.fields.common_pid;
  return typeof pid === 'number' ? pid : -1;
}

/**
 * Collects `bts:branch` and `sched:sched_switch` events (any other event is ignored). Each branch gets the task the
 * last switch before it in the stream put on its CPU; before its CPU's first switch, the pid the event itself carries
 * (ftrace's `common_pid`), else -1. Stream order, not timestamps, decides,
 * so a switch and a branch stamped with the same time are ordered as the trace has them. With `mux`, every branch
 * is also routed to its contexts right then.
 */
export function branchesFromEvents(
  events: Iterable<TraceEvent>,
  mux?: BranchMultiplexer,
): { branches: BranchList; switches: TaskSwitch[]; skipped: number } {
  const branches = new BranchList(1 << 12);
  const switches: TaskSwitch[] = [];
  const running = new Map<number, number>();
  let skipped = 0;
  for (const e of events) {
    const name = e.eventClass.name;
    if (name === 'bts:branch') {
      const from = big(e.fields.from);
      const to = big(e.fields.to);
      const flags = big(e.fields.flags) ?? 0n;
      if (from === undefined || to === undefined) {
        skipped++;
        continue;
      }
      const [fh, fl] = splitAddress(from);
      const [th, tl] = splitAddress(to);
      const cpu = e.cpu ?? -1;
      const i = branches.push(fh, fl, th, tl, {
        flags: (flags & PREDICTED) !== 0n ? BranchFlag.predicted : BranchFlag.mispredicted,
        cpu,
        time: Number(e.tsNs),
        tid: running.get(cpu) ?? ownPid(e),
      });
      mux?.push(branches, i);
    } else if (name === 'sched:sched_switch') {
      const next = e.fields.next_pid;
      if (typeof next === 'number' && e.cpu !== null) {
        const sw = { time: Number(e.tsNs), cpu: e.cpu, tid: next };
        switches.push(sw);
        running.set(e.cpu, next);
        mux?.switchTask(sw);
      }
    }
  }
  return { branches, switches, skipped };
}

/**
 * Gives every branch without a task the task running on its CPU at its time, from `switches` (sorted by time, as
 * trace events are). Branches before the first switch of their CPU stay unknown (-1).
 */
export function attributeTasks(list: BranchList, switches: readonly TaskSwitch[]): void {
  const running = new Map<number, number>();
  let s = 0;
  for (let i = 0; i < list.length; i++) {
    const t = list.time[i]!;
    while (s < switches.length && switches[s]!.time <= t) {
      const sw = switches[s++]!;
      running.set(sw.cpu, sw.tid);
    }
    if (list.tid[i]! < 0) list.tid[i] = running.get(list.cpu[i]!) ?? -1;
  }
}

/**
 * Opens a trace (trace.dat, CTF directory, raw-pages directory) and reads its branches, tasks attributed.
 * @throws BtsError `ERR_BTS_FORMAT` when it is not a readable trace, or holds no `bts:branch` event.
 */
export function readTraceBranches(path: string): TraceBranches {
  let reader: ReturnType<typeof openTrace>;
  try {
    reader = openTrace(path, { lenient: true });
  } catch (error) {
    throw traceError(error, path);
  }
  let found: ReturnType<typeof branchesFromEvents>;
  try {
    found = branchesFromEvents(reader.events());
  } catch (error) {
    throw traceError(error, path);
  }
  const notes = reader.warnings.map((w) => `trace: ${w}`);
  if (found.skipped > 0) notes.push(`${found.skipped} bts:branch events without integer from/to fields skipped`);
  // A trace of other events holds nothing to report: refused as any input without a branch.
  if (found.branches.length === 0) {
    const skipped = found.skipped > 0 ? ` (${found.skipped} without integer from/to fields skipped)` : '';
    throw new BtsError(
      'ERR_BTS_FORMAT',
      `no bts:branch event in this trace${skipped}: expected a trace of bts:branch events`,
      { file: path },
    );
  }
  const meta = (reader as { metadata?: FtraceMetadata }).metadata;
  const kallsyms = meta?.kallsyms();
  return {
    branches: found.branches,
    problems: [],
    notes,
    switches: found.switches,
    ...(kallsyms !== undefined ? { kallsyms } : {}),
  };
}

/** A trace-format error as a BtsError; its message already starts with the file it names, which is not repeated. */
function traceError(error: unknown, path: string): unknown {
  if (!(error instanceof TraceFormatError)) return error;
  const source = error.location.file ?? path;
  const message = error.message.startsWith(`${source}: `) ? error.message.slice(source.length + 2) : error.message;
  return new BtsError('ERR_BTS_FORMAT', message, { file: source }, error);
}
