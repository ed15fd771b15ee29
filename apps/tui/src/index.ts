export { parseViewerArgs, type ViewerArgs } from './args.ts';
export { type AttachOptions, attachAgent } from './data/agent-source.ts';
export { type DemoSource, type DemoSourceOptions, startDemoSource } from './data/demo-source.ts';
export { type FileSource, fileStats, openFileSource } from './data/file-source.ts';
export {
  type CompiledFilter,
  commResolver,
  type FilterProblem,
  type FilterScan,
  scanFilter,
  validateFilter,
} from './data/filter.ts';
export { LiveWindow } from './data/live-window.ts';
export type {
  BufferGaugeView,
  CpuGauge,
  CpuStats,
  SessionControl,
  SessionInfo,
  SourceStats,
  TypeStats,
  ViewerSource,
} from './data/source.ts';
export { arrayStore, type EventStore, pidOf, subsetStore } from './data/store.ts';
export { ViewerError, type ViewerErrorCode } from './errors.ts';
export { liveToJsonLines, traceToJsonLines } from './jsonl.ts';
export { EXIT, runViewer, type ViewerIO } from './main.ts';
export { App, type AppProps } from './ui/app.tsx';
export { type KeyPress, keyPresses, useKeys } from './ui/keys.ts';
export { colourWanted, type Theme } from './ui/theme.ts';
export { VIEWS } from './views/index.ts';
export type { ViewDefinition, ViewProps, ViewStatus } from './views/registry.ts';
