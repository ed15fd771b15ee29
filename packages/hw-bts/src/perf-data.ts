/**
 * perf.data files recorded with the `intel_bts` PMU (`perf record -e intel_bts//u`): the AUX area is copied into
 * PERF_RECORD_AUXTRACE records, each followed by its payload of raw BTS records. Layouts from perf's
 * Documentation/perf.data-file-format.txt and include/uapi/linux/perf_event.h.
 */
import { BranchList, type Decoded } from './branch.ts';
import { BtsError } from './errors.ts';
import { decodeBts } from './raw.ts';

const MAGIC = 0x32454c4946524550n; // "PERFILE2" little-endian
const RECORD_AUXTRACE_INFO = 70;
const RECORD_AUXTRACE = 71;
const RECORD_AUXTRACE_ERROR = 72;
/** perf's `enum auxtrace_type`. */
const AUXTRACE_TYPES = ['unknown', 'Intel PT', 'Intel BTS', 'CoreSight ETM', 'Arm SPE', 's390 CPU-MF', 'HiSilicon PTT'];
const INTEL_BTS = 2;

/** Whether the bytes start like a perf.data file. */
export function isPerfData(bytes: Uint8Array): boolean {
  return bytes.length >= 8 && new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true) === MAGIC;
}

/** Decodes the BTS records of every AUXTRACE payload, stamped with the payload's CPU and thread. */
export function decodePerfData(bytes: Uint8Array, options: { source?: string } = {}): Decoded {
  const where = (offset: number) => ({ ...(options.source !== undefined ? { source: options.source } : {}), offset });
  if (!isPerfData(bytes)) throw new BtsError('ERR_BTS_FORMAT', 'not a perf.data file (no PERFILE2 magic)', where(0));
  if (bytes.length < 104) throw new BtsError('ERR_BTS_TRUNCATED', 'perf.data header cut short', where(bytes.length));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const dataOffset = Number(view.getBigUint64(40, true));
  const dataSize = Number(view.getBigUint64(48, true));
  const branches = new BranchList(1 << 12);
  const problems: BtsError[] = [];
  const notes: string[] = [];
  const end = Math.min(bytes.length, dataOffset + dataSize);
  if (dataOffset + dataSize > bytes.length)
    problems.push(
      new BtsError(
        'ERR_BTS_TRUNCATED',
        `data section ends at ${dataOffset + dataSize}, past the file`,
        where(bytes.length),
      ),
    );
  let auxType = -1;
  let aux = 0;
  for (let off = dataOffset; off + 8 <= end; ) {
    const type = view.getUint32(off, true);
    const size = view.getUint16(off + 6, true);
    if (size < 8 || off + size > end) {
      problems.push(
        new BtsError(
          'ERR_BTS_TRUNCATED',
          `perf record of type ${type} with size ${size} runs past the data`,
          where(off),
        ),
      );
      break;
    }
    if (type === RECORD_AUXTRACE_INFO && size >= 16) {
      auxType = view.getUint32(off + 8, true);
      if (auxType !== INTEL_BTS)
        throw new BtsError(
          'ERR_BTS_FORMAT',
          `the AUX data is ${AUXTRACE_TYPES[auxType] ?? `type ${auxType}`}, not Intel BTS: decode it with perf script`,
          where(off),
        );
    } else if (type === RECORD_AUXTRACE_ERROR) {
      notes.push(`AUXTRACE error record at byte ${off}`);
    } else if (type === RECORD_AUXTRACE && size >= 48) {
      const payload = Number(view.getBigUint64(off + 8, true));
      const tid = view.getUint32(off + 36, true);
      const cpu = view.getUint32(off + 40, true);
      const start = off + size;
      const stop = Math.min(end, start + payload);
      const d = decodeBts(bytes.subarray(start, stop), {
        into: branches,
        cpu: cpu === 0xffffffff ? -1 : cpu,
        tid: tid === 0xffffffff ? -1 : tid,
        ...(options.source !== undefined ? { source: options.source } : {}),
      });
      for (const p of d.problems)
        problems.push(new BtsError(p.code, p.message.replace(/^.*?byte \d+: /, ''), where(start + (p.offset ?? 0))));
      if (start + payload > end) {
        problems.push(new BtsError('ERR_BTS_TRUNCATED', `AUXTRACE payload of ${payload} bytes cut short`, where(end)));
        break;
      }
      aux++;
      off = start + payload;
      continue;
    }
    off += size;
  }
  if (aux === 0) notes.push('no AUXTRACE data in this perf.data (recorded without -e intel_bts//)');
  return { branches, problems, notes };
}
