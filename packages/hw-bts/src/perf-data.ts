/**
 * perf.data files with branches: recorded with the `intel_bts` PMU (`perf record -e intel_bts//u`: the AUX area is
 * copied into PERF_RECORD_AUXTRACE records, each followed by its payload of raw BTS records), or with LBR branch
 * stacks (`perf record -b`: PERF_SAMPLE_BRANCH_STACK in each sample, newest entry first). Layouts from perf's
 * Documentation/perf.data-file-format.txt and include/uapi/linux/perf_event.h.
 */
import {
  type ByteSource,
  isPerfData as isPerfFile,
  PerfRecordCursor,
  PerfRecordType,
  type PerfSampleLayout,
  readPerfDataHeader,
  sampleBranchStack,
  sampleLayout,
  TraceFormatError,
} from '@evtrace/trace-format';
import { BranchFlag, type BranchKind, BranchList, type Decoded, kindNumber } from './branch.ts';
import { BtsError } from './errors.ts';
import { decodeBts } from './raw.ts';

/** perf's `enum auxtrace_type`. */
const AUXTRACE_TYPES = ['unknown', 'Intel PT', 'Intel BTS', 'CoreSight ETM', 'Arm SPE', 's390 CPU-MF', 'HiSilicon PTT'];
const INTEL_BTS = 2;
/** attr.branch_sample_type's PERF_SAMPLE_BRANCH_HW_INDEX: a u64 before the entries. */
const BRANCH_HW_INDEX = 1n << 17n;

/** Whether the bytes start like a perf.data file. */
export function isPerfData(bytes: Uint8Array): boolean {
  return isPerfFile(bytes);
}

/**
 * Decodes the BTS records of every AUXTRACE payload, stamped with the payload's CPU and thread, and the branch stacks
 * of the samples. The file's structure (header, attributes, records) is read by trace-format's perf.data reader.
 */
export function decodePerfData(bytes: Uint8Array, options: { source?: string } = {}): Decoded {
  const where = (offset: number) => ({ file: options.source, offset });
  if (!isPerfData(bytes)) throw new BtsError('ERR_BTS_FORMAT', 'not a perf.data file (no PERFILE2 magic)', where(0));
  if (bytes.length < 104) throw new BtsError('ERR_BTS_TRUNCATED', 'perf.data header cut short', where(bytes.length));
  const source: ByteSource = { size: bytes.length, read: (offset, length) => bytes.subarray(offset, offset + length) };
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const problems: BtsError[] = [];
  const notes: string[] = [];
  const stated = Number(view.getBigUint64(40, true)) + Number(view.getBigUint64(48, true));
  if (stated > bytes.length)
    problems.push(
      new BtsError('ERR_BTS_TRUNCATED', `data section ends at ${stated}, past the file`, where(bytes.length)),
    );
  const branches = new BranchList(1 << 12);
  let header: ReturnType<typeof readPerfDataHeader>;
  try {
    header = readPerfDataHeader(source, options.source, true);
  } catch (error) {
    throw asBtsError(error);
  }
  const layouts = header.attrs.map(sampleLayout);
  const byId = new Map<number, PerfSampleLayout>();
  for (const l of layouts) for (const id of l.attr.ids) byId.set(id, l);
  const cursor = new PerfRecordCursor(source, header.data, { lenient: true });
  let aux = 0;
  let stacks = 0;
  while (cursor.next()) {
    const { type, offset: off, size } = cursor;
    if (type === PerfRecordType.AUXTRACE_INFO && size >= 16) {
      const auxType = view.getUint32(off + 8, true);
      if (auxType !== INTEL_BTS)
        throw new BtsError(
          'ERR_BTS_FORMAT',
          `the AUX data is ${AUXTRACE_TYPES[auxType] ?? `type ${auxType}`}, not Intel BTS: decode it with perf script`,
          where(off),
        );
    } else if (type === PerfRecordType.SAMPLE && layouts.some((l) => l.attr.sampleType & BRANCH_STACK)) {
      const l = layouts.length === 1 ? layouts[0] : sampleOf(view, off, size, layouts, byId);
      if (l !== undefined && (l.attr.sampleType & BRANCH_STACK) !== 0) {
        if (readStack(view, off, size, l, branches)) stacks++;
        else problems.push(new BtsError('ERR_BTS_TRUNCATED', 'sample shorter than its sample_type says', where(off)));
      }
    } else if (type === PerfRecordType.AUXTRACE_ERROR) {
      notes.push(`AUXTRACE error record at byte ${off}`);
    } else if (type === PerfRecordType.AUXTRACE && size >= 48) {
      const tid = view.getUint32(off + 36, true);
      const cpu = view.getUint32(off + 40, true);
      const start = off + size;
      const d = decodeBts(bytes.subarray(start, start + cursor.payload), {
        into: branches,
        cpu: cpu === 0xffffffff ? -1 : cpu,
        tid: tid === 0xffffffff ? -1 : tid,
        offset: start,
        ...(options.source !== undefined ? { source: options.source } : {}),
      });
      problems.push(...d.problems);
      if (cursor.payload < cursor.payloadSize) {
        problems.push(
          new BtsError(
            'ERR_BTS_TRUNCATED',
            `AUXTRACE payload of ${cursor.payloadSize} bytes cut short`,
            where(start + cursor.payload),
          ),
        );
        break;
      }
      aux++;
    }
  }
  if (cursor.damage !== undefined && cursor.type !== PerfRecordType.AUXTRACE)
    problems.push(new BtsError('ERR_BTS_TRUNCATED', cursor.damage.message, where(cursor.damage.offset)));
  if (aux === 0 && stacks === 0)
    notes.push('no AUXTRACE data and no branch stacks in this perf.data (recorded without -e intel_bts// or -b)');
  return { branches, problems, notes };
}

/** trace-format's reading errors in this package's shape (its location kept, its message without it). */
function asBtsError(error: unknown): BtsError {
  if (!(error instanceof TraceFormatError)) throw error;
  const message = error.message.replace(/^[^:]*: byte \d+: /, '');
  return new BtsError('ERR_BTS_FORMAT', message, error.location, error);
}

const BRANCH_STACK = 1 << 11;

/** The layout of a sample of several events, by its id; undefined when no event has it. */
function sampleOf(
  view: DataView,
  at: number,
  size: number,
  layouts: readonly PerfSampleLayout[],
  byId: ReadonlyMap<number, PerfSampleLayout>,
): PerfSampleLayout | undefined {
  const idAt = layouts[0]!.id;
  if (idAt < 0 || layouts.some((l) => l.id !== idAt) || idAt + 8 > size) return undefined;
  return byId.get(view.getUint32(at + idAt, true));
}

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

/** Appends one sample's branch stack oldest first; false when the sample is cut short. */
function readStack(view: DataView, at: number, size: number, l: PerfSampleLayout, out: BranchList): boolean {
  const end = at + size;
  const stack = sampleBranchStack(view, at, size, l);
  if (stack < 0) return false;
  const tid = l.tid >= 0 ? view.getUint32(at + l.tid + 4, true) : -1;
  const cpu = l.cpu >= 0 ? view.getUint32(at + l.cpu, true) : -1;
  const time = l.time >= 0 ? Number(view.getBigUint64(at + l.time, true)) : Number.NaN;
  const hwIndex = (l.attr.branchSampleType & BRANCH_HW_INDEX) !== 0n;
  let o = at + stack;
  const need = (n: number) => o + n <= end;
  if (!need(8)) return false;
  const nr = Number(view.getBigUint64(o, true));
  o += 8 + (hwIndex ? 8 : 0);
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
