export {
  type AgentClient,
  connectAgent,
  type SubscribeOptions,
  type Subscription,
  type SubscriptionBatch,
  type SubscriptionItem,
} from './client.ts';
export {
  AGENT_ERROR_CODES,
  type AgentErrorCode,
  type LocalErrorCode,
  ProtocolError,
  type ProtocolErrorCode,
} from './errors.ts';
export { encodeLine, type Frame, LineDecoder, MAX_REQUEST_BYTES, MAX_SERVER_MESSAGE_BYTES } from './framing.ts';
export {
  type AttachSpec,
  type BufferList,
  type CpuStatus,
  type DetachResult,
  type EventFormat,
  type HelloResult,
  type LiveEvent,
  type LiveEventFlags,
  type OutputFormat,
  type PersistentBackend,
  type PersistentBufferStatus,
  PROTOCOL_VERSION,
  PROTOCOL_VERSIONS,
  REQUEST_OPS,
  type Request,
  type RequestOp,
  type Response,
  type ServerMessage,
  type SessionMode,
  type SessionSourceKind,
  type SessionSpec,
  type SessionState,
  type SessionStatus,
  type SnapshotResult,
  type StreamMessage,
  type SubscribeResult,
  type TriggerSignal,
  type TriggerSpec,
  type UnreadableBuffer,
  V2_OPS,
} from './messages.ts';
export { defaultSocketPath } from './paths.ts';
export {
  type BufferStats,
  type BufferStatsOrigin,
  type BufferStatsSample,
  type CpuBufferStats,
  checkBufferStats,
  STATS_HISTORY,
  type StatsRequest,
} from './stats.ts';
export { endMessage, eventsMessage, liveMessage, lossMessage, streamDecoder, subscribeResult } from './stream.ts';
export {
  BUFFER_NAME,
  MAX_ITEMS,
  MAX_TEXT,
  type Parsed,
  parseRequest,
  parseServerMessage,
  SESSION_NAME,
} from './validate.ts';
