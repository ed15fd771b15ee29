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

type Writer = (out: Buffer, view: DataView, value: FieldValue | undefined, dyn: DynamicArea) => void;

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

function putInt(view: DataView, at: number, size: number, v: FieldValue | undefined, le: boolean): void {
  const b = BigInt.asUintN(size * 8, toBig(v));
  if (size === 1) view.setUint8(at, Number(b));
  else if (size === 2) view.setUint16(at, Number(b), le);
  else if (size === 4) view.setUint32(at, Number(b), le);
  else view.setBigUint64(at, b, le);
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
      if (size === 1 || size === 2 || size === 4 || size === 8)
        return (_o, v, value) => putInt(v, offset, size, value, le);
      return (o, _v, value) => {
        if (Array.isArray(value)) o.set(elementBytes(value, 1, le).subarray(0, size), offset);
      };
    case 'array':
      return (o, v, value) => {
        if (typeof value === 'string') {
          o.write(value, offset, size, 'utf8');
        } else if (Array.isArray(value) && value.length > 0) {
          const elem = Math.max(1, Math.floor(size / value.length));
          for (let i = 0; i < value.length && (i + 1) * elem <= size; i++)
            putInt(v, offset + i * elem, elem, value[i], le);
        }
      };
    case 'tail':
      return (_o, _v, value, dyn) => {
        if (typeof value === 'string') dyn.append(Buffer.from(`${value}\0`, 'utf8'));
        else if (Array.isArray(value)) dyn.append(elementBytes(value, elemSize, le));
      };
    case 'dynamic': {
      const relative = decl?.shape.kind === 'dynamic' && decl.shape.relative;
      return (_o, v, value, dyn) => {
        const bytes =
          typeof value === 'string' || (text && value == null)
            ? Buffer.from(`${value ?? ''}\0`, 'utf8')
            : elementBytes(Array.isArray(value) ? value : [], elemSize, le);
        const at = dyn.append(bytes);
        const stored = relative ? at - (offset + size) : at;
        v.setUint32(offset, ((bytes.length & 0xffff) << 16) | (stored & 0xffff), le);
      };
    }
  }
}

/** Writes records of one event class. */
export type RecordEncoder = (
  fields: Readonly<Record<string, FieldValue>>,
  common: Readonly<Record<string, FieldValue>>,
) => Buffer;

/** Compiles the encoder of an event class with ftrace info; `common_type` is always the class id. */
export function compileRecordEncoder(event: EventClass, le = true, longSize = 8): RecordEncoder {
  const info = event.ftrace;
  if (info === undefined) throw new TraceFormatError('ERR_TRACE_FORMAT', `${event.name} has no ftrace field info`);
  const fixed = Math.max(0, ...info.fields.map((f) => f.offset + f.size));
  const writers = info.fields.map((f) => [f, fieldWriter(f, le, longSize)] as const);
  // Tail arrays start where their field says, not after the fixed part.
  const tailStart = info.fields.find((f) => f.size === 0 && /\[\]$/.test(f.cType) && !f.cType.startsWith('__'))?.offset;
  return (fields, common) => {
    const extra: Uint8Array[] = [];
    let end = tailStart ?? fixed;
    const dyn: DynamicArea = {
      append(bytes) {
        const at = end;
        extra.push(bytes);
        end += bytes.length;
        return at;
      },
    };
    const head = Buffer.alloc(Math.max(fixed, tailStart ?? 0));
    const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
    for (const [f, write] of writers) {
      const value = f.name === 'common_type' ? event.id : f.common ? common[f.name] : fields[f.name];
      write(head, view, value, dyn);
    }
    return extra.length === 0 ? head : Buffer.concat([head.subarray(0, tailStart ?? fixed), ...extra]);
  };
}

/** One record to place in pages. */
export interface TimedRecord {
  readonly tsNs: bigint;
  readonly data: Uint8Array;
}

/** Options of {@link packPages}. */
export interface PackOptions {
  /** Use an absolute time stamp (type 31) instead of a time extend for large gaps. */
  readonly absoluteStamps?: boolean;
  /** Missed-events flag (and stored count) to set on the first page. */
  readonly missedBeforeFirst?: number;
}

/**
 * Packs records (in timestamp order) into pages of `layout.pageSize`: each page's timestamp is its first record's,
 * gaps too large for 27 bits get a time extend (or an absolute stamp). Unused page bytes are zero.
 */
export function packPages(records: Iterable<TimedRecord>, layout: PageLayout, options: PackOptions = {}): Buffer {
  const le = layout.byteOrder === 'le';
  const capacity = layout.pageSize - layout.dataOffset;
  const pages: Buffer[] = [];
  let page: Buffer | undefined;
  let view: DataView | undefined;
  let used = 0;
  let last = 0n;
  const header = (typeLen: number, delta: number) =>
    le ? ((delta << 5) | typeLen) >>> 0 : ((typeLen << 27) | delta) >>> 0;
  const close = () => {
    if (page === undefined) return;
    let commit = used;
    if (pages.length === 0 && options.missedBeforeFirst !== undefined) {
      commit |= 0x80000000;
      if (used + layout.commitSize <= capacity) {
        commit |= 0x40000000;
        const at = layout.dataOffset + used;
        if (layout.commitSize === 8) view!.setBigUint64(at, BigInt(options.missedBeforeFirst), le);
        else view!.setUint32(at, options.missedBeforeFirst, le);
      }
    }
    const commitAt = layout.commitOffset + (!le && layout.commitSize === 8 ? 4 : 0);
    view!.setUint32(commitAt, commit >>> 0, le);
    pages.push(page);
    page = undefined;
  };
  for (const r of records) {
    const payload = (r.data.length + 3) & ~3;
    const small = payload > 0 && payload <= MAX_SMALL;
    const eventSize = (small ? 4 : 8) + payload;
    if (eventSize + 8 > capacity) {
      throw new TraceFormatError(
        'ERR_TRACE_FORMAT',
        `record of ${r.data.length} bytes does not fit a ${layout.pageSize}-byte page`,
      );
    }
    const gap = page === undefined ? 0n : r.tsNs - last;
    const needStamp = page !== undefined && (gap < 0n || gap > BigInt(MAX_DELTA));
    if (page !== undefined && used + eventSize + (needStamp ? 8 : 0) > capacity) close();
    if (page === undefined) {
      page = Buffer.alloc(layout.pageSize);
      view = new DataView(page.buffer, page.byteOffset, page.byteLength);
      view.setBigUint64(layout.timestampOffset, r.tsNs, le);
      used = 0;
      last = r.tsNs;
    }
    let delta = Number(r.tsNs - last);
    if (delta < 0 || delta > MAX_DELTA) {
      const at = layout.dataOffset + used;
      const abs = options.absoluteStamps === true || delta < 0;
      const value = abs ? BigInt.asUintN(59, r.tsNs) : r.tsNs - last;
      view!.setUint32(
        at,
        header(abs ? EVENT_TYPE.timeStamp : EVENT_TYPE.timeExtend, Number(value & BigInt(MAX_DELTA))),
        le,
      );
      view!.setUint32(at + 4, Number(value >> 27n), le);
      used += 8;
      delta = 0;
    }
    const at = layout.dataOffset + used;
    if (small) {
      view!.setUint32(at, header(payload / 4, delta), le);
      page!.set(r.data, at + 4);
    } else {
      view!.setUint32(at, header(0, delta), le);
      view!.setUint32(at + 4, payload + 4, le);
      page!.set(r.data, at + 8);
    }
    used += eventSize;
    last = r.tsNs;
  }
  close();
  return Buffer.concat(pages);
}
