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
 * @throws KmemError `ERR_KMEM_PERF_SCRIPT` with line and column for a malformed line, unless `lenient`.
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
  const ctx: LineContext = { keys, siteKey, fields: new LineFields(), kinds: new Map(), gfps: new Map() };
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
      const e = parseLine(line, ctx);
      if (e === undefined) ignored++;
      else events.push(e);
    } catch (error) {
      if (!(error instanceof LineError)) throw error;
      const where = {
        ...(options.file !== undefined ? { file: options.file } : {}),
        line: lineNo,
        column: error.column + 1,
      };
      const err = new KmemError('ERR_KMEM_PERF_SCRIPT', error.message, where);
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

/**
 * One line's `key=value` fields, as positions in the line: reused from line to line (a Map and an object per field
 * cost more than the parsing). Later duplicates win.
 */
class LineFields {
  line = '';
  count = 0;
  readonly keys: string[] = [];
  /** Start and end of each value. */
  readonly starts: number[] = [];
  readonly ends: number[] = [];

  /** Splits the line's fields from `at`. */
  scan(line: string, at: number): void {
    this.line = line;
    this.count = 0;
    while (at < line.length) {
      let end = line.indexOf(' ', at);
      if (end < 0) end = line.length;
      if (end > at) {
        const eq = line.indexOf('=', at);
        if (eq < 0 || eq >= end) throw new LineError(at, `expected key=value, found '${line.slice(at, end)}'`);
        this.keys[this.count] = line.slice(at, eq);
        this.starts[this.count] = eq + 1;
        this.ends[this.count] = end;
        this.count++;
      }
      at = end + 1;
    }
  }

  /** The index of field `name`, or -1. */
  find(name: string): number {
    for (let i = this.count - 1; i >= 0; i--) if (this.keys[i] === name) return i;
    return -1;
  }

  value(i: number): string {
    return this.line.slice(this.starts[i]!, this.ends[i]!);
  }
}

/** Parses what `parseLine` needs beyond the fields: kinds by event name, gfp flag texts by text. */
interface LineContext {
  readonly keys: AddressKeys;
  readonly siteKey: (s: string) => number;
  readonly fields: LineFields;
  readonly kinds: Map<string, ReturnType<typeof kmemKind> | null>;
  readonly gfps: Map<string, { readonly value: number | undefined; readonly text: string }>;
}

/** A decimal integer of the whole text, or undefined (what /^-?\d+$/ accepts). */
function decimal(text: string): number | undefined {
  const n = text.length;
  let i = text.charCodeAt(0) === 45 ? 1 : 0;
  if (i === n) return undefined;
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  return Number(text);
}

function parseLine(line: string, ctx: LineContext): KmemEvent | undefined {
  const m = HEADER.exec(line);
  if (m === null) {
    const p = headerProblem(line);
    throw new LineError(p.column, p.message);
  }
  if (m[7] !== 'kmem') return undefined;
  const event = m[8]!;
  let kind = ctx.kinds.get(event);
  if (kind === undefined) {
    kind = kmemKind({ name: `kmem:${event}` }) ?? null;
    ctx.kinds.set(event, kind);
  }
  if (kind === null) return undefined;
  const frac = m[6]!;
  const tsNs = Number(m[5]) * 1e9 + Number(frac.length >= 9 ? frac.slice(0, 9) : frac.padEnd(9, '0'));
  const cpu = Number(m[4]);
  // key=value fields, separated by spaces; values carry no spaces in kmem's print formats.
  const fields = ctx.fields;
  fields.scan(line, m[0].length);
  const field = (name: string): number => {
    const i = fields.find(name);
    if (i < 0) throw new LineError(line.length, `kmem:${event} line lacks the field ${name}`);
    return i;
  };
  const int = (name: string, fallback?: number): number => {
    let i = fields.find(name);
    if (i < 0 && fallback !== undefined) return fallback;
    if (i < 0) i = field(name);
    const value = fields.value(i);
    const v = decimal(value);
    if (v === undefined) throw new LineError(fields.starts[i]!, `${name}: '${value}' is not a decimal integer`);
    return v;
  };
  const hex = (name: string): number => {
    const i = field(name);
    const value = fields.value(i);
    if (value === '(nil)' || value === '0') return 0;
    const k = ctx.keys.keyOfHex(value);
    if (k === undefined || !value.startsWith('0x'))
      throw new LineError(fields.starts[i]!, `${name}: '${value}' is not a hexadecimal address`);
    return k;
  };
  // gfp flags repeat: each distinct text is decoded once, and its events share one copy of it.
  const gfp = (): { gfpFlags: number; gfpText?: string } => {
    const i = fields.find('gfp_flags');
    if (i < 0) return { gfpFlags: 0 };
    const text = fields.value(i);
    let g = ctx.gfps.get(text);
    if (g === undefined) {
      const own = internName(text);
      g = { value: /^\d+$/.test(own) ? Number(own) : gfpValue(own), text: own };
      ctx.gfps.set(own, g);
    }
    return { gfpFlags: g.value ?? 0, gfpText: g.text };
  };
  if (kind.allocator === 'page') {
    const page = fields.find('page');
    const pageText = page < 0 ? undefined : fields.value(page);
    const failed = pageText === '(nil)' || pageText === '0x0';
    const pfn = failed ? -1 : hex('pfn');
    const g = kind.op === 'page_alloc' ? gfp() : { gfpFlags: 0 };
    const order = int('order');
    const migratetype = fields.find('migratetype') >= 0 ? int('migratetype') : undefined;
    return kmemEvent({
      op: kind.op,
      allocator: kind.allocator,
      tsNs,
      cpu,
      callSite: 0,
      ptr: pfn,
      bytesReq: 0,
      bytesAlloc: 0,
      gfpFlags: g.gfpFlags,
      ...(g.gfpText !== undefined ? { gfpText: g.gfpText } : {}),
      node: -1,
      order,
      ...(migratetype !== undefined ? { migratetype } : {}),
    });
  }
  const site = fields.value(field('call_site'));
  const alloc = kind.op === 'alloc';
  const name = fields.find('name');
  const g = alloc ? gfp() : { gfpFlags: 0 };
  return kmemEvent({
    op: kind.op,
    allocator: kind.allocator,
    tsNs,
    cpu,
    callSite: ctx.siteKey(site),
    ptr: hex('ptr'),
    bytesReq: alloc ? int('bytes_req') : 0,
    bytesAlloc: alloc ? int('bytes_alloc') : 0,
    gfpFlags: g.gfpFlags,
    ...(g.gfpText !== undefined ? { gfpText: g.gfpText } : {}),
    node: int('node', -1),
    ...(name >= 0 ? { cache: internName(fields.value(name)) } : {}),
  });
}
