/** Reading a branch trace file of any supported format, detected from its content unless named. */
import { closeSync, openSync, readSync } from 'node:fs';
import { type InputLocation, inputFileKind, inputLabel, readInput } from '@evtrace/trace-format';
import type { Decoded } from './branch.ts';
import { BtsError } from './errors.ts';
import { type ParsedCallHistory, parseGdbCallHistory, parseGdbInstructionHistory } from './gdb.ts';
import { decodePerfData, isPerfData } from './perf-data.ts';
import { parsePerfScript } from './perf-script.ts';
import { parseQemuLog } from './qemu.ts';
import { decodeBts } from './raw.ts';
import { readTraceBranches, type TraceBranches } from './trace.ts';

/** Input formats. */
export type BranchFormat =
  | 'bts64'
  | 'bts32'
  | 'perf-data'
  | 'perf-script'
  | 'qemu-log'
  | 'gdb-instruction-history'
  | 'gdb-call-history'
  | 'trace';

/** A read input: branches (every format but one), or gdb's call history, which has functions but no branches. */
export type BranchInput =
  | ({ readonly format: Exclude<BranchFormat, 'gdb-call-history' | 'trace'> } & Decoded)
  | ({ readonly format: 'trace' } & TraceBranches)
  | ({ readonly format: 'gdb-call-history' } & ParsedCallHistory);

/**
 * Whether `path` is something @evtrace/trace-format opens (a directory, or a regular file starting with trace.dat's
 * magic). A stream is not: it is read once, as bytes.
 */
function isTrace(path: string): boolean {
  if (path === '-') return false;
  const kind = inputFileKind(path, { error: inputError });
  if (kind === 'directory') return true;
  if (kind !== 'file') return false;
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(TRACE_DAT_MAGIC.length);
    readSync(fd, head, 0, head.length, 0);
    return head.equals(TRACE_DAT_MAGIC);
  } finally {
    closeSync(fd);
  }
}

const TRACE_DAT_MAGIC = Buffer.from([0x17, 0x08, 0x44, 0x74, 0x72, 0x61, 0x63, 0x69, 0x6e, 0x67]);

/** The shared input reader's errors in this package's shape. */
function inputError(message: string, at: InputLocation): BtsError {
  return new BtsError('ERR_BTS_FORMAT', message, at);
}

/** Guesses the format: perf.data magic, binary (raw 64-bit BTS records), or by the first meaningful text lines. */
export function detectFormat(bytes: Uint8Array): BranchFormat {
  if (isPerfData(bytes)) return 'perf-data';
  const head = bytes.subarray(0, 4096);
  if (head.includes(0)) return 'bts64';
  const text = new TextDecoder().decode(head);
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    if (line.startsWith('IN:') || line.startsWith('Trace ') || line.startsWith('----------------')) return 'qemu-log';
    if (/^\d+\t(=> |\? ?)?\s*0x[0-9a-fA-F]+( <[^>]*>)?:\t/.test(line)) return 'gdb-instruction-history';
    if (/^\d+\t/.test(line)) return 'gdb-call-history';
    return 'perf-script';
  }
  return 'perf-script';
}

/**
 * Reads and decodes a file, or a trace (a trace.dat, or a CTF or raw-pages directory: `bts:branch` and
 * `sched:sched_switch` events). A FIFO, pipe, device or stdin (`-`) is read up to trace-format's
 * `STREAM_INPUT_LIMIT` (128 MiB). Unreadable, empty or endless inputs are `ERR_BTS_FORMAT`.
 */
export function readBranchInput(path: string, options: ReadBranchOptions = {}): BranchInput {
  if (options.format === 'trace' || (options.format === undefined && isTrace(path)))
    return { format: 'trace', ...readTraceBranches(path) };
  const bytes = readInput(path, { error: inputError });
  if (bytes.length === 0)
    throw new BtsError('ERR_BTS_FORMAT', `empty: expected ${EXPECTED}`, { file: inputLabel(path), offset: 0 });
  if (bytes.subarray(0, TRACE_DAT_MAGIC.length).equals(TRACE_DAT_MAGIC))
    throw new BtsError('ERR_BTS_FORMAT', 'a trace.dat from a stream: save it to a file, a trace is read at offsets', {
      file: inputLabel(path),
    });
  return decodeBranchInput(bytes, { ...options, source: inputLabel(path) });
}

const EXPECTED = 'raw BTS records, perf.data, perf script, QEMU log or gdb record text, or a trace';

/** Options of {@link readBranchInput} and {@link decodeBranchInput}. */
export interface ReadBranchOptions {
  /** The input's format; detected from its content when absent. */
  readonly format?: BranchFormat;
  /** Raw BTS records: skip and count records that cannot be branches instead of refusing the input. */
  readonly lenient?: boolean;
}

/** {@link readBranchInput} over bytes. */
export function decodeBranchInput(
  bytes: Uint8Array,
  options: ReadBranchOptions & { source?: string } = {},
): BranchInput {
  const format = options.format ?? detectFormat(bytes);
  const src = options.source !== undefined ? { source: options.source } : {};
  const decoded = decodeAs(format, bytes, src, options.lenient === true);
  const found = decoded.format === 'gdb-call-history' ? decoded.segments.length : decoded.branches.length;
  // Nothing found and nothing wrong: the input is none of the formats (a text of other lines, padding only).
  if (found === 0 && decoded.problems.length === 0) {
    const notes = decoded.notes.length > 0 ? ` (${decoded.notes.join('; ')})` : '';
    throw new BtsError('ERR_BTS_FORMAT', `no branch read as ${format}${notes}: expected ${EXPECTED}`, {
      file: options.source,
      offset: 0,
    });
  }
  return decoded;
}

function decodeAs(format: BranchFormat, bytes: Uint8Array, src: { source?: string }, lenient: boolean): BranchInput {
  const text = () => new TextDecoder().decode(bytes);
  switch (format) {
    case 'bts64':
    case 'bts32':
      return { format, ...decodeBts(bytes, { format, ...src, ...(lenient ? { lenient: true } : {}) }) };
    case 'perf-data':
      return { format, ...decodePerfData(bytes, src) };
    case 'perf-script':
      return { format, ...parsePerfScript(text(), src) };
    case 'qemu-log':
      return { format, ...parseQemuLog(text(), src) };
    case 'gdb-instruction-history':
      return { format, ...parseGdbInstructionHistory(text(), src) };
    case 'gdb-call-history':
      return { format, ...parseGdbCallHistory(text(), src) };
    case 'trace':
      throw new BtsError('ERR_BTS_FORMAT', 'a trace is read from its path (readBranchInput), not from bytes', {
        file: src.source,
      });
    default:
      throw new BtsError('ERR_BTS_FORMAT', `unknown format ${String(format)}`, { file: src.source });
  }
}
