/** Reading a branch trace file of any supported format, detected from its content unless named. */
import { closeSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
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

/** Whether `path` is something @evtrace/trace-format opens (a directory, or a file starting with trace.dat's magic). */
function isTrace(path: string): boolean {
  try {
    if (statSync(path).isDirectory()) return true;
    const fd = openSync(path, 'r');
    try {
      const head = Buffer.alloc(10);
      readSync(fd, head, 0, 10, 0);
      return head.subarray(0, 10).equals(TRACE_DAT_MAGIC);
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

const TRACE_DAT_MAGIC = Buffer.from([0x17, 0x08, 0x44, 0x74, 0x72, 0x61, 0x63, 0x69, 0x6e, 0x67]);

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
 * `sched:sched_switch` events). Unreadable files are `ERR_BTS_FORMAT`.
 */
export function readBranchInput(path: string, options: { format?: BranchFormat } = {}): BranchInput {
  if (options.format === 'trace' || (options.format === undefined && isTrace(path)))
    return { format: 'trace', ...readTraceBranches(path) };
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    throw new BtsError(
      'ERR_BTS_FORMAT',
      `cannot read: ${(error as NodeJS.ErrnoException).code ?? error}`,
      { source: path },
      error,
    );
  }
  return decodeBranchInput(bytes, { ...options, source: path });
}

/** {@link readBranchInput} over bytes. */
export function decodeBranchInput(
  bytes: Uint8Array,
  options: { format?: BranchFormat; source?: string } = {},
): BranchInput {
  const format = options.format ?? detectFormat(bytes);
  const src = options.source !== undefined ? { source: options.source } : {};
  const text = () => new TextDecoder().decode(bytes);
  switch (format) {
    case 'bts64':
    case 'bts32':
      return { format, ...decodeBts(bytes, { format, ...src }) };
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
      throw new BtsError('ERR_BTS_FORMAT', 'a trace is read from its path (readBranchInput), not from bytes', src);
    default:
      throw new BtsError('ERR_BTS_FORMAT', `unknown format ${String(format)}`, src);
  }
}
