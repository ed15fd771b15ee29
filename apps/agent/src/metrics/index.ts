export { MetricsError, type MetricsErrorCode } from './errors.ts';
export { processHealth } from './process.ts';
export { type CollectedMetric, createMetricsRegistry, type MetricsRegistry, type Sample } from './registry.ts';
export { type MetricsServer, startMetricsServer } from './server.ts';
export type {
  AgentHealth,
  CpuCounters,
  MetricsProvider,
  SessionCounters,
  SessionMode,
  SessionState,
} from './types.ts';
