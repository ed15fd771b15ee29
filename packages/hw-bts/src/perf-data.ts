/**
 * perf.data files with branches: recorded with the `intel_bts` PMU (`perf record -e intel_bts//u`: the AUX area is
 * copied into PERF_RECORD_AUXTRACE records, each followed by its payload of raw BTS records), or with LBR branch
 * stacks (`perf record -b`: PERF_SAMPLE_BRANCH_STACK in each sample, newest entry first). Layouts from perf's
 * Documentation/perf.data-file-format.txt and include/uapi/linux/perf_event.h.
 */
import { BranchFlag, type BranchKind, BranchList, type Decoded, kindNumber } from './branch.ts';
import { BtsError } from './errors.ts';
import { decodeBts } from './raw.ts';

const MAGIC = 0x32454c4946524550n; // "PERFILE2" little-endian
const RECORD_SAMPLE = 9;
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
  const where = (offset: number) => ({ file: options.source, offset });
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
  const layout = sampleLayout(view, bytes.length);
  if (layout.problem !== undefined) notes.push(layout.problem);
  let auxType = -1;
  let aux = 0;
  let stacks = 0;
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
    } else if (type === RECORD_SAMPLE && layout.branchStack) {
      if (readStack(view, off + 8, off + size, layout, branches)) stacks++;
      else problems.push(new BtsError('ERR_BTS_TRUNCATED', 'sample shorter than its sample_type says', where(off)));
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
        offset: start,
        ...(options.source !== undefined ? { source: options.source } : {}),
      });
      problems.push(...d.problems);
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
  if (aux === 0 && stacks === 0)
    notes.push('no AUXTRACE data and no branch stacks in this perf.data (recorded without -e intel_bts// or -b)');
  return { branches, problems, notes };
}

// perf_event_attr.sample_type bits.
const S_IP = 1n << 0n;
const S_TID = 1n << 1n;
const S_TIME = 1n << 2n;
const S_ADDR = 1n << 3n;
const S_READ = 1n << 4n;
const S_CALLCHAIN = 1n << 5n;
const S_ID = 1n << 6n;
const S_CPU = 1n << 7n;
const S_PERIOD = 1n << 8n;
const S_STREAM_ID = 1n << 9n;
const S_RAW = 1n << 10n;
const S_BRANCH_STACK = 1n << 11n;
const S_IDENTIFIER = 1n << 16n;
const BRANCH_HW_INDEX = 1n << 17n;
/** perf's PERF_BR_* branch types, by number. */
const PERF_BR: readonly BranchKind[] = [
  'unknown',
  'cond',
  'jump',
  'ind_jump',
  'call',
  'ind_call',
  'return',
  'syscall',
  'sysret',
  'call',
  'return',
  'eret',
  'irq',
  'irq',
  'other',
  'other',
];

interface SampleLayout {
  sampleType: bigint;
  readFormat: bigint;
  hwIndex: boolean;
  branchStack: boolean;
  problem?: string;
}

/** The sample layout of the file's events (all must agree: one layout is all a sample can be read with). */
function sampleLayout(view: DataView, length: number): SampleLayout {
  const none: SampleLayout = { sampleType: 0n, readFormat: 0n, hwIndex: false, branchStack: false };
  const attrSize = Number(view.getBigUint64(16, true));
  const attrsAt = Number(view.getBigUint64(24, true));
  const attrsSize = Number(view.getBigUint64(32, true));
  if (attrSize < 88 || attrsAt + attrsSize > length || attrsSize < attrSize) return none;
  let layout: SampleLayout | undefined;
  for (let o = attrsAt; o + attrSize <= attrsAt + attrsSize; o += attrSize) {
    const sampleType = view.getBigUint64(o + 24, true);
    const readFormat = view.getBigUint64(o + 32, true);
    const branchType = view.getBigUint64(o + 72, true);
    const next = {
      sampleType,
      readFormat,
      hwIndex: (branchType & BRANCH_HW_INDEX) !== 0n,
      branchStack: (sampleType & S_BRANCH_STACK) !== 0n,
    };
    if (layout === undefined) layout = next;
    else if (layout.sampleType !== sampleType || layout.readFormat !== readFormat || layout.hwIndex !== next.hwIndex)
      return { ...none, problem: 'events with different sample layouts: branch stacks not read (use perf script)' };
  }
  return layout ?? none;
}

/** Reads one sample's fields up to its branch stack and appends the stack oldest first; false when cut short. */
function readStack(view: DataView, at: number, end: number, l: SampleLayout, out: BranchList): boolean {
  const t = l.sampleType;
  let o = at;
  let tid = -1;
  let cpu = -1;
  let time = Number.NaN;
  const need = (n: number) => o + n <= end;
  if (t & S_IDENTIFIER) o += 8;
  if (t & S_IP) o += 8;
  if (t & S_TID) {
    if (!need(8)) return false;
    tid = view.getUint32(o + 4, true);
    o += 8;
  }
  if (t & S_TIME) {
    if (!need(8)) return false;
    time = Number(view.getBigUint64(o, true));
    o += 8;
  }
  if (t & S_ADDR) o += 8;
  if (t & S_ID) o += 8;
  if (t & S_STREAM_ID) o += 8;
  if (t & S_CPU) {
    if (!need(8)) return false;
    cpu = view.getUint32(o, true);
    o += 8;
  }
  if (t & S_PERIOD) o += 8;
  if (t & S_READ) {
    const f = l.readFormat;
    const perValue = 1 + ((f & 4n) !== 0n ? 1 : 0) + ((f & 16n) !== 0n ? 1 : 0);
    const times = ((f & 1n) !== 0n ? 1 : 0) + ((f & 2n) !== 0n ? 1 : 0);
    if ((f & 8n) !== 0n) {
      if (!need(8)) return false;
      const nr = Number(view.getBigUint64(o, true));
      o += 8 + 8 * times + 8 * perValue * nr;
    } else o += 8 * (perValue + times);
  }
  if (t & S_CALLCHAIN) {
    if (!need(8)) return false;
    o += 8 + 8 * Number(view.getBigUint64(o, true));
  }
  if (t & S_RAW) {
    if (!need(4)) return false;
    o += 4 + view.getUint32(o, true);
  }
  if (!need(8)) return false;
  const nr = Number(view.getBigUint64(o, true));
  o += 8 + (l.hwIndex ? 8 : 0);
  if (nr < 0 || !need(24 * nr)) return false;
  for (let e = nr - 1; e >= 0; e--) {
    const p = o + 24 * e;
    const flags = view.getBigUint64(p + 16, true);
    const i = out.push(
      view.getUint32(p + 4, true),
      view.getUint32(p, true),
      view.getUint32(p + 12, true),
      view.getUint32(p + 8, true),
    );
    const lo = Number(flags & 0xffffffffn);
    out.flags[i] =
      ((lo & 1) !== 0 ? BranchFlag.mispredicted : 0) |
      ((lo & 2) !== 0 ? BranchFlag.predicted : 0) |
      ((lo & 4) !== 0 ? BranchFlag.inTx : 0) |
      ((lo & 8) !== 0 ? BranchFlag.abort : 0);
    const cycles = (lo >>> 4) & 0xffff;
    if (cycles > 0) out.cycles[i] = cycles;
    out.kind[i] = kindNumber(PERF_BR[(lo >>> 20) & 0xf] ?? 'unknown');
    out.tid[i] = tid;
    out.cpu[i] = cpu;
    out.time[i] = time;
  }
  return true;
}
