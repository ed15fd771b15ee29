import type { EventClass, FieldValue, TraceEvent } from '@evtrace/trace-format';
import type { ParsedFilter, Predicate } from './ast.ts';
import { FilterError } from './errors.ts';
import { type ParseOptions, parseFilter } from './parser.ts';
import {
  cString,
  paddedBytes,
  runProgram,
  TASK_COMM_LEN,
  testCpu,
  testCpumask,
  testFunction,
  testNumber,
  testString,
} from './semantics.ts';

export interface CompileOptions extends ParseOptions {
  /**
   * The task name of the event's task at the time of the event, for `COMM`/`comm` (see {@link CommTracker}). Required
   * when the expression uses them: the kernel reads the live task name, so user space must replay renames.
   */
  readonly comm?: (event: TraceEvent) => string | undefined;
  /** Byte order of encoded records. Default little-endian. */
  readonly byteOrder?: 'le' | 'be';
}

/** A compiled filter over decoded events. */
export type EventPredicate = (event: TraceEvent) => boolean;

/**
 * A compiled filter over one encoded ftrace record: `view` holds it at `offset` (where `common_type` is), `size` is
 * its length; `cpu` and `comm` are the event's CPU and its task's name at that time (only read when the expression
 * names CPU or COMM). Reads only the fields the expression needs.
 */
export type RecordPredicate = (view: DataView, offset: number, size: number, cpu: number, comm?: string) => boolean;

function parsed(expression: string | ParsedFilter, eventClass: EventClass, options: ParseOptions): ParsedFilter {
  return typeof expression === 'string' ? parseFilter(expression, eventClass, options) : expression;
}

function unsupported(pred: Predicate, why: string): FilterError {
  return new FilterError('ERR_FILTER_UNSUPPORTED', {
    message: `cannot evaluate '${pred.text}' ${why}`,
    column: pred.span.start,
    span: pred.span,
  });
}

function fieldValue(event: TraceEvent, name: string): FieldValue | undefined {
  const v = event.fields[name];
  if (v !== undefined) return v;
  if (event.scopes) for (const scope of Object.values(event.scopes)) if (name in scope) return scope[name];
  return undefined;
}

function toBits(v: FieldValue | undefined, bits: number): bigint | undefined {
  if (typeof v === 'bigint') return BigInt.asUintN(bits, v);
  if (typeof v === 'number') return Number.isFinite(v) ? BigInt.asUintN(bits, BigInt(Math.trunc(v))) : undefined;
  if (typeof v === 'boolean') return v ? 1n : 0n;
  return undefined;
}

function maskOfWords(v: FieldValue | undefined): Set<number> {
  const cpus = new Set<number>();
  if (!Array.isArray(v)) return cpus;
  (v as FieldValue[]).forEach((word, w) => {
    const bits = toBits(word, 64) ?? 0n;
    for (let b = 0; b < 64; b++) if ((bits >> BigInt(b)) & 1n) cpus.add(w * 64 + b);
  });
  return cpus;
}

function defaultNrCpuIds(options: ParseOptions): number {
  return options.nrCpuIds ?? 64;
}

/**
 * Compiles a filter into a predicate over decoded events with the kernel's exact semantics (same branch program,
 * same string and integer rules). This is what `evtrace cat --filter` and `convert --filter` apply.
 *
 * @throws FilterError as {@link parseFilter}, or `ERR_FILTER_UNSUPPORTED` when a comparison needs what a recording
 * lacks (the string behind a `char *`, COMM without a task-name resolver).
 */
export function compileFilter(
  expression: string | ParsedFilter,
  eventClass: EventClass,
  options: CompileOptions = {},
): EventPredicate {
  const filter = parsed(expression, eventClass, options);
  const nr = defaultNrCpuIds(options);
  const tests = filter.predicates.map((pred): ((e: TraceEvent) => boolean) => {
    const f = pred.field;
    const t = pred.test;
    if (t.type === 'never') return () => false;
    switch (f.kind) {
      case 'cpu':
        return (e) => e.cpu !== null && testCpu(pred, e.cpu, nr);
      case 'comm': {
        const comm = options.comm;
        if (comm === undefined) throw unsupported(pred, 'without a task-name resolver (options.comm)');
        return (e) => testString(pred, paddedBytes(comm(e) ?? '', TASK_COMM_LEN), TASK_COMM_LEN);
      }
      case 'pointer-string':
        throw unsupported(pred, `in user space: ${f.name} is a pointer the kernel dereferences when the event fires`);
      case 'static-string':
        return (e) => {
          const v = fieldValue(e, f.name);
          const bytes = typeof v === 'string' ? paddedBytes(v, f.size) : Uint8Array.from((v as number[]) ?? []);
          return testString(pred, bytes, f.size);
        };
      case 'dynamic-string':
      case 'rel-string':
        return (e) => {
          const bytes = cString(String(fieldValue(e, f.name) ?? ''));
          return testString(pred, bytes, bytes.length);
        };
      case 'cpumask':
        if (t.type !== 'cpumask') throw unsupported(pred, 'over decoded events: it compares the raw data_loc word');
        return (e) => testCpumask(pred, maskOfWords(fieldValue(e, f.name)), nr);
      default:
        if (t.type === 'function') {
          return (e) => {
            const bits = toBits(fieldValue(e, f.name), 64);
            return bits !== undefined && testFunction(pred, bits);
          };
        }
        if (t.type === 'cpu-in-mask') {
          return (e) => {
            const bits = toBits(fieldValue(e, f.name), f.size * 8);
            return bits !== undefined && testCpu(pred, Number(BigInt.asUintN(32, bits)), nr);
          };
        }
        return (e) => {
          const bits = toBits(fieldValue(e, f.name), f.size * 8);
          return bits !== undefined && testNumber(pred, bits);
        };
    }
  });
  const program = filter.program;
  if (program.length === 0) return () => true;
  return (event) => runProgram(program, (i) => tests[i]!(event));
}

/** One predicate as a JS boolean expression over (v, o, n, cpu, comm), or a call into `k`. */
function recordCondition(pred: Predicate, le: boolean, k: unknown[], nr: number): string {
  const f = pred.field;
  const t = pred.test;
  if (t.type === 'never') return 'false';
  const at = (delta: number) => `o + ${f.offset + delta}`;
  if (t.type === 'number' && f.kind !== 'comm') {
    const signedOrder = f.signed && pred.op !== '==' && pred.op !== '!=' && pred.op !== '&';
    const bits = f.size * 8;
    const cast = signedOrder ? BigInt.asIntN(bits, t.value) : BigInt.asUintN(bits, t.value);
    const cmp = pred.op === '!=' ? '!==' : pred.op === '==' ? '===' : pred.op;
    if (f.size <= 4) {
      const get = `v.get${signedOrder ? 'Int' : 'Uint'}${bits}(${at(0)}${f.size > 1 ? `, ${le}` : ''})`;
      const K = Number(cast);
      if (pred.op === '&') return `((${get} & ${K}) !== 0)`;
      return `(${get} ${cmp} ${K})`;
    }
    const u = BigInt.asUintN(64, cast);
    const KL = Number(u & 0xffffffffn);
    const KH = signedOrder ? Number(BigInt.asIntN(32, u >> 32n)) : Number(u >> 32n);
    const lo = `v.getUint32(${at(le ? 0 : 4)}, ${le})`;
    const hi = `v.get${signedOrder ? 'Int' : 'Uint'}32(${at(le ? 4 : 0)}, ${le})`;
    switch (pred.op) {
      case '==':
        return `(${lo} === ${KL} && ${hi} === ${KH})`;
      case '!=':
        return `(${lo} !== ${KL} || ${hi} !== ${KH})`;
      case '&':
        return `((${lo} & ${KL}) !== 0 || (${hi} & ${KH}) !== 0)`;
      default: {
        // A constant below 2^32 on an unsigned field (the usual case) needs each half read once.
        if (!signedOrder && KH === 0) {
          return pred.op[0] === '<'
            ? `(${hi} === 0 && ${lo} ${pred.op} ${KL})`
            : `(${hi} !== 0 || ${lo} ${pred.op} ${KL})`;
        }
        const strict = pred.op.length === 1;
        const low = `${lo} ${pred.op} ${KL}`;
        const base = strict ? pred.op : pred.op[0];
        return `(${hi} ${base} ${KH} || (${hi} === ${KH} && ${low}))`;
      }
    }
  }
  const fn = recordClosure(pred, le, nr);
  k.push(fn);
  return `k[${k.length - 1}](v, o, n, cpu, comm)`;
}

/** The error for a record that does not hold what the filter reads. */
function badRecord(offset: number, why: string): FilterError {
  return new FilterError('ERR_FILTER_RECORD', { message: `record at byte ${offset}: ${why}`, column: 0 });
}

function recordClosure(pred: Predicate, le: boolean, nr: number): RecordPredicate {
  const f = pred.field;
  const t = pred.test;
  const bytesAt = (v: DataView, start: number, len: number) => new Uint8Array(v.buffer, v.byteOffset + start, len);
  const dataLoc = (v: DataView, o: number, n: number) => {
    const word = v.getUint32(o + f.offset, le);
    const base = f.kind === 'rel-string' ? f.offset + 4 : 0;
    const start = base + (word & 0xffff);
    const len = word >>> 16;
    if (start + len > n)
      throw badRecord(o, `${f.name} points to ${len} bytes at ${start}, past the record's ${n} bytes`);
    return bytesAt(v, o + start, len);
  };
  const u64 = (v: DataView, at: number) => v.getBigUint64(at, le);
  switch (f.kind) {
    case 'cpu':
      return (_v, _o, _n, cpu) => testCpu(pred, cpu, nr);
    case 'comm': {
      let last: string | undefined;
      let bytes: Uint8Array = new Uint8Array(TASK_COMM_LEN);
      return (_v, _o, _n, _cpu, comm) => {
        if (comm !== last) {
          last = comm;
          bytes = paddedBytes(comm ?? '', TASK_COMM_LEN);
        }
        return testString(pred, bytes, TASK_COMM_LEN);
      };
    }
    case 'pointer-string':
      throw unsupported(
        pred,
        `over recorded data: ${f.name} is a pointer the kernel dereferences when the event fires`,
      );
    case 'static-string':
      return (v, o) => testString(pred, bytesAt(v, o + f.offset, f.size), f.size);
    case 'dynamic-string':
    case 'rel-string':
      return (v, o, n) => {
        const bytes = dataLoc(v, o, n);
        return testString(pred, bytes, bytes.length);
      };
    case 'cpumask':
      return (v, o, n) => {
        const bytes = dataLoc(v, o, n);
        const cpus = new Set<number>();
        for (let i = 0; i < bytes.length * 8; i++) if (bytes[i >> 3]! & (1 << (i & 7))) cpus.add(i);
        return testCpumask(pred, cpus, nr);
      };
    default:
      if (t.type === 'function') return (v, o) => testFunction(pred, u64(v, o + f.offset));
      return (v, o) => {
        const raw =
          f.size === 8
            ? u64(v, o + f.offset)
            : BigInt(
                f.size === 4
                  ? v.getUint32(o + f.offset, le)
                  : f.size === 2
                    ? v.getUint16(o + f.offset, le)
                    : v.getUint8(o + f.offset),
              );
        return testCpu(pred, Number(BigInt.asUintN(32, raw)), nr);
      };
  }
}

/**
 * Compiles a filter into a predicate over encoded records (a raw ring-buffer page, trace.dat data) that reads only
 * the bytes of the fields it tests. Integer comparisons become straight-line code (64-bit fields as two 32-bit
 * halves, no BigInt); the generated source holds only numbers computed here, never text from the expression, so
 * nothing in an expression can inject code.
 */
export function compileRecordFilter(
  expression: string | ParsedFilter,
  eventClass: EventClass,
  options: CompileOptions = {},
): RecordPredicate {
  const filter = parsed(expression, eventClass, options);
  const unplaced = filter.predicates.find((p) => p.field.offset < 0);
  if (unplaced) throw unsupported(unplaced, `over encoded records: ${eventClass.name} has no fixed record layout`);
  const le = (options.byteOrder ?? 'le') === 'le';
  const nr = defaultNrCpuIds(options);
  const program = filter.program;
  const n = program.length;
  if (n === 0) return () => true;
  // Every fixed field read must lie inside the record, and the record inside the view.
  const minSize = Math.max(
    0,
    ...filter.predicates.map((p) =>
      p.field.kind === 'cpu' || p.field.kind === 'comm' ? 0 : p.field.offset + p.field.size,
    ),
  );
  const tooShort = (_v: DataView, o: number, n: number) => {
    throw badRecord(o, n < minSize ? `${n} bytes, the filter reads ${minSize}` : `${n} bytes run past the buffer`);
  };
  const k: unknown[] = [tooShort];
  const conds = filter.predicates.map((p) => recordCondition(p, le, k, nr));
  const lines: string[] = [];
  const direct = program.every((e) => e.target + 1 >= n);
  for (let i = 0; i < n; i++) {
    const e = program[i]!;
    const cond = e.whenToBranch ? conds[e.pred]! : `!${conds[e.pred]!}`;
    if (direct) lines.push(`if (${cond}) return ${e.target + 1 === n};`);
    else lines.push(`if (pc === ${i}) pc = (${cond}) ? ${e.target + 1} : ${i + 1};`);
  }
  const guard = `if (n < ${minSize} || o < 0 || o + n > v.byteLength) k[0](v, o, n);\n`;
  const body =
    guard + (direct ? `${lines.join('\n')}\nreturn true;` : `let pc = 0;\n${lines.join('\n')}\nreturn pc === ${n};`);
  const factory = new Function('k', `'use strict';\nreturn function filter(v, o, n, cpu, comm) {\n${body}\n};`);
  return factory(k) as RecordPredicate;
}
