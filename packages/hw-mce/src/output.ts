/**
 * What a decoded record looks like to people and programs: operator text (what failed, where, how bad, what to do)
 * and one JSON object per record with register values as hex strings.
 */
import { statusFlagNames } from './bits.ts';
import { type DecodedMce, whereText } from './decode.ts';
import { hex } from './record.ts';

/** The JSON form of a decoded record (`evtrace mce decode --json`). */
export interface MceJson {
  cpu: number;
  bank: number;
  status: string;
  addr: string | null;
  misc: string | null;
  mcgstatus: string;
  mcgcap: string | null;
  severity: DecodedMce['severity'];
  sdm_class: string;
  class: DecodedMce['class'];
  summary: string;
  advice: string;
  mca: { code: string; mnemonic: string; description: string; filtered: boolean };
  socket: number | null;
  channel: number | null;
  dimm: number | null;
  page: string | null;
  unit: string | null;
  corrected_by: string | null;
  flags: string[];
  details: string[];
  fields: Record<string, number | string | boolean>;
  vendor: string;
  family: number | null;
  model: number | null;
  stepping: number | null;
  cpu_type: string;
  ipid: string | null;
  synd: string | null;
  synd1: string | null;
  synd2: string | null;
  ppin: string | null;
  /** struct mce's `time` (seconds since the epoch), a u64: a decimal string as every 64-bit integer in evtrace's JSON. */
  time: string | null;
  unknown: string[];
  source: { kind: string; file: string | null; line: number | null; offset: number | null };
}

export function toJson(d: DecodedMce): MceJson {
  const r = d.record;
  const s = d.status;
  return {
    cpu: r.cpu,
    bank: r.bank,
    status: hex(r.status),
    addr: s.addrValid ? hex(r.addr) : null,
    misc: s.miscValid ? hex(r.misc) : null,
    mcgstatus: hex(r.mcgstatus),
    mcgcap: r.mcgcap === 0n ? null : hex(r.mcgcap),
    severity: d.severity,
    sdm_class: d.grade.sdmClass,
    class: d.class,
    summary: d.summary,
    advice: d.advice,
    mca: {
      code: hex(d.code.code),
      mnemonic: d.code.mnemonic,
      description: d.code.description,
      filtered: d.code.filtered,
    },
    socket: d.location.socket ?? null,
    channel: d.location.channel ?? null,
    dimm: d.location.dimm ?? null,
    page: d.location.page === undefined ? null : hex(d.location.page),
    unit: d.location.unit ?? null,
    corrected_by: d.correctedBy ?? null,
    flags: statusFlagNames(s),
    details: [...d.details],
    fields: d.fields,
    vendor: d.cpu.vendor,
    family: d.cpu.family ?? null,
    model: d.cpu.model ?? null,
    stepping: d.cpu.stepping ?? null,
    cpu_type: d.cpu.kind,
    ipid: r.ipid === 0n ? null : hex(r.ipid),
    synd: r.synd === 0n ? null : hex(r.synd),
    synd1: r.synd1 === undefined ? null : hex(r.synd1),
    synd2: r.synd2 === undefined ? null : hex(r.synd2),
    ppin: r.ppin === 0n ? null : hex(r.ppin),
    time: r.time === 0n ? null : r.time.toString(),
    unknown: [...d.unknown],
    source: {
      kind: r.source.kind,
      file: r.source.file ?? null,
      line: r.source.line ?? null,
      offset: r.source.offset ?? null,
    },
  };
}

/** One JSON line per record. */
export function toJsonLine(d: DecodedMce): string {
  return `${JSON.stringify(toJson(d))}\n`;
}

const BANNER: Readonly<Record<DecodedMce['severity'], string>> = {
  corrected: 'CORRECTED',
  deferred: 'DEFERRED',
  ucna: 'UNCORRECTED (UCNA)',
  srao: 'UNCORRECTED (SRAO)',
  srar: 'UNCORRECTED (SRAR)',
  fatal: 'FATAL',
};

/** Operator text of one record, ending with a blank line. */
export function toText(d: DecodedMce): string {
  const r = d.record;
  const lines: string[] = [`${BANNER[d.severity]}: ${d.summary}`];
  const what = [`${d.code.description} [${d.code.mnemonic}]`];
  if (d.code.memoryTransaction) what.push(`transaction: ${d.code.memoryTransaction}`);
  if (d.code.filtered) what.push('some corrected errors in the same region were not reported (filtering)');
  if (d.amd) what.push(d.amd.bankName);
  lines.push(`  what:    ${what.join('; ')}`);
  for (const detail of d.details) lines.push(`           ${detail}`);
  lines.push(
    `  where:   ${whereText(d.location)}${d.location.address !== undefined ? `, physical address ${hex(d.location.address)}` : ''}`,
  );
  lines.push(
    `  how bad: ${d.severity} (${d.grade.sdmClass}): ${d.grade.why}${d.correctedBy ? `; corrected by ${d.correctedBy}` : ''}`,
  );
  lines.push(`  do:      ${d.advice}`);
  const cpu = d.cpu;
  const id = cpu.family === undefined ? '' : `, family ${cpu.family} model ${cpu.model} stepping ${cpu.stepping}`;
  lines.push(`  cpu:     ${cpu.name}${cpu.forced ? ' (forced)' : ''}${id}`);
  const regs = [`STATUS ${hex(r.status)}`];
  if (d.status.miscValid) regs.push(`MISC ${hex(r.misc)}`);
  if (d.status.addrValid) regs.push(`ADDR ${hex(r.addr)}`);
  regs.push(`MCGSTATUS ${hex(r.mcgstatus)}`);
  if (r.mcgcap !== 0n) regs.push(`MCGCAP ${hex(r.mcgcap)}`);
  if (r.ipid !== 0n) regs.push(`IPID ${hex(r.ipid)}`);
  if (r.synd !== 0n) regs.push(`SYND ${hex(r.synd)}`);
  if (r.synd1 !== undefined) regs.push(`SYND1 ${hex(r.synd1)}`);
  if (r.synd2 !== undefined) regs.push(`SYND2 ${hex(r.synd2)}`);
  if (r.ip !== 0n) regs.push(`RIP ${hex(r.cs)}:${hex(r.ip)}${d.mcg.eipv ? '' : ' (inexact)'}`);
  if (r.ppin !== 0n) regs.push(`PPIN ${hex(r.ppin)}`);
  lines.push(`  regs:    ${regs.join(' ')}`);
  lines.push(`  flags:   ${statusFlagNames(d.status).join(', ')}`);
  if (r.time !== 0n) lines.push(`  time:    ${timeText(r.time)}`);
  for (const u of d.unknown) lines.push(`  unknown: ${u}`);
  return `${lines.join('\n')}\n\n`;
}

/** ISO time of a wall-clock seconds value; values no clock can hold are shown as they are. */
function timeText(seconds: bigint): string {
  return seconds <= 8_640_000_000_000n
    ? new Date(Number(seconds) * 1000).toISOString()
    : `${seconds} (not a valid time)`;
}
