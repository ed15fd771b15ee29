/** Reading a branch trace file of any supported format, detected from its content unless named. */
import { readFileSync } from 'node:fs';
import type { Decoded } from './branch.ts';
import { BtsError } from './errors.ts';
import { type ParsedCallHistory, parseGdbCallHistory, parseGdbInstructionHistory } from './gdb.ts';
import { decodePerfData, isPerfData } from './perf-data.ts';
import { parsePerfScript } from './perf-script.ts';
import { parseQemuLog } from './qemu.ts';
import { decodeBts } from './raw.ts';

/** Input formats. */
export type BranchFormat =
  | 'bts64'
  | 'bts32'
  | 'perf-data'
  | 'perf-script'
  | 'qemu-log'
  | 'gdb-instruction-history'
  | 'gdb-call-history';

/** A read input: branches (every format but one), or gdb's call history, which has functions but no branches. */
export type BranchInput =
  | ({ readonly format: Exclude<BranchFormat, 'gdb-call-history'> } & Decoded)
  | ({ readonly format: 'gdb-call-history' } & ParsedCallHistory);

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

/** Reads and decodes a file. Unreadable files and empty inputs are `ERR_BTS_FORMAT`. */
export function readBranchInput(path: string, options: { format?: BranchFormat } = {}): BranchInput {
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
    default:
      throw new BtsError('ERR_BTS_FORMAT', `unknown format ${String(format)}`, src);
  }
}
