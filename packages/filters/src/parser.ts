import type { EventClass } from '@evtrace/trace-format';
import {
  COMPARE_OPS,
  type CompareOp,
  type FilterNode,
  type ParsedFilter,
  type Predicate,
  type PredicateTest,
  type ProgramEntry,
} from './ast.ts';
import { parseCpuList } from './cpulist.ts';
import { isAlnum, isDigit, isSpace, kstrtoll, kstrtoull } from './ctype.ts';
import { FilterError, type KernelErrorKind, kernelError } from './errors.ts';
import { FieldTable, type FilterField } from './fields.ts';
import { parsePattern } from './glob.ts';
import type { SymbolTable } from './symbols.ts';

/** The kernel refuses filter writes of this many bytes or more (one page). */
export const MAX_FILTER_BYTES = 4096;
/** Longest quoted value (MAX_FILTER_STR_VAL - 1). */
const MAX_STRING = 256;
/** Longest number (the kernel's 24-byte buffer, NUL included). */
const MAX_NUMBER = 24;

export interface ParseOptions {
  /** Symbols for `.function`; without them any `.function` predicate is "Function not found". */
  readonly symbols?: SymbolTable;
  /** The machine's possible CPUs (nr_cpu_ids): CPU lists naming higher CPUs are refused. Default 64. */
  readonly nrCpuIds?: number;
  /** sizeof(long) on the traced kernel: `.function` needs a field of this size. Default 8. */
  readonly longSize?: number;
}

const encoder = new TextEncoder();
const latin1 = new TextDecoder('latin1');

/** Bits of an operator-stack entry: the inversion in force and pending && / || updates. */
const Flag = { Invert: 1, And: 2, Or: 4 } as const;

type Token = '(' | ')' | '!' | '&&' | '||' | number;

interface MutableEntry {
  pred: number;
  whenToBranch: number;
  target: number;
}

/**
 * Parses and type-checks a filter against an event class exactly as Linux does when it is written to the event's
 * `filter` file (kernel/trace/trace_events_filter.c): same grammar, same accepted oddities (a trailing `&&`), same
 * errors at the same columns. Works iteratively: nesting depth costs heap, not stack.
 *
 * @throws FilterError with the kernel's message and caret column.
 */
export function parseFilter(expression: string, eventClass: EventClass, options: ParseOptions = {}): ParsedFilter {
  const written = encoder.encode(expression);
  if (written.length >= MAX_FILTER_BYTES) {
    throw new FilterError('ERR_FILTER_LIMIT', {
      message: `Filter too long: the kernel refuses filters of ${MAX_FILTER_BYTES} bytes or more`,
      column: 0,
      detail: `${written.length} bytes`,
      errno: 'EINVAL',
    });
  }
  // The kernel reads a C string: it would apply the text before a NUL and silently drop the rest. evtrace refuses it.
  const nul = written.indexOf(0);
  if (nul >= 0) {
    throw new FilterError('ERR_FILTER_NUL', {
      message: 'NUL character in filter',
      column: nul,
      detail: 'the kernel would apply only the text before it',
      errno: 'EINVAL',
    });
  }
  // The kernel strips trailing white space before parsing.
  let end = written.length;
  while (end > 0 && isSpace(written[end - 1]!)) end--;
  const b = written.subarray(0, end);
  const table = new FieldTable(eventClass);
  let lead = 0;
  while (lead < b.length && isSpace(b[lead]!)) lead++;
  if (b.length - lead === 1 && b[lead] === 0x30) {
    // "0" clears the filter: every event passes.
    return { expression, event: eventClass.name, predicates: [], program: [], root: undefined };
  }
  const { parens, preds } = calcStack(b);
  return new Parser(expression, b, table, eventClass.name, options).run(parens, preds);
}

function fail(
  kind: KernelErrorKind,
  column: number,
  errno: string,
  detail?: string,
  span?: { start: number; end: number },
): never {
  throw kernelError(kind, column, { errno, ...(detail !== undefined ? { detail } : {}), ...(span ? { span } : {}) });
}

/** First pass (calc_stack): quotes and parentheses balance, and an upper bound on predicates. */
function calcStack(b: Uint8Array): { parens: number; preds: number } {
  let isPred = false;
  let preds = 0;
  let open = 1;
  let maxOpen = 1;
  let quote = 0;
  let lastQuote = 0;
  let i = 0;
  for (; i < b.length; i++) {
    const c = b[i]!;
    if (isSpace(c)) continue;
    if (quote) {
      if (c === quote) quote = 0;
      continue;
    }
    if (c === 0x27 || c === 0x22) {
      quote = c;
      lastQuote = i;
    } else if (c === 0x7c || c === 0x26) {
      if (b[i + 1] === c) {
        isPred = false;
        continue;
      }
    } else if (c === 0x28) {
      isPred = false;
      if (++open > maxOpen) maxOpen = open;
      continue;
    } else if (c === 0x29) {
      isPred = false;
      if (open === 1) fail('TOO_MANY_CLOSE', i, 'EPERM', "')' without a matching '('", { start: i, end: i + 1 });
      open--;
      continue;
    }
    if (!isPred) {
      preds++;
      isPred = true;
    }
  }
  if (quote)
    fail('MISSING_QUOTE', lastQuote, 'ESRCH', 'the quote is never closed', { start: lastQuote, end: b.length });
  if (open !== 1) {
    // The kernel walks back to find the unmatched '(' (and never looks at byte 0).
    let level = open;
    for (i--; i > 0; i--) {
      const c = b[i]!;
      if (quote) {
        if (c === quote) quote = 0;
        continue;
      }
      if (c === 0x28) {
        if (level === open) fail('TOO_MANY_OPEN', i, 'ENOENT', "'(' without a matching ')'", { start: i, end: i + 1 });
        level--;
      } else if (c === 0x29) level++;
      else if (c === 0x27 || c === 0x22) quote = c;
    }
    fail('TOO_MANY_OPEN', 0, 'ENOENT', "'(' without a matching ')'");
  }
  if (preds === 0) fail('ERRNO', 0, 'EINVAL', 'empty expression');
  return { parens: maxOpen, preds };
}

class Parser {
  readonly #expression: string;
  readonly #b: Uint8Array;
  readonly #table: FieldTable;
  readonly #event: string;
  readonly #options: ParseOptions;
  readonly #predicates: Predicate[] = [];
  readonly #tokens: Token[] = [];

  constructor(expression: string, b: Uint8Array, table: FieldTable, event: string, options: ParseOptions) {
    this.#expression = expression;
    this.#b = b;
    this.#table = table;
    this.#event = event;
    this.#options = options;
  }

  #at(i: number): number {
    return i < this.#b.length ? this.#b[i]! : 0;
  }

  /** Second pass (predicate_parse): builds the branch program and the token stream for the tree. */
  run(nrParens: number, nrPreds: number): ParsedFilter {
    const b = this.#b;
    const prog: MutableEntry[] = [];
    const inverts: number[] = [];
    const stack: number[] = [0];
    let invert = 0;
    let ptr = 0;
    let errno = 'ENOMEM';
    const maxPreds = nrPreds + 2;
    outer: while (this.#at(ptr) !== 0) {
      const next = ptr++;
      const c = b[next]!;
      if (isSpace(c)) continue;
      if (c === 0x28) {
        if (stack.length - 1 > nrParens) fail('ERRNO', 0, 'EINVAL');
        stack.push(invert);
        this.#tokens.push('(');
        continue;
      }
      if (c === 0x21 && this.#at(next + 1) !== 0x3d && this.#at(next + 1) !== 0x7e) {
        invert = invert ? 0 : 1;
        this.#tokens.push('!');
        continue;
      }
      const n = prog.length;
      if (n >= maxPreds) fail('TOO_MANY_PREDS', next, errno);
      inverts.push(invert);
      prog.push({ pred: n, whenToBranch: 0, target: n - 1 });
      ptr = next + this.#parsePredicate(next, ptr);
      this.#tokens.push(n);
      errno = 'EPERM';
      for (;;) {
        const nx = ptr++;
        const d = this.#at(nx);
        if (isSpace(d)) continue;
        if (d === 0x26 || d === 0x7c) {
          if (this.#at(nx + 1) !== d) this.#junk(nx);
          ptr++;
        } else if (d !== 0x29 && d !== 0) this.#junk(nx);
        const top = stack.length - 1;
        invert = stack[top]! & Flag.Invert;
        if (stack[top]! & Flag.And) {
          updatePreds(prog, prog.length - 1, invert);
          stack[top]! &= ~Flag.And;
        }
        if (d === 0x26) {
          stack[top]! |= Flag.And;
          this.#tokens.push('&&');
          break;
        }
        if (stack[top]! & Flag.Or) {
          updatePreds(prog, prog.length - 1, invert ? 0 : 1);
          stack[top]! &= ~Flag.Or;
        }
        if (d === 0x7c) {
          stack[top]! |= Flag.Or;
          this.#tokens.push('||');
          break;
        }
        if (d === 0) break outer;
        if (top === 0) fail('TOO_MANY_CLOSE', ptr, 'EPERM', "')' without a matching '('");
        stack.pop();
        this.#tokens.push(')');
      }
    }
    if (stack.length !== 1) fail('TOO_MANY_OPEN', ptr, errno, "'(' without a matching ')'");
    const n = prog.length;
    if (n === 0) fail('NO_FILTER', ptr, 'EINVAL', 'no comparison in the expression');
    prog.push({ pred: -1, whenToBranch: 0, target: 1 }, { pred: -1, whenToBranch: 0, target: 0 });
    prog[n - 1]!.target = n;
    prog[n - 1]!.whenToBranch = 0;
    for (let i = n - 1; i--; ) {
      const target = prog[i]!.target;
      // A dangling target (e.g. "a || b &&") makes the kernel read before its array and fail with a warning.
      if (target < 0) fail('ERRNO', 0, 'EINVAL', 'the kernel cannot compile this operator sequence');
      if (prog[i]!.whenToBranch === prog[target]!.whenToBranch) prog[i]!.target = prog[target]!.target;
    }
    const program: ProgramEntry[] = [];
    for (let i = 0; i < n; i++) {
      const e = prog[i]!;
      if (e.target <= i) fail('ERRNO', 0, 'EINVAL', 'the kernel cannot compile this operator sequence');
      program.push({ pred: e.pred, whenToBranch: (inverts[i]! ^ e.whenToBranch) === 1, target: e.target });
    }
    return {
      expression: this.#expression,
      event: this.#event,
      predicates: this.#predicates,
      program,
      root: buildTree(this.#tokens),
    };
  }

  #junk(at: number): never {
    fail('TOO_MANY_PREDS', at, 'EPERM', "expected '&&', '||', ')' or the end after a comparison", {
      start: at,
      end: at + 1,
    });
  }

  #text(start: number, end: number): string {
    return latin1.decode(this.#b.subarray(start, end));
  }

  /**
   * One comparison starting at `start` (parse_pred). The kernel reports its errors at `pos + i` where pos is one
   * past the comparison's first byte: that off-by-one is part of the observable behaviour and kept.
   * Returns the number of bytes consumed.
   */
  #parsePredicate(start: number, pos: number): number {
    const at = (i: number) => this.#at(start + i);
    const col = (i: number) => pos + i;
    let i = 0;
    while (isSpace(at(i))) i++;
    let s = i;
    while (isAlnum(at(i)) || at(i) === 0x5f) i++;
    if (i === s) fail('ERRNO', 0, 'EPERM', 'expected a field name', { start: start + s, end: start + s + 1 });
    const name = this.#text(start + s, start + i);
    const field = this.#table.get(name);
    const nameSpan = { start: start + s, end: start + i };
    if (field === undefined) {
      const hint = this.#table.closest(name);
      const detail = `'${name}' is not a field of ${this.#event}${hint ? ` (did you mean '${hint}'?)` : ''}`;
      fail('FIELD_NOT_FOUND', col(i), 'EINVAL', detail, nameSpan);
    }
    let ustring = false;
    let fn = false;
    if (this.#startsWith(start + i, '.ustring')) {
      ustring = true;
      i += 8;
    }
    if (this.#startsWith(start + i, '.function')) {
      fn = true;
      i += 9;
    }
    while (isSpace(at(i))) i++;
    let op: CompareOp | undefined;
    for (const o of COMPARE_OPS) {
      if (this.#startsWith(start + i, o)) {
        op = o;
        break;
      }
    }
    if (op === undefined) {
      fail('INVALID_OP', col(i), 'EINVAL', `expected an operator (${COMPARE_OPS.join(' ')}) after ${name}`, {
        start: start + i,
        end: start + i + 1,
      });
    }
    i += op.length;
    while (isSpace(at(i))) i++;
    s = i;
    let test: PredicateTest;
    let not = false;
    const c = at(i);
    if (fn) {
      const longSize = this.#options.longSize ?? 8;
      if (field.size !== longSize) {
        fail('ILLEGAL_FIELD_OP', col(i), 'EINVAL', `.function needs an address field of ${longSize} bytes`, nameSpan);
      }
      if (op !== '==' && op !== '!=') fail('INVALID_OP', col(i), 'EINVAL', '.function supports only == and !=');
      let address: bigint | undefined;
      let symbol: string;
      if (isDigit(c)) {
        while (isAlnum(at(i))) i++;
        if (i - s >= MAX_NUMBER) fail('OPERAND_TOO_LONG', col(i), 'EINVAL');
        symbol = this.#text(start + s, start + i);
        address = kstrtoull(symbol);
        if (address === undefined) fail('INVALID_VALUE', col(i), 'EINVAL', `'${symbol}' is not an address`);
      } else {
        while (at(i) !== 0 && !isSpace(at(i))) i++;
        symbol = this.#text(start + s, start + i);
        address = this.#options.symbols?.lookupName(symbol);
        if (address === undefined) fail('NO_FUNCTION', col(i), 'EINVAL', `no kernel symbol '${symbol}'`);
      }
      const range = this.#options.symbols?.lookupRange(address);
      if (range === undefined) fail('NO_FUNCTION', col(i), 'EINVAL', `no kernel function contains ${symbol}`);
      test = { type: 'function', start: range.start, end: range.end, symbol };
    } else if (this.#startsWith(start + i, 'CPUS')) {
      if (field.kind !== 'cpumask' && field.kind !== 'cpu' && field.kind !== 'number') {
        fail('ILLEGAL_FIELD_OP', col(i), 'EINVAL', `CPUS{} needs a CPU, cpumask or integer field; ${name} is not`);
      }
      if (op !== '==' && op !== '!=' && op !== '&') {
        fail('ILLEGAL_FIELD_OP', col(i), 'EINVAL', 'CPUS{} supports only ==, != and &');
      }
      i += 4;
      if (at(i++) !== 0x7b) fail('MISSING_BRACE_OPEN', col(i), 'EINVAL');
      const maskStart = i;
      while (at(i) !== 0 && at(i) !== 0x7d) i++;
      if (at(i) !== 0x7d) fail('MISSING_BRACE_CLOSE', col(i), 'EINVAL');
      if (maskStart === i) fail('INVALID_CPULIST', col(i), 'EINVAL', 'empty CPU list');
      const list = this.#text(start + maskStart, start + i);
      const nr = this.#options.nrCpuIds ?? 64;
      const mask = parseCpuList(list, nr);
      if (mask === undefined) fail('INVALID_CPULIST', col(i), 'EINVAL', `'${list}' is not a CPU list for ${nr} CPUs`);
      i++;
      const single = mask.size === 1;
      if (field.kind === 'cpumask') test = { type: 'cpumask', mask, single };
      else if (single) {
        if (op === '&') op = '==';
        const cpu = [...mask][0]!;
        if (field.kind === 'cpu') test = { type: 'cpu', value: cpu };
        else {
          test =
            field.size === 1 || field.size === 2 || field.size === 4 || field.size === 8
              ? { type: 'number', value: BigInt(cpu) }
              : { type: 'never' };
          not = op === '!=';
        }
      } else test = { type: 'cpu-in-mask', mask };
    } else if (c === 0x27 || c === 0x22) {
      if (op === '!=') not = true;
      else if (op !== '~' && op !== '==')
        fail('ILLEGAL_FIELD_OP', col(i), 'EINVAL', `strings support ==, != and ~, not ${op}`);
      if (!isStringKind(field)) {
        fail(
          'EXPECT_DIGIT',
          col(i),
          'EINVAL',
          `${name} is a number (${field.cType}); compare it with a number`,
          nameSpan,
        );
      }
      for (i++; at(i) !== 0; i++) if (at(i) === c) break;
      if (at(i) === 0) fail('MISSING_QUOTE', col(i), 'EINVAL');
      s++;
      if (i - s >= MAX_STRING)
        fail('OPERAND_TOO_LONG', col(i), 'EINVAL', `strings are limited to ${MAX_STRING - 1} bytes`);
      const pattern = parsePattern(this.#b.slice(start + s, start + i), op === '~');
      if (op === '~') not = pattern.negate;
      test = { type: 'string', pattern };
      i++;
    } else if (isDigit(c) || c === 0x2d) {
      if (isStringKind(field)) {
        fail('EXPECT_STRING', col(i), 'EINVAL', `${name} is a string (${field.cType}); quote the value`, nameSpan);
      }
      if (op === '~') fail('ILLEGAL_FIELD_OP', col(i), 'EINVAL', '~ applies to strings only');
      if (c === 0x2d) i++;
      while (isAlnum(at(i))) i++;
      if (i - s >= MAX_NUMBER) fail('OPERAND_TOO_LONG', col(i), 'EINVAL');
      const literal = this.#text(start + s, start + i);
      const value = field.signed ? kstrtoll(literal) : kstrtoull(literal);
      if (value === undefined) {
        const why =
          !field.signed && literal.startsWith('-') ? `${name} is unsigned` : 'not an integer the kernel reads';
        fail('ILLEGAL_INTVAL', pos + s, 'EINVAL', `'${literal}': ${why}`, { start: start + s, end: start + i });
      }
      const u64 = BigInt.asUintN(64, value);
      if (field.kind === 'cpu') {
        test = op === '&' ? { type: 'never' } : { type: 'cpu', value: Number(BigInt.asIntN(32, u64)) };
      } else {
        const sized = field.size === 1 || field.size === 2 || field.size === 4 || field.size === 8;
        test = sized ? { type: 'number', value: u64 } : { type: 'never' };
        not = op === '!=';
      }
    } else {
      fail('INVALID_VALUE', col(i), 'EINVAL', 'expected a number, a quoted string or CPUS{...}', {
        start: start + i,
        end: start + i + 1,
      });
    }
    this.#predicates.push({
      field,
      op,
      not,
      test,
      ustring,
      span: { start, end: start + i },
      text: this.#text(start, start + i),
    });
    return i;
  }

  #startsWith(at: number, text: string): boolean {
    for (let k = 0; k < text.length; k++) if (this.#at(at + k) !== text.charCodeAt(k)) return false;
    return true;
  }
}

function isStringKind(f: FilterField): boolean {
  return (
    f.kind === 'static-string' ||
    f.kind === 'dynamic-string' ||
    f.kind === 'rel-string' ||
    f.kind === 'pointer-string' ||
    f.kind === 'comm'
  );
}

function updatePreds(prog: MutableEntry[], n: number, invert: number): void {
  const t = prog[n]!.target;
  // The kernel would write before its array here; refuse instead (see the dangling-target check).
  if (t < 0) fail('ERRNO', 0, 'EINVAL', 'the kernel cannot compile this operator sequence');
  const s = prog[t]!.target;
  prog[t]!.whenToBranch = invert;
  prog[t]!.target = n;
  prog[n]!.target = s;
}

/** Builds the tree from the validated token stream (shunting-yard; a trailing && or || is ignored, as the kernel does). */
function buildTree(tokens: readonly Token[]): FilterNode {
  const operands: FilterNode[] = [];
  const ops: ('(' | '!' | '&&' | '||')[] = [];
  const apply = (op: '&&' | '||') => {
    const right = operands.pop()!;
    const left = operands.pop()!;
    const kind = op === '&&' ? 'and' : 'or';
    const children: FilterNode[] = [];
    for (const side of [left, right]) {
      if (side.kind === kind) children.push(...side.children);
      else children.push(side);
    }
    operands.push({ kind, children });
  };
  const closeOperand = () => {
    while (ops.length > 0 && ops[ops.length - 1] === '!') {
      ops.pop();
      operands.push({ kind: 'not', child: operands.pop()! });
    }
  };
  let last = tokens.length;
  while (last > 0 && (tokens[last - 1] === '&&' || tokens[last - 1] === '||')) last--;
  for (let k = 0; k < last; k++) {
    const t = tokens[k]!;
    if (typeof t === 'number') {
      operands.push({ kind: 'pred', index: t });
      closeOperand();
    } else if (t === '(' || t === '!') ops.push(t);
    else if (t === ')') {
      while (ops[ops.length - 1] !== '(') apply(ops.pop() as '&&' | '||');
      ops.pop();
      closeOperand();
    } else {
      const prec = t === '&&' ? 2 : 1;
      for (;;) {
        const top = ops[ops.length - 1];
        if (top !== '&&' && top !== '||') break;
        if ((top === '&&' ? 2 : 1) < prec) break;
        apply(ops.pop() as '&&' | '||');
      }
      ops.push(t);
    }
  }
  while (ops.length > 0) {
    const op = ops.pop()!;
    if (op === '&&' || op === '||') apply(op);
  }
  return operands[0]!;
}
