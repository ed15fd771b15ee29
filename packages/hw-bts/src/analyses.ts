/**
 * What users read from a branch trace: the last branches before a point, the function call/return history with
 * nesting (gdb's `record function-call-history /c`), hot edges with misprediction counts, and edge coverage.
 */
import { BRANCH_KINDS, BranchFlag, type BranchList } from './branch.ts';
import { BtsError } from './errors.ts';
import { FunctionNames } from './names.ts';
import type { Symbolizer } from './symbols.ts';

/** Indices of the last `n` branches before index `end` (exclusive; default the end of the trace), oldest first. */
export function lastBranches(list: BranchList, n: number, end = list.length): number[] {
  if (!Number.isInteger(n) || n < 0)
    throw new BtsError('ERR_BTS_ARGUMENT', `branch count must be a non-negative integer, not ${n}`);
  const stop = Math.min(Math.max(0, end), list.length);
  const out: number[] = [];
  for (let i = Math.max(0, stop - n); i < stop; i++) out.push(i);
  return out;
}

/** One line of the call history: a stretch of execution in one function at one nesting level. */
export interface CallSegment {
  /** 1-based, like gdb's numbering. */
  readonly number: number;
  /** Nesting level, 0 for the outermost function seen. */
  readonly level: number;
  readonly name: string;
  /** The branch that entered this segment (-1 for the first, entered before the trace began). */
  readonly firstBranch: number;
  /** The last branch index inside this segment (inclusive; its exit). */
  readonly lastBranch: number;
}

const CALL = BRANCH_KINDS.indexOf('call');
const IND_CALL = BRANCH_KINDS.indexOf('ind_call');
const RETURN = BRANCH_KINDS.indexOf('return');
const UNKNOWN = BRANCH_KINDS.indexOf('unknown');
const SYSCALL = BRANCH_KINDS.indexOf('syscall');
const IRQ = BRANCH_KINDS.indexOf('irq');
const SYSRET = BRANCH_KINDS.indexOf('sysret');
const ERET = BRANCH_KINDS.indexOf('eret');

/**
 * Reconstructs the function call history. Calls and returns come from the branch kinds when the source gives them
 * (perf's TYPE, the instruction QEMU or gdb shows); otherwise a branch landing on a function's first byte is a call
 * and a branch into a function already on the stack is a return to it. A branch into another function that is
 * neither (a tail call, a jump) starts a new segment at the same level. Levels are shifted so the smallest is 0, as
 * gdb does when the trace begins deeper than it ends.
 */
export function callHistory(list: BranchList, symbols?: Symbolizer): CallSegment[] {
  const names = new FunctionNames(list, symbols);
  const n = list.length;
  const segNames: number[] = [];
  const segLevels: number[] = [];
  const segFirst: number[] = [];
  // Function ids of the callers, innermost last.
  const stack: number[] = [];
  let level = 0;
  let minLevel = 0;
  let current = n > 0 ? names.id(0, 0) : -1;
  segNames.push(current);
  segLevels.push(0);
  segFirst.push(-1);
  const kinds = list.kind;
  for (let i = 0; i < n; i++) {
    const k = kinds[i]!;
    const to = names.id(i, 1);
    let call: boolean;
    let ret: boolean;
    if (k === UNKNOWN) {
      call = names.targetIsEntry(i);
      ret = !call && to !== current && stack.lastIndexOf(to) >= 0;
    } else {
      call = k === CALL || k === IND_CALL || k === SYSCALL || k === IRQ;
      ret = k === RETURN || k === SYSRET || k === ERET;
    }
    if (call) {
      stack.push(current);
      level++;
    } else if (ret) {
      // Unwind to the frame returned to when it is on the stack (longjmp-like returns skip frames), else one level.
      const at = stack.lastIndexOf(to);
      const pops = at >= 0 ? stack.length - at : 1;
      stack.length = Math.max(0, stack.length - pops);
      level -= pops;
      if (level < minLevel) minLevel = level;
    } else if (to === current) {
      continue;
    }
    current = to;
    segNames.push(to);
    segLevels.push(level);
    segFirst.push(i);
  }
  const out: CallSegment[] = new Array(segNames.length);
  for (let s = 0; s < segNames.length; s++) {
    const next = segFirst[s + 1];
    out[s] = {
      number: s + 1,
      level: segLevels[s]! - minLevel,
      name: names.name(segNames[s]!),
      firstBranch: segFirst[s]!,
      lastBranch: next === undefined ? n - 1 : next,
    };
  }
  return out;
}

/** Prints a call history like gdb's `record function-call-history /c`: number, tab, two spaces per level, name. */
export function formatCallHistory(segments: readonly CallSegment[], withBranches = false): string {
  let text = '';
  for (const s of segments) {
    text += `${s.number}\t${'  '.repeat(s.level)}${s.name}`;
    if (withBranches) text += `\tbranches ${s.firstBranch + 1},${s.lastBranch + 1}`;
    text += '\n';
  }
  return text;
}

/** One edge (from, to) with how often it was taken and mispredicted. */
export interface HotEdge {
  /** A branch index holding this edge (for its addresses and names). */
  readonly example: number;
  readonly count: number;
  readonly mispredicted: number;
  /** How many of its branches said they were predicted. */
  readonly predicted: number;
}

/** Edges by how often they were taken, most first (ties by first appearance); the top `limit`. */
export function hotEdges(list: BranchList, limit = Number.POSITIVE_INFINITY): HotEdge[] {
  const byFrom = new Map<number, Map<number, number>>();
  // brstacksym rows carry names instead of addresses: the names tell their edges apart.
  const byName = new Map<string, number>();
  const named = list.fromName.length > 0 || list.toName.length > 0;
  const example: number[] = [];
  const count: number[] = [];
  const mis: number[] = [];
  const pred: number[] = [];
  for (let i = 0; i < list.length; i++) {
    const f = list.fromKey(i);
    const t = list.toKey(i);
    let e: number | undefined;
    if (named) {
      const key = `${f}:${t}:${list.fromName[i] ?? ''}:${list.toName[i] ?? ''}`;
      e = byName.get(key);
      if (e === undefined) byName.set(key, (e = example.length));
    } else {
      let m = byFrom.get(f);
      if (m === undefined) byFrom.set(f, (m = new Map()));
      e = m.get(t);
      if (e === undefined) m.set(t, (e = example.length));
    }
    if (e === example.length) {
      example.push(i);
      count.push(0);
      mis.push(0);
      pred.push(0);
    }
    count[e]!++;
    const fl = list.flags[i]!;
    if ((fl & BranchFlag.mispredicted) !== 0) mis[e]!++;
    if ((fl & BranchFlag.predicted) !== 0) pred[e]!++;
  }
  const order = example.map((_, e) => e).sort((a, b) => count[b]! - count[a]! || a - b);
  return order.slice(0, Math.min(order.length, limit)).map((e) => ({
    example: example[e]!,
    count: count[e]!,
    mispredicted: mis[e]!,
    predicted: pred[e]!,
  }));
}

/** Edge coverage: distinct edges, and per function (by source address) its distinct edges and branches. */
export interface Coverage {
  readonly branches: number;
  readonly edges: number;
  readonly functions: readonly { name: string; edges: number; branches: number; entered: number }[];
}

/** Counts distinct edges overall and per function; `entered` counts calls into the function. */
export function edgeCoverage(list: BranchList, symbols?: Symbolizer): Coverage {
  const names = new FunctionNames(list, symbols);
  const edges = hotEdges(list);
  const per = new Map<number, { edges: number; branches: number; entered: number }>();
  const get = (id: number) => {
    let r = per.get(id);
    if (r === undefined) per.set(id, (r = { edges: 0, branches: 0, entered: 0 }));
    return r;
  };
  for (const e of edges) {
    const r = get(names.id(e.example, 0));
    r.edges++;
    r.branches += e.count;
  }
  for (let i = 0; i < list.length; i++) {
    const k = list.kind[i]!;
    if (k === CALL || k === IND_CALL || (k === UNKNOWN && names.targetIsEntry(i))) get(names.id(i, 1)).entered++;
  }
  const functions = [...per]
    .map(([id, r]) => ({ name: names.name(id), ...r }))
    .sort((a, b) => b.branches - a.branches || a.name.localeCompare(b.name));
  return { branches: list.length, edges: edges.length, functions };
}
