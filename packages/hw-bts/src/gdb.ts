/**
 * gdb's branch-trace histories as text: `record function-call-history` (with `/c` indentation, `/i` instruction
 * ranges, `/l` source lines) and `record instruction-history` (from which taken branches are derived: a call, return
 * or jump always transfers to the next listed instruction; a conditional jump was taken when the next listed
 * instruction is its target). Decode-error gaps (`[decode error (N): ...]`) are notes; a gap breaks the chain.
 */

import { located } from '@evtrace/errors';
import type { CallSegment } from './analyses.ts';
import { BranchList, type Decoded, parseHexAddress } from './branch.ts';
import { BtsError } from './errors.ts';
import { x86BranchKind } from './qemu.ts';

/** A parsed function-call history: its segments plus problems and notes, like a decoder's result. */
export interface ParsedCallHistory {
  readonly segments: CallSegment[];
  readonly problems: BtsError[];
  readonly notes: string[];
}

const CALL_LINE = /^(\d+)\t( *)([^\t]*?)(?:\tinst (\d+),(\d+))?(?:\tat (.*))?$/;

/** Parses `record function-call-history` output. With `/c`, two spaces of indentation are one nesting level. */
export function parseGdbCallHistory(text: string, options: { source?: string } = {}): ParsedCallHistory {
  const segments: CallSegment[] = [];
  const problems: BtsError[] = [];
  const notes: string[] = [];
  const lines = text.split('\n');
  for (let l = 0; l < lines.length; l++) {
    const line = lines[l]!.replace(/\r$/, '');
    if (line.trim() === '') continue;
    if (line.startsWith('[')) {
      notes.push(located(line, { line: l + 1 }));
      continue;
    }
    const m = CALL_LINE.exec(line);
    if (m === null || m[3] === '') {
      const column = /^\d+\t/.test(line) ? line.indexOf('\t') + 2 : 1;
      problems.push(
        new BtsError('ERR_BTS_SYNTAX', 'malformed function-call-history line: expected "N<TAB>[indent]FUNCTION"', {
          file: options.source,
          line: l + 1,
          column,
        }),
      );
      continue;
    }
    segments.push({
      number: Number(m[1]),
      level: m[2]!.length >> 1,
      name: m[3]!,
      firstBranch: m[4] !== undefined ? Number(m[4]) - 1 : -1,
      lastBranch: m[5] !== undefined ? Number(m[5]) - 1 : -1,
    });
  }
  return { segments, problems, notes };
}

const INSN_LINE =
  /^(\d+)\t(?:=> |\? {2}| {3}|\? )?\s*(0x[0-9a-fA-F]+)(?: <([^>]*)>)?:\t(?:(?:[0-9a-f]{2} )*[0-9a-f]{2}\t)?(\S+)\s*(.*)$/;

/** Derives taken branches from `record instruction-history` output (with or without `/r` raw bytes). */
export function parseGdbInstructionHistory(text: string, options: { source?: string } = {}): Decoded {
  const branches = new BranchList(1 << 10);
  const problems: BtsError[] = [];
  const notes: string[] = [];
  const lines = text.split('\n');
  let prev: { hi: number; lo: number; name: string | undefined; mnemonic: string; operands: string } | undefined;
  for (let l = 0; l < lines.length; l++) {
    const line = lines[l]!.replace(/\r$/, '');
    if (line.trim() === '') continue;
    if (line.startsWith('[')) {
      notes.push(located(line, { line: l + 1 }));
      prev = undefined;
      continue;
    }
    const m = INSN_LINE.exec(line);
    const addr = m === null ? undefined : parseHexAddress(m[2]!);
    if (m === null || addr === undefined) {
      // Source lines of /m and /s listings are not instructions: only numbered lines must parse.
      if (/^\d+\t/.test(line))
        problems.push(
          new BtsError(
            'ERR_BTS_SYNTAX',
            'malformed instruction-history line: expected "N<TAB>0xADDR <func+off>:<TAB>insn"',
            {
              file: options.source,
              line: l + 1,
              column: line.indexOf('\t') + 2,
            },
          ),
        );
      continue;
    }
    const cur = { hi: addr[0], lo: addr[1], name: m[3], mnemonic: m[4]!, operands: m[5]! };
    if (prev !== undefined) {
      const kind = x86BranchKind(prev.mnemonic, prev.operands);
      let taken = kind !== 'none' && kind !== 'cond';
      if (kind === 'cond') {
        const target = /0x([0-9a-fA-F]+)/.exec(prev.operands);
        const t = target === null ? undefined : parseHexAddress(target[1]!);
        taken = t !== undefined && t[0] === cur.hi && t[1] === cur.lo;
      }
      if (taken && kind !== 'none') {
        const i = branches.push(prev.hi, prev.lo, cur.hi, cur.lo, { kind });
        branches.setNames(i, prev.name, cur.name);
      }
    }
    prev = cur;
  }
  return { branches, problems, notes };
}
