/**
 * The data section's records (`struct perf_event_header` then the body), walked in file order a chunk at a time,
 * and the fields of a PERF_RECORD_SAMPLE as its event's sample_type lays them out.
 */
import type { ByteSource } from '../ctf/byte-source.ts';
import { fail, type PerfEventAttr, RecordType, SampleBits } from './header.ts';

/** Bytes read from the file at once; a record (at most 64 KiB) always fits one. */
const CHUNK = 4 << 20;

/** A piece of the data section as read: its bytes, a view of them, and the file offset of its first byte. */
export interface PerfChunk {
  readonly bytes: Buffer;
  readonly view: DataView;
  readonly base: number;
}

const NO_CHUNK: PerfChunk = { bytes: Buffer.alloc(0), view: new DataView(new ArrayBuffer(0)), base: 0 };

/**
 * Walks the records of the data section. After {@link next} returns true, `type`, `misc`, `size` and `at` (offset
 * in `chunk`) describe the record, `offset` is its file offset. Each chunk is new, so a caller may keep one while the
 * walk goes on, unless `reuse` asks for one buffer read into again and again. An AUXTRACE record's payload, which
 * follows it outside its stated size, is stepped over.
 */
export class RecordCursor {
  type = 0;
  misc = 0;
  size = 0;
  at = 0;
  offset = 0;
  chunk: PerfChunk = NO_CHUNK;
  /** AUXTRACE: the payload's stated size; it follows the record in the file, `payload` bytes of it in the data. */
  payloadSize = 0;
  payload = 0;
  /** Set when the walk stopped at damage (lenient): where, and what. */
  damage: { readonly offset: number; readonly message: string } | undefined;
  readonly #source: ByteSource;
  readonly #end: number;
  readonly #file: string | undefined;
  readonly #lenient: boolean;
  readonly #chunkSize: number;
  /** File offset of `bytes[0]`, and the next record's position in `bytes`. */
  #base = 0;
  #pos = 0;
  /** Whether one buffer serves every chunk (no chunk is kept past the next). */
  readonly #reuse: boolean;
  #buffer = Buffer.alloc(0);

  constructor(
    source: ByteSource,
    data: { offset: number; size: number },
    options: { file?: string; lenient?: boolean; chunkSize?: number; reuse?: boolean } = {},
  ) {
    this.#source = source;
    this.#base = data.offset;
    this.#end = data.offset + data.size;
    this.#file = options.file;
    this.#lenient = options.lenient === true;
    this.#chunkSize = Math.max(options.chunkSize ?? CHUNK, 1 << 16);
    this.#reuse = options.reuse === true;
  }

  /** Moves to the next record: false at the end of the data, or at damage when lenient (see `damage`). */
  next(): boolean {
    const offset = this.#base + this.#pos;
    if (offset + 8 > this.#end) {
      if (offset < this.#end)
        return this.#damaged(`record header cut short (${this.#end - offset} bytes left)`, offset);
      return false;
    }
    if (this.#pos + 8 > this.chunk.bytes.length && !this.#refill(offset, 8)) return false;
    const v = this.chunk.view;
    const p = this.#pos;
    const size = v.getUint16(p + 6, true);
    const type = v.getUint32(p, true);
    if (size < 8) return this.#damaged(`record of type ${type} with impossible size ${size}`, offset);
    if (offset + size > this.#end)
      return this.#damaged(`record of type ${type} with size ${size} runs past the data section`, offset);
    if (p + size > this.chunk.bytes.length && !this.#refill(offset, size)) return false;
    this.type = type;
    this.misc = this.chunk.view.getUint16(this.#pos + 4, true);
    this.size = size;
    this.at = this.#pos;
    this.offset = offset;
    this.#pos += size;
    this.payloadSize = 0;
    this.payload = 0;
    if (type === RecordType.AUXTRACE && size >= 16) {
      const stated = this.chunk.view.getBigUint64(this.at + 8, true);
      const left = this.#end - offset - size;
      if (stated > BigInt(left)) {
        // The record is given with the part of its payload that is there; the walk ends after it.
        this.payloadSize = stated > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(stated);
        this.payload = left;
        this.#damaged(`AUXTRACE payload of ${stated} bytes runs past the data section`, offset);
        return true;
      }
      this.payloadSize = this.payload = Number(stated);
      this.#pos += this.payload;
    }
    return true;
  }

  /** Reads a new chunk from `offset`, which must hold `need` bytes. */
  #refill(offset: number, need: number): boolean {
    const length = Math.min(this.#chunkSize, this.#end - offset);
    let reuse: Buffer | undefined;
    if (this.#reuse) {
      if (this.#buffer.length < length) this.#buffer = Buffer.allocUnsafeSlow(length);
      reuse = this.#buffer;
    }
    const read = this.#source.read(offset, length, reuse);
    const bytes = Buffer.isBuffer(read) ? read : Buffer.from(read.buffer, read.byteOffset, read.byteLength);
    if (bytes.length < need)
      return this.#damaged(`the file ended while it was read (${need} bytes needed, ${bytes.length} read)`, offset);
    this.chunk = { bytes, view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), base: offset };
    this.#base = offset;
    this.#pos = 0;
    return true;
  }

  #damaged(message: string, offset: number): false {
    if (!this.#lenient) fail(message, this.#file, offset);
    this.damage = { offset, message };
    this.#base = this.#end;
    this.#pos = 0;
    this.chunk = NO_CHUNK;
    return false;
  }
}

/** Where a sample's fixed fields are, from the record's start (-1: not recorded), and what follows them. */
export interface SampleLayout {
  readonly attr: PerfEventAttr;
  readonly id: number;
  readonly ip: number;
  readonly tid: number;
  readonly time: number;
  readonly cpu: number;
  readonly period: number;
  /** Bytes of the fixed fields (header included): a shorter sample is damaged. */
  readonly fixed: number;
}

/** The layout of `attr`'s samples. */
export function sampleLayout(attr: PerfEventAttr): SampleLayout {
  const t = attr.sampleType;
  let o = 8;
  const field = (bit: number) => {
    if ((t & bit) === 0) return -1;
    o += 8;
    return o - 8;
  };
  const identifier = field(SampleBits.IDENTIFIER);
  const ip = field(SampleBits.IP);
  const tid = field(SampleBits.TID);
  const time = field(SampleBits.TIME);
  field(SampleBits.ADDR);
  const id = field(SampleBits.ID);
  field(SampleBits.STREAM_ID);
  const cpu = field(SampleBits.CPU);
  const period = field(SampleBits.PERIOD);
  return { attr, id: identifier >= 0 ? identifier : id, ip, tid, time, cpu, period, fixed: o };
}

/**
 * The offset of what follows the fixed fields, the read values and the callchain (the RAW size, else the branch
 * stack): from the record's start at `at` in `view`, or -1 when the record (of `size` bytes) is too short.
 */
function afterCallchain(view: DataView, at: number, size: number, l: SampleLayout): number {
  const t = l.attr.sampleType;
  let o = l.fixed;
  if (t & SampleBits.READ) {
    const f = l.attr.readFormat;
    const perValue = 1 + (f & 4 ? 1 : 0) + (f & 16 ? 1 : 0);
    const times = (f & 1 ? 1 : 0) + (f & 2 ? 1 : 0);
    if (f & 8) {
      if (o + 8 > size) return -1;
      const nr = view.getUint32(at + o, true);
      o += 8 + 8 * times + 8 * perValue * nr;
    } else o += 8 * (perValue + times);
  }
  if (t & SampleBits.CALLCHAIN) {
    if (o + 8 > size) return -1;
    o += 8 + 8 * view.getUint32(at + o, true);
  }
  return o <= size ? o : -1;
}

/**
 * Where a sample's RAW data is: the offset of its u32 size from the record's start (the data follows it); -1 when the
 * sample has none, -2 when the record is too short for it.
 */
export function sampleRaw(view: DataView, at: number, size: number, l: SampleLayout): number {
  if ((l.attr.sampleType & SampleBits.RAW) === 0) return -1;
  const o = afterCallchain(view, at, size, l);
  if (o < 0 || o + 4 > size) return -2;
  return o + 4 + view.getUint32(at + o, true) <= size ? o : -2;
}

/**
 * Where a sample's branch stack starts (its `nr`), from the record's start, or -1 when the sample has none or is too
 * short for its fields before it.
 */
export function sampleBranchStack(view: DataView, at: number, size: number, l: SampleLayout): number {
  if ((l.attr.sampleType & SampleBits.BRANCH_STACK) === 0) return -1;
  let o = afterCallchain(view, at, size, l);
  if (o < 0) return -1;
  if (l.attr.sampleType & SampleBits.RAW) {
    if (o + 4 > size) return -1;
    o += 4 + view.getUint32(at + o, true);
  }
  return o + 8 <= size ? o : -1;
}
