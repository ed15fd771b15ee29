/**
 * A tracefs-shaped directory for tests of the live sources (this VM has no machine-check support: its tracefs has no
 * `mce` system and `ras:mc_event` never fires). `events/SYSTEM/EVENT/format` hold the real format files; an instance
 * `instances/NAME` (as another tool would have set up) has the `enable` files and a `per_cpu/cpu0/trace_pipe_raw`
 * regular file into which {@link appendPages} writes ring-buffer pages encoded through those format files.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  compileRecordEncoder,
  type FieldValue,
  kernelPageLayout,
  packPages,
  parseFormatFile,
} from '@evtrace/trace-format';
import { MC_EVENT_FORMAT, MCE_RECORD_FORMAT } from '../formats.ts';

const FORMATS = [
  ['mce', 'mce_record', MCE_RECORD_FORMAT],
  ['ras', 'mc_event', MC_EVENT_FORMAT],
] as const;

/** Builds `root` as a tracefs with the instance `name`; returns the instance's cpu0 `trace_pipe_raw`. */
export function tracefsTree(root: string, name: string, formats: { mcEvent?: string } = {}): string {
  for (const [system, event, text] of FORMATS) {
    mkdirSync(join(root, 'events', system, event), { recursive: true });
    writeFileSync(
      join(root, 'events', system, event, 'format'),
      event === 'mc_event' ? (formats.mcEvent ?? text) : text,
    );
    mkdirSync(join(root, 'instances', name, 'events', system, event), { recursive: true });
    writeFileSync(join(root, 'instances', name, 'events', system, event, 'enable'), '0\n');
  }
  writeFileSync(join(root, 'instances', name, 'tracing_on'), '0\n');
  mkdirSync(join(root, 'instances', name, 'per_cpu', 'cpu0'), { recursive: true });
  const pipe = join(root, 'instances', name, 'per_cpu', 'cpu0', 'trace_pipe_raw');
  writeFileSync(pipe, '');
  return pipe;
}

/** Appends ring-buffer pages holding these events (`mce_record` or `mc_event` fields) to a `trace_pipe_raw` file. */
export function appendPages(
  pipe: string,
  events: readonly { event: 'mce_record' | 'mc_event'; fields: Record<string, FieldValue> }[],
  formats: { mcEvent?: string } = {},
): void {
  const mce = compileRecordEncoder(parseFormatFile(MCE_RECORD_FORMAT, { system: 'mce' }));
  const ras = compileRecordEncoder(parseFormatFile(formats.mcEvent ?? MC_EVENT_FORMAT, { system: 'ras' }));
  const common = { common_flags: 0, common_preempt_count: 0, common_pid: 0 };
  const records = events.map((e, i) => ({
    tsNs: 1_000_000n + BigInt(i) * 1000n,
    data: (e.event === 'mce_record' ? mce : ras)(e.fields, common),
  }));
  appendFileSync(pipe, packPages(records, kernelPageLayout()));
}
