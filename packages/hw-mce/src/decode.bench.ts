/**
 * Decoding speed from binary input: struct mce records (the /dev/mcelog ABI) read and fully decoded (architectural
 * bits, MCA code, model-specific fields, severity, location, summary text). There is no mcelog on Debian 12 to
 * measure beside it, so the peer is the floor any decoder pays: a plain loop reading the same records' registers
 * out of the Buffer. Run: `node src/decode.bench.ts`. The target (issue #9) is >= 1 M records/s in wall time; the
 * load average is printed first because on a shared machine wall time counts other processes' turns.
 */
import { cpus, loadavg } from 'node:os';
import { consume, fromTotal, measure, printComparisons } from '@evtrace/bench';
import { decodeMce } from './decode.ts';
import { encodeStructMce, readStructMce, STRUCT_MCE } from './inputs/struct-mce.ts';
import { readMceText } from './inputs/text.ts';
import { emptyRecord } from './record.ts';

console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')} (1/5/15 min) on ${cpus().length} CPUs`,
);

const N = 10_000;
const statuses = [
  0x8c00004000010090n,
  0x9c00000000000151n,
  0xbd80000000100134n,
  0xcc00008000010091n,
  0x8800000000000080n,
];
const cpuids = [0x50654, 0x106a0, 0x806f8, 0xa00f11];
const records = Array.from({ length: N }, (_, i) =>
  Object.assign(emptyRecord({ kind: 'struct-mce' }), {
    cpu: i % 64,
    bank: [7, 13, 1, 8, 2][i % 5]!,
    status: statuses[i % statuses.length]!,
    misc: 0x86n,
    addr: 0x1234000n + BigInt(i) * 0x1000n,
    mcgcap: 0x1000c16n,
    cpuvendor: i % 4 === 3 ? 2 : 0,
    cpuid: cpuids[i % 4]!,
    socketid: i & 1,
    apicid: i % 64,
    ipid: i % 4 === 3 ? 0x9600000000n : 0n,
  }),
);
const binary = encodeStructMce(records);
const text = records
  .map(
    (r) =>
      `CPU ${r.cpu} BANK ${r.bank}\nSTATUS 0x${r.status.toString(16)}\nMISC 0x86\nADDR 0x${r.addr.toString(16)}\nPROCESSOR ${r.cpuvendor}:0x${r.cpuid.toString(16)}\n\n`,
  )
  .join('');

const ours = measure(
  'read + decode struct mce',
  () => {
    const { records: rs } = readStructMce(binary, { recordLength: 128 });
    let n = 0;
    for (const r of rs) n += decodeMce(r).location.bank;
    consume(n);
  },
  { opsPerCall: N, bytesPerOp: 128 },
);
const oursText = measure(
  'read + decode + summary text',
  () => {
    const { records: rs } = readStructMce(binary, { recordLength: 128 });
    let n = 0;
    for (const r of rs) n += decodeMce(r).summary.length;
    consume(n);
  },
  { opsPerCall: N, bytesPerOp: 128 },
);
const floor = measure(
  'Buffer register read loop',
  () => {
    const v = new DataView(binary.buffer, binary.byteOffset, binary.byteLength);
    let x = 0n;
    for (let at = 0; at < binary.length; at += 128) {
      x ^=
        v.getBigUint64(at + STRUCT_MCE.status, true) ^
        v.getBigUint64(at + STRUCT_MCE.misc, true) ^
        v.getBigUint64(at + STRUCT_MCE.addr, true);
      x ^=
        v.getBigUint64(at + STRUCT_MCE.mcgstatus, true) ^
        v.getBigUint64(at + STRUCT_MCE.mcgcap, true) ^
        BigInt(v.getUint32(at + STRUCT_MCE.cpuid, true) + v.getUint8(at + STRUCT_MCE.bank));
    }
    consume(x);
  },
  { opsPerCall: N, bytesPerOp: 128 },
);
const textOurs = measure(
  'read + decode mcelog --ascii text',
  () => {
    const { records: rs } = readMceText(text);
    let n = 0;
    for (const r of rs) n += decodeMce(r).summary.length;
    consume(n);
  },
  { opsPerCall: N },
);
const textFloor = measure(
  'split lines + parseInt loop',
  () => {
    let n = 0;
    for (const line of text.split('\n')) {
      const sp = line.indexOf(' ');
      if (sp > 0) n += Number.parseInt(line.slice(sp + 1), 16) | 0;
    }
    consume(n);
  },
  { opsPerCall: N },
);
/** The same work timed in CPU time (user + system): on a shared, loaded machine wall time counts other processes' turns. */
function cpuTime(name: string, fn: () => void, reps: number) {
  for (let i = 0; i < 3; i++) fn();
  const t0 = process.cpuUsage();
  for (let i = 0; i < reps; i++) fn();
  const d = process.cpuUsage(t0);
  return fromTotal(name, (d.user + d.system) * 1000, reps * N, 128);
}
const decodeOnly = () => {
  const { records: rs } = readStructMce(binary, { recordLength: 128 });
  let n = 0;
  for (const r of rs) n += decodeMce(r).location.bank;
  consume(n);
};
const floorOnly = () => {
  const v = new DataView(binary.buffer, binary.byteOffset, binary.byteLength);
  let x = 0n;
  for (let at = 0; at < binary.length; at += 128) {
    x ^= v.getBigUint64(at + STRUCT_MCE.status, true) ^ v.getBigUint64(at + STRUCT_MCE.misc, true);
  }
  consume(x);
};
printComparisons('@evtrace/hw-mce, CPU time (user + system) of 50 passes over 10 000 records', [
  {
    case: 'struct mce records, read + decode',
    ours: cpuTime('read + decode (CPU time)', decodeOnly, 50),
    peer: cpuTime('Buffer read loop (CPU time)', floorOnly, 50),
    target: '>= 1 M records/s',
  },
]);
printComparisons(
  '@evtrace/hw-mce: decoding machine checks (peer: no mcelog on Debian 12; the floor is a plain read loop)',
  [
    {
      case: 'struct mce records, read + decode (severity, class, location)',
      ours,
      peer: floor,
      target: '>= 1 M records/s',
    },
    { case: 'struct mce records, read + decode + operator summary', ours: oursText, peer: floor },
    { case: 'mcelog --ascii records, read + full decode', ours: textOurs, peer: textFloor },
  ],
);
