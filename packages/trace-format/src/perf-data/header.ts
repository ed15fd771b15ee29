/**
 * The head of a perf.data file (perf's Documentation/perf.data-file-format.txt): the file header, the event
 * attributes with their sample ids, and the feature sections that trail the data. Little-endian files of the
 * seekable layout only (`perf record -o -` writes the pipe layout, which has no header to seek by).
 */
import type { ByteSource } from '../ctf/byte-source.ts';
import { TraceFormatError } from '../errors.ts';

/** "PERFILE2" read as a little-endian u64. */
const MAGIC = 'PERFILE2';
/** Bytes of `struct perf_file_header` (magic, sizes, three sections, the 256-bit feature bitmap). */
export const HEADER_SIZE = 104;
/** The smallest `perf_event_attr` (PERF_ATTR_SIZE_VER0) and the file section after it. */
const ATTR_SIZE_VER0 = 64;

/** perf_event_attr.sample_type bits, in the order a sample lays out their fields. */
export const SampleBits = {
  IP: 1 << 0,
  TID: 1 << 1,
  TIME: 1 << 2,
  ADDR: 1 << 3,
  READ: 1 << 4,
  CALLCHAIN: 1 << 5,
  ID: 1 << 6,
  CPU: 1 << 7,
  PERIOD: 1 << 8,
  STREAM_ID: 1 << 9,
  RAW: 1 << 10,
  BRANCH_STACK: 1 << 11,
  IDENTIFIER: 1 << 16,
} as const;

/** perf_event_header.type values this reader interprets. */
export const RecordType = {
  LOST: 2,
  COMM: 3,
  SAMPLE: 9,
  LOST_SAMPLES: 13,
  FINISHED_ROUND: 68,
  AUXTRACE_INFO: 70,
  AUXTRACE: 71,
  AUXTRACE_ERROR: 72,
} as const;

/** perf's `enum perf_header_feature` bits this reader interprets. */
export const Feature = { TRACING_DATA: 1, BUILD_ID: 2, OSRELEASE: 4 } as const;

/** One event of the file: its perf_event_attr fields that shape samples, and the sample ids that name it. */
export interface PerfEventAttr {
  /** Index in the file's attribute section. */
  readonly index: number;
  /** PERF_TYPE_* (2: a tracepoint, whose `config` is its ftrace event id). */
  readonly type: number;
  readonly config: bigint;
  /** The PERF_SAMPLE_* bits (the low 32; {@link SampleBits}). */
  readonly sampleType: number;
  readonly readFormat: number;
  /** Whether non-sample records carry the sample id fields (attr.sample_id_all). */
  readonly sampleIdAll: boolean;
  /** attr.branch_sample_type (PERF_SAMPLE_BRANCH_HW_INDEX adds a u64 before the entries). */
  readonly branchSampleType: bigint;
  readonly ids: readonly number[];
}

/** A section of the file: where it starts and how long it is. */
export interface PerfFileSection {
  readonly offset: number;
  readonly size: number;
}

/** What the header, attributes and feature table say. */
export interface PerfDataHeader {
  readonly attrs: readonly PerfEventAttr[];
  readonly data: PerfFileSection;
  /** Feature sections present, by feature bit. */
  readonly features: ReadonlyMap<number, PerfFileSection>;
  /** Where damage in the head was met (lenient), with what was kept. */
  readonly warnings: readonly string[];
}

/** Whether bytes start like a perf.data file (either layout). */
export function isPerfData(bytes: Uint8Array): boolean {
  return bytes.length >= 8 && Buffer.from(bytes.buffer, bytes.byteOffset, 8).toString('latin1') === MAGIC;
}

/** Reads a u64 that must address something in the file. */
function u64(view: DataView, at: number, what: string, file: string | undefined, base: number): number {
  const v = view.getBigUint64(at, true);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) fail(`${what} ${v} is out of range`, file, base + at);
  return Number(v);
}

export function fail(message: string, file: string | undefined, offset: number): never {
  throw new TraceFormatError('ERR_TRACE_PERF_DATA', message, { file, offset });
}

function viewOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Reads the file header, the attributes with their ids and the feature table.
 * @throws TraceFormatError `ERR_TRACE_PERF_DATA` naming the file and byte offset of what does not fit. With `lenient`
 * a data section that runs past the file is cut at its end and a missing feature table is left out, with a warning.
 */
export function readPerfDataHeader(source: ByteSource, file?: string, lenient = false): PerfDataHeader {
  const warnings: string[] = [];
  const head = source.read(0, HEADER_SIZE);
  if (!isPerfData(head)) fail('not a perf.data file (no PERFILE2 magic)', file, 0);
  if (head.length < 16) fail(`perf.data header cut short: ${head.length} bytes`, file, head.length);
  const h = viewOf(head);
  const headerSize = u64(h, 8, 'header size', file, 0);
  if (headerSize === 16)
    fail('a perf.data in pipe mode (perf record -o -): record to a file, or use perf inject -o FILE', file, 8);
  if (headerSize !== HEADER_SIZE) fail(`header size ${headerSize}, expected ${HEADER_SIZE}`, file, 8);
  if (head.length < HEADER_SIZE) fail(`perf.data header cut short: ${head.length} bytes`, file, head.length);
  const attrSize = u64(h, 16, 'attribute size', file, 0);
  const attrsAt = u64(h, 24, 'attribute section offset', file, 0);
  const attrsSize = u64(h, 32, 'attribute section size', file, 0);
  const dataAt = u64(h, 40, 'data offset', file, 0);
  let dataSize = u64(h, 48, 'data size', file, 0);
  if (attrsSize > 0 && (attrSize < ATTR_SIZE_VER0 + 16 || attrSize > 4096))
    fail(`impossible attribute size ${attrSize}`, file, 16);
  if ((attrsSize > 0 && attrsSize % attrSize !== 0) || attrsAt + attrsSize > source.size)
    fail(`attribute section of ${attrsSize} bytes at ${attrsAt} does not fit the file`, file, 24);
  if (dataAt < HEADER_SIZE || dataAt > source.size) fail(`data offset ${dataAt} is outside the file`, file, 40);
  if (dataAt + dataSize > source.size) {
    const message = `data section ends at ${dataAt + dataSize}, past the end of the file (${source.size} bytes)`;
    if (!lenient) fail(message, file, source.size);
    warnings.push(`${file ?? 'perf.data'}: ${message}: read up to the end`);
    dataSize = source.size - dataAt;
  }
  const attrs: PerfEventAttr[] = [];
  const table = viewOf(source.read(attrsAt, attrsSize));
  // A file of AUX data alone may carry none (its records need no attribute to be read).
  for (let i = 0; attrsSize > 0 && i * attrSize < attrsSize; i++) {
    const o = i * attrSize;
    const at = attrsAt + o;
    const size = table.getUint32(o + 4, true);
    const flags = table.getBigUint64(o + 40, true);
    const idsAt = u64(table, o + attrSize - 16, 'id section offset', file, attrsAt);
    const idsSize = u64(table, o + attrSize - 8, 'id section size', file, attrsAt);
    if (idsSize % 8 !== 0 || idsAt + idsSize > source.size)
      fail(`event ${i}: ids of ${idsSize} bytes at ${idsAt} do not fit the file`, file, at + attrSize - 16);
    const idView = viewOf(source.read(idsAt, idsSize));
    const ids: number[] = [];
    for (let k = 0; k < idsSize; k += 8) ids.push(Number(idView.getBigUint64(k, true)));
    attrs.push({
      index: i,
      type: table.getUint32(o, true),
      config: table.getBigUint64(o + 8, true),
      sampleType: Number(table.getBigUint64(o + 24, true) & 0xffffffffn),
      readFormat: Number(table.getBigUint64(o + 32, true) & 0xffffn),
      sampleIdAll: (flags & (1n << 18n)) !== 0n,
      branchSampleType: size >= 80 && attrSize - 16 >= 80 ? table.getBigUint64(o + 72, true) : 0n,
      ids,
    });
  }
  const features = new Map<number, PerfFileSection>();
  const bits: number[] = [];
  for (let w = 0; w < 4; w++) {
    const word = h.getBigUint64(72 + 8 * w, true);
    for (let b = 0; b < 64; b++) if ((word >> BigInt(b)) & 1n) bits.push(w * 64 + b);
  }
  const tableAt = dataAt + u64(h, 48, 'data size', file, 0);
  if (bits.length > 0) {
    const bytes = source.read(tableAt, 16 * bits.length);
    if (bytes.length < 16 * bits.length) {
      const message = `feature table at ${tableAt} cut short`;
      if (!lenient) fail(message, file, tableAt + bytes.length);
      warnings.push(`${file ?? 'perf.data'}: ${message}: features left out`);
    } else {
      const v = viewOf(bytes);
      bits.forEach((bit, i) => {
        const offset = u64(v, 16 * i, 'feature offset', file, tableAt);
        const size = u64(v, 16 * i + 8, 'feature size', file, tableAt);
        if (offset + size <= source.size) features.set(bit, { offset, size });
        else if (!lenient) fail(`feature ${bit}: ${size} bytes at ${offset} run past the file`, file, tableAt + 16 * i);
        else warnings.push(`${file ?? 'perf.data'}: feature ${bit} runs past the file: left out`);
      });
    }
  }
  return { attrs, data: { offset: dataAt, size: dataSize }, features, warnings };
}
