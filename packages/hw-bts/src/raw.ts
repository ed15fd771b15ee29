/**
 * Raw Branch Trace Store records as the hardware writes them (Intel SDM vol. 3, "Branch Trace Store"): on x86-64
 * 24 bytes (from u64, to u64, a u64 whose bit 4 says the branch was predicted), in 32-bit mode 12 bytes (u32 each).
 * perf's `intel_bts` PMU copies these records unchanged into its AUX area, so perf.data AUXTRACE payloads decode
 * the same way. The hardware says predicted or not, so a record without the bit is a mispredicted branch.
 */
import { BranchFlag, BranchList, type Decoded } from './branch.ts';
import { BtsError } from './errors.ts';

/** Record layouts: 64-bit (24 bytes) and 32-bit (12 bytes). */
export type BtsRecordFormat = 'bts64' | 'bts32';

/** Bytes per record of each layout. */
export const BTS_RECORD_SIZE: Readonly<Record<BtsRecordFormat, number>> = { bts64: 24, bts32: 12 };

const LITTLE_ENDIAN_HOST = new Uint8Array(Uint32Array.of(1).buffer)[0] === 1;

/** Bit 4 of the flags word: the branch was predicted. */
const PREDICTED = 0x10;

export interface DecodeBtsOptions {
  /** Default `bts64`. */
  readonly format?: BtsRecordFormat;
  /** Named in problems. */
  readonly source?: string;
  /** Where `bytes` start in `source` (a payload inside a perf.data file): problems name offsets in the source. */
  readonly offset?: number;
  /** Appended to this list instead of a new one. */
  readonly into?: BranchList;
  /** CPU and thread to stamp on every record (perf's AUXTRACE header says them). */
  readonly cpu?: number;
  readonly tid?: number;
  /**
   * Skip 64-bit records whose addresses are not canonical x86-64 ones (no CPU branches there: such bytes are not
   * BTS records), counted in a note, instead of stopping at the first with `ERR_BTS_FORMAT`.
   */
  readonly lenient?: boolean;
}

/**
 * Decodes raw BTS records. All-zero records (the padding perf leaves in its AUX area) are skipped with a note; a
 * partial record at the end is a problem `ERR_BTS_TRUNCATED` at its byte offset, and every whole record is kept.
 * A 64-bit record with an address that is not canonical (bits 63 to 47 not all equal) is no BTS record.
 * @throws BtsError `ERR_BTS_FORMAT` at the first such record, unless `lenient` (then skipped and counted).
 */
export function decodeBts(bytes: Uint8Array, options: DecodeBtsOptions = {}): Decoded {
  const format = options.format ?? 'bts64';
  const size = BTS_RECORD_SIZE[format];
  const out = options.into ?? new BranchList(Math.ceil(bytes.length / size));
  const problems: BtsError[] = [];
  const notes: string[] = [];
  const whole = bytes.length - (bytes.length % size);
  // Records are whole little-endian u32 words: read them through a Uint32Array (over a copy when the input is not
  // 4-aligned or the host is big-endian, whose copy gets its words swapped).
  const aligned = bytes.byteOffset % 4 === 0 && LITTLE_ENDIAN_HOST ? bytes : bytes.slice(0, whole);
  if (!LITTLE_ENDIAN_HOST) for (let k = 0; k < whole; k += 4) aligned.subarray(k, k + 4).reverse();
  const words = new Uint32Array(aligned.buffer, aligned.byteOffset, whole >> 2);
  const cpu = options.cpu ?? -1;
  const tid = options.tid ?? -1;
  const base = options.offset ?? 0;
  const count = whole / size;
  const first = out.appendBlank(count);
  const { fromHi, fromLo, toHi, toLo, flags } = out;
  let j = first;
  let padding = 0;
  let implausible = 0;
  const wide = size === 24;
  const step = size >> 2;
  for (let w = 0, end = whole >> 2; w < end; w += step) {
    const fl = words[w]!;
    const fh = wide ? words[w + 1]! : 0;
    const tl = words[w + (wide ? 2 : 1)]!;
    const th = wide ? words[w + 3]! : 0;
    if ((fl | fh | tl | th) === 0) {
      padding++;
      continue;
    }
    if (wide && !(canonical(fh) && canonical(th))) {
      if (!options.lenient) {
        const hex = (hi: number, lo: number) => `0x${((BigInt(hi) << 32n) | BigInt(lo)).toString(16)}`;
        throw new BtsError(
          'ERR_BTS_FORMAT',
          `not a BTS record: from ${hex(fh, fl)} to ${hex(th, tl)}, and an x86-64 branch has canonical addresses (--lenient skips such records)`,
          { file: options.source, offset: base + (w << 2) },
        );
      }
      implausible++;
      continue;
    }
    fromLo[j] = fl;
    fromHi[j] = fh;
    toLo[j] = tl;
    toHi[j] = th;
    flags[j] = (words[w + (wide ? 4 : 2)]! & PREDICTED) !== 0 ? BranchFlag.predicted : BranchFlag.mispredicted;
    j++;
  }
  out.truncate(j);
  if (cpu >= 0) out.cpu.fill(cpu, first, j);
  if (tid >= 0) out.tid.fill(tid, first, j);
  if (padding > 0) notes.push(`${padding} all-zero ${size}-byte records skipped (padding)`);
  if (implausible > 0) notes.push(`${implausible} records with non-canonical addresses skipped (not BTS records)`);
  if (whole !== bytes.length) {
    problems.push(
      new BtsError(
        'ERR_BTS_TRUNCATED',
        `truncated ${size}-byte BTS record: ${bytes.length - whole} bytes at the end (${whole / size} whole records kept)`,
        { file: options.source, offset: base + whole },
      ),
    );
  }
  return { branches: out, problems, notes };
}

/** Whether the high word of an x86-64 address is canonical: bits 63 to 47 all clear or all set. */
function canonical(hi: number): boolean {
  const top = hi >>> 15;
  return top === 0 || top === 0x1ffff;
}

/** Encodes branches as raw BTS records (the predicted flag kept): test data and `bts record` output. */
export function encodeBts(list: BranchList, format: BtsRecordFormat = 'bts64'): Uint8Array {
  const size = BTS_RECORD_SIZE[format];
  const bytes = new Uint8Array(list.length * size);
  const view = new DataView(bytes.buffer);
  for (let i = 0, off = 0; i < list.length; i++, off += size) {
    const predicted = (list.flags[i]! & BranchFlag.predicted) !== 0 ? PREDICTED : 0;
    if (size === 24) {
      view.setUint32(off, list.fromLo[i]!, true);
      view.setUint32(off + 4, list.fromHi[i]!, true);
      view.setUint32(off + 8, list.toLo[i]!, true);
      view.setUint32(off + 12, list.toHi[i]!, true);
      view.setUint32(off + 16, predicted, true);
    } else {
      view.setUint32(off, list.fromLo[i]!, true);
      view.setUint32(off + 4, list.toLo[i]!, true);
      view.setUint32(off + 8, predicted, true);
    }
  }
  return bytes;
}
