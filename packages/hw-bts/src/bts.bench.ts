/**
 * Decode + symbolize and call-history reconstruction, on branches of a real program (a static build of the test
 * program run under QEMU, its few thousand branches tiled to 1 M raw 24-byte records), beside perf script decoding
 * and symbolizing the samples of a perf.data recorded in the same run: the stated baseline, since this machine has no
 * BTS or LBR for perf to read branch data from.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { consume, fromTotal, measure, printComparisons } from '@evtrace/bench';
import { callHistory } from './analyses.ts';
import { BranchList } from './branch.ts';
import { parseQemuLog } from './qemu.ts';
import { decodeBts, encodeBts } from './raw.ts';
import { Symbolizer } from './symbols.ts';
import { buildProgram, qemuLog } from './testing/programs.ts';

const RECORDS = 1 << 20;
const exe = buildProgram();
const real = parseQemuLog(readFileSync(qemuLog(exe), 'utf8')).branches;
const tiled = new BranchList(RECORDS);
for (let i = 0; i < RECORDS; i++) tiled.copyFrom(real, i % real.length);
const bytes = encodeBts(tiled);
const symbols = new Symbolizer().addElf(exe);
// Kinds come from the QEMU log; raw BTS records have none, so call history below runs on the decoded records
// (kinds inferred from symbols) and on the QEMU-typed list.
let sink = 0;

const decodeSym = measure(
  'decode+symbolize 24-byte records',
  () => {
    const { branches } = decodeBts(bytes);
    const { from, to } = symbols.resolve(branches);
    sink += from[from.length - 1]! + to[0]!;
  },
  { opsPerCall: RECORDS, bytesPerOp: 24, samples: 5, sampleMs: 300 },
);
const decoded = decodeBts(bytes).branches;
const callsTyped = measure('call history (kinds from QEMU)', () => consume(callHistory(tiled, symbols)), {
  opsPerCall: RECORDS,
  samples: 5,
  sampleMs: 300,
});
const callsInferred = measure('call history (raw BTS, kinds inferred)', () => consume(callHistory(decoded, symbols)), {
  opsPerCall: RECORDS,
  samples: 5,
  sampleMs: 300,
});
const decodeOnly = measure('decode only', () => consume(decodeBts(bytes)), {
  opsPerCall: RECORDS,
  samples: 5,
  sampleMs: 300,
});
consume(sink);

// The peer: perf script over a perf.data of the same program kind (cpu-clock samples of a busy loop), per sample.
const dir = mkdtempSync(join(process.env.TMPDIR ?? '/tmp', 'bts-bench-'));
const data = join(dir, 'perf.data');
const busy = buildProgram(
  'int __attribute__((noinline)) f(int i){return i*3;} int main(void){volatile long s=0; for(long i=0;i<400000000;i++) s+=f(i); return s==0;}',
  'busy',
);
execFileSync('perf', ['record', '-q', '-e', 'cpu-clock', '-c', '10000', '-o', data, '--', busy], { stdio: 'ignore' });
const samples = execFileSync('perf', ['script', '-i', data, '-F', 'ip'], { maxBuffer: 1 << 28 })
  .toString()
  .trim()
  .split('\n').length;
const runs: number[] = [];
for (let r = 0; r < 3; r++) {
  const t0 = process.hrtime.bigint();
  const res = spawnSync('perf', ['script', '-i', data, '-F', 'ip,sym'], { stdio: ['ignore', 'ignore', 'ignore'] });
  if (res.status !== 0) throw new Error(`perf script failed: ${res.status}`);
  runs.push(Number(process.hrtime.bigint() - t0));
}
runs.sort((a, b) => a - b);
const peer = fromTotal(`perf script -F ip,sym (${samples} samples)`, runs[1]!, samples);

printComparisons(`hw-bts (${RECORDS} records from ${real.length} real branches; 2 shared cores, noisy)`, [
  { case: 'decode + symbolize (from and to)', ours: decodeSym, peer, target: '>= 10 M/s' },
  { case: 'decode only (no symbols)', ours: decodeOnly, peer },
  { case: 'call history, kinds from the source', ours: callsTyped, peer, target: '>= 5 M/s' },
  { case: 'call history, raw BTS (kinds inferred)', ours: callsInferred, peer, target: '>= 5 M/s' },
]);
