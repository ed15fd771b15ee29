/**
 * EDAC memory errors: the `ras:mc_event` tracepoint (include/trace/events/ras.h), rasdaemon's `mc_event` rows, and
 * the counters of the EDAC sysfs tree (Documentation/admin-guide/ras.rst) in both its layouts — per DIMM
 * (`mcN/dimmM/dimm_ce_count`, or `rankM/`) and the legacy chip-select rows (`mcN/csrowM/ce_count`,
 * `chK_ce_count`, `chK_dimm_label`) — plus the controller totals.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type InputNote, MceError } from './errors.ts';
import type { InputKind } from './record.ts';
import type { Severity } from './severity.ts';

/** HW_EVENT_ERR_* of include/linux/edac.h, in the order of mc_event's error_type. */
export const EDAC_ERROR_TYPES = ['corrected', 'uncorrected', 'deferred', 'fatal', 'info'] as const;
export type EdacErrorType = (typeof EDAC_ERROR_TYPES)[number];

/** One memory-controller error event. */
export interface EdacEvent {
  readonly errorType: EdacErrorType;
  readonly count: number;
  readonly message: string;
  /** DIMM label(s) as the driver names them ("CPU_SrcID#0_MC#0_Chan#1_DIMM#0", a silk-screen label...). */
  readonly label: string;
  readonly mc: number;
  /** Location in the controller's layers (e.g. channel, slot); -1 where not known. */
  readonly layers: readonly [number, number, number];
  readonly address: bigint;
  readonly grain: bigint;
  readonly syndrome: bigint;
  readonly driverDetail: string;
  /** Timestamp in nanoseconds (trace) or the text rasdaemon stored. */
  readonly time?: bigint | string;
  readonly source: { readonly kind: InputKind; readonly file?: string | undefined; readonly row?: number };
}

/** Severity of an EDAC event on the same scale as machine checks. */
export function edacSeverity(t: EdacErrorType): Severity {
  return t === 'uncorrected' ? 'ucna' : t === 'fatal' ? 'fatal' : t === 'deferred' ? 'deferred' : 'corrected';
}

/** Operator line of an EDAC event. */
export function edacSummary(e: EdacEvent): string {
  const where = [`memory controller ${e.mc}`];
  if (e.label) where.push(`DIMM ${e.label}`);
  const layers = e.layers.filter((l) => l >= 0);
  if (layers.length > 0) where.push(`location ${e.layers.join(':')}`);
  if (e.address !== 0n) where.push(`page 0x${(e.address >> 12n).toString(16)}`);
  const n = e.count === 1 ? '1 error' : `${e.count} errors`;
  return `${e.errorType} memory ${n}${e.message ? `: ${e.message}` : ''} (${where.join(', ')})${e.driverDetail ? ` [${e.driverDetail}]` : ''}`;
}

/** The JSON form of an EDAC event in `evtrace mce decode --json` (registers of machine checks are null). */
export function edacJson(e: EdacEvent): Record<string, unknown> {
  return {
    event: 'ras:mc_event',
    cpu: null,
    bank: null,
    status: null,
    addr: e.address === 0n ? null : `0x${e.address.toString(16)}`,
    misc: null,
    mcgstatus: null,
    severity: edacSeverity(e.errorType),
    class: 'memory-controller',
    summary: edacSummary(e),
    error_type: e.errorType,
    count: e.count,
    message: e.message,
    label: e.label,
    mc: e.mc,
    layers: [...e.layers],
    page: e.address === 0n ? null : `0x${(e.address >> 12n).toString(16)}`,
    grain: e.grain.toString(),
    syndrome: `0x${e.syndrome.toString(16)}`,
    driver_detail: e.driverDetail,
    source: { kind: e.source.kind, file: e.source.file ?? null },
  };
}

/** Counters of one DIMM (or csrow channel) in sysfs. */
export interface EdacDimmCounters {
  readonly mc: number;
  /** `dimm3`, `rank3` or `csrow1/ch0`. */
  readonly name: string;
  readonly label: string;
  readonly location: string;
  readonly ce: number;
  /** Uncorrected count; legacy csrow channels only count CE per channel (undefined then). */
  readonly ue: number | undefined;
}

/** Counters of one memory controller. */
export interface EdacControllerCounters {
  readonly mc: number;
  readonly name: string;
  readonly ce: number;
  readonly ue: number;
  readonly ceNoInfo: number;
  readonly ueNoInfo: number;
  /** Legacy chip-select rows (`csrowN`): node_exporter's csrow counters. */
  readonly csrows: readonly { readonly csrow: number; readonly ce: number; readonly ue: number }[];
  readonly dimms: readonly EdacDimmCounters[];
  readonly layout: 'dimm' | 'csrow' | 'both' | 'none';
}

export interface EdacSysfsResult {
  readonly controllers: EdacControllerCounters[];
  readonly notes: InputNote[];
}

/** The EDAC tree of this machine. */
export const EDAC_SYSFS = '/sys/devices/system/edac';

/**
 * Reads the counters of an EDAC tree: `root` is `/sys/devices/system/edac` (or a copy of it), or its `mc/`.
 * Unreadable or malformed counters are notes naming the file; the rest is read.
 * @throws MceError `ERR_MCE_SOURCE` when `root` has no memory controllers directory.
 */
export function readEdacSysfs(root: string = EDAC_SYSFS): EdacSysfsResult {
  const mcDir = isDir(join(root, 'mc')) ? join(root, 'mc') : root;
  let entries: string[];
  try {
    entries = readdirSync(mcDir).filter((n) => /^mc\d+$/.test(n));
  } catch (error) {
    throw new MceError(
      'ERR_MCE_SOURCE',
      `no EDAC memory controllers: ${(error as NodeJS.ErrnoException).code ?? error}`,
      {
        location: { file: mcDir },
        cause: error,
      },
    );
  }
  const notes: InputNote[] = [];
  const num = (file: string): number | undefined => {
    let text: string;
    try {
      text = readFileSync(file, 'utf8').trim();
    } catch (error) {
      notes.push({ location: { file }, message: `unreadable: ${(error as NodeJS.ErrnoException).code ?? error}` });
      return undefined;
    }
    if (!/^\d+$/.test(text)) {
      notes.push({ location: { file }, message: `not a counter: '${text.slice(0, 40)}'` });
      return undefined;
    }
    return Number(text);
  };
  const str = (file: string) => {
    try {
      return readFileSync(file, 'utf8').trim();
    } catch {
      return '';
    }
  };
  const controllers: EdacControllerCounters[] = [];
  for (const name of entries.sort((a, b) => Number(a.slice(2)) - Number(b.slice(2)))) {
    const dir = join(mcDir, name);
    const mc = Number(name.slice(2));
    const children = readdirSync(dir);
    const csrows: { csrow: number; ce: number; ue: number }[] = [];
    const dimms: EdacDimmCounters[] = [];
    for (const child of children.filter((c) => /^csrow\d+$/.test(c)).sort(byNumber)) {
      const d = join(dir, child);
      const csrow = Number(child.slice(5));
      csrows.push({ csrow, ce: num(join(d, 'ce_count')) ?? 0, ue: num(join(d, 'ue_count')) ?? 0 });
      for (const f of readdirSync(d)
        .filter((f) => /^ch\d+_ce_count$/.test(f))
        .sort(byNumber)) {
        const ch = f.slice(0, f.indexOf('_'));
        dimms.push({
          mc,
          name: `${child}/${ch}`,
          label: str(join(d, `${ch}_dimm_label`)),
          location: `csrow ${csrow} channel ${ch.slice(2)}`,
          ce: num(join(d, f)) ?? 0,
          ue: undefined,
        });
      }
    }
    for (const child of children.filter((c) => /^(?:dimm|rank)\d+$/.test(c)).sort(byNumber)) {
      const d = join(dir, child);
      dimms.push({
        mc,
        name: child,
        label: str(join(d, 'dimm_label')),
        location: str(join(d, 'dimm_location')),
        ce: num(join(d, 'dimm_ce_count')) ?? 0,
        ue: num(join(d, 'dimm_ue_count')) ?? 0,
      });
    }
    const hasDimm = children.some((c) => /^(?:dimm|rank)\d+$/.test(c));
    controllers.push({
      mc,
      name: str(join(dir, 'mc_name')),
      ce: num(join(dir, 'ce_count')) ?? 0,
      ue: num(join(dir, 'ue_count')) ?? 0,
      ceNoInfo: num(join(dir, 'ce_noinfo_count')) ?? 0,
      ueNoInfo: num(join(dir, 'ue_noinfo_count')) ?? 0,
      csrows,
      dimms,
      layout: hasDimm && csrows.length > 0 ? 'both' : hasDimm ? 'dimm' : csrows.length > 0 ? 'csrow' : 'none',
    });
  }
  return { controllers, notes };
}

function byNumber(a: string, b: string): number {
  return Number(/\d+/.exec(a)?.[0]) - Number(/\d+/.exec(b)?.[0]);
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Operator text of the counters: one line per controller and per DIMM with errors. */
export function edacCountersText(controllers: readonly EdacControllerCounters[]): string {
  const lines: string[] = [];
  for (const c of controllers) {
    lines.push(
      `mc${c.mc} ${c.name || '(unnamed)'}: ${c.ce} corrected, ${c.ue} uncorrected (${c.ceNoInfo}/${c.ueNoInfo} without location), ${c.layout} layout`,
    );
    for (const d of c.dimms) {
      lines.push(
        `  ${d.name}${d.label ? ` "${d.label}"` : ''}${d.location ? ` (${d.location})` : ''}: ${d.ce} corrected${d.ue !== undefined ? `, ${d.ue} uncorrected` : ''}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}
