import type { Predicate } from './ast.ts';
import { matchBytes } from './glob.ts';

/**
 * The meaning of one predicate, written once over plain inputs (the field's raw integer, its bytes, the CPU, the task
 * name) so that every evaluator (over decoded events, over encoded records, the tree interpreter) agrees with the
 * kernel's filter_pred_* functions.
 */

/** Integer compare of a field's raw bits (unsigned, the field's width) with the predicate's constant. */
export function testNumber(pred: Predicate, raw: bigint): boolean {
  if (pred.test.type !== 'number') return false;
  const bits = pred.field.size * 8;
  const k = BigInt.asUintN(bits, pred.test.value);
  switch (pred.op) {
    case '==':
    case '!=':
      return (k === raw) !== pred.not;
    case '&':
      return (raw & k) !== 0n;
    default: {
      const a = pred.field.signed ? BigInt.asIntN(bits, raw) : raw;
      const b = pred.field.signed ? BigInt.asIntN(bits, k) : k;
      return compare(pred.op, a, b);
    }
  }
}

function compare(op: string, a: bigint | number, b: bigint | number): boolean {
  switch (op) {
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
    case '==':
      return a === b;
    case '!=':
      return a !== b;
    default:
      return false;
  }
}

/** The CPU pseudo field against an int, or a scalar against a mask of two or more CPUs. */
export function testCpu(pred: Predicate, cpu: number, nrCpuIds: number): boolean {
  const t = pred.test;
  if (t.type === 'cpu') return compare(pred.op, cpu, t.value);
  if (t.type === 'cpu-in-mask') {
    if (pred.field.kind !== 'cpu' && cpu >>> 0 >= nrCpuIds) return false;
    return pred.op === '!=' ? true : pred.op === '&' ? t.mask.has(cpu) : false;
  }
  return false;
}

/** A cpumask field (as the set of its CPUs) against the predicate's mask. */
export function testCpumask(pred: Predicate, mask: ReadonlySet<number>, nrCpuIds: number): boolean {
  const t = pred.test;
  if (t.type !== 'cpumask') return false;
  const inRange = [...mask].filter((c) => c < nrCpuIds);
  if (t.single) {
    const cpu = [...t.mask][0]!;
    const has = mask.has(cpu);
    const onlyOne = inRange.length <= 1;
    return pred.op === '==' ? has && onlyOne : pred.op === '!=' ? !has || !onlyOne : has;
  }
  if (pred.op === '&') return inRange.some((c) => t.mask.has(c));
  const equal = inRange.length === t.mask.size && inRange.every((c) => t.mask.has(c));
  return pred.op === '==' ? equal : pred.op === '!=' ? !equal : false;
}

/** A string predicate over raw bytes and the length the kernel would pass. */
export function testString(pred: Predicate, bytes: Uint8Array, len: number): boolean {
  if (pred.test.type !== 'string') return false;
  return matchBytes(pred.test.pattern, bytes, len) !== pred.not;
}

/** `.function`: the address lies inside the function. */
export function testFunction(pred: Predicate, address: bigint): boolean {
  if (pred.test.type !== 'function') return false;
  const inside = address >= pred.test.start && address < pred.test.end;
  return pred.op === '==' ? inside : !inside;
}

/** TASK_COMM_LEN: the kernel compares COMM over a 16-byte buffer. */
export const TASK_COMM_LEN = 16;

const encoder = new TextEncoder();

/** A string as the zero-padded `char[size]` array the kernel holds. */
export function paddedBytes(text: string, size: number): Uint8Array {
  const out = new Uint8Array(size);
  const bytes = encoder.encode(text);
  out.set(bytes.subarray(0, Math.max(0, size - 1)));
  return out;
}

/** A string as a NUL-terminated dynamic string (its data_loc length counts the NUL). */
export function cString(text: string): Uint8Array {
  const bytes = encoder.encode(text);
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}

/** Runs a kernel branch program given a predicate evaluator. */
export function runProgram(
  program: readonly { pred: number; whenToBranch: boolean; target: number }[],
  test: (pred: number) => boolean,
): boolean {
  const n = program.length;
  if (n === 0) return true;
  let i = 0;
  while (i < n) {
    const e = program[i]!;
    i = test(e.pred) === e.whenToBranch ? e.target + 1 : i + 1;
  }
  return i === n;
}
