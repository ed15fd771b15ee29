export { applyPageAction, MEMORY_SYSFS, type TriggerResult, TriggerRunner } from './actions.ts';
export { type AmdDecoding, decodeSmca, fruText, SMCA_BANKS, SMCA_IPIDS, type SmcaBank } from './amd.ts';
export { decodeLegacyAmd } from './amd-legacy.ts';
export {
  bit,
  bits,
  type McgCapBits,
  type McgStatusBits,
  type MiscBits,
  mcgCapBits,
  mcgStatusBits,
  miscBits,
  type StatusBits,
  statusBits,
  statusFlagNames,
} from './bits.ts';
export {
  DEFAULT_CONFIG,
  type PageAction,
  parseMcelogConfig,
  parseRate,
  type Rate,
  type TrackerConfig,
} from './config.ts';
export {
  CPU_TYPES,
  type CpuInfo,
  type CpuKind,
  cpuidOf,
  cpuTypeByName,
  identifyCpu,
  parseCpuid,
} from './cpu.ts';
export {
  type DecodedMce,
  type DecodeOptions,
  decodeMce,
  type ErrorLocation,
  THERMAL_BANK,
  whereText,
} from './decode.ts';
export {
  EDAC_ERROR_TYPES,
  EDAC_SYSFS,
  type EdacControllerCounters,
  type EdacDimmCounters,
  type EdacErrorType,
  type EdacEvent,
  type EdacSysfsResult,
  edacCountersText,
  edacJson,
  edacSeverity,
  edacSummary,
  readEdacSysfs,
} from './edac.ts';
export { formatLocation, type InputNote, MceError, type MceErrorCode, type MceLocation, noteText } from './errors.ts';
export { LineBatches, readGrowth } from './follow.ts';
export { MC_EVENT_FORMAT, MCE_RECORD_FORMAT, MCE_THRESHOLD_FORMAT } from './formats.ts';
export { edacFromTraceFields, mceFromTraceFields, readMceTrace, type TraceInputResult } from './inputs/ftrace.ts';
export { readJournalExport, readJournalJson } from './inputs/journal.ts';
export { type RasdaemonResult, readRasdaemonDb } from './inputs/rasdaemon.ts';
export {
  encodeStructMce,
  MIN_RECORD_LENGTH,
  probeRecordLength,
  readStructMce,
  STRUCT_MCE,
  type StructMceOptions,
  type StructMceResult,
  structMceAt,
} from './inputs/struct-mce.ts';
export { readMceText, type TextReadResult } from './inputs/text.ts';
export { readTraceText } from './inputs/trace-text.ts';
export { decodeIntelModel, type ModelDecoding } from './intel-model.ts';
export {
  HardwareSource,
  type HardwareSourceOptions,
  mcEventTraceFields,
  mceTraceFields,
  type ThresholdOutcome,
  thresholdTraceFields,
} from './live-source.ts';
export { decodeMcaCode, type ErrorClass, type McaCode } from './mca-code.ts';
export {
  ior,
  MCE_IOCTL,
  MCE_OVERFLOW,
  MCELOG_DEVICE,
  type McelogAbi,
  type McelogRead,
  queryMcelog,
  readMcelogDevice,
} from './mcelog-device.ts';
export { edacMetrics, exposition, MceCounters, type MceMetric, type MetricSample } from './metrics.ts';
export { type MceJson, toJson, toJsonLine, toText } from './output.ts';
export {
  type BufferKind,
  detectBufferKind,
  detectPathKind,
  type ReadOptions,
  type ReadResult,
  readMceBuffer,
  readMceFile,
} from './read.ts';
export { emptyRecord, hex, type InputKind, type MceRecord, type RecordSource, X86_VENDOR } from './record.ts';
export { type Grade, gradeAmd, gradeIntel, type SdmClass, SEVERITY_ORDER, type Severity, worse } from './severity.ts';
export { type EdacChange, EdacPoller, type LiveBatch, TracefsMceSource } from './sources.ts';
export { type DimmCount, LeakyBucket, Tracker, type TrackerEvent, type TrackerEventKind } from './tracker.ts';
