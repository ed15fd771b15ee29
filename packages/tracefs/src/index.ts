export { DemoSource, type DemoSourceOptions } from './demo/demo-source.ts';
export { DEMO_EVENTS, DEMO_LABEL, type DemoOptions, recordDemo } from './demo/record-demo.ts';
export { TracefsError, type TracefsErrorCode } from './errors.ts';
export { type EventFilters, planEventFilters, type ScopedFilter } from './filter/event-filters.ts';
export { type EventFilterPlan, lastErrorLogEntry, planEventFilter, writeKernelFilter } from './filter/filter.ts';
export {
  type EventName,
  globToRegExp,
  listEvents,
  matchEvents,
  parseAvailableEvents,
  readEventFormat,
} from './instance/catalog.ts';
export {
  cleanStaleInstances,
  createInstance,
  type Instance,
  type InstanceOwner,
  instanceOwner,
  listInstances,
  OWN_INSTANCE,
  removeInstanceDir,
} from './instance/instance.ts';
export { type FindTracefsOptions, findTracefs, TRACEFS_MOUNT_POINT, tracefsInMounts } from './instance/mount.ts';
export { KernelSource, type KernelSourceOptions, KernelTap } from './live/kernel-source.ts';
export {
  type FinalizeOptions,
  type FinalizeResult,
  finalizeRecording,
  type OutputFormat,
} from './output/output.ts';
export { type RawDirTraceDatOptions, writeTraceDatFromRawDir } from './output/tracedat.ts';
export { countPageRecords, type PageCount, parseCpuStats } from './pages/pages.ts';
export {
  closeRawPipes,
  kernelLoss,
  MAX_PAGES_PER_DRAIN,
  openRawPipe,
  type RawPageHandler,
  type RawPipe,
  RawPipeDrain,
  rawPipeCpus,
  withoutStackTraces,
} from './pages/raw-pipe.ts';
export type { CpuLoss, RecordOptions, RecordResult } from './record/options.ts';
export {
  DEFAULT_NICE,
  type Raised,
  REALTIME_PRIORITY,
  raisePriority,
  restorePriority,
  type ThreadPolicy,
} from './record/priority.ts';
export { record } from './record/recorder.ts';
