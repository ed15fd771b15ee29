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
  const ctx: LineContext = {
    keys,
    siteKey,
    fields: new LineFields(),
    kinds: [],
    gfps: new Map(),
    header: { cpu: 0, tsNs: 0, kmem: false, eventStart: 0, eventEnd: 0, end: 0 },
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
    if (skipped(line)) continue;
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
 * One line's `key=value` fields, as positions in the line: reused from line to line (a Map, an object or a key string
 * per field cost more than the parsing). Later duplicates win.
 */
class LineFields {
  line = '';
  count = 0;
  /** Start of each key; its end is the `=` before its value. */
  readonly keyStarts: number[] = [];
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
        this.keyStarts[this.count] = at;
        this.starts[this.count] = eq + 1;
        this.ends[this.count] = end;
        this.count++;
      }
      at = end + 1;
    }
  }

  /** The index of field `name`, or -1. */
  find(name: string): number {
    for (let i = this.count - 1; i >= 0; i--) {
      const k = this.keyStarts[i]!;
      if (this.starts[i]! - 1 - k === name.length && this.line.startsWith(name, k)) return i;
    }
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
  /** Each event name met, with its kind (null: not a kmem allocation event); few, compared in place. */
  readonly kinds: { readonly name: string; readonly kind: NonNullable<ReturnType<typeof kmemKind>> | null }[];
  readonly gfps: Map<string, { readonly value: number | undefined; readonly text: string }>;
  /** The line's header, reused from line to line. */
  readonly header: Header;
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

/** Blank lines, `#` comments and callchain entries. */
function skipped(line: string): boolean {
  let i = 0;
  while (i < line.length && isSpace(line.charCodeAt(i))) i++;
  if (i === line.length) return line.trim() === '';
  if (line.charCodeAt(i) === 35) return true;
  return line.charCodeAt(0) === 9 && CALLCHAIN.test(line);
}

/** Space or tab; anything else `\s` matches leaves a line to the HEADER expression. */
const isSpace = (c: number) => c === 32 || c === 9;
const isDigit = (c: number) => c >= 48 && c <= 57;
const isWord = (c: number) => isDigit(c) || ((c | 32) >= 97 && (c | 32) <= 122) || c === 95;

/**
 * What `parseLine` reads of a header, by hand where HEADER's lazy COMM would cost a match array and eight strings per
 * line: the same groups wherever `fastHeader` accepts the line (the first `[` is where HEADER finds CPU, as COMM and
 * PID hold none), HEADER itself on any other line.
 */
interface Header {
  cpu: number;
  tsNs: number;
  /** Whether SYSTEM is kmem. */
  kmem: boolean;
  /** Where EVENT is in the line. */
  eventStart: number;
  eventEnd: number;
  /** Where the fields begin. */
  end: number;
}

/** The ends of runs of at least one digit, space or word character from `from`, or -1 (one loop each, inlined). */
function digitsEnd(line: string, from: number): number {
  let i = from;
  while (i < line.length && isDigit(line.charCodeAt(i))) i++;
  return i > from ? i : -1;
}

function spacesEnd(line: string, from: number): number {
  let i = from;
  while (i < line.length && isSpace(line.charCodeAt(i))) i++;
  return i > from ? i : -1;
}

function wordEnd(line: string, from: number): number {
  let i = from;
  while (i < line.length && isWord(line.charCodeAt(i))) i++;
  return i > from ? i : -1;
}

/** The start of a run of at least one digit ending before `end` (with its minus sign), or -1. */
function digitsStart(line: string, end: number): number {
  let j = end - 1;
  while (j >= 0 && isDigit(line.charCodeAt(j))) j--;
  if (j === end - 1) return -1;
  return j >= 0 && line.charCodeAt(j) === 45 ? j : j + 1;
}

/** The value of the digits from `from` to `to`. */
function digitsValue(line: string, from: number, to: number): number {
  let v = 0;
  for (let i = from; i < to; i++) v = v * 10 + line.charCodeAt(i) - 48;
  return v;
}

function fastHeader(line: string, h: Header): boolean {
  const b = line.indexOf('[');
  // `\s+ -?\d+ (/-?\d+)? \s+` before the bracket, read backwards.
  let j = b;
  while (j > 0 && isSpace(line.charCodeAt(j - 1))) j--;
  if (j === b) return false;
  j = digitsStart(line, j);
  if (j > 0 && line.charCodeAt(j - 1) === 47) j = digitsStart(line, j - 1);
  if (j <= 0 || !isSpace(line.charCodeAt(j - 1))) return false;
  // `\[\d+\]\s+\d+\.\d+:\s+\w+:\w+:[ \t]*` after it.
  const cpuEnd = digitsEnd(line, b + 1);
  if (cpuEnd < 0 || line.charCodeAt(cpuEnd) !== 93) return false;
  const secsStart = spacesEnd(line, cpuEnd + 1);
  const secsEnd = secsStart < 0 ? -1 : digitsEnd(line, secsStart);
  if (secsEnd < 0 || line.charCodeAt(secsEnd) !== 46) return false;
  const fracEnd = digitsEnd(line, secsEnd + 1);
  if (fracEnd < 0 || line.charCodeAt(fracEnd) !== 58) return false;
  const systemStart = spacesEnd(line, fracEnd + 1);
  const systemEnd = systemStart < 0 ? -1 : wordEnd(line, systemStart);
  if (systemEnd < 0 || line.charCodeAt(systemEnd) !== 58) return false;
  const eventEnd = wordEnd(line, systemEnd + 1);
  if (eventEnd < 0 || line.charCodeAt(eventEnd) !== 58) return false;
  // Digits beyond the nanosecond are dropped, fewer are scaled up.
  const fracDigits = fracEnd - secsEnd - 1;
  let frac = digitsValue(line, secsEnd + 1, secsEnd + 1 + Math.min(fracDigits, 9));
  for (let k = fracDigits; k < 9; k++) frac *= 10;
  h.cpu = digitsValue(line, b + 1, cpuEnd);
  h.tsNs = digitsValue(line, secsStart, secsEnd) * 1e9 + frac;
  h.kmem = systemEnd - systemStart === 4 && line.startsWith('kmem', systemStart);
  h.eventStart = systemEnd + 1;
  h.eventEnd = eventEnd;
  let end = eventEnd + 1;
  while (end < line.length && isSpace(line.charCodeAt(end))) end++;
  h.end = end;
  return true;
}

function header(line: string, h: Header): void {
  if (fastHeader(line, h)) return;
  const m = HEADER.exec(line);
  if (m === null) {
    const p = headerProblem(line);
    throw new LineError(p.column, p.message);
  }
  const frac = m[6]!;
  h.cpu = Number(m[4]);
  h.tsNs = Number(m[5]) * 1e9 + Number(frac.length >= 9 ? frac.slice(0, 9) : frac.padEnd(9, '0'));
  h.kmem = m[7] === 'kmem';
  // The match ends with EVENT, a colon and blanks.
  h.eventEnd = m[0].lastIndexOf(':');
  h.eventStart = h.eventEnd - m[8]!.length;
  h.end = m[0].length;
}

/** The index of field `name`, or a LineError naming the event that lacks it. */
function field(line: string, fields: LineFields, event: string, name: string): number {
  const i = fields.find(name);
  if (i < 0) throw new LineError(line.length, `kmem:${event} line lacks the field ${name}`);
  return i;
}

/** Decimal field `name`; `fallback` when the line lacks it, if given. */
function int(line: string, fields: LineFields, event: string, name: string, fallback?: number): number {
  let i = fields.find(name);
  if (i < 0 && fallback !== undefined) return fallback;
  if (i < 0) i = field(line, fields, event, name);
  const value = fields.value(i);
  const v = decimal(value);
  if (v === undefined) throw new LineError(fields.starts[i]!, `${name}: '${value}' is not a decimal integer`);
  return v;
}

/** Hexadecimal address field `name`, as its key. */
function hex(line: string, ctx: LineContext, event: string, name: string): number {
  const fields = ctx.fields;
  const i = field(line, fields, event, name);
  const start = fields.starts[i]!;
  const end = fields.ends[i]!;
  // `(nil)` and `0` are NULL.
  if ((end - start === 5 && line.startsWith('(nil)', start)) || (end - start === 1 && line.charCodeAt(start) === 48))
    return 0;
  const k = end - start > 2 && line.startsWith('0x', start) ? ctx.keys.keyOfHex(line, start, end) : undefined;
  if (k === undefined) throw new LineError(start, `${name}: '${fields.value(i)}' is not a hexadecimal address`);
  return k;
}

const NO_GFP = { value: 0, text: undefined };

/** gfp flags repeat: each distinct text is decoded once, and its events share one copy of it. */
function gfp(ctx: LineContext): { readonly value: number | undefined; readonly text: string | undefined } {
  const fields = ctx.fields;
  const i = fields.find('gfp_flags');
  if (i < 0) return NO_GFP;
  const text = fields.value(i);
  let g = ctx.gfps.get(text);
  if (g === undefined) {
    const own = internName(text);
    g = { value: /^\d+$/.test(own) ? Number(own) : gfpValue(own), text: own };
    ctx.gfps.set(own, g);
  }
  return g;
}

function parseLine(line: string, ctx: LineContext): KmemEvent | undefined {
  const h = ctx.header;
  header(line, h);
  if (!h.kmem) return undefined;
  const length = h.eventEnd - h.eventStart;
  let known = ctx.kinds.find((k) => k.name.length === length && line.startsWith(k.name, h.eventStart));
  if (known === undefined) {
    const name = line.slice(h.eventStart, h.eventEnd);
    known = { name, kind: kmemKind({ name: `kmem:${name}` }) ?? null };
    ctx.kinds.push(known);
  }
  const { name: event, kind } = known;
  if (kind === null) return undefined;
  const tsNs = h.tsNs;
  const cpu = h.cpu;
  // key=value fields, separated by spaces; values carry no spaces in kmem's print formats.
  const fields = ctx.fields;
  fields.scan(line, h.end);
  if (kind.allocator === 'page') {
    const page = fields.find('page');
    const pageText = page < 0 ? undefined : fields.value(page);
    const failed = pageText === '(nil)' || pageText === '0x0';
    const pfn = failed ? -1 : hex(line, ctx, event, 'pfn');
    const g = kind.op === 'page_alloc' ? gfp(ctx) : NO_GFP;
    const order = int(line, fields, event, 'order');
    const migratetype = fields.find('migratetype') >= 0 ? int(line, fields, event, 'migratetype') : undefined;
    return kmemEvent({
      op: kind.op,
      allocator: kind.allocator,
      tsNs,
      cpu,
      callSite: 0,
      ptr: pfn,
      bytesReq: 0,
      bytesAlloc: 0,
      gfpFlags: g.value ?? 0,
      gfpText: g.text,
      node: -1,
      order,
      migratetype,
    });
  }
  const site = fields.value(field(line, fields, event, 'call_site'));
  const alloc = kind.op === 'alloc';
  const name = fields.find('name');
  const g = alloc ? gfp(ctx) : NO_GFP;
  return kmemEvent({
    op: kind.op,
    allocator: kind.allocator,
    tsNs,
    cpu,
    callSite: ctx.siteKey(site),
    ptr: hex(line, ctx, event, 'ptr'),
    bytesReq: alloc ? int(line, fields, event, 'bytes_req') : 0,
    bytesAlloc: alloc ? int(line, fields, event, 'bytes_alloc') : 0,
    gfpFlags: g.value ?? 0,
    gfpText: g.text,
    node: int(line, fields, event, 'node', -1),
    cache: name >= 0 ? internName(fields.value(name)) : undefined,
  });
}
