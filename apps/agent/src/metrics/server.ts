/**
 * The Prometheus endpoint: `GET /metrics` over HTTP, in the text exposition format, from the agent's private
 * registry.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { formatListenAddress, type ListenAddress } from '../config/units.ts';
import { MetricsError } from './errors.ts';
import { type CollectedMetric, createMetricsRegistry } from './registry.ts';
import type { MetricsProvider } from './types.ts';

/** A running metrics endpoint. */
export interface MetricsServer {
  /** The address it listens on; the real port when port 0 was asked for. */
  readonly address: ListenAddress;
  /** `http://HOST:PORT/metrics`. */
  readonly url: string;
  /** Adds a subsystem's metric; see {@link MetricsRegistry.registerCollector}. */
  registerCollector(metric: CollectedMetric): () => void;
  /** The exposition text a scrape would get now. */
  metrics(): Promise<string>;
  /** Stops listening and ends open connections (Prometheus keeps them alive). */
  close(): Promise<void>;
}

/**
 * Starts the endpoint on `address` (port 0: a free port) over `provider`.
 *
 * @throws {MetricsError} `ERR_METRICS_LISTEN` when the address cannot be listened on.
 */
export async function startMetricsServer(address: ListenAddress, provider: MetricsProvider): Promise<MetricsServer> {
  const metrics = createMetricsRegistry(provider);
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('only GET and HEAD\n');
      return;
    }
    if (path === '/') {
      response
        .writeHead(200, { 'content-type': 'text/plain; charset=utf-8' })
        .end('evtrace agent: metrics at /metrics\n');
      return;
    }
    if (path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at /metrics\n');
      return;
    }
    metrics.metrics().then(
      (text) => {
        response.writeHead(200, { 'content-type': metrics.contentType });
        response.end(request.method === 'HEAD' ? undefined : text);
      },
      (error: unknown) => {
        response
          .writeHead(500, { 'content-type': 'text/plain' })
          .end(`evtrace: metrics failed: ${(error as Error)?.message ?? error}\n`);
      },
    );
  });
  await listen(server, address);
  const bound = server.address() as AddressInfo;
  const actual = { host: address.host, port: bound.port };
  return {
    address: actual,
    url: `http://${formatListenAddress(actual)}/metrics`,
    registerCollector: (metric) => metrics.registerCollector(metric),
    metrics: () => metrics.metrics(),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function listen(server: Server, address: ListenAddress): Promise<void> {
  return new Promise((resolve, reject) => {
    const fail = (error: NodeJS.ErrnoException) => {
      const why =
        error.code === 'EADDRINUSE'
          ? 'the address is in use'
          : error.code === 'EADDRNOTAVAIL'
            ? 'not an address of this host'
            : error.code === 'EACCES'
              ? 'permission denied (ports below 1024 need root)'
              : error.code === 'ENOTFOUND'
                ? 'the host name does not resolve'
                : error.message;
      reject(
        new MetricsError('ERR_METRICS_LISTEN', `metrics: cannot listen on ${formatListenAddress(address)}: ${why}`, {
          cause: error,
        }),
      );
    };
    server.once('error', fail);
    server.listen(address.port, address.host, () => {
      server.off('error', fail);
      resolve();
    });
  });
}
