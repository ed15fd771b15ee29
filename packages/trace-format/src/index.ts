// Their home is @evtrace/errors; re-exported for the importers that took them from here.
export { errnoText, errorText } from '@evtrace/errors';
export { BitReader } from './codec/bit-reader.ts';
export { ByteOut, utf8 } from './codec/byte-out.ts';
export { compileScope, type DecodeContext, type FieldDecoder, type ScopeName } from './codec/decoder.ts';
export { isCtf2Metadata, parseCtf2Metadata } from './ctf/ctf2.ts';
export type { IndexedCtfTrace } from './ctf/indexed.ts';
export type { CtfLinesOptions, PayloadLayout, PayloadTest } from './ctf/lines.ts';
export { LTTNG_INDEX_MAGIC, type LttngIndexEntry, parseLttngIndex } from './ctf/lttng-index.ts';
export { readMetadataText } from './ctf/metadata.ts';
export {
  type ByteSource,
  type CtfTraceData,
  type CtfTraceReader,
  type OpenCtfOptions,
  openCtfTrace,
  readCtfTrace,
} from './ctf/reader.ts';
export {
  createRingbufCtfWriter,
  RINGBUF_PADDING_TYPE,
  type RingbufCtfOptions,
  type RingbufCtfWriter,
  reencodeRingbufPages,
  ringbufMetadata,
} from './ctf/ringbuf.ts';
export { type BabeltraceTextOptions, createBabeltraceTextFormatter, formatValue } from './ctf/text.ts';
export { type ParseTsdlOptions, parseTsdl } from './ctf/tsdl/parser.ts';
export {
  type CtfEventInput,
  type CtfWriter,
  type CtfWriterOptions,
  createCtfWriter,
  type EventHeaderKind,
  writeCtfTrace,
} from './ctf/writer.ts';
export {
  createTextFormatter,
  createTextLineWriter,
  detectTraceKind,
  type OpenTraceOptions,
  openTrace,
} from './detect.ts';
export { type InputLocation, TraceFormatError, type TraceFormatErrorCode } from './errors.ts';
export { FTRACE_COMMON_FIELDS, FTRACE_COMMON_FIELDS_TEXT } from './ftrace/common-fields.ts';
export {
  compileRecordEncoder,
  type PackOptions,
  PagePacker,
  packPages,
  type RecordEncoder,
  type TimedRecord,
} from './ftrace/encode.ts';
export {
  type CpuPages,
  decodeCpuPages,
  type FtraceMetadata,
  mergeByTime,
  type PageChunk,
} from './ftrace/events.ts';
export { type FormatFileOptions, parseFormatFile } from './ftrace/format-file.ts';
export { formatFileText, HEADER_EVENT_TEXT, headerPageText } from './ftrace/format-text.ts';
export {
  type EventHeaderLayout,
  kernelPageLayout,
  type PageLayout,
  parseHeaderEvent,
  parseHeaderPage,
} from './ftrace/headers.ts';
export { hexFields } from './ftrace/hex-fields.ts';
export {
  type IndexedTrace,
  type IndexFtraceOptions,
  indexFtrace,
  indexFtraceProgressively,
  mergeOrder,
} from './ftrace/indexed.ts';
export {
  type CheckPagesOptions,
  checkPages,
  type PageInfo,
  type PageSource,
  type RecordSink,
  readPage,
} from './ftrace/page.ts';
export type { TaskNames } from './ftrace/plugins.ts';
export {
  compilePrintFormat,
  compilePrintWriter,
  type PrintFormatter,
  type PrintkStrings,
  type PrintStyle,
  type PrintWriter,
} from './ftrace/print-fmt.ts';
export {
  type FtraceReader,
  type FtraceReadOptions,
  isRawPagesDir,
  listRawCpuFiles,
  openRawPagesDir,
  RAW_FINALIZING_FILE,
  RAW_HEAD_ROOM_FILE,
  type RawCpuFile,
} from './ftrace/raw-dir.ts';
export {
  finalizingLine,
  RAW_FINALIZING_REGIONS_FILE,
  RAW_REGIONS_FILE,
  RAW_REGIONS_PAGES_FILE,
  type RegionExtent,
  regionsText,
} from './ftrace/raw-regions.ts';
export {
  compileRecordCheck,
  compileRecordDecoder,
  type DecodedRecord,
  type RecordCheck,
  type RecordDecoder,
} from './ftrace/record.ts';
export { Kallsyms, parseCmdlines, parsePrintkFormats } from './ftrace/symbols.ts';
export { sliceOf, sliceTest, type TimeSlices, timeSlices } from './ftrace/time-slices.ts';
export { copyTraceDat, type TraceDatCopy, type TraceDatCopyOptions } from './ftrace/tracedat/copy-v7.ts';
export type { TraceDatCpuPages, TraceDatFileBytes, TraceDatPagesInput } from './ftrace/tracedat/pages.ts';
export {
  isTraceDat,
  openTraceDat,
  readTraceDat,
  type TraceDatBuffer,
  type TraceDatInfo,
  type TraceDatPagesCopy,
  type TraceDatReader,
  type TraceDatReadOptions,
} from './ftrace/tracedat/read.ts';
export { synthesizeFtraceClass } from './ftrace/tracedat/synthesize.ts';
export {
  encodeTraceDat,
  type TraceDatFileResult,
  type TraceDatWriteOptions,
  type TraceDatWriteResult,
  writeTraceDat,
} from './ftrace/tracedat/write-events.ts';
export {
  completeTraceDatPages,
  type TraceDatAnchor,
  type TraceDatPagesOptions,
  traceDatPagesHeadSize,
  writeTraceDatHead,
  writeTraceDatPages,
} from './ftrace/tracedat/write-pages.ts';
export {
  FIFO_WRITER_WAIT_MS,
  type InputFileKind,
  inputFileKind,
  inputLabel,
  type ReadInputOptions,
  readInput,
  requireSeekableInput,
  STREAM_INPUT_LIMIT,
} from './input.ts';
export {
  createJsonEventEncoder,
  encodeJsonEvent,
  eventComm,
  JsonEventDecoder,
  type JsonEventDecoderOptions,
  type JsonLineLocation,
  TASK_SCOPE,
} from './live/json-event.ts';
export { LiveMerge, type LiveMergeOptions, type Timed } from './live/merge.ts';
export {
  type EventSource,
  FTRACE_PAGE_RECORD,
  type PageSink,
  type SourceCpuCounters,
} from './model/source.ts';
export type * from './model/types.ts';
export {
  checkOutputDir,
  type OutputAccess,
  type OutputDirOptions,
  outputError,
  outputMode,
  writeBytesAtomically,
  writeDirAtomically,
  writeFileAtomically,
} from './output/atomic.ts';
export {
  createJsonFormatter,
  createJsonWriter,
  eventClassSchema,
  eventToJsonLine,
  type JsonFormatterOptions,
  type JsonLineWriter,
  jsonValue,
} from './output/json.ts';
export { type PerfettoOptions, writePerfettoJson } from './output/perfetto-json.ts';
export { type PerfettoTraceOptions, writePerfettoTrace } from './output/perfetto-proto.ts';
export { type PerfettoSchema, perfettoProtoRoot, perfettoSchema } from './output/perfetto-schema.ts';
export {
  createFtraceBodyFormatter,
  createFtraceBodyWriter,
  createFtraceLineWriter,
  createFtraceTextFormatter,
  type FtraceBodyOptions,
  type FtraceLineWriter,
  type FtraceTextOptions,
  fieldsText,
  fieldValueText,
  ftraceTimestamp,
} from './output/text.ts';
export {
  Feature as PerfFeature,
  isPerfData,
  type PerfDataHeader,
  type PerfEventAttr,
  type PerfFileSection,
  RecordType as PerfRecordType,
  readPerfDataHeader,
  SampleBits as PerfSampleBits,
} from './perf-data/header.ts';
export { openPerfData, type PerfDataReader, type PerfDataReadOptions, readPerfData } from './perf-data/reader.ts';
export {
  type PerfChunk,
  RecordCursor as PerfRecordCursor,
  type SampleLayout as PerfSampleLayout,
  sampleBranchStack,
  sampleLayout,
  sampleRaw,
} from './perf-data/records.ts';
export { PerfSamples, type SampleVisitor, type SampleWalk } from './perf-data/samples.ts';
