export { parseDuration, parseSize } from '../units.ts';
export { ConfigError, type ConfigErrorCode, type ConfigOrigin, describeOrigin } from './errors.ts';
export {
  type AgentFlags,
  type ConfigFile,
  type LoadAgentConfigOptions,
  loadAgentConfig,
  MAX_CONFIG_BYTES,
  parseConfigFile,
  resolveAgentConfig,
} from './load.ts';
export {
  type AgentConfig,
  type AgentSetting,
  CONFIG_ENV,
  DEFAULT_CONFIG_FILE,
  DEFAULTS,
  HARDWARE_TABLE_KEYS,
  type HardwareConfig,
  PAGE_OFFLINE_ACTIONS,
  type PageOfflineAction,
  type RotatePolicy,
  SETTINGS,
  type SessionConfig,
  type SessionFormat,
  type SessionMode,
  type SessionSource,
} from './schema.ts';
export { formatListenAddress, type ListenAddress, parseListenAddress } from './units.ts';
