export type { NatsConnection } from '@nats-io/transport-node';
export { connectError, connectFleet, type FleetConnectOptions, serverList } from './connect.ts';
export {
  eventText,
  FleetEventDecoder,
  type HardwareLine,
  type HostState,
  hardwareLine,
  hostState,
  sessionOf,
} from './display.ts';
export {
  decodeEnvelope,
  ENVELOPE_VERSION,
  type Envelope,
  type EnvelopeHeader,
  encodeEnvelope,
  stamped,
  stamper,
} from './envelope.ts';
export { FleetError, type FleetErrorCode } from './errors.ts';
export { type EventFilter, eventFilter } from './filter.ts';
export {
  authKind,
  CONNECTION_FLAGS,
  type ConnectionFlag,
  type ConnectionFlagValues,
  connectionFromFlags,
  DEFAULT_NATS_URL,
} from './flags.ts';
export {
  FleetPublisher,
  type PublisherOptions,
  type PublisherStats,
  type ShotNotice,
} from './publisher.ts';
export {
  type ErrorSummary,
  type FleetBatch,
  type FleetRecord,
  fleetErrors,
  fleetHosts,
  type HostSummary,
  pullShot,
  type ReadOptions,
  readBatches,
  readChannel,
  type Since,
} from './reader.ts';
export {
  type FleetSeverity,
  type HardwareErrorRecord,
  isSeverity,
  placeOf,
  SEVERITIES,
  type ThresholdRecord,
} from './records.ts';
export { Spool, type SpoolDropped, type SpoolEntry, type SpoolOptions, type SpoolPosition } from './spool.ts';
export { ensureStream, type StreamSettings, streamSettings } from './stream.ts';
export {
  CHANNELS,
  type Channel,
  checkHost,
  DEFAULT_SHOT_BUCKET,
  DEFAULT_STREAM,
  eventsChannel,
  type FixedChannel,
  messageId,
  parseSubject,
  SUBJECT_ROOT,
  subjectFilter,
  subjectOf,
} from './subjects.ts';
export { type TailOptions, tailEvents } from './tail.ts';
