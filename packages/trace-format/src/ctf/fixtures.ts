import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CtfTraceData } from './reader.ts';

/** The shared fixtures folder (`../shared/fixtures` from the repository root), or undefined when absent. */
export function sharedFixtures(): string | undefined {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
  const dir = resolve(root, '../shared/fixtures');
  return existsSync(dir) ? dir : undefined;
}

export interface FixtureCase {
  /** Short name, e.g. `succeed/sequence`. */
  readonly name: string;
  /** The trace directory. */
  readonly dir: string;
  /** babeltrace2's text output (gzip), for cases it reads. */
  readonly expectedText?: string;
}

/** Every trace of the babeltrace and Trace Compass fixtures with babeltrace2's expected text, and every fail trace. */
export function ctfFixtureCases(fixtures: string): { succeed: FixtureCase[]; fail: FixtureCase[] } {
  const bt = join(fixtures, 'ctf-babeltrace-v2.0.4');
  const traces = join(bt, 'tests/data/ctf-traces');
  const succeed: FixtureCase[] = [];
  for (const group of ['succeed', 'packet_seq_num', 'intersection']) {
    for (const name of readdirSync(join(bt, 'expected', group)).sort()) {
      const dir = name.startsWith('multi-domains-')
        ? join(traces, group, 'multi-domains', name.slice('multi-domains-'.length))
        : join(traces, group, name);
      succeed.push({
        name: `${group}/${name}`,
        dir,
        expectedText: join(bt, 'expected', group, name, 'babeltrace2-text.txt.gz'),
      });
    }
  }
  const tc = join(fixtures, 'ctf-tracecompass');
  for (const name of ['flipping-endianness', 'perf-taskset2']) {
    succeed.push({
      name: `tracecompass/${name}`,
      dir: join(tc, 'ctf/src/main/resources', name),
      expectedText: join(tc, 'expected', name, 'babeltrace2-text.txt.gz'),
    });
  }
  const fail: FixtureCase[] = [];
  for (const name of readdirSync(join(traces, 'fail')).sort()) {
    const base = join(traces, 'fail', name);
    fail.push({ name: `fail/${name}`, dir: existsSync(join(base, 'trace')) ? join(base, 'trace') : base });
  }
  return { succeed, fail };
}

/** `trace` with one stream (`index` modulo their count) changed at each edit's byte (modulo its length): for fuzzing. */
export function withEditedStream(
  trace: CtfTraceData & { readonly streams: readonly { readonly path: string; readonly data: Uint8Array }[] },
  index: number,
  edits: readonly { readonly at: number; readonly value: number }[],
): CtfTraceData {
  const k = index % trace.streams.length;
  const data = Uint8Array.from(trace.streams[k]!.data);
  for (const e of edits) if (data.length > 0) data[e.at % data.length] = e.value;
  return { metadata: trace.metadata, streams: trace.streams.map((st, j) => (j === k ? { path: st.path, data } : st)) };
}
