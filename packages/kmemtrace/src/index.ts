export { AddressKeys, hexAddress } from './address.ts';
export {
  type AnalyzeOptions,
  analyze,
  fragmentation,
  type KmemAnalysis,
  KmemAnalyzer,
  type KmemErrorKind,
  type KmemIssue,
  type LeakSite,
  type PageStats,
  type SlabStat,
  type Summary,
  type TimePoint,
} from './analyze.ts';
export { diffReports, formatDiffText, type KmemDiff, type SiteDiff } from './diff.ts';
export { KmemError, type KmemErrorCode, type KmemLocation } from './errors.ts';
export type { Allocator, KmemEvent, KmemOp, KmemSource } from './event.ts';
export { KmemColumns, KmemEventStream } from './event.ts';
export { BUILTIN_GFP_TABLE, type GfpTable, gfpNamer, gfpNames, gfpValue, parseGfpTable } from './gfp.ts';
export {
  detectKmemInput,
  type KmemInputKind,
  type OpenKmemOptions,
  openKmemInput,
  perfScriptSource,
  readKmemtrace,
  requireKmemEvents,
} from './inputs.ts';
export {
  decodeKmemtrace,
  KMEMTRACE_ABI_VERSION,
  KMEMTRACE_RECORD_SIZE,
  type KmemtraceDecoded,
  type KmemtraceDecodeOptions,
  type KmemtraceLayout,
} from './kmemtrace-abi.ts';
export {
  LiveKmemAnalysis,
  type LiveKmemOptions,
  type LiveKmemStats,
} from './live.ts';
export { type PerfDataSourceOptions, perfDataSource, perfKallsyms } from './perf-data.ts';
export { analysePerfData, type PerfDataAnalysisOptions } from './perf-data-thread.ts';
export { type PerfScriptInput, type PerfScriptOptions, PerfScriptReader, parsePerfScript } from './perf-script.ts';
export {
  type AllocRow,
  buildReport,
  type CallerRow,
  DEFAULT_SORT,
  formatReportText,
  type KmemReport,
  parseSortKeys,
  type ReportOptions,
  SORT_KEYS,
  type SortKey,
  sortSlabStats,
  writeReportText,
} from './report.ts';
export {
  fromFields,
  fromTraceEvent,
  gfpTableOf,
  type KmemKind,
  kmemKind,
  type TraceInput,
  traceSource,
} from './tracepoints.ts';
