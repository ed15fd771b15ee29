export type { CompareOp, FilterNode, ParsedFilter, Predicate, PredicateTest, ProgramEntry } from './ast.ts';
export { CommTracker } from './comm.ts';
export {
  type CompileOptions,
  compileFilter,
  compileRecordFilter,
  type EventPredicate,
  type RecordPredicate,
} from './compile.ts';
export { parseCpuList } from './cpulist.ts';
export {
  FilterError,
  type FilterErrorCode,
  KERNEL_MESSAGES,
  type KernelErrorKind,
  type Span,
} from './errors.ts';
export { type FieldKind, FieldTable, type FilterField, kindOfCType } from './fields.ts';
export { globMatch } from './glob.ts';
export { MAX_FILTER_BYTES, type ParseOptions, parseFilter } from './parser.ts';
export { type PushDownOptions, type PushDownPlan, planPushDown, type UserSpaceNeeds } from './pushdown.ts';
export { parseKallsyms, type SymbolRange, type SymbolTable } from './symbols.ts';
export { evaluateTree, renderTree } from './tree.ts';
