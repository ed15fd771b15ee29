/**
 * Test support around trace-cmd, the judge of our trace.dat reading and writing: recording with the form that works
 * on these kernels (`record --no-filter -d`, stopped with SIGINT) and parsing `trace-cmd report -R -t`.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { expect } from 'vitest';
import type { Kallsyms } from '../ftrace/symbols.ts';
import type { TraceEvent } from '../model/types.ts';
import { smallWorkload } from './capture.ts';
import { findTracefs, hasTool } from './tracefs.ts';

/**
 * Whether trace-cmd can record the kernel here: `why` not (empty when it can, for a `describe.skipIf` title) and the
 * tracefs mount it records from.
 */
export function traceCmdRecording(): { readonly why: string; readonly root: string } {
  const tracefs = findTracefs();
  const why =
    process.getuid?.() !== 0
      ? 'not root'
      : 'why' in tracefs
        ? tracefs.why
        : !hasTool('trace-cmd')
          ? 'trace-cmd is not installed (apt install trace-cmd)'
          : '';
  return { why, root: 'path' in tracefs ? tracefs.path : '' };
}

/**
 * Runs `trace-cmd record --no-filter -d ARGS` on the top-level buffer for `ms` while a small workload runs, restoring
 * the tracing state trace-cmd leaves behind. trace-cmd 3.1 now and then writes a file its own `report` refuses (seen:
 * a saved-cmdlines section one byte short while other tracefs instances were busy); such a recording is made again,
 * up to three times, so that tests judge us only against files the judge itself reads.
 */
export async function recordTraceDat(tracefs: string, out: string, args: readonly string[], ms: number): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await recordOnce(tracefs, out, args, ms);
    // `report` prints nothing and exits 0 on such a file; `convert` says "error reading" and exits non-zero.
    const check = spawnSync('trace-cmd', ['convert', '--file-version', '6', '-i', out, '-o', `${out}.check`], {
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
    });
    rmSync(`${out}.check`, { force: true });
    if (check.status === 0) return;
    if (attempt === 3) throw new Error(`trace-cmd could not read its own recording ${out}: ${check.stderr}`);
  }
}

async function recordOnce(tracefs: string, out: string, args: readonly string[], ms: number): Promise<void> {
  const saved = ['tracing_on', 'set_event', 'trace_clock', 'buffer_size_kb'].map(
    (f) => [f, readFileSync(`${tracefs}/${f}`, 'utf8')] as const,
  );
  const argv = ['record', '--no-filter', '-d', ...args, '-o', out];
  // Without a command trace-cmd records until SIGINT; it then writes the file and exits (status 1 on this kernel).
  const child = spawn('trace-cmd', argv, { stdio: 'ignore' });
  // Never leave it recording if this process goes away first.
  const stop = () => child.kill('SIGINT');
  process.once('exit', stop);
  try {
    let gone = false;
    const exited = new Promise((r) => child.on('exit', r)).then(() => (gone = true));
    // On a loaded machine trace-cmd takes a while to set up: a SIGINT before its per-CPU recorders run leaves an
    // incomplete file. Start the clock once they have created their temporary OUT[.BUFFER].cpuN files.
    const recording = () =>
      readdirSync(dirname(out)).some((f) => f.startsWith(`${basename(out)}.`) && /\.cpu\d+$/.test(f));
    for (let waited = 0; waited < 30_000 && !gone && !recording(); waited += 50) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, ms / 2));
    smallWorkload();
    await new Promise((r) => setTimeout(r, ms / 2));
    stop();
    await exited;
  } finally {
    process.off('exit', stop);
    for (const [f, text] of saved) {
      try {
        // Only what trace-cmd changed is written back (an unexpanded buffer reads "7 (expanded: 1408)").
        if (readFileSync(`${tracefs}/${f}`, 'utf8') === text) continue;
        if (f === 'set_event') {
          writeFileSync(`${tracefs}/set_event`, '');
          for (const line of text.split('\n').filter(Boolean))
            writeFileSync(`${tracefs}/set_event`, `${line}\n`, { flag: 'a' });
        } else if (f === 'trace_clock') {
          writeFileSync(`${tracefs}/trace_clock`, /\[(\S+)\]/.exec(text)?.[1] ?? 'local');
        } else if (f === 'buffer_size_kb') {
          writeFileSync(`${tracefs}/${f}`, /expanded: (\d+)/.exec(text)?.[1] ?? text.trim());
        } else {
          writeFileSync(`${tracefs}/${f}`, text.trim());
        }
      } catch {}
    }
  }
}

/**
 * What the tests record: context switches, execs, and the larger kmallocs only (a kernel filter keeps files small on
 * a busy machine, and leaves discarded events in the pages, which readers must skip).
 */
export const RECORD_ARGS = [
  '-e',
  'kmem:kmalloc',
  '-f',
  'bytes_req >= 512',
  '-e',
  'sched:sched_switch',
  '-e',
  'sched:sched_process_exec',
];

export interface ReportedEvent {
  comm: string;
  pid: number;
  cpu: number;
  ts: bigint;
  name: string;
  fields: Map<string, string>;
  /** A `CPU:N [N EVENTS DROPPED]` line came before it: the count, or null for `CPU:N [EVENTS DROPPED]`. */
  lost?: number | null;
}

/** `trace-cmd report -R -t FILE`, parsed: every field as `name=value` text with a nanosecond timestamp. */
export function reportRaw(file: string, buffer?: string): ReportedEvent[] {
  const text = execFileSync('trace-cmd', ['report', '-R', '-t', file], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const out: ReportedEvent[] = [];
  // Instance buffers' lines start with `NAME:`; the top buffer's with the padded comm.
  const prefix = buffer === undefined ? undefined : `${buffer}:`;
  let lost: number | null | undefined;
  for (const raw of text.split('\n')) {
    const dropped = /^CPU:\d+ \[(?:(\d+) )?EVENTS DROPPED\]$/.exec(raw);
    if (dropped !== null) {
      lost = dropped[1] === undefined ? null : Number(dropped[1]);
      continue;
    }
    if (prefix !== undefined ? !raw.startsWith(prefix) : /^\S+:\s/.test(raw) && !/^\s/.test(raw)) continue;
    const line = prefix !== undefined ? raw.slice(prefix.length) : raw;
    const m = /^\s*(.*)-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{9}):\s+(\w+):\s*(.*)$/.exec(line);
    if (m === null) continue;
    const fields = new Map<string, string>();
    for (const f of m[7]!.matchAll(/(\w+)=(.*?)(?= \w+=|$)/g)) fields.set(f[1]!, f[2]!.trim());
    out.push({
      comm: m[1]!.trim(),
      pid: Number(m[2]),
      cpu: Number(m[3]),
      ts: BigInt(m[4]!) * 1_000_000_000n + BigInt(m[5]!),
      name: m[6]!,
      fields,
      ...(lost !== undefined ? { lost } : {}),
    });
    lost = undefined;
  }
  return out;
}

/** Whether our value equals trace-cmd's rendering of a field of `size` bytes (decimal, hex or `sym+0xoff`). */
export function sameAsReported(ours: unknown, theirs: string, size: number, kallsyms: Kallsyms | undefined): boolean {
  if (typeof ours === 'string') return ours === theirs;
  if (typeof ours !== 'number' && typeof ours !== 'bigint') return false;
  const bits = Math.max(8, Math.min(64, size * 8));
  const v = BigInt.asUintN(bits, BigInt(ours));
  if (/^-?\d+$/.test(theirs) || /^0x[0-9a-f]+$/i.test(theirs)) return BigInt.asUintN(bits, BigInt(theirs)) === v;
  return kallsyms?.format(v) === theirs;
}

/**
 * Asserts that our events are trace-cmd's: same order, timestamps, CPUs, pids, names, every field value, and the
 * losses trace-cmd reports before them (`scopes.lost`).
 */
export function expectSameAsReport(
  ours: readonly TraceEvent[],
  theirs: readonly ReportedEvent[],
  kallsyms: Kallsyms | undefined,
): void {
  expect(ours.length).toBe(theirs.length);
  const key = (ts: bigint, cpu: number | null, name: string) => `${ts} ${cpu} ${name}`;
  expect(ours.map((e) => key(e.tsNs, e.cpu, e.eventClass.ftrace!.event))).toEqual(
    theirs.map((e) => key(e.ts, e.cpu, e.name)),
  );
  const lost = (l: unknown) => (l === undefined ? '' : `lost ${l}`);
  expect(ours.map((e) => lost(e.scopes?.lost?.events))).toEqual(theirs.map((e) => lost(e.lost)));
  ours.forEach((e, i) => {
    const t = theirs[i]!;
    expect(e.scopes?.['event.context']?.common_pid).toBe(t.pid);
    for (const f of e.eventClass.ftrace!.fields) {
      if (f.common) continue;
      const text = t.fields.get(f.name);
      expect(text, `${t.name}.${f.name} in trace-cmd report`).toBeDefined();
      const ok = sameAsReported(e.fields[f.name], text!, f.size, kallsyms);
      expect(ok, `${t.name}.${f.name}: ours ${String(e.fields[f.name])}, trace-cmd ${text}`).toBe(true);
    }
  });
}
