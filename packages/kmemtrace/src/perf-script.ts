/**
 * `perf script` text of kmem tracepoints (what `perf script -i perf.data` prints for a `perf kmem record` file, in
 * its default field layout): `COMM PID [CPU] SECS.FRAC: kmem:EVENT: key=value ...`. Call sites come symbolized
 * (`symbol+0xoff`, or hex when perf had no symbol), so they are keyed by that text.
 *
 * Read from bytes, in chunks: a line is found, split and its numbers parsed in the buffer it arrived in, and the
 * texts that repeat (call sites, gfp flags, cache and event names) are looked up by their bytes, so a line costs no
 * string. Only what is rare decodes text: a header the byte scan does not accept (read by the header expression),
 * a callchain line, an error message.
 */

import { AddressKeys, storeCanonicalKey } from './address.ts';
import { KmemError, noKmemEvents } from './errors.ts';
import { ALLOCATOR_CODE, KmemColumns, type KmemEvent, type KmemSource, OP_ALLOC, OP_PAGE_ALLOC, OPS } from './event.ts';
import { BUILTIN_GFP_TABLE, gfpNamer, gfpValue } from './gfp.ts';
import { ByteNames, FNV_OFFSET, FNV_PRIME, hashBytes, internName } from './names.ts';
import { kmemKind } from './tracepoints.ts';

export interface PerfScriptOptions {
  /** For error messages. */
  readonly file?: string;
  /** Collect malformed lines as diagnostics (`line:column: message`) and keep every valid one, instead of throwing. */
  readonly lenient?: boolean;
}

/**
 * perf script text: a string, its UTF-8 bytes, or those bytes in chunks cut anywhere (a file read piece by piece).
 * Each chunk is done with before the next is asked for, so a chunk reader may reuse one buffer.
 */
export type PerfScriptInput = string | Uint8Array | Iterable<Uint8Array>;

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

/** A problem in the current line, at a byte offset from its start. */
class LineError extends Error {
  readonly offset: number;
  constructor(offset: number, message: string) {
    super(message);
    this.offset = offset;
  }
}

/** Space or tab; anything else `\s` matches leaves a line to the HEADER expression. */
const isSpace = (c: number) => c === 32 || c === 9;
const isDigit = (c: number) => c >= 48 && c <= 57;
const isWord = (c: number) => isDigit(c) || ((c | 32) >= 97 && (c | 32) <= 122) || c === 95;

const ascii = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0));

/** The fields kmem's events have that the analysis reads, by index; any other key is skipped. */
const FIELDS = [
  'call_site',
  'ptr',
  'bytes_req',
  'bytes_alloc',
  'gfp_flags',
  'node',
  'name',
  'page',
  'pfn',
  'order',
  'migratetype',
] as const;
const CALL_SITE = 0;
const PTR = 1;
const BYTES_REQ = 2;
const BYTES_ALLOC = 3;
const GFP_FLAGS = 4;
const NODE = 5;
const NAME = 6;
const PAGE = 7;
const PFN = 8;
const ORDER = 9;
const MIGRATETYPE = 10;
const FIELD_BYTES = FIELDS.map(ascii);
const KMEM = ascii('kmem');
const NIL = ascii('(nil)');

const EMPTY = new Uint8Array(0);
const PAGE_ALLOCATOR = ALLOCATOR_CODE.page;

/** The UTF-8 text of some bytes. */
function decode(bytes: Uint8Array, from: number, to: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8', from, to);
}

/** A plain Uint8Array view of a Buffer: the parser's loops then see one kind of array. */
function bytesOf(buffer: Buffer): Uint8Array {
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.length);
}

/** Whether `bytes` from `at` hold exactly `word` before `end`. */
function equals(bytes: Uint8Array, at: number, end: number, word: Uint8Array): boolean {
  if (end - at !== word.length) return false;
  for (let i = 0; i < word.length; i++) if (bytes[at + i] !== word[i]) return false;
  return true;
}

/**
 * Reads perf script text into batches of kmem events, in the order of the text. Lines of other events are counted in
 * `ignored`; blank lines, `#` comments and callchains are skipped. Memory holds one chunk, the longest line and the
 * names met, whatever the length of the text.
 */
export class PerfScriptReader {
  /** Problems skipped (lenient): `file:line:column: message`. */
  readonly diagnostics: string[] = [];
  /** Lines of events other than kmem's allocator events. */
  ignored = 0;
  /** kmem events read so far. */
  count = 0;
  readonly #keys = new AddressKeys();
  /** Call sites: a site's key is its id + 1 (0 is no site). */
  readonly #sites = new ByteNames();
  readonly #eventNames = new ByteNames();
  /** By event id: its op and allocator (as KmemColumns numbers them), null for an event of no allocator. */
  readonly #kinds: ({ readonly op: number; readonly allocator: number } | null)[] = [];
  /** `kmem:EVENT` by event id, for messages. */
  readonly #labels: string[] = [];
  readonly #gfps = new ByteNames();
  readonly #gfpValues: number[] = [];
  readonly #gfpTexts: string[] = [];
  readonly #caches = new ByteNames();
  readonly #cacheNames: string[] = [];
  readonly #file: string | undefined;
  readonly #lenient: boolean;
  readonly #requireKmem: boolean;
  // Input: the chunk being read and where; a line cut by a chunk's end is put together in #carry.
  readonly #chunks: Iterator<Uint8Array>;
  #chunk: Uint8Array = EMPTY;
  #chunkBuffer: Buffer = Buffer.alloc(0);
  #pos = 0;
  #carry = new Uint8Array(256);
  #carryLength = 0;
  // The current line: its bytes (in the chunk, the carry, or a re-encoded copy) and its number.
  #bytes: Uint8Array = EMPTY;
  #start = 0;
  #end = 0;
  #lineNo = 0;
  // Its header.
  #cpu = 0;
  /** Its timestamp, in an array: a double in a field may be stored boxed, a new number per line. */
  readonly #tsNs = new Float64Array(1);
  #kmem = false;
  #eventStart = 0;
  #eventEnd = 0;
  #eventHash = 0;
  #fieldsStart = 0;
  // Its fields, by index in FIELDS: where each value is, and on which line it was last seen.
  readonly #valueStart = new Int32Array(FIELDS.length);
  readonly #valueEnd = new Int32Array(FIELDS.length);
  readonly #seen = new Int32Array(FIELDS.length);
  /** Hashes of the name fields' values, values of the decimal ones (NaN: not a decimal). */
  readonly #hash = new Int32Array(FIELDS.length);
  readonly #int = new Float64Array(FIELDS.length);
  /** Keys of the address fields read as {@link storeCanonicalKey} reads them, -1 for the others. */
  readonly #address = new Float64Array(FIELDS.length);
  /** The first error of a strict read that has met no kmem event yet: thrown if one comes. */
  #pending: KmemError | undefined;
  #problems = 0;

  /**
   * @param options.requireKmem refuse a text that holds no kmem event at all (`ERR_KMEM_INPUT`, with or without
   * `lenient`), rather than by the syntax error of its first line: a strict read that fails before its first kmem
   * event reads on (without keeping anything) to tell a wrong input from a damaged one.
   */
  constructor(input: PerfScriptInput, options: PerfScriptOptions & { readonly requireKmem?: boolean } = {}) {
    const chunks =
      typeof input === 'string' ? [Buffer.from(input, 'utf8')] : input instanceof Uint8Array ? [input] : input;
    this.#chunks = chunks[Symbol.iterator]();
    this.#file = options.file;
    this.#lenient = options.lenient === true;
    this.#requireKmem = options.requireKmem === true;
  }

  /**
   * Reads the next kmem events into `batch` (up to its capacity), in the order of the text: how many, 0 at the end.
   * @throws KmemError `ERR_KMEM_PERF_SCRIPT` with line and column for a malformed line, unless `lenient`;
   * `ERR_KMEM_INPUT` at the end of a text without kmem events when `requireKmem`.
   */
  read(batch: KmemColumns): number {
    batch.length = 0;
    while (batch.length < batch.capacity && this.#nextLine()) {
      this.#lineNo++;
      let read: boolean;
      try {
        read = this.#parseLine(batch, batch.length);
      } catch (error) {
        if (!(error instanceof LineError)) throw error;
        this.#problems++;
        const err = this.#lineError(error);
        if (this.#lenient) this.diagnostics.push(err.message);
        else if (!this.#requireKmem || this.count > 0) throw err;
        else this.#pending ??= err;
        continue;
      }
      if (!read) continue;
      if (this.#pending !== undefined) throw this.#pending;
      this.count++;
      batch.length++;
    }
    if (batch.length === 0 && this.#requireKmem && this.count === 0)
      throw noKmemEvents(this.#file ?? '', this.#problems);
    return batch.length;
  }

  /** Names for the keys of the events read: call sites as perf printed them, pointers in hex. */
  names(): Pick<KmemSource, 'siteName' | 'ptrName' | 'ptrBytes' | 'siteOrder' | 'gfpNames'> {
    const site = (key: number) => (key >= 1 && key <= this.#sites.size ? this.#sites.text(key - 1) : '');
    return {
      siteName: site,
      ptrName: (key) => this.#keys.hex(key),
      ptrBytes: (key, out) => this.#keys.writeHex(key, out),
      siteOrder: site,
      gfpNames: gfpNamer(BUILTIN_GFP_TABLE),
    };
  }

  /** Moves to the next line: false at the end of the text. */
  #nextLine(): boolean {
    for (;;) {
      const chunk = this.#chunk;
      // Buffer's indexOf is memchr, several times the typed array's.
      const nl = this.#chunkBuffer.indexOf(10, this.#pos);
      if (nl >= 0) {
        this.#bytes = chunk;
        this.#start = this.#pos;
        this.#end = nl;
        this.#pos = nl + 1;
        return true;
      }
      // The rest of the chunk begins a line the next chunks end: kept before they are asked for.
      this.#keep(chunk, this.#pos, chunk.length);
      this.#pos = chunk.length;
      const next = this.#chunks.next();
      if (next.done) {
        this.#setChunk(EMPTY);
        if (this.#carryLength === 0) return false;
        this.#line(this.#carry, 0, this.#carryLength);
        this.#carryLength = 0;
        return true;
      }
      this.#setChunk(next.value);
      if (this.#carryLength === 0) continue;
      const end = this.#chunkBuffer.indexOf(10);
      if (end < 0) continue;
      this.#keep(next.value, 0, end);
      this.#line(this.#carry, 0, this.#carryLength);
      this.#carryLength = 0;
      this.#pos = end + 1;
      return true;
    }
  }

  #setChunk(chunk: Uint8Array): void {
    // A Buffer (or other subclass) seen as a plain Uint8Array, as every line is.
    this.#chunk =
      chunk.constructor === Uint8Array ? chunk : new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length);
    this.#chunkBuffer = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
    this.#pos = 0;
  }

  #line(bytes: Uint8Array, start: number, end: number): void {
    this.#bytes = bytes;
    this.#start = start;
    this.#end = end;
  }

  /** Appends bytes to the carried line. */
  #keep(bytes: Uint8Array, from: number, to: number): void {
    const n = to - from;
    if (n === 0) return;
    if (this.#carryLength + n > this.#carry.length) {
      const grown = new Uint8Array(Math.max(this.#carry.length * 2, this.#carryLength + n));
      grown.set(this.#carry.subarray(0, this.#carryLength));
      this.#carry = grown;
    }
    this.#carry.set(bytes.subarray(from, to), this.#carryLength);
    this.#carryLength += n;
  }

  /** The error of the current line, its column counted in characters as the line reads. */
  #lineError(error: LineError): KmemError {
    const column = decode(this.#bytes, this.#start, this.#start + error.offset).length + 1;
    const where = { ...(this.#file !== undefined ? { file: this.#file } : {}), line: this.#lineNo, column };
    return new KmemError('ERR_KMEM_PERF_SCRIPT', error.message, where);
  }

  /** Writes the current line's event at `i` of `batch`; false for a line skipped or of another event. */
  #parseLine(batch: KmemColumns, i: number): boolean {
    const b = this.#bytes;
    const s = this.#start;
    const e = this.#end;
    // Blank lines, `#` comments and callchain entries.
    let first = s;
    while (first < e && isSpace(b[first]!)) first++;
    if (first === e || b[first] === 35) return false;
    if (b[s] === 9 && CALLCHAIN.test(decode(b, s, e))) return false;
    if (!this.#fastHeader(b, s, first, e)) {
      this.#header(decode(b, s, e));
      // A line that is not UTF-8 throughout is read as its decoded text (the bytes `#header` measured it in).
      if (this.#bytes !== b) return this.#parseLine(batch, i);
    }
    if (!this.#kmem) {
      this.ignored++;
      return false;
    }
    const id = this.#eventNames.id(b, this.#eventStart, this.#eventEnd, this.#eventHash);
    let kind = this.#kinds[id];
    if (kind === undefined) {
      this.#labels[id] = `kmem:${this.#eventNames.text(id)}`;
      const k = kmemKind({ name: this.#labels[id] });
      kind = k === undefined ? null : { op: OPS.indexOf(k.op), allocator: ALLOCATOR_CODE[k.allocator] };
      this.#kinds[id] = kind;
    }
    if (kind === null) {
      this.ignored++;
      return false;
    }
    this.#scanFields(b, this.#fieldsStart, e);
    const event = this.#labels[id]!;
    const c = batch;
    c.op[i] = kind.op;
    c.allocator[i] = kind.allocator;
    c.tsNs[i] = this.#tsNs[0]!;
    c.cpu[i] = this.#cpu;
    if (kind.allocator === PAGE_ALLOCATOR) {
      const failed = this.#has(PAGE) && this.#isNull(PAGE, false);
      const pfn = this.#address[PFN]!;
      // Stored apart: a choice between this number and a method's result would box it.
      if (failed) c.ptr[i] = -1;
      else if (this.#has(PFN) && pfn >= 0) c.ptr[i] = pfn;
      else c.ptr[i] = this.#hex(event, PFN);
      const gfp = kind.op === OP_PAGE_ALLOC ? this.#gfp() : -1;
      c.order[i] = this.#decimal(event, ORDER);
      c.migratetype[i] = this.#has(MIGRATETYPE) ? this.#decimal(event, MIGRATETYPE) : Number.NaN;
      c.callSite[i] = 0;
      c.bytesReq[i] = 0;
      c.bytesAlloc[i] = 0;
      c.gfpFlags[i] = gfp < 0 ? 0 : this.#gfpValues[gfp]!;
      c.gfpText[i] = gfp < 0 ? undefined : this.#gfpTexts[gfp];
      c.node[i] = -1;
      c.cache[i] = undefined;
      return true;
    }
    if (!this.#has(CALL_SITE)) this.#lacks(event, CALL_SITE);
    c.callSite[i] =
      this.#sites.id(b, this.#valueStart[CALL_SITE]!, this.#valueEnd[CALL_SITE]!, this.#hash[CALL_SITE]) + 1;
    const alloc = kind.op === OP_ALLOC;
    c.cache[i] = this.#has(NAME) ? this.#cache() : undefined;
    const gfp = alloc ? this.#gfp() : -1;
    const ptr = this.#address[PTR]!;
    if (this.#has(PTR) && ptr >= 0) c.ptr[i] = ptr;
    else c.ptr[i] = this.#hex(event, PTR);
    c.bytesReq[i] = alloc ? this.#decimal(event, BYTES_REQ) : 0;
    c.bytesAlloc[i] = alloc ? this.#decimal(event, BYTES_ALLOC) : 0;
    c.gfpFlags[i] = gfp < 0 ? 0 : this.#gfpValues[gfp]!;
    c.gfpText[i] = gfp < 0 ? undefined : this.#gfpTexts[gfp];
    c.node[i] = this.#has(NODE) ? this.#decimal(event, NODE) : -1;
    c.order[i] = 0;
    c.migratetype[i] = Number.NaN;
    return true;
  }

  /**
   * The header by bytes, where HEADER's lazy COMM would cost a match and its strings: the same groups wherever this
   * accepts the line (the first `[` is where HEADER finds CPU, as COMM and PID hold none); false for HEADER to read.
   */
  #fastHeader(b: Uint8Array, s: number, first: number, e: number): boolean {
    // Blanks before `first`: no bracket there.
    let bracket = first;
    while (bracket < e && b[bracket] !== 91) bracket++;
    if (bracket === e) return false;
    // `\s+ -?\d+ (/-?\d+)? \s+` before the bracket, read backwards.
    let j = bracket;
    while (j > s && isSpace(b[j - 1]!)) j--;
    if (j === bracket) return false;
    j = digitsStart(b, s, j);
    if (j > s && b[j - 1] === 47) j = digitsStart(b, s, j - 1);
    if (j <= s || !isSpace(b[j - 1]!)) return false;
    // `\[\d+\]\s+\d+\.\d+:\s+\w+:\w+:[ \t]*` after it, numbers read on the way.
    let i = bracket + 1;
    let cpu = 0;
    for (let c = 0; i < e && isDigit((c = b[i]!)); i++) cpu = cpu * 10 + c - 48;
    if (i === bracket + 1 || i === e || b[i] !== 93) return false;
    const secsStart = spacesEnd(b, i + 1, e);
    if (secsStart < 0) return false;
    let secs = 0;
    i = secsStart;
    for (let c = 0; i < e && isDigit((c = b[i]!)); i++) secs = secs * 10 + c - 48;
    if (i === secsStart || i === e || b[i] !== 46) return false;
    // Digits beyond the nanosecond are dropped, fewer are scaled up.
    const fracStart = ++i;
    let frac = 0;
    for (let c = 0; i < e && isDigit((c = b[i]!)); i++) if (i - fracStart < 9) frac = frac * 10 + c - 48;
    if (i === fracStart || i === e || b[i] !== 58) return false;
    for (let k = i - fracStart; k < 9; k++) frac *= 10;
    const systemStart = spacesEnd(b, i + 1, e);
    const systemEnd = systemStart < 0 ? -1 : wordEnd(b, systemStart, e);
    if (systemEnd < 0 || systemEnd === e || b[systemEnd] !== 58) return false;
    // The event's name, hashed on the way for its lookup.
    let eventEnd = systemEnd + 1;
    let h = FNV_OFFSET;
    for (let c = 0; eventEnd < e && isWord((c = b[eventEnd]!)); eventEnd++) h = Math.imul(h ^ c, FNV_PRIME);
    if (eventEnd === systemEnd + 1 || eventEnd === e || b[eventEnd] !== 58) return false;
    this.#eventHash = h;
    this.#cpu = cpu;
    this.#tsNs[0] = secs * 1e9 + frac;
    this.#kmem = equals(b, systemStart, systemEnd, KMEM);
    this.#eventStart = systemEnd + 1;
    this.#eventEnd = eventEnd;
    let end = eventEnd + 1;
    while (end < e && isSpace(b[end]!)) end++;
    this.#fieldsStart = end;
    return true;
  }

  /**
   * The header by HEADER, on the line's text. Positions are UTF-8 byte offsets of that text: when the line's bytes
   * are not (invalid UTF-8 reads as U+FFFD), the line becomes the text's own bytes.
   */
  #header(line: string): void {
    const bytes = bytesOf(Buffer.from(line, 'utf8'));
    if (bytes.length !== this.#end - this.#start) this.#line(bytes, 0, bytes.length);
    const at = (column: number) => Buffer.byteLength(line.slice(0, column));
    const m = HEADER.exec(line);
    if (m === null) {
      const p = headerProblem(line);
      throw new LineError(at(p.column), p.message);
    }
    const frac = m[6]!;
    this.#cpu = Number(m[4]);
    this.#tsNs[0] = Number(m[5]) * 1e9 + Number(frac.length >= 9 ? frac.slice(0, 9) : frac.padEnd(9, '0'));
    this.#kmem = m[7] === 'kmem';
    // The match ends with EVENT (word characters: one byte each), a colon and blanks.
    this.#eventEnd = this.#start + at(m[0].lastIndexOf(':'));
    this.#eventStart = this.#eventEnd - m[8]!.length;
    this.#fieldsStart = this.#start + at(m[0].length);
    this.#eventHash = hashBytes(this.#bytes, this.#eventStart, this.#eventEnd);
  }

  /**
   * Splits `key=value` fields, separated by spaces (kmem's print formats put none in values); later duplicates win.
   * Each value is read once: names hashed and decimals parsed on the way (their problems reported when asked for,
   * after every field has split).
   */
  #scanFields(b: Uint8Array, at: number, e: number): void {
    const line = this.#lineNo;
    while (at < e) {
      // The key, to `=` or a space, its first bytes packed into two exact numbers that tell the known keys apart.
      const start = at;
      let c = 0;
      let high = 0;
      let low = 0;
      for (; at < e && (c = b[at]!) !== 61 && c !== 32; at++)
        if (at - start < 6) high = high * 256 + c;
        else low = low * 256 + c;
      if (at === e || c === 32) {
        if (at > start) throw new LineError(start - this.#start, `expected key=value, found '${decode(b, start, at)}'`);
        at++;
        continue;
      }
      const k = fieldOf(at - start, high, low);
      const from = ++at;
      if (k === CALL_SITE || k === GFP_FLAGS || k === NAME) {
        let h = FNV_OFFSET;
        for (; at < e && (c = b[at]!) !== 32; at++) h = Math.imul(h ^ c, FNV_PRIME);
        this.#hash[k] = h;
      } else if (k === BYTES_REQ || k === BYTES_ALLOC || k === NODE || k === ORDER || k === MIGRATETYPE) {
        const negative = at < e && b[at] === 45;
        if (negative) at++;
        let v = 0;
        let ok = at < e && b[at] !== 32;
        for (; at < e && (c = b[at]!) !== 32; at++) {
          if (c < 48 || c > 57) ok = false;
          v = v * 10 + c - 48;
        }
        // Beyond 15 digits the sum may round otherwise than the text's nearest double.
        this.#int[k] = !ok ? Number.NaN : at - from > 15 ? Number(decode(b, from, at)) : negative ? -v : v;
      } else if (k === PTR || k === PFN) {
        while (at < e && b[at] !== 32) at++;
        storeCanonicalKey(b, from, at, this.#address, k);
      } else while (at < e && b[at] !== 32) at++;
      if (k >= 0) {
        this.#valueStart[k] = from;
        this.#valueEnd[k] = at;
        this.#seen[k] = line;
      }
      at++;
    }
  }

  #has(field: number): boolean {
    return this.#seen[field] === this.#lineNo;
  }

  #lacks(event: string, field: number): never {
    throw new LineError(this.#end - this.#start, `${event} line lacks the field ${FIELDS[field]}`);
  }

  #value(field: number): string {
    return decode(this.#bytes, this.#valueStart[field]!, this.#valueEnd[field]!);
  }

  /** Whether a present field is NULL: `(nil)`, or `0x0` for a page, `0` for an address. */
  #isNull(field: number, address: boolean): boolean {
    const b = this.#bytes;
    const from = this.#valueStart[field]!;
    const n = this.#valueEnd[field]! - from;
    if (n === 5) return equals(b, from, from + 5, NIL);
    if (address) return n === 1 && b[from] === 48;
    return n === 3 && b[from] === 48 && b[from + 1] === 120 && b[from + 2] === 48;
  }

  /** A decimal field; `-?\d+` whole. */
  #decimal(event: string, field: number): number {
    if (!this.#has(field)) this.#lacks(event, field);
    const v = this.#int[field]!;
    if (Number.isNaN(v)) this.#notDecimal(field);
    return v;
  }

  #notDecimal(field: number): never {
    throw new LineError(
      this.#valueStart[field]! - this.#start,
      `${FIELDS[field]}: '${this.#value(field)}' is not a decimal integer`,
    );
  }

  /** A hexadecimal address field, as its key: `0x…`, or `(nil)` or `0` for NULL. */
  #hex(event: string, field: number): number {
    if (!this.#has(field)) this.#lacks(event, field);
    if (this.#isNull(field, true)) return 0;
    const b = this.#bytes;
    const from = this.#valueStart[field]!;
    const to = this.#valueEnd[field]!;
    const key = to - from > 2 && b[from] === 48 && b[from + 1] === 120 ? this.#keys.keyOfHex(b, from, to) : undefined;
    if (key === undefined)
      throw new LineError(from - this.#start, `${FIELDS[field]}: '${this.#value(field)}' is not a hexadecimal address`);
    return key;
  }

  /** The gfp flags of the line as an id of their text, each text decoded once; -1 without the field. */
  #gfp(): number {
    if (!this.#has(GFP_FLAGS)) return -1;
    const id = this.#gfps.id(
      this.#bytes,
      this.#valueStart[GFP_FLAGS]!,
      this.#valueEnd[GFP_FLAGS]!,
      this.#hash[GFP_FLAGS],
    );
    if (id === this.#gfpTexts.length) {
      const text = internName(this.#gfps.text(id));
      this.#gfpTexts.push(text);
      this.#gfpValues.push((/^\d+$/.test(text) ? Number(text) : gfpValue(text)) ?? 0);
    }
    return id;
  }

  /** The cache name of the line, one shared string per name. */
  #cache(): string {
    const id = this.#caches.id(this.#bytes, this.#valueStart[NAME]!, this.#valueEnd[NAME]!, this.#hash[NAME]);
    if (id === this.#cacheNames.length) this.#cacheNames.push(internName(this.#caches.text(id)));
    return this.#cacheNames[id]!;
  }
}

/** A key's first 6 bytes and next 6 as numbers (big-endian: exact for the 12 bytes a known key fits in). */
function packKey(key: Uint8Array): [number, number] {
  let high = 0;
  let low = 0;
  key.forEach((c, i) => {
    if (i < 6) high = high * 256 + c;
    else low = low * 256 + c;
  });
  return [high, low];
}

const KEY_HIGH = Float64Array.from(FIELD_BYTES, (k) => packKey(k)[0]);
const KEY_LOW = Float64Array.from(FIELD_BYTES, (k) => packKey(k)[1]);
/** The fields by the length of their key. */
const BY_LENGTH = Array.from({ length: 13 }, (_, n) => FIELDS.flatMap((f, k) => (f.length === n ? [k] : [])));

/** The index in FIELDS of a key of `length` bytes packed as {@link packKey} packs them, or -1 (any other key). */
function fieldOf(length: number, high: number, low: number): number {
  if (length > 12) return -1;
  const candidates = BY_LENGTH[length]!;
  for (let i = 0; i < candidates.length; i++) {
    const k = candidates[i]!;
    if (KEY_HIGH[k] === high && KEY_LOW[k] === low) return k;
  }
  return -1;
}

/** The ends of runs of at least one space or word character from `from` before `e`, or -1. */
function spacesEnd(b: Uint8Array, from: number, e: number): number {
  let i = from;
  while (i < e && isSpace(b[i]!)) i++;
  return i > from ? i : -1;
}

function wordEnd(b: Uint8Array, from: number, e: number): number {
  let i = from;
  while (i < e && isWord(b[i]!)) i++;
  return i > from ? i : -1;
}

/** The start of a run of at least one digit ending before `end`, not before `s` (with its minus sign), or -1. */
function digitsStart(b: Uint8Array, s: number, end: number): number {
  let j = end - 1;
  while (j >= s && isDigit(b[j]!)) j--;
  if (j === end - 1) return -1;
  return j >= s && b[j] === 45 ? j : j + 1;
}

/**
 * Parses perf script text whole. Lines of other events are ignored (counted in `ignored`); blank lines and `#`
 * comments too.
 * @throws KmemError `ERR_KMEM_PERF_SCRIPT` with line and column for a malformed line, unless `lenient`.
 */
export function parsePerfScript(
  input: PerfScriptInput,
  options: PerfScriptOptions = {},
): KmemSource & { readonly events: KmemEvent[]; readonly ignored: number } {
  const reader = new PerfScriptReader(input, options);
  const events: KmemEvent[] = [];
  const batch = new KmemColumns(BATCH);
  while (reader.read(batch) > 0) for (let i = 0; i < batch.length; i++) events.push(batch.event(i));
  return { events, ignored: reader.ignored, diagnostics: reader.diagnostics, ...reader.names() };
}

/** Events per batch of columns: enough to amortize a batch, few enough to stay in the processor's caches. */
export const BATCH = 4096;
