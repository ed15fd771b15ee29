/**
 * Decode + symbolize, perf script text parsing and call-history reconstruction on branches of a real program (the
 * test program run under QEMU, its few thousand branches tiled to 1 M), each beside perf script working on the SAME
 * branches: a perf.data whose samples carry them as LBR branch stacks (16 per sample), printed with
 * `-F brstacksym` (perf decodes and symbolizes every entry) or `-F brstack`. perf runs as a child process, its
 * time per branch from the median of 3 runs over 256 Ki branches.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { consume, fromTotal, measure, printComparisons } from '@evtrace/bench';
import { callHistory } from './analyses.ts';
import { BranchFlag, BranchList } from './branch.ts';
import { parsePerfScript } from './perf-script.ts';
import { parseQemuLog } from './qemu.ts';
import { decodeBts, encodeBts } from './raw.ts';
import { Symbolizer } from './symbols.ts';
import { writeBranchPerfData } from './testing/perf-data-writer.ts';
import { buildProgram, qemuLog } from './testing/programs.ts';

const RECORDS = 1 << 20;
const PERF_RECORDS = 1 << 18;
const exe = buildProgram();
const real = parseQemuLog(readFileSync(qemuLog(exe), 'utf8')).branches;
const tiled = new BranchList(RECORDS);
for (let i = 0; i < RECORDS; i++) {
  const j = tiled.copyFrom(real, i % real.length);
  tiled.flags[j] = i % 7 === 0 ? BranchFlag.mispredicted : BranchFlag.predicted;
}
const bytes = encodeBts(tiled);
const symbols = new Symbolizer().addElf(exe);
const opts = { opsPerCall: RECORDS, samples: 5, sampleMs: 300 };

const decodeSym = measure(
  'decode+symbolize',
  () => {
    const { branches } = decodeBts(bytes);
    const { from, to } = symbols.resolve(branches);
    consume(from[from.length - 1]! + to[0]!);
  },
  { ...opts, bytesPerOp: 24 },
);
const decoded = decodeBts(bytes).branches;
const callsTyped = measure('call history', () => consume(callHistory(tiled, symbols)), opts);
const callsInferred = measure('call history', () => consume(callHistory(decoded, symbols)), opts);

// perf on the same branches.
const perfList = new BranchList(PERF_RECORDS);
for (let i = 0; i < PERF_RECORDS; i++) perfList.copyFrom(tiled, i);
const data = `${exe}.bench.perf.data`;
writeBranchPerfData(data, {
  exe,
  mapStart: 0x400000n,
  mapLength: 0x200000n,
  pgoff: 0n,
  pid: 4242,
  comm: 'prog',
  branches: perfList,
  perStack: 16,
});
function perf(fields: string): { ns: number; text: string } {
  const runs: number[] = [];
  let text = '';
  for (let r = 0; r < 3; r++) {
    const t0 = process.hrtime.bigint();
    const res = spawnSync('perf', ['script', '-i', data, '-F', fields], {
      maxBuffer: 1 << 30,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    runs.push(Number(process.hrtime.bigint() - t0));
    if (res.status !== 0) throw new Error(`perf script -F ${fields} failed: ${res.status}`);
    text = res.stdout.toString();
  }
  runs.sort((a, b) => a - b);
  return { ns: runs[1]!, text };
}
const perfSym = perf('brstacksym');
const perfRaw = perf('tid,cpu,time,brstack');
const parsed = parsePerfScript(perfRaw.text);
if (parsed.branches.length !== PERF_RECORDS || parsed.problems.length > 0)
  throw new Error(
    `perf script text parsed into ${parsed.branches.length} branches, ${parsed.problems.length} problems`,
  );
const parse = measure('parse perf script brstack text', () => consume(parsePerfScript(perfRaw.text)), {
  opsPerCall: PERF_RECORDS,
  samples: 5,
  sampleMs: 300,
});
const peerSym = fromTotal('perf script -F brstacksym', perfSym.ns, PERF_RECORDS);
const peerRaw = fromTotal('perf script -F brstack', perfRaw.ns, PERF_RECORDS);

/** CPU time per operation of `fn` (user + system, median of 5): what the load of other jobs does not inflate. */
function cpuNs(fn: () => void, ops: number): number {
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const c0 = process.cpuUsage();
    fn();
    const c = process.cpuUsage(c0);
    runs.push(((c.user + c.system) * 1000) / ops);
  }
  runs.sort((a, b) => a - b);
  return runs[2]!;
}
const cpuRows = [
  ['decode + symbolize', cpuNs(() => consume(symbols.resolve(decodeBts(bytes).branches)), RECORDS)],
  ['call history (QEMU kinds)', cpuNs(() => consume(callHistory(tiled, symbols)), RECORDS)],
  ['call history (raw BTS)', cpuNs(() => consume(callHistory(decoded, symbols)), RECORDS)],
  ['parse perf script text', cpuNs(() => consume(parsePerfScript(perfRaw.text)), PERF_RECORDS)],
] as const;

printComparisons(
  `hw-bts: branches of a real program (${real.length} from QEMU, tiled); 2 cores shared with other jobs`,
  [
    { case: 'decode raw 24-byte records + symbolize from and to', ours: decodeSym, peer: peerSym, target: '>= 10 M/s' },
    { case: 'parse perf script brstack text (ours) / print it (perf)', ours: parse, peer: peerRaw },
    { case: 'call history, kinds from the source (QEMU)', ours: callsTyped, peer: peerSym, target: '>= 5 M/s' },
    {
      case: 'call history, raw BTS (kinds inferred from symbols)',
      ours: callsInferred,
      peer: peerSym,
      target: '>= 5 M/s',
    },
  ],
);
process.stdout.write(
  `\nCPU time per record (process.cpuUsage, median of 5; the wall-clock figures above include waiting for the CPU):\n${cpuRows
    .map(([name, ns]) => `- ${name}: ${ns.toFixed(1)} ns, ${(1e3 / ns).toFixed(2)} M/s`)
    .join('\n')}\n`,
);
