/**
 * `perf script` text of kmem tracepoints (what `perf script -i perf.data` prints for a `perf kmem record` file, in
 * its default field layout): `COMM PID [CPU] SECS.FRAC: kmem:EVENT: key=value ...`. Call sites come symbolized
 * (`symbol+0xoff`, or hex when perf had no symbol), so they are keyed by that text.
 */

import { AddressKeys } from './address.ts';
import { KmemError } from './errors.ts';
import { type KmemEvent, type KmemSource, kmemEvent } from './event.ts';
import { BUILTIN_GFP_TABLE, gfpNamer, gfpValue } from './gfp.ts';
import { internName } from './names.ts';
import { kmemKind } from './tracepoints.ts';

export interface PerfScriptOptions {
  /** For error messages. */
  readonly file?: string;
  /** Collect malformed lines as diagnostics (`line:column: message`) and keep every valid one, instead of throwing. */
  readonly lenient?: boolean;
}

/** A callchain entry perf prints under an event recorded with -g (`perf kmem --page record`): `\tADDR SYM (DSO)`. */
const CALLCHAIN = /^\t\s*[0-9a-f]+ .*\(.*\)$/;

const HEADER = /^\s*(.*?)\s+(-?\d+)(?:\/(-?\d+))?\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+(\w+):(\w+):[ \t]*/;

/** Why a header does not parse: the first part that does not match, with its 0-based column. */
function headerProblem(line: string): { column: number; message: string } {
  const steps: [RegExp, string][] = [
    [/\s*\S.*?\s+-?\d+(?:\/-?\d+)?\s+(?=\[)/y, 'expected COMM PID before [CPU]'],
    [/\[\d+\]\s+/y, 'expected [CPU]'],
    [/\d+\.\d+:\s+/y, 'expected a timestamp SECS.FRAC:'],
    [/\w+:\w+:/y, 'expected SYSTEM:EVENT:'],
  ];
  let at = 0;
  for (const [re, message] of steps) {
    re.lastIndex = at;
    if (!re.test(line)) {
      // The COMM PID step fails as a whole: point at the bracket's absence.
      if (at === 0 && !/\[\d+\]/.test(line)) return { column: line.length, message: 'expected [CPU]' };
      return { column: at, message };
    }
    at = re.lastIndex;
  }
  return { column: at, message: 'malformed event header' };
}

class LineError extends Error {
  readonly column: number;
  constructor(column: number, message: string) {
    super(message);
    this.column = column;
  }
}

/**
 * Parses perf script text. Lines of other events are ignored (counted in `ignored`); blank lines and `#` comments
 * too.
 * @throws KmemError `ERR_PERF_SCRIPT` with line and column for a malformed line, unless `lenient`.
 */
export function parsePerfScript(
  text: string,
  options: PerfScriptOptions = {},
): KmemSource & { readonly events: KmemEvent[]; readonly ignored: number } {
  const keys = new AddressKeys();
  const siteIndex = new Map<string, number>();
  const sites: string[] = [''];
  const siteKey = (s: string) => {
    let k = siteIndex.get(s);
    if (k === undefined) {
      k = sites.length;
      sites.push(s);
      siteIndex.set(s, k);
    }
    return k;
  };
  const events: KmemEvent[] = [];
  const diagnostics: string[] = [];
  let ignored = 0;
  let lineNo = 0;
  for (let start = 0; start < text.length; ) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const line = text.slice(start, end);
    start = end + 1;
    lineNo++;
    if (line.trim() === '' || line.trimStart().startsWith('#') || CALLCHAIN.test(line)) continue;
    try {
      const e = parseLine(line, keys, siteKey);
      if (e === undefined) ignored++;
      else events.push(e);
    } catch (error) {
      if (!(error instanceof LineError)) throw error;
      const where = {
        ...(options.file !== undefined ? { file: options.file } : {}),
        line: lineNo,
        column: error.column + 1,
      };
      const err = new KmemError('ERR_PERF_SCRIPT', error.message, where);
      if (!options.lenient) throw err;
      diagnostics.push(err.message);
    }
  }
  return {
    events,
    ignored,
    diagnostics,
    siteName: (key) => sites[key] ?? '',
    ptrName: (key) => keys.hex(key),
    siteOrder: (key) => sites[key] ?? '',
    gfpNames: gfpNamer(BUILTIN_GFP_TABLE),
  };
}

function parseLine(line: string, keys: AddressKeys, siteKey: (s: string) => number): KmemEvent | undefined {
  const m = HEADER.exec(line);
  if (m === null) {
    const p = headerProblem(line);
    throw new LineError(p.column, p.message);
  }
  const system = m[7]!;
  const kind = system === 'kmem' ? kmemKind({ name: `kmem:${m[8]}` }) : undefined;
  if (kind === undefined) return undefined;
  const frac = m[6]!;
  const tsNs = Number(m[5]) * 1e9 + Number(frac.length >= 9 ? frac.slice(0, 9) : frac.padEnd(9, '0'));
  const cpu = Number(m[4]);
  // key=value fields, separated by spaces; values carry no spaces in kmem's print formats.
  const fields = new Map<string, { value: string; column: number }>();
  let at = m[0].length;
  while (at < line.length) {
    let end = line.indexOf(' ', at);
    if (end < 0) end = line.length;
    if (end > at) {
      const eq = line.indexOf('=', at);
      if (eq < 0 || eq >= end) throw new LineError(at, `expected key=value, found '${line.slice(at, end)}'`);
      fields.set(line.slice(at, eq), { value: line.slice(eq + 1, end), column: eq + 1 });
    }
    at = end + 1;
  }
  const field = (name: string) => {
    const f = fields.get(name);
    if (f === undefined) throw new LineError(line.length, `kmem:${m[8]} line lacks the field ${name}`);
    return f;
  };
  const int = (name: string, fallback?: number) => {
    const f = fields.get(name);
    if (f === undefined && fallback !== undefined) return fallback;
    const { value, column } = f ?? field(name);
    if (!/^-?\d+$/.test(value)) throw new LineError(column, `${name}: '${value}' is not a decimal integer`);
    return Number(value);
  };
  const hex = (name: string) => {
    const { value, column } = field(name);
    if (value === '(nil)' || value === '0') return 0;
    const k = keys.keyOfHex(value);
    if (k === undefined || !value.startsWith('0x'))
      throw new LineError(column, `${name}: '${value}' is not a hexadecimal address`);
    return k;
  };
  const gfp = () => {
    const f = fields.get('gfp_flags');
    if (f === undefined) return { gfpFlags: 0 };
    const v = /^\d+$/.test(f.value) ? Number(f.value) : gfpValue(f.value);
    return v === undefined ? { gfpFlags: 0, gfpText: f.value } : { gfpFlags: v, gfpText: f.value };
  };
  const base = { op: kind.op, allocator: kind.allocator, tsNs, cpu };
  if (kind.allocator === 'page') {
    const page = fields.get('page')?.value;
    const failed = page === '(nil)' || page === '0x0';
    const pfn = failed ? -1 : hex('pfn');
    const g = kind.op === 'page_alloc' ? gfp() : { gfpFlags: 0 };
    return kmemEvent({
      ...base,
      callSite: 0,
      ptr: pfn,
      bytesReq: 0,
      bytesAlloc: 0,
      ...g,
      node: -1,
      order: int('order'),
      ...(fields.has('migratetype') ? { migratetype: int('migratetype') } : {}),
    });
  }
  const site = field('call_site').value;
  const alloc = kind.op === 'alloc';
  const cache = fields.get('name')?.value;
  return kmemEvent({
    ...base,
    callSite: siteKey(site),
    ptr: hex('ptr'),
    bytesReq: alloc ? int('bytes_req') : 0,
    bytesAlloc: alloc ? int('bytes_alloc') : 0,
    ...(alloc ? gfp() : { gfpFlags: 0 }),
    node: int('node', -1),
    ...(cache !== undefined ? { cache: internName(cache) } : {}),
  });
}
