/**
 * The command-line flags that say how to reach NATS, declared once for every program that connects (`evtrace agent
 * --nats`, `evtrace fleet`, `evtrace-view --nats`): each declares them with its own argument parser from this table
 * and turns the values into {@link FleetConnectOptions} with {@link connectionFromFlags}.
 */
import type { FleetConnectOptions } from './connect.ts';
import { FleetError } from './errors.ts';

/** The values of the connection flags, keyed as argument parsers camel-case them (`--nats-tls-ca`: `natsTlsCa`). */
export interface ConnectionFlagValues {
  nats?: string | undefined;
  natsCredentials?: string | undefined;
  natsUser?: string | undefined;
  natsPassword?: string | undefined;
  natsToken?: string | undefined;
  natsTlsCa?: string | undefined;
  natsTlsCert?: string | undefined;
  natsTlsKey?: string | undefined;
  natsStream?: string | undefined;
}

/** One flag: its name without dashes, what its value is, what it does, and the key of its value. */
export interface ConnectionFlag {
  readonly name: string;
  readonly value: string;
  readonly description: string;
  readonly key: keyof ConnectionFlagValues;
}

/**
 * The credential, TLS and stream flags. `--nats URL` itself is not here: each program says in its own words what
 * the URL is for (where to publish, where to read).
 */
export const CONNECTION_FLAGS: readonly ConnectionFlag[] = [
  {
    name: 'nats-credentials',
    value: 'file',
    description: 'a NATS credentials file (.creds: JWT and NKey seed)',
    key: 'natsCredentials',
  },
  {
    name: 'nats-user',
    value: 'name',
    description: 'NATS user (its password: --nats-password or EVTRACE_NATS_PASSWORD)',
    key: 'natsUser',
  },
  {
    name: 'nats-password',
    value: 'text',
    description: 'NATS password (prefer EVTRACE_NATS_PASSWORD: arguments are visible to ps)',
    key: 'natsPassword',
  },
  { name: 'nats-token', value: 'text', description: 'NATS token (prefer EVTRACE_NATS_TOKEN)', key: 'natsToken' },
  {
    name: 'nats-tls-ca',
    value: 'file',
    description: 'CA certificate the NATS server is checked against',
    key: 'natsTlsCa',
  },
  {
    name: 'nats-tls-cert',
    value: 'file',
    description: 'client certificate for NATS (with --nats-tls-key)',
    key: 'natsTlsCert',
  },
  { name: 'nats-tls-key', value: 'file', description: 'client key for NATS', key: 'natsTlsKey' },
  { name: 'nats-stream', value: 'name', description: 'the JetStream stream (default EVTRACE)', key: 'natsStream' },
];

/** Where a reader connects when neither `--nats` nor EVTRACE_NATS_URL says. */
export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';

/**
 * How to connect, from the flags' values over the environment (EVTRACE_NATS_URL, EVTRACE_NATS_PASSWORD,
 * EVTRACE_NATS_TOKEN) over `defaults` (a configuration file's).
 * @throws FleetError `ERR_FLEET_ARGUMENT` for a client certificate without its key or the other way round.
 */
export function connectionFromFlags(
  o: ConnectionFlagValues,
  env: NodeJS.ProcessEnv = process.env,
  defaults: ConnectionFlagValues = {},
): FleetConnectOptions {
  const user = o.natsUser ?? defaults.natsUser;
  const password = o.natsPassword ?? env.EVTRACE_NATS_PASSWORD ?? defaults.natsPassword;
  const token = o.natsToken ?? env.EVTRACE_NATS_TOKEN ?? defaults.natsToken;
  const credentials = o.natsCredentials ?? defaults.natsCredentials;
  const ca = o.natsTlsCa ?? defaults.natsTlsCa;
  const cert = o.natsTlsCert ?? defaults.natsTlsCert;
  const key = o.natsTlsKey ?? defaults.natsTlsKey;
  if ((cert === undefined) !== (key === undefined))
    throw new FleetError('ERR_FLEET_ARGUMENT', '--nats-tls-cert and --nats-tls-key go together');
  const tls =
    ca !== undefined || cert !== undefined
      ? { ...(ca !== undefined ? { ca } : {}), ...(cert !== undefined ? { cert, key: key! } : {}) }
      : undefined;
  return {
    servers: o.nats ?? env.EVTRACE_NATS_URL ?? defaults.nats ?? DEFAULT_NATS_URL,
    ...(user !== undefined ? { user, password: password ?? '' } : {}),
    ...(token !== undefined ? { token } : {}),
    ...(credentials !== undefined ? { credentials } : {}),
    ...(tls !== undefined ? { tls } : {}),
  };
}

/** How a connection authenticates, for messages and `--check-config`: never the secret itself. */
export function authKind(o: FleetConnectOptions): 'credentials' | 'token' | 'user' | 'none' {
  if (o.credentials !== undefined) return 'credentials';
  if (o.token !== undefined) return 'token';
  if (o.user !== undefined) return 'user';
  return 'none';
}
