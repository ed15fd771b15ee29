/**
 * `mce:mce_record` as text (trace_pipe, `trace-cmd report`, `perf script`): one record per line in one of the three
 * layouts its print format has had (include/trace/events/mce.h):
 *
 * 1. 2.6.32-4.x: `CPU: %d, MCGc/s: %llx/%llx, MC%d: %016Lx, ADDR/MISC: %016Lx/%016Lx, RIP: %02x:<%016Lx>, TSC: %llx,
 *    PROCESSOR: %u:%x, TIME: %llu, SOCKET: %u, APIC: %x`
 * 2. 4.x-5.x adds `IPID: %016Lx` after MCi_STATUS and `SYND: %016Lx` after ADDR/MISC;
 * 3. 6.x: `... MC%d: %016llx, IPID: %016llx, ADDR: %016llx, MISC: %016llx, SYND: %016llx, RIP: %02x:<%016llx>,
 *    TSC: %llx, PPIN: %llx, vendor: %u, CPUID: %x, time: %llu, socket: %u, APIC: %x, microcode: %x`.
 *
 * Keys are matched by name, so all three (and the prefixes tracers put before them) read the same way.
 */
import type { InputNote } from '../errors.ts';
import { emptyRecord, type MceRecord } from '../record.ts';

const START = /CPU: (\d+), MCGc\/s: ([0-9a-fA-F]+)\/([0-9a-fA-F]+), MC(\d+): ([0-9a-fA-F]+)/;
const PAIRS: readonly [RegExp, (r: MceRecord, m: RegExpExecArray) => void][] = [
  [/IPID: ([0-9a-fA-F]+)/, (r, m) => (r.ipid = big(m[1]!))],
  [
    /ADDR\/MISC: ([0-9a-fA-F]+)\/([0-9a-fA-F]+)/,
    (r, m) => {
      r.addr = big(m[1]!);
      r.misc = big(m[2]!);
    },
  ],
  [/ADDR: ([0-9a-fA-F]+)/, (r, m) => (r.addr = big(m[1]!))],
  [/(?<!\/)MISC: ([0-9a-fA-F]+)/, (r, m) => (r.misc = big(m[1]!))],
  [/SYND: ([0-9a-fA-F]+)/, (r, m) => (r.synd = big(m[1]!))],
  [
    /RIP: ([0-9a-fA-F]+):<([0-9a-fA-F]+)>/,
    (r, m) => {
      r.cs = Number.parseInt(m[1]!, 16) & 0xffff;
      r.ip = big(m[2]!);
    },
  ],
  [/TSC: ([0-9a-fA-F]+)/, (r, m) => (r.tsc = big(m[1]!))],
  [/PPIN: ([0-9a-fA-F]+)/, (r, m) => (r.ppin = big(m[1]!))],
  [
    /PROCESSOR: (\d+):([0-9a-fA-F]+)/,
    (r, m) => {
      r.cpuvendor = Number(m[1]);
      r.cpuid = Number.parseInt(m[2]!, 16) >>> 0;
    },
  ],
  [/vendor: (\d+)/, (r, m) => (r.cpuvendor = Number(m[1]))],
  [/CPUID: ([0-9a-fA-F]+)/, (r, m) => (r.cpuid = Number.parseInt(m[1]!, 16) >>> 0)],
  [/(?:TIME|time): (\d+)/, (r, m) => (r.time = BigInt(m[1]!))],
  [/(?:SOCKET|socket): (\d+)/, (r, m) => (r.socketid = Number(m[1]))],
  [/APIC: ([0-9a-fA-F]+)/, (r, m) => (r.apicid = Number.parseInt(m[1]!, 16))],
  [/microcode: ([0-9a-fA-F]+)/, (r, m) => (r.microcode = Number.parseInt(m[1]!, 16) >>> 0)],
];

function big(h: string): bigint {
  return BigInt(`0x${h.slice(-16)}`);
}

/** Reads every mce_record line; lines that mention mce_record but do not parse are notes. */
export function readTraceText(
  text: string,
  options: { file?: string } = {},
): { records: MceRecord[]; notes: InputNote[] } {
  const file = options.file;
  const records: MceRecord[] = [];
  const notes: InputNote[] = [];
  let other = 0;
  text.split('\n').forEach((line, i) => {
    const m = START.exec(line);
    if (m === null) {
      if (/mce_record/.test(line)) {
        notes.push({
          location: { file, line: i + 1, column: line.indexOf('mce_record') + 1 },
          message: 'mce_record line without CPU, MCGc/s and MCi_STATUS: skipped',
        });
      } else if (line.trim() !== '' && !line.startsWith('#')) other++;
      return;
    }
    const r = emptyRecord({ kind: 'trace-text', file, line: i + 1 });
    r.cpu = Number(m[1]);
    r.mcgcap = big(m[2]!);
    r.mcgstatus = big(m[3]!);
    r.bank = Number(m[4]);
    r.status = big(m[5]!);
    const tail = line.slice(m.index + m[0].length);
    for (const [re, set] of PAIRS) {
      const x = re.exec(tail);
      if (x) set(r, x);
    }
    records.push(r);
  });
  if (other > 0)
    notes.push({ location: { file }, message: `${other} lines that are not mce_record events were skipped` });
  return { records, notes };
}
