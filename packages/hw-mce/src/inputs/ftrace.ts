/**
 * `mce:mce_record` and `ras:mc_event` from recorded ring-buffer pages (trace.dat, a raw-pages directory, CTF), read
 * through @evtrace/trace-format with the events' own format files: the field names are the tracepoints'
 * (include/trace/events/mce.h, include/trace/events/ras.h), so every kernel's layout of them reads the same.
 */
import { openTrace, type TraceEvent } from '@evtrace/trace-format';
import { EDAC_ERROR_TYPES, type EdacEvent } from '../edac.ts';
import type { InputNote } from '../errors.ts';
import { emptyRecord, type MceRecord } from '../record.ts';

type Fields = TraceEvent['fields'];

function big(f: Fields, name: string): bigint {
  const v = f[name];
  return typeof v === 'bigint'
    ? BigInt.asUintN(64, v)
    : typeof v === 'number'
      ? BigInt.asUintN(64, BigInt(Math.trunc(v)))
      : 0n;
}

function num(f: Fields, name: string): number {
  const v = f[name];
  return typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : 0;
}

function str(f: Fields, name: string): string {
  const v = f[name];
  return typeof v === 'string' ? v : '';
}

/** A machine-check record from an `mce:mce_record` event's fields. */
export function mceFromTraceFields(f: Fields, source: MceRecord['source']): MceRecord {
  const r = emptyRecord(source);
  r.cpu = num(f, 'cpu');
  r.bank = num(f, 'bank');
  r.status = big(f, 'status');
  r.misc = big(f, 'misc');
  r.addr = big(f, 'addr');
  r.mcgstatus = big(f, 'mcgstatus');
  r.mcgcap = big(f, 'mcgcap');
  r.ip = big(f, 'ip');
  r.cs = num(f, 'cs');
  r.tsc = big(f, 'tsc');
  r.time = big(f, 'walltime');
  r.cpuvendor = 'cpuvendor' in f ? num(f, 'cpuvendor') : undefined;
  r.cpuid = num(f, 'cpuid') >>> 0;
  r.socketid = 'socketid' in f ? num(f, 'socketid') : undefined;
  r.apicid = 'apicid' in f ? num(f, 'apicid') : undefined;
  r.synd = big(f, 'synd');
  r.ipid = big(f, 'ipid');
  r.ppin = big(f, 'ppin');
  r.microcode = num(f, 'microcode') >>> 0;
  return r;
}

/** An EDAC event from a `ras:mc_event` event's fields. */
export function edacFromTraceFields(f: Fields, source: EdacEvent['source'], time?: bigint): EdacEvent {
  const t = num(f, 'error_type');
  return {
    errorType: EDAC_ERROR_TYPES[t] ?? 'info',
    count: num(f, 'error_count'),
    message: str(f, 'msg'),
    label: str(f, 'label'),
    mc: num(f, 'mc_index'),
    layers: [num(f, 'top_layer'), num(f, 'middle_layer'), num(f, 'lower_layer')],
    address: big(f, 'address'),
    grain: 1n << BigInt(num(f, 'grain_bits') & 63),
    syndrome: big(f, 'syndrome'),
    driverDetail: str(f, 'driver_detail'),
    ...(time !== undefined ? { time } : {}),
    source,
  };
}

export interface TraceInputResult {
  readonly records: MceRecord[];
  readonly edac: EdacEvent[];
  readonly notes: InputNote[];
}

/** Reads every mce_record and mc_event of a recording; other events are counted in a note. */
export function readMceTrace(path: string): TraceInputResult {
  const reader = openTrace(path);
  const records: MceRecord[] = [];
  const edac: EdacEvent[] = [];
  let other = 0;
  for (const e of reader.events()) {
    const name = e.eventClass.name;
    if (name === 'mce:mce_record' || name === 'mce_record') {
      records.push(mceFromTraceFields(e.fields, { kind: 'trace', file: path }));
    } else if (name === 'ras:mc_event' || name === 'mc_event') {
      edac.push(edacFromTraceFields(e.fields, { kind: 'trace', file: path }, e.tsNs));
    } else other++;
  }
  const notes: InputNote[] = reader.warnings.map((w) => ({ location: { file: path }, message: w }));
  if (other > 0)
    notes.push({
      location: { file: path },
      message: `${other} events other than mce_record and mc_event were skipped`,
    });
  return { records, edac, notes };
}
