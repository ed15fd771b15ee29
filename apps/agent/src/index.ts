export type { CliIO } from './command.ts';
export {
  type AgentConfig,
  type AgentFlags,
  ConfigError,
  type ConfigErrorCode,
  type ConfigOrigin,
  DEFAULT_CONFIG_FILE,
  type ListenAddress,
  type LoadAgentConfigOptions,
  loadAgentConfig,
  type RotatePolicy,
  type SessionConfig,
} from './config/index.ts';
export { CliExit, EXIT_STATUS_HELP, ExitCode, exitCodeOf } from './exit-codes.ts';
export {
  type AgentHealth,
  type CollectedMetric,
  type CpuCounters,
  MetricsError,
  type MetricsErrorCode,
  type MetricsProvider,
  type MetricsServer,
  processHealth,
  type Sample,
  type SessionCounters,
  startMetricsServer,
} from './metrics/index.ts';
export { createProgram, runCli } from './program.ts';
