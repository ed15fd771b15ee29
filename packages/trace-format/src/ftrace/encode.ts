/**
 * The inverse of record.ts and page.ts: field values to ftrace record bytes, and timestamped records to ring-buffer
 * pages in the kernel's layout, for trace.dat writing and for tests that need pages the kernel cannot be made to
 * produce on demand (time extends, absolute stamps, missed-event flags).
 */
import { TraceFormatError } from '../errors.ts';
import type { EventClass, FieldValue, FtraceFieldInfo } from '../model/types.ts';
import { isCharType, parseDeclaration, sizeOfType } from './c-types.ts';
import type { PageLayout } from './headers.ts';
import { EVENT_TYPE } from './page.ts';

const MAX_DELTA = (1 << 27) - 1;
/** Longest payload a compressed header's type_len can describe (28 words). */
const MAX_SMALL = 28 * 4;

/** The declaration text of a field, as a format file writes it: `char comm[16]`, `__data_loc char[] name`. */
export function declarationText(f: Pick<FtraceFieldInfo, 'name' | 'cType'>): string {
  const arr = /^(.*?)(\[[^\]]*\])$/.exec(f.cType);
  if (f.cType.startsWith('__data_loc') || f.cType.startsWith('__rel_loc') || arr === null)
    return `${f.cType} ${f.name}`;
  return `${arr[1]} ${f.name}${arr[2]}`;
}

/** Writes one field of a record that starts at `base` in `out`. */
type Writer = (out: Buffer, view: DataView, base: number, value: FieldValue | undefined, dyn: DynamicArea) => void;

interface DynamicArea {
  /** Appends bytes after the fixed part and returns their offset from the record start. */
  append(bytes: Uint8Array): number;
}

function toBig(v: FieldValue | undefined): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return BigInt(Math.trunc(v));
  if (typeof v === 'boolean') return v ? 1n : 0n;
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v);
  return 0n;
}

/**
 * Stores an integer of `size` bytes, wrapping like a C cast; numbers stay off the BigInt path when they can. Nothing
 * is stored for a missing value: records are zeroed before their fields are written.
 */
export function putInt(view: DataView, at: number, size: number, v: FieldValue | undefined, le: boolean): void {
  if (v === undefined) return;
  if (size === 8) {
    if (typeof v === 'bigint') {
      // setBigUint64 wraps any value modulo 2^64 itself.
      view.setBigUint64(at, v, le);
    } else if (typeof v === 'number' && Number.isSafeInteger(v)) {
      // Two 32-bit halves, two's complement for negatives: no BigInt made for a value that fits a number.
      view.setUint32(le ? at : at + 4, v >>> 0, le);
      view.setUint32(le ? at + 4 : at, Math.floor(v / 0x100000000) >>> 0, le);
    } else view.setBigUint64(at, toBig(v), le);
    return;
  }
  const n =
    typeof v === 'number' && Number.isSafeInteger(v)
      ? v
      : typeof v === 'bigint'
        ? Number(BigInt.asIntN(32, v))
        : Number(BigInt.asIntN(32, toBig(v)));
  if (size === 1) view.setUint8(at, n & 0xff);
  else if (size === 2) view.setUint16(at, n & 0xffff, le);
  else view.setUint32(at, n >>> 0, le);
}

function elementBytes(values: readonly FieldValue[], elem: number, le: boolean): Uint8Array {
  const out = new Uint8Array(values.length * elem);
  const view = new DataView(out.buffer);
  for (let i = 0; i < values.length; i++) putInt(view, i * elem, elem, values[i], le);
  return out;
}

function fieldWriter(f: FtraceFieldInfo, le: boolean, longSize: number): Writer {
  const decl = parseDeclaration(declarationText(f));
  const text = decl !== undefined && isCharType(decl.baseType) && !decl.pointer;
  const elemSize = decl === undefined ? 1 : (sizeOfType(decl.baseType, longSize) ?? 1);
  const { offset, size } = f;
  switch (decl?.shape.kind ?? 'scalar') {
    case 'scalar':
      if (size === 1 || size === 2 || size === 4 || size === 8) {
        return (_o, v, base, value) => putInt(v, base + offset, size, value, le);
      }
      return (o, _v, base, value) => {
        if (Array.isArray(value)) o.set(elementBytes(value, 1, le).subarray(0, size), base + offset);
      };
    case 'array':
      return (o, v, base, value) => {
        if (typeof value === 'string') {
          o.write(value, base + offset, size, 'utf8');
        } else if (Array.isArray(value) && value.length > 0) {
          const elem = Math.max(1, Math.floor(size / value.length));
          for (let i = 0; i < value.length && (i + 1) * elem <= size; i++) {
            putInt(v, base + offset + i * elem, elem, value[i], le);
          }
        }
      };
    case 'tail':
      return (_o, _v, _base, value, dyn) => {
        if (typeof value === 'string') dyn.append(Buffer.from(`${value}\0`, 'utf8'));
        else if (Array.isArray(value)) dyn.append(elementBytes(value, elemSize, le));
      };
    case 'dynamic': {
      const relative = decl?.shape.kind === 'dynamic' && decl.shape.relative;
      return (_o, v, base, value, dyn) => {
        const bytes =
          typeof value === 'string' || (text && value == null)
            ? Buffer.from(`${value ?? ''}\0`, 'utf8')
            : elementBytes(Array.isArray(value) ? value : [], elemSize, le);
        const at = dyn.append(bytes);
        const stored = relative ? at - (offset + size) : at;
        v.setUint32(base + offset, ((bytes.length & 0xffff) << 16) | (stored & 0xffff), le);
      };
    }
  }
}

/** Writes records of one event class into a new buffer. */
export type RecordEncoder = (
  fields: Readonly<Record<string, FieldValue>>,
  common: Readonly<Record<string, FieldValue>>,
) => Buffer;

/**
 * Writes a record of one event class into `out` at `at` (which must have room for the fixed part plus 64 KiB of
 * dynamic data) and returns its length.
 */
export type RecordWriter = (
  fields: Readonly<Record<string, FieldValue>>,
  common: Readonly<Record<string, FieldValue>>,
  out: Buffer,
  view: DataView,
  at: number,
) => number;

/** The most a record can take beyond its fixed part: dynamic lengths are 16-bit. */
export const MAX_DYNAMIC = 0x10000;

/** Compiles the in-place writer of an event class with ftrace info; `common_type` is always the class id. */
export function compileRecordWriter(
  event: EventClass,
  le = true,
  longSize = 8,
): RecordWriter & { readonly fixed: number; readonly dynamic: boolean } {
  const info = event.ftrace;
  if (info === undefined) throw new TraceFormatError('ERR_TRACE_FORMAT', `${event.name} has no ftrace field info`);
  // Tail arrays start where their field says, not after the fixed part.
  const tailStart = info.fields.find((f) => f.size === 0 && /\[\]$/.test(f.cType) && !f.cType.startsWith('__'))?.offset;
  const fixed = tailStart ?? Math.max(0, ...info.fields.map((f) => f.offset + f.size));
  const writers = info.fields.map((f) => fieldWriter(f, le, longSize));
  const hasDynamic = info.fields.some((f) => f.size === 0 || /^__(data|rel)_loc/.test(f.cType));
  // Generated straight-line code: scalars inline, other fields through their writer. Names are JSON-quoted. The fixed
  // part is zeroed by a loop: a few dozen bytes cost less so than through fill's call.
  const statements = info.fields.map((f, i) => {
    const src =
      f.name === 'common_type' ? String(event.id) : `${f.common ? 'common' : 'fields'}[${JSON.stringify(f.name)}]`;
    const scalar = parseDeclaration(declarationText(f))?.shape.kind === 'scalar' && [1, 2, 4, 8].includes(f.size);
    return scalar ? `put(v, at + ${f.offset}, ${f.size}, ${src}, ${le});` : `w[${i}](out, v, at, ${src}, dyn);`;
  });
  const body = `return function write(fields, common, out, v, at) {
    for (let i = at, e = at + ${fixed}; i < e; i++) out[i] = 0;
    let end = ${fixed};
    const dyn = ${hasDynamic ? 'area(out, at, () => end, (e) => { end = e; })' : 'undefined'};
    ${statements.join('\n    ')}
    if (end - ${fixed} > ${MAX_DYNAMIC}) overflow(end - ${fixed});
    return end;
  };`;
  const area = (out: Buffer, at: number, getEnd: () => number, setEnd: (e: number) => void): DynamicArea => ({
    append(bytes) {
      const start = getEnd();
      out.set(bytes.subarray(0, Math.max(0, Math.min(bytes.length, MAX_DYNAMIC - (start - fixed)))), at + start);
      setEnd(start + bytes.length);
      return start;
    },
  });
  const overflow = (n: number) => {
    throw new TraceFormatError('ERR_TRACE_FORMAT', `${event.name}: ${n} bytes of dynamic data, at most ${MAX_DYNAMIC}`);
  };
  const write = new Function('w', 'put', 'area', 'overflow', body)(writers, putInt, area, overflow) as RecordWriter;
  return Object.assign(write, { fixed, dynamic: hasDynamic });
}

/** Compiles the encoder of an event class with ftrace info; `common_type` is always the class id. */
export function compileRecordEncoder(event: EventClass, le = true, longSize = 8): RecordEncoder {
  const write = compileRecordWriter(event, le, longSize);
  // One scratch area per encoder, cleared as far as the previous record reached: allocating (and zeroing) 64 KiB
  // per record made encoding cost about 20 µs an event.
  let out: Buffer | undefined;
  let view: DataView | undefined;
  let used = 0;
  return (fields, common) => {
    if (out === undefined) {
      out = Buffer.alloc(write.fixed + MAX_DYNAMIC);
      view = new DataView(out.buffer, out.byteOffset, out.byteLength);
    } else out.fill(0, 0, used);
    // A failed write leaves unknown bytes behind: clear everything next time.
    used = out.length;
    const n = write(fields, common, out, view!, 0);
    used = n;
    return Buffer.from(out.subarray(0, n));
  };
}

/** One record to place in pages. */
export interface TimedRecord {
  readonly tsNs: bigint;
  readonly data: Uint8Array;
  /**
   * The kernel lost events before this record: it starts a page whose header says so (the missed-events flag, and the
   * count stored after the data when given and it fits), as the kernel marks the first page after a loss.
   */
  readonly missed?: number | null;
}

/** Options of {@link packPages}. */
export interface PackOptions {
  /** Use an absolute time stamp (type 31) instead of a time extend for large gaps. */
  readonly absoluteStamps?: boolean;
}

const MISSED_EVENTS = 0x80000000;
const MISSED_STORED = 0x40000000;

/**
 * Packs records (in timestamp order) into pages of `layout.pageSize`: each page's timestamp is its first record's,
 * gaps too large for 27 bits get a time extend (or an absolute stamp). A record with `missed` starts a new page
 * flagged as the kernel flags the page after a loss. Unused page bytes are zero.
 */
export function packPages(records: Iterable<TimedRecord>, layout: PageLayout, options: PackOptions = {}): Buffer {
  const pages: Buffer[] = [];
  const packer = new PagePacker(layout, (page) => pages.push(Buffer.from(page)), options);
  for (const r of records) packer.add(r.tsNs, r.data, r.data.length, r.missed);
  packer.close();
  return Buffer.concat(pages);
}

/**
 * {@link packPages} one record at a time: each page is handed to `onPage` once full (the same buffer every time, to
 * be copied or written before `add` returns), so a writer holds one page, whatever the trace's length.
 */
export class PagePacker {
  readonly #layout: PageLayout;
  readonly #onPage: (page: Buffer) => void;
  readonly #le: boolean;
  readonly #absolute: boolean;
  /** The page being filled (handed to `onPage` when full, then cleared and filled again). */
  readonly page: Buffer;
  readonly view: DataView;
  #open = false;
  #used = 0;
  #last = 0n;
  /** Nanoseconds of records placed by {@link placeAfter} since `#last` was set: added to it when next read. */
  #ahead = 0;
  /** The current page's loss: undefined for none, null for an unknown count. */
  #missed: number | null | undefined;
  /** Room for records: the page less its header, and less the stored count of a loss. */
  #capacity = 0;

  constructor(layout: PageLayout, onPage: (page: Buffer) => void, options: PackOptions = {}) {
    this.#layout = layout;
    this.#onPage = onPage;
    this.#le = layout.byteOrder === 'le';
    this.#absolute = options.absoluteStamps === true;
    this.page = Buffer.alloc(layout.pageSize);
    this.view = new DataView(this.page.buffer, this.page.byteOffset, this.page.byteLength);
  }

  #header(typeLen: number, delta: number): number {
    return this.#le ? ((delta << 5) | typeLen) >>> 0 : ((typeLen << 27) | delta) >>> 0;
  }

  /** Places the record `data[0, length)` stamped `tsNs`, after the kernel's loss of `missed` events when given. */
  add(tsNs: bigint, data: Uint8Array, length: number, missed?: number | null): void {
    const at = this.place(tsNs, length, missed);
    const page = this.page;
    // Records are mostly a few dozen bytes: a loop costs less than a copy call's setup.
    if (length <= 64) for (let i = 0; i < length; i++) page[at + i] = data[i]!;
    else page.set(data.subarray(0, length), at);
  }

  /**
   * Makes room for a record of `length` bytes stamped `tsNs` and returns where in {@link page} its bytes go (zeros
   * until the caller writes them there, before the next call): for a writer that encodes a record in place.
   */
  place(tsNs: bigint, length: number, missed?: number | null): number {
    const layout = this.#layout;
    const view = this.view;
    const le = this.#le;
    const payload = (length + 3) & ~3;
    const small = payload > 0 && payload <= MAX_SMALL;
    const eventSize = (small ? 4 : 8) + payload;
    if (eventSize + 8 + (missed == null ? 0 : layout.commitSize) > layout.pageSize - layout.dataOffset) {
      throw new TraceFormatError(
        'ERR_TRACE_FORMAT',
        `record of ${length} bytes does not fit a ${layout.pageSize}-byte page`,
      );
    }
    if (missed !== undefined) this.close();
    if (this.#ahead !== 0) {
      this.#last += BigInt(this.#ahead);
      this.#ahead = 0;
    }
    let delta = this.#open ? Number(tsNs - this.#last) : 0;
    const needStamp = delta < 0 || delta > MAX_DELTA;
    if (this.#open && this.#used + eventSize + (needStamp ? 8 : 0) > this.#capacity) this.close();
    if (!this.#open) {
      view.setBigUint64(layout.timestampOffset, tsNs, le);
      this.#open = true;
      this.#used = 0;
      this.#last = tsNs;
      this.#missed = missed;
      this.#capacity = layout.pageSize - layout.dataOffset - (missed == null ? 0 : layout.commitSize);
      delta = 0;
    }
    if (delta < 0 || delta > MAX_DELTA) {
      const at = layout.dataOffset + this.#used;
      const abs = this.#absolute || delta < 0;
      const value = abs ? BigInt.asUintN(59, tsNs) : tsNs - this.#last;
      view.setUint32(
        at,
        this.#header(abs ? EVENT_TYPE.timeStamp : EVENT_TYPE.timeExtend, Number(value & BigInt(MAX_DELTA))),
        le,
      );
      view.setUint32(at + 4, Number(value >> 27n), le);
      this.#used += 8;
      delta = 0;
    }
    const at = this.#putHeader(payload, small, delta);
    this.#used += eventSize;
    this.#last = tsNs;
    return at;
  }

  /**
   * {@link place} for a record `deltaNs` (an integer) after the last one placed, with no bigint made, when that is
   * all it takes: the page is open and has room, and the delta fits a record header. Otherwise -1, and nothing is
   * placed (the caller then calls `place` with the record's time).
   */
  placeAfter(deltaNs: number, length: number): number {
    if (!this.#open || !(deltaNs >= 0 && deltaNs <= MAX_DELTA)) return -1;
    const payload = (length + 3) & ~3;
    const small = payload > 0 && payload <= MAX_SMALL;
    const eventSize = (small ? 4 : 8) + payload;
    if (this.#used + eventSize > this.#capacity) return -1;
    const at = this.#putHeader(payload, small, deltaNs);
    this.#used += eventSize;
    this.#ahead += deltaNs;
    return at;
  }

  /**
   * Writes a data record's header (its length in the type when `small`) at the next free byte; returns where its
   * payload goes.
   */
  #putHeader(payload: number, small: boolean, delta: number): number {
    const at = this.#layout.dataOffset + this.#used;
    if (small) {
      this.view.setUint32(at, this.#header(payload / 4, delta), this.#le);
      return at + 4;
    }
    this.view.setUint32(at, this.#header(0, delta), this.#le);
    this.view.setUint32(at + 4, payload + 4, this.#le);
    return at + 8;
  }

  /**
   * {@link placeAfter} for records of `length` bytes, made once for a caller that places many of them: the same
   * places, with the record header's size and type worked out once.
   */
  placerAfter(length: number): (deltaNs: number) => number {
    const payload = (length + 3) & ~3;
    if (!(payload > 0 && payload <= MAX_SMALL)) return (deltaNs) => this.placeAfter(deltaNs, length);
    const eventSize = 4 + payload;
    const typeLen = payload / 4;
    const le = this.#le;
    const view = this.view;
    const dataOffset = this.#layout.dataOffset;
    return (deltaNs) => {
      if (!this.#open || !(deltaNs >= 0 && deltaNs <= MAX_DELTA)) return -1;
      const used = this.#used;
      if (used + eventSize > this.#capacity) return -1;
      const at = dataOffset + used;
      view.setUint32(at, this.#header(typeLen, deltaNs), le);
      this.#used = used + eventSize;
      this.#ahead += deltaNs;
      return at + 4;
    };
  }

  /** Hands over the page being filled, if any; the next record starts a new one. */
  close(): void {
    if (!this.#open) return;
    const layout = this.#layout;
    const view = this.view;
    const le = this.#le;
    let commit = this.#used;
    if (this.#missed !== undefined) {
      commit |= MISSED_EVENTS;
      if (this.#missed !== null) {
        commit |= MISSED_STORED;
        const at = layout.dataOffset + this.#used;
        if (layout.commitSize === 8) view.setBigUint64(at, BigInt(this.#missed), le);
        else view.setUint32(at, this.#missed, le);
      }
    }
    const commitAt = layout.commitOffset + (!le && layout.commitSize === 8 ? 4 : 0);
    view.setUint32(commitAt, commit >>> 0, le);
    this.#onPage(this.page);
    this.page.fill(0);
    this.#open = false;
  }
}
