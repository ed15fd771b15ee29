export {
  type CallSegment,
  type Coverage,
  callHistory,
  edgeCoverage,
  formatCallHistory,
  type HotEdge,
  hotEdges,
  lastBranches,
} from './analyses.ts';
export {
  addressKey,
  BRANCH_KINDS,
  type Branch,
  type BranchExtra,
  BranchFlag,
  type BranchKind,
  BranchList,
  type Decoded,
  hexAddress,
  parseHexAddress,
  splitAddress,
} from './branch.ts';
export { type ElfSymbol, type ElfSymbols, readElfSymbols } from './elf.ts';
export { BtsError, type BtsErrorCode, type BtsLocation } from './errors.ts';
export { type ParsedCallHistory, parseGdbCallHistory, parseGdbInstructionHistory } from './gdb.ts';
export { captureHardware, detectHardware, type HardwareSupport } from './hardware.ts';
export {
  type BranchFormat,
  type BranchInput,
  decodeBranchInput,
  detectFormat,
  type ReadBranchOptions,
  readBranchInput,
} from './input.ts';
export { BTS_BRANCH_FORMAT, BtsSource, type BtsSourceOptions, QEMU_SOURCE_LABEL } from './live-source.ts';
export {
  type AddressSpace,
  BranchMultiplexer,
  type ContextSpec,
  inSpace,
  selectSpace,
  type TaskSwitch,
  TraceContext,
  X86_64_KERNEL_BOUNDARY,
} from './multiplex.ts';
export { FunctionNames } from './names.ts';
export { decodePerfData, isPerfData } from './perf-data.ts';
export { describeProbe, type PerfEventProbe, probeBts, probeLbr } from './perf-event.ts';
export { type PerfBranchField, type PerfScriptOptions, parsePerfScript } from './perf-script.ts';
export { type CaptureQemuOptions, captureQemu, parseQemuLog, type QemuLogOptions, x86BranchKind } from './qemu.ts';
export { BTS_RECORD_SIZE, type BtsRecordFormat, type DecodeBtsOptions, decodeBts, encodeBts } from './raw.ts';
export { inferLoadBias, type SymbolHit, Symbolizer } from './symbols.ts';
export { attributeTasks, branchesFromEvents, readTraceBranches, type TraceBranches } from './trace.ts';
