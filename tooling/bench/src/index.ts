/**
 * Benchmark helpers shared by every package's `*.bench.ts`. Benchmarks report numbers; they never fail on speed.
 * Run with `node` directly (type stripping), never under a test runner.
 */

export interface Measurement {
  /** Row label, e.g. "ringbuf write+read 32 B". */
  name: string;
  /** Nanoseconds per operation (median of the samples). */
  nsPerOp: number;
  /** Operations per second derived from nsPerOp. */
  opsPerSec: number;
  /** Optional throughput in bytes per second. */
  bytesPerSec?: number;
}

export interface MeasureOptions {
  /** Operations performed by one call of `fn` (a batch). Default 1. */
  opsPerCall?: number;
  /** Bytes moved by one operation, to report MB/s. */
  bytesPerOp?: number;
  /** Minimum wall time of one sample in ms. Default 200. */
  sampleMs?: number;
  /** Number of samples; the median is reported. Default 7. */
  samples?: number;
}

/** Times `fn` (which performs `opsPerCall` operations) and returns the median cost per operation. */
export function measure(name: string, fn: () => void, options: MeasureOptions = {}): Measurement {
  const opsPerCall = options.opsPerCall ?? 1;
  const calls = calibrate(fn, options.sampleMs ?? 200);
  const results: number[] = [];
  for (let s = 0; s < (options.samples ?? 7); s++) results.push(sample(fn, calls, opsPerCall));
  return finish(name, median(results), options.bytesPerOp);
}

/** Warms `fn` up until the JIT has settled and returns the number of calls that fill a sample of `sampleMs`. */
function calibrate(fn: () => void, sampleMs: number): number {
  let calls = 1;
  for (;;) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) fn();
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (ms >= sampleMs / 4) return Math.max(1, calls * 4);
    calls *= 2;
  }
}

/** ns per operation of `calls` calls of `fn`. */
function sample(fn: () => void, calls: number, opsPerCall: number): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) fn();
  return Number(process.hrtime.bigint() - t0) / (calls * opsPerCall);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

/** One case of {@link measureRounds}. */
export interface RoundCase {
  name: string;
  /** Performs `opsPerCall` operations (the options'). */
  fn: () => void;
  bytesPerOp?: number;
}

/** What {@link measureRounds} found: each case's median, and ratios taken round by round. */
export interface Rounds {
  /** One per case, in the order given; nsPerOp is the median over the rounds. */
  readonly measurements: Measurement[];
  /** The median over the rounds of case `a`'s time divided by case `b`'s (indices into the cases). */
  ratio(a: number, b: number): number;
  /** The median over the rounds of case `a`'s ns per operation less case `b`'s. */
  difference(a: number, b: number): number;
}

/**
 * Times several cases in rounds: each round takes one sample of every case, in an order that rotates from round to
 * round. A change of machine speed while the benchmark runs (a virtual machine's neighbours, the clock frequency)
 * then falls on every case alike, and a ratio of two cases is taken within each round, where it held, rather than
 * between medians measured seconds apart.
 */
export function measureRounds(cases: readonly RoundCase[], options: MeasureOptions = {}): Rounds {
  const opsPerCall = options.opsPerCall ?? 1;
  const rounds = options.samples ?? 7;
  const calls = cases.map((c) => calibrate(c.fn, options.sampleMs ?? 200));
  const times = cases.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < cases.length; k++) {
      const i = (k + r) % cases.length;
      times[i]!.push(sample(cases[i]!.fn, calls[i]!, opsPerCall));
    }
  }
  return {
    measurements: cases.map((c, i) => finish(c.name, median(times[i]!), c.bytesPerOp)),
    ratio: (a, b) => median(times[a]!.map((t, r) => t / times[b]![r]!)),
    difference: (a, b) => median(times[a]!.map((t, r) => t - times[b]![r]!)),
  };
}

/** Builds a Measurement from a total time for `ops` operations (for multi-threaded or external runs). */
export function fromTotal(name: string, totalNs: number, ops: number, bytesPerOp?: number): Measurement {
  return finish(name, totalNs / ops, bytesPerOp);
}

function finish(name: string, nsPerOp: number, bytesPerOp?: number): Measurement {
  const m: Measurement = { name, nsPerOp, opsPerSec: 1e9 / nsPerOp };
  if (bytesPerOp !== undefined) m.bytesPerSec = (bytesPerOp * 1e9) / nsPerOp;
  return m;
}

export interface Comparison {
  /** What is measured, e.g. "32 B record write+read". */
  case: string;
  ours: Measurement;
  /** The peer (another tool) or limit (a memory copy) measured in the same run; absent when none runs here. */
  peer?: Measurement;
  /** Why there is no peer, printed in its place (e.g. "none here: no other writer of this format"). */
  noPeer?: string;
  /** Optional target, printed as text (e.g. "<= 15 ns", ">= 7x"). */
  target?: string;
  /** Speedup to print instead of peer time / our time, e.g. the per-round median of {@link Rounds.ratio}. */
  speedup?: number;
}

function fmtNs(ns: number): string {
  return ns >= 1e6 ? `${(ns / 1e6).toFixed(2)} ms` : ns >= 1e3 ? `${(ns / 1e3).toFixed(2)} µs` : `${ns.toFixed(1)} ns`;
}

function fmtRate(ops: number): string {
  return ops >= 1e6
    ? `${(ops / 1e6).toFixed(2)} M/s`
    : ops >= 1e3
      ? `${(ops / 1e3).toFixed(1)} k/s`
      : `${ops.toFixed(0)}/s`;
}

/**
 * Prints a Markdown table: each case with our figure, the peer's, and speedup = peer time / our time
 * (above 1 means evtrace is faster).
 */
export function printComparisons(title: string, rows: readonly Comparison[]): void {
  const lines = [
    `\n### ${title}\n`,
    '| case | evtrace | peer | peer figure | speedup (peer/evtrace) | target |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const r of rows) {
    const ours = `${fmtNs(r.ours.nsPerOp)}/op, ${fmtRate(r.ours.opsPerSec)}${mbps(r.ours)}`;
    if (r.peer === undefined) {
      lines.push(`| ${r.case} | ${ours} | ${r.noPeer ?? 'none'} | - | - | ${r.target ?? ''} |`);
      continue;
    }
    const peer = `${fmtNs(r.peer.nsPerOp)}/op, ${fmtRate(r.peer.opsPerSec)}${mbps(r.peer)}`;
    const ratio = r.speedup ?? r.peer.nsPerOp / r.ours.nsPerOp;
    lines.push(`| ${r.case} | ${ours} | ${r.peer.name} | ${peer} | ${ratio.toFixed(2)}x | ${r.target ?? ''} |`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

function mbps(m: Measurement): string {
  return m.bytesPerSec === undefined ? '' : `, ${(m.bytesPerSec / 1e6).toFixed(0)} MB/s`;
}

/** Keeps a value alive so the JIT cannot drop the computation that produced it. */
export let blackhole: unknown;
export function consume(value: unknown): void {
  blackhole = value;
}
