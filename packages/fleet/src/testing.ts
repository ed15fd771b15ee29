/** Test and benchmark helpers: real nats-server processes (`@evtrace/fleet/testing`). */
export {
  freePort,
  jetStreamReady,
  NATS_SERVER,
  NatsServer,
  type NatsServerOptions,
  natsServerAvailable,
  startCluster,
} from './testing/nats-server.ts';
