/**
 * `perf script` branch-stack output: `-F brstack` (`0xFROM/0xTO/...`), `brstacksym` (`func+0xoff/...`), `brstackoff`
 * (`0xOFF(dso)/...`), each entry followed by flags in the pre-5.18 layout `M|P|-/X|-/A|-/CYCLES` or the 5.18+ layout
 * that adds `/TYPE/SPEC`. perf prints a sample's stack newest first; the list holds it oldest first. Lines of
 * auxtrace errors (`instruction trace error type N ...`) and perf's warnings are kept as notes, not branches.
 */

import { located } from '@evtrace/errors';
import { BranchFlag, type BranchKind, BranchList, type Decoded, kindNumber, parseHexAddress } from './branch.ts';
import { BtsError } from './errors.ts';

/** How to read the FROM/TO text of entries. `auto`: hex is an address, anything else a symbol. */
export type PerfBranchField = 'auto' | 'brstack' | 'brstacksym' | 'brstackoff';

export interface PerfScriptOptions {
  readonly field?: PerfBranchField;
  /** Named in problems. */
  readonly source?: string;
}

// perf's branch type names (tools/perf/util/branch.c), mapped to ours.
const TYPE_NAMES: Readonly<Record<string, BranchKind>> = {
  COND: 'cond',
  UNCOND: 'jump',
  IND: 'ind_jump',
  CALL: 'call',
  IND_CALL: 'ind_call',
  RET: 'return',
  SYSCALL: 'syscall',
  SYSRET: 'sysret',
  COND_CALL: 'call',
  COND_RET: 'return',
  ERET: 'eret',
  IRQ: 'irq',
  SERROR: 'irq',
  NO_TX: 'other',
  FAULT_DATA: 'irq',
  FAULT_INST: 'irq',
  DEBUG_HALT: 'irq',
  DEBUG_EXIT: 'eret',
  DEBUG_INST: 'irq',
  DEBUG_DATA: 'irq',
  FIQ: 'irq',
  DEBUG_HALT_ARCH: 'irq',
  EXTEND_ABI: 'other',
  'N/A': 'unknown',
};
// A Map: looking up the fresh strings a match returns is cheaper there than as object keys.
const TYPES = new Map(Object.entries(TYPE_NAMES));

/**
 * The flags tail of an entry: `/EVENT/INTX/ABORT/CYCLES`, from perf 5.18 with `/TYPE` (perf 6.1 stops there, and
 * prints an empty TYPE for an unknown one), later also `/SPEC`.
 */
const TAIL = /\/([MP-])\/([X-])\/([A-])\/(\d+)(?:\/([A-Z_]*(?:\/A)?|-))?(?:\/([A-Z_]+|-))?(?=\s|$)/g;
const ERROR_LINE = /^\s*(\S[^:]*?) error type (\d+)/;

/** Parses perf script text. Malformed entries are problems at their line and column; the rest of the line is kept. */
export function parsePerfScript(text: string, options: PerfScriptOptions = {}): Decoded {
  const field = options.field ?? 'auto';
  const branches = new BranchList(1 << 12);
  const problems: BtsError[] = [];
  const notes: string[] = [];
  let lineNo = 0;
  let errors = 0;
  const entries: { from: string; to: string; flags: number; cycles: number; kind: BranchKind; col: number }[] = [];
  const problem = (message: string, column: number) =>
    problems.push(
      new BtsError('ERR_BTS_SYNTAX', message, {
        file: options.source,
        line: lineNo,
        column,
      }),
    );
  for (let start = 0; start <= text.length; ) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const line = text.slice(start, end);
    start = end + 1;
    lineNo++;
    if (line.trim() === '' || line.startsWith('#')) continue;
    // Cheap tests first: the regular expressions only run on lines that can match.
    const err = line.includes(' error type ') ? ERROR_LINE.exec(line) : null;
    if (err !== null) {
      errors++;
      if (errors <= 20) notes.push(located(line.trim(), { line: lineNo }));
      continue;
    }
    if ((line.includes('arning:') || line.includes('rror:')) && /^\s*(Warning|Error):/i.test(line)) {
      notes.push(located(line.trim(), { line: lineNo }));
      continue;
    }
    entries.length = 0;
    TAIL.lastIndex = 0;
    let segStart = -1;
    let header = '';
    let m: RegExpExecArray | null;
    let consumed = 0;
    while ((m = TAIL.exec(line)) !== null) {
      let seg: string;
      let col: number;
      if (segStart < 0) {
        // The first entry starts after the sample's header fields: at the last blank before its FROM/TO split.
        const split = splitPoint(line, 0, m.index);
        const blank = split < 0 ? -1 : Math.max(line.lastIndexOf(' ', split), line.lastIndexOf('\t', split));
        header = line.slice(0, blank + 1);
        col = blank + 1;
        seg = line.slice(col, m.index);
      } else {
        col = segStart;
        while (col < m.index && (line[col] === ' ' || line[col] === '\t')) col++;
        seg = line.slice(col, m.index);
      }
      segStart = m.index + m[0].length;
      consumed = segStart;
      const split = splitPoint(seg, 0, seg.length);
      if (split <= 0 || split === seg.length - 1) {
        problem(`malformed branch entry '${seg}': expected FROM/TO before the flags`, col + 1);
        continue;
      }
      const type = m[5];
      let kind: BranchKind = 'unknown';
      if (type !== undefined && type !== '-' && type !== '') {
        const known = TYPES.get(type);
        if (known === undefined) {
          problem(`unknown branch type '${type}'`, m.index + m[0].indexOf(type) + 1);
          continue;
        }
        kind = known;
      }
      const flags =
        (m[1] === 'P' ? BranchFlag.predicted : m[1] === 'M' ? BranchFlag.mispredicted : 0) |
        (m[2] === 'X' ? BranchFlag.inTx : 0) |
        (m[3] === 'A' ? BranchFlag.abort : 0);
      entries.push({ from: seg.slice(0, split), to: seg.slice(split + 1), flags, cycles: Number(m[4]), kind, col });
    }
    const rest = line.slice(consumed);
    const stray = /(?:^|\s)(0x[0-9a-fA-F]*\S*\/\S*)/.exec(rest);
    if (stray !== null) {
      const at = consumed + stray.index + stray[0].length - stray[1]!.length;
      problem(`malformed branch entry '${stray[1]}': expected FROM/TO/M|P|-/X|-/A|-/CYCLES[/TYPE/SPEC]`, at + 1);
    }
    if (entries.length === 0) continue;
    const pidTid = /(\d+)\/(\d+)/.exec(header);
    const cpuM = /\[(\d+)\]/.exec(header);
    const timeM = /(\d+)\.(\d+):/.exec(header);
    const tid = pidTid !== null ? Number(pidTid[2]) : -1;
    const cpu = cpuM !== null ? Number(cpuM[1]) : -1;
    const time = timeM !== null ? Number(timeM[1]) * 1e9 + Number(timeM[2]!.padEnd(9, '0').slice(0, 9)) : Number.NaN;
    // Newest first on the line: append in reverse so the list runs oldest first.
    for (let e = entries.length - 1; e >= 0; e--) {
      const x = entries[e]!;
      const from = location(x.from, field);
      const to = location(x.to, field);
      if (from === undefined || to === undefined) {
        problem(
          `malformed address in branch entry '${x.from}/${x.to}'`,
          x.col + (from === undefined ? 1 : x.from.length + 2),
        );
        continue;
      }
      const i = branches.push(from.hi, from.lo, to.hi, to.lo);
      branches.flags[i] = x.flags;
      branches.kind[i] = kindNumber(x.kind);
      branches.tid[i] = tid;
      branches.cpu[i] = cpu;
      branches.time[i] = time;
      if (x.cycles > 0) branches.cycles[i] = x.cycles;
      if (from.name !== undefined || to.name !== undefined) branches.setNames(i, from.name, to.name);
    }
  }
  if (errors > 20) notes.push(`${errors - 20} more trace error lines`);
  if (errors > 0) notes.push(`${errors} trace error lines (decoder gaps: branches around them may be missing)`);
  return { branches, problems, notes };
}

/** The index of the `/` between FROM and TO in text[start, end): the last one outside parentheses. */
function splitPoint(text: string, start: number, end: number): number {
  let depth = 0;
  for (let i = end - 1; i >= start; i--) {
    const c = text[i];
    if (c === ')') depth++;
    else if (c === '(') depth--;
    else if (c === '/' && depth === 0) return i;
  }
  return -1;
}

interface Location {
  hi: number;
  lo: number;
  name?: string;
}

/** A FROM or TO: `0xADDR`, `0xADDR(dso)`, `func+0xoff`, `func+0xoff(dso)` or `[unknown]`. */
function location(text: string, field: PerfBranchField): Location | undefined {
  // The common case first: a bare hex address (brstack), no regular expressions.
  const n = text.length;
  const paren = n > 0 && text.charCodeAt(n - 1) === 41 ? text.lastIndexOf('(') : -1;
  if (n > 0 && text.charCodeAt(n - 1) === 41 && paren < 0) return undefined;
  const coreEnd = paren >= 0 ? paren : n;
  if (field !== 'brstacksym' && coreEnd > 2 && text.charCodeAt(0) === 48 && text.charCodeAt(1) === 120) {
    const a = parseHexAddress(text, 0, coreEnd);
    if (a === undefined) return undefined;
    // brstackoff: an offset into the DSO, so the DSO is part of the location.
    return field === 'brstackoff' && paren >= 0
      ? { hi: a[0], lo: a[1], name: `${text.slice(paren + 1, -1)}+0x${text.slice(2, coreEnd).replace(/^0+(?=.)/, '')}` }
      : { hi: a[0], lo: a[1] };
  }
  const core = text.slice(0, coreEnd);
  if (field === 'brstack' || core === '' || /\s$/.test(core) || core.startsWith('0x')) return undefined;
  return { hi: 0, lo: 0, name: core };
}
