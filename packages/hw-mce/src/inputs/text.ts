/**
 * Machine checks as text, one reader for the layouts that share mcelog's `KEY value` vocabulary:
 *
 * - mcelog `--ascii` input (`CPU 0 BANK 2`, `STATUS 0x...`, `PROCESSOR 0:0x406f0`, `(XEN)` lines), mcelog's decoded
 *   output (the same keys between its prose lines, `M2M: STATUS ...`, `CPUID Vendor Intel Family 6 Model 79`) and its
 *   `--raw` output (`CPU 0` then `BANK 7`, `RIP 0x10:0x...`);
 * - the kernel log as dmesg, syslog or journald prints it (`mce: [Hardware Error]: CPU 2: Machine Check: 0 Bank 7:
 *   cc00008000010090`, `TSC ... ADDR ... MISC ... SYND ... IPID ...`, `PROCESSOR 2:a20f10 TIME ... SOCKET 0 APIC 4
 *   microcode ...`, `PPIN ...`), several records in a row.
 *
 * A record ends at a blank line, at the next `CPU` line, or at mcelog's "Hardware event" banner. Values that do not
 * parse, lines that belong to no record and records without a STATUS are reported as notes with their line and
 * column; every good record around them is kept.
 */

import { cpuidOf } from '../cpu.ts';
import type { InputNote } from '../errors.ts';
import { emptyRecord, type InputKind, type MceRecord } from '../record.ts';

export interface TextReadResult {
  readonly records: MceRecord[];
  readonly notes: InputNote[];
}

/** dmesg (`[  12.345678] `, `[Sun Nov 22 06:00:00 2026] `, `<4>`), syslog / journald (`Nov 22 06:00:00 host kernel: `). */
const LINE_PREFIX =
  /^(?:<\d+>)?(?:\[\s*\d+\.\d+\]\s*|\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d [\d:]{8} \d{4}\]\s*)?(?:(?:[A-Z][a-z]{2} [ \d]\d [\d:]{8}|\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-][\d:]+)?) \S+ (?:kernel|mcelog)(?:\[\d+\])?: )?(?:\[\s*\d+\.\d+\]\s*)?/;
const MCE_PREFIX = /^(?:mce: )?(?:\[Hardware Error\]:\s*)?/;

/** mcelog's prose in its decoded output: skipped without a note inside a record that began with its banner. */
const BANNER = /Hardware event\. This is not a software error\.|HARDWARE ERROR\. This is \*NOT\* a software problem!/;

/** Kernel lines that carry no registers but belong to machine-check reports. */
const KERNEL_NOISE =
  /^(?:Machine check events logged|Machine check: |Run the above through 'mcelog --ascii'|Some CPUs didn't answer|Fake kernel panic|Kernel panic|mce_notify_irq|Uncorrected hardware memory error|CMCI storm|Corrected error, no action required\.)/;

type Field =
  | 'STATUS'
  | 'MCGSTATUS'
  | 'MCGCAP'
  | 'MISC'
  | 'ADDR'
  | 'TSC'
  | 'SYND'
  | 'SYND1'
  | 'SYND2'
  | 'IPID'
  | 'PPIN'
  | 'TIME'
  | 'SOCKETID'
  | 'SOCKET'
  | 'APICID'
  | 'APIC'
  | 'microcode'
  | 'MICROCODE';

const FIELD_KEYS =
  /\b(MCGSTATUS|STATUS|MCGCAP|MISC|ADDR|TSC|SYND[12]?|IPID|PPIN|TIME|SOCKETID|SOCKET|APICID|APIC|microcode|MICROCODE)\b[ \t]+(\S+)/g;
const HEX = /^(?:0x)?([0-9a-fA-F]{1,16})$/;
const DEC = /^\d{1,20}$/;

/** Reads every machine-check record of a text. `kind` tags the records' source. */
export function readMceText(text: string, options: { file?: string; kind?: InputKind } = {}): TextReadResult {
  const file = options.file;
  const kind = options.kind ?? 'mcelog-ascii';
  const records: MceRecord[] = [];
  const notes: InputNote[] = [];
  let cur: MceRecord | undefined;
  let hasCpu = false;
  let hasStatus = false;
  let inDecoded = false;
  let curLine = 0;
  let unrelated = 0;
  const finish = () => {
    if (cur !== undefined) {
      if (hasStatus) records.push(cur);
      else notes.push({ location: { file, line: curLine }, message: 'record without a STATUS value: skipped' });
    }
    cur = undefined;
    hasCpu = false;
    hasStatus = false;
  };
  const start = (lineNo: number) => {
    cur = emptyRecord({ kind, file, line: lineNo });
    curLine = lineNo;
  };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    const raw = lines[i]!.replace(/\r$/, '');
    const prefix = LINE_PREFIX.exec(raw)?.[0].length ?? 0;
    let s = raw.slice(prefix);
    const mce = MCE_PREFIX.exec(s)?.[0].length ?? 0;
    s = s.slice(mce);
    const base = prefix + mce;
    const trimmed = s.trim();
    if (trimmed === '') {
      finish();
      inDecoded = false;
      continue;
    }
    if (trimmed.startsWith('#')) continue;
    if (BANNER.test(trimmed)) {
      finish();
      inDecoded = true;
      continue;
    }
    const col = (at: number) => base + at + 1;
    const bad = (at: number, what: string) =>
      notes.push({ location: { file, line: lineNo, column: col(at) }, message: what });
    // (XEN) lines of Xen's console: the CPU in the first, bank, status and address in the second.
    if (trimmed.startsWith('(XEN)')) {
      const cpu = /correctable incident occurred on CPU (\d+)/.exec(trimmed);
      const bank = /^\(XEN\) Bank (\d+): ([0-9a-fA-F]+)(?: at\s+([0-9a-fA-F]+))?/.exec(trimmed);
      if (cpu) {
        finish();
        start(lineNo);
        cur!.cpu = Number(cpu[1]);
        hasCpu = true;
      } else if (bank) {
        if (cur === undefined) start(lineNo);
        cur!.bank = Number(bank[1]);
        cur!.status = BigInt(`0x${bank[2]}`);
        hasStatus = true;
        if (bank[3] !== undefined) cur!.addr = BigInt(`0x${bank[3]}`);
      } else if (!inDecoded) bad(0, `unrecognised Xen line: ${clip(trimmed)}`);
      continue;
    }
    let rest = s;
    let restAt = 0;
    // CPU lines start records: `CPU 0 BANK 7`, `CPU 0 7`, `CPU 0` (mcelog --raw), kernel `CPU 2: Machine Check...`.
    const cpuLine =
      /^\s*CPU (\d+)(?::? Machine Check(?: Exception)?:\s*([0-9a-fA-F]+) Bank (\d+):\s*([0-9a-fA-F]+)| BANK (\d+)| (\d+)(?!\S))?/.exec(
        s,
      );
    if (cpuLine && !/^\s*CPUID\b/.test(s)) {
      if (hasCpu || hasStatus) finish();
      if (cur === undefined) start(lineNo);
      const r = cur!;
      r.cpu = Number(cpuLine[1]);
      hasCpu = true;
      if (cpuLine[2] !== undefined) {
        r.mcgstatus = BigInt(`0x${cpuLine[2]}`);
        r.bank = Number(cpuLine[3]);
        r.status = BigInt(`0x${cpuLine[4]}`);
        hasStatus = true;
      } else if (cpuLine[5] !== undefined) r.bank = Number(cpuLine[5]);
      else if (cpuLine[6] !== undefined) r.bank = Number(cpuLine[6]);
      rest = s.slice(cpuLine[0].length);
      restAt = cpuLine[0].length;
    }
    let matched = cpuLine !== null;
    const bankLine = /^\s*BANK (\d+)\s*$/.exec(rest);
    if (bankLine) {
      if (cur === undefined) start(lineNo);
      cur!.bank = Number(bankLine[1]);
      continue;
    }
    const rip = /\bRIP(?: !INEXACT!)? ([0-9a-fA-Fx]+):<?([0-9a-fA-Fx]+)>?/.exec(rest);
    if (rip) {
      if (cur === undefined) start(lineNo);
      const cs = parseHex(rip[1]!);
      const ip = parseHex(rip[2]!);
      if (cs === undefined || ip === undefined) bad(restAt + rip.index, `bad RIP value '${rip[0]}'`);
      else {
        cur!.cs = Number(cs & 0xffffn);
        cur!.ip = ip;
      }
      matched = true;
      rest = rest.slice(0, rip.index) + ' '.repeat(rip[0].length) + rest.slice(rip.index + rip[0].length);
    }
    const proc = /\bPROCESSOR (\d+):([0-9a-fA-Fx]+)/.exec(rest);
    if (proc) {
      if (cur === undefined) start(lineNo);
      const id = parseHex(proc[2]!);
      if (id === undefined || id > 0xffffffffn) bad(restAt + proc.index, `bad PROCESSOR value '${proc[0]}'`);
      else {
        cur!.cpuvendor = Number(proc[1]);
        cur!.cpuid = Number(id);
      }
      matched = true;
    }
    const cpuid = /\bCPUID Vendor (\S+) Family (\d+) Model (\d+)(?: Step (\d+))?/.exec(rest);
    if (cpuid) {
      if (cur === undefined) start(lineNo);
      cur!.cpuvendor = vendorNumber(cpuid[1]!);
      cur!.cpuid = cpuidOf(Number(cpuid[2]), Number(cpuid[3]), Number(cpuid[4] ?? 0));
      matched = true;
    }
    for (const m of rest.matchAll(FIELD_KEYS)) {
      const key = m[1] as Field;
      if (cur === undefined) start(lineNo);
      const at = restAt + m.index + key.length + 1;
      matched = true;
      if (!setField(cur!, key, m[2]!)) {
        bad(at, `bad ${key} value '${clip(m[2]!)}'`);
        continue;
      }
      if (key === 'STATUS') hasStatus = true;
      matched = true;
    }
    if (!matched && !inDecoded && !KERNEL_NOISE.test(trimmed)) {
      // Other kernel messages in a whole log are not machine checks: counted, not listed one by one.
      if (kind === 'kernel-log' && mce === 0) unrelated++;
      else bad(s.length - s.trimStart().length, `not a machine-check line, ignored: ${clip(trimmed)}`);
    }
  }
  finish();
  if (unrelated > 0) {
    notes.push({ location: { file }, message: `${unrelated} log lines unrelated to machine checks were skipped` });
  }
  return { records, notes };
}

function setField(r: MceRecord, key: Field, value: string): boolean {
  const v = key === 'TIME' || key === 'SOCKETID' || key === 'SOCKET' ? parseDec(value) : parseHex(value);
  if (v === undefined) return false;
  switch (key) {
    case 'STATUS':
      r.status = v;
      break;
    case 'MCGSTATUS':
      r.mcgstatus = v;
      break;
    case 'MCGCAP':
      r.mcgcap = v;
      break;
    case 'MISC':
      r.misc = v;
      break;
    case 'ADDR':
      r.addr = v;
      break;
    case 'TSC':
      r.tsc = v;
      break;
    case 'SYND':
      r.synd = v;
      break;
    case 'SYND1':
      r.synd1 = v;
      break;
    case 'SYND2':
      r.synd2 = v;
      break;
    case 'IPID':
      r.ipid = v;
      break;
    case 'PPIN':
      r.ppin = v;
      break;
    case 'TIME':
      r.time = v;
      break;
    case 'SOCKETID':
    case 'SOCKET':
      if (v > 0xffffffffn) return false;
      r.socketid = Number(v);
      break;
    case 'APICID':
    case 'APIC':
      if (v > 0xffffffffn) return false;
      r.apicid = Number(v);
      break;
    case 'microcode':
    case 'MICROCODE':
      if (v > 0xffffffffn) return false;
      r.microcode = Number(v);
      break;
  }
  return true;
}

function parseHex(s: string): bigint | undefined {
  const m = HEX.exec(s.replace(/[,;]$/, ''));
  return m ? BigInt(`0x${m[1]}`) : undefined;
}

function parseDec(s: string): bigint | undefined {
  const t = s.replace(/[,;]$/, '');
  if (DEC.test(t)) return BigInt(t);
  return /^0x[0-9a-fA-F]{1,16}$/.test(t) ? BigInt(t) : undefined;
}

const VENDORS: Readonly<Record<string, number>> = {
  Intel: 0,
  Cyrix: 1,
  AMD: 2,
  UMC: 3,
  Centaur: 5,
  Transmeta: 7,
  NSC: 8,
  Hygon: 9,
};

function vendorNumber(name: string): number {
  return VENDORS[name] ?? (/^\d+$/.test(name) ? Number(name) : 0);
}

function clip(s: string): string {
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
