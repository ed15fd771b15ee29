/** Connecting to NATS with the credentials a fleet member has, failing with a message that says what went wrong. */
import { readFileSync } from 'node:fs';
import { connect, credsAuthenticator, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import { FleetError } from './errors.ts';

/** How to reach NATS: the server URLs and at most one way to authenticate, plus TLS. */
export interface FleetConnectOptions {
  /** `nats://host:port`, several separated by commas (a cluster's members). */
  readonly servers: string | readonly string[];
  readonly user?: string;
  readonly password?: string;
  readonly token?: string;
  /** A `.creds` file (JWT and NKey seed), as `nsc` writes. */
  readonly credentials?: string;
  readonly tls?: { readonly ca?: string; readonly cert?: string; readonly key?: string };
  /** The client name the server shows (`nats server report connections`). */
  readonly name?: string;
  /** Keep reconnecting for ever once connected (publishers). Default false: a reader fails when the server goes. */
  readonly reconnect?: boolean;
  /** Milliseconds a connection attempt may take. Default 5000. */
  readonly timeoutMs?: number;
}

/** The server list of `servers`, split at commas. */
export function serverList(servers: string | readonly string[]): string[] {
  return (typeof servers === 'string' ? servers.split(',') : [...servers]).map((s) => s.trim()).filter(Boolean);
}

function authText(o: FleetConnectOptions): string {
  if (o.credentials !== undefined) return `credentials file ${o.credentials}`;
  if (o.token !== undefined) return 'a token';
  if (o.user !== undefined) return `user ${JSON.stringify(o.user)}`;
  return 'no credentials';
}

/**
 * Connects. @throws FleetError `ERR_FLEET_AUTH` when the server refuses the credentials, `ERR_FLEET_CONNECT` when it
 * cannot be reached, `ERR_FLEET_ARGUMENT` for a credentials or TLS file that cannot be read.
 */
export async function connectFleet(o: FleetConnectOptions): Promise<NatsConnection> {
  const servers = serverList(o.servers);
  if (servers.length === 0) throw new FleetError('ERR_FLEET_ARGUMENT', 'no NATS server URL given');
  const options: NodeConnectionOptions = {
    servers,
    name: o.name ?? 'evtrace',
    timeout: o.timeoutMs ?? 5000,
    maxReconnectAttempts: o.reconnect === true ? -1 : 0,
    reconnectTimeWait: 250,
    ...(o.user !== undefined ? { user: o.user, pass: o.password ?? '' } : {}),
    ...(o.token !== undefined ? { token: o.token } : {}),
  };
  if (o.credentials !== undefined) {
    let creds: Uint8Array;
    try {
      creds = readFileSync(o.credentials);
    } catch (error) {
      throw new FleetError(
        'ERR_FLEET_ARGUMENT',
        `cannot read the NATS credentials file ${o.credentials}: ${(error as NodeJS.ErrnoException).code ?? error}`,
      );
    }
    options.authenticator = credsAuthenticator(creds);
  }
  if (o.tls !== undefined)
    options.tls = {
      ...(o.tls.ca !== undefined ? { caFile: o.tls.ca } : {}),
      ...(o.tls.cert !== undefined ? { certFile: o.tls.cert } : {}),
      ...(o.tls.key !== undefined ? { keyFile: o.tls.key } : {}),
    };
  try {
    return await connect(options);
  } catch (error) {
    throw connectError(error, servers.join(','), o);
  }
}

/** The FleetError of a failed connection attempt. */
export function connectError(error: unknown, servers: string, o: FleetConnectOptions): FleetError {
  const message = (error as Error).message ?? String(error);
  const cause = (error as { cause?: Error }).cause?.message;
  if (/authoriz|authentica|permission/i.test(`${message} ${cause ?? ''}`))
    return new FleetError(
      'ERR_FLEET_AUTH',
      `NATS at ${servers} refused ${authText(o)}: ${cause ?? message} (check the user, password, token or credentials file)`,
      { cause: error },
    );
  return new FleetError('ERR_FLEET_CONNECT', `cannot connect to NATS at ${servers}: ${cause ?? message}`, {
    cause: error,
  });
}
