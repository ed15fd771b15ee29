export {
  type EventName,
  globToRegExp,
  listEvents,
  matchEvents,
  parseAvailableEvents,
  readEventFormat,
} from './catalog.ts';
export { DEMO_EVENTS, DEMO_LABEL, type DemoOptions, recordDemo } from './demo.ts';
export { TracefsError, type TracefsErrorCode } from './errors.ts';
export { type EventFilters, planEventFilters, type ScopedFilter } from './event-filters.ts';
export { type EventFilterPlan, lastErrorLogEntry, planEventFilter, writeKernelFilter } from './filter.ts';
export {
  cleanStaleInstances,
  createInstance,
  type Instance,
  type InstanceOwner,
  instanceOwner,
  listInstances,
  OWN_INSTANCE,
  removeInstanceDir,
} from './instance.ts';
export { KernelSource, type KernelSourceOptions, KernelTap } from './live.ts';
export { DemoSource, type DemoSourceOptions } from './live-demo.ts';
export { type FindTracefsOptions, findTracefs, TRACEFS_MOUNT_POINT, tracefsInMounts } from './mount.ts';
export {
  type FinalizeOptions,
  type FinalizeResult,
  finalizeRecording,
  type OutputFormat,
} from './output.ts';
export { countPageRecords, type PageCount, parseCpuStats } from './pages.ts';
export {
  DEFAULT_NICE,
  type Raised,
  REALTIME_PRIORITY,
  raisePriority,
  restorePriority,
  type ThreadPolicy,
} from './priority.ts';
export { type CpuLoss, type RecordOptions, type RecordResult, record } from './recorder.ts';
export { type RawDirTraceDatOptions, writeTraceDatFromRawDir } from './tracedat.ts';
