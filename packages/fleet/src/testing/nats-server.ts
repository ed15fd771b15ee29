/**
 * Real `nats-server` processes for tests and benchmarks (Debian's package): JetStream on a free loopback port with a
 * temporary store, alone or as a cluster, started, killed and restarted on the same port and store.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

/**
 * The server binary: $NATS_SERVER, else `nats-server` on PATH or in /usr/sbin, where Debian installs it and where a
 * user's PATH often does not reach (so it is started by that path).
 */
export const NATS_SERVER =
  process.env.NATS_SERVER ??
  (process.env.PATH ?? '')
    .split(':')
    .concat(['/usr/sbin', '/usr/bin', '/usr/local/bin'])
    .map((dir) => join(dir, 'nats-server'))
    .find((path) => path.startsWith('/') && existsSync(path)) ??
  'nats-server';

/** Whether a nats-server can be started here (for `describe.skipIf`). */
export function natsServerAvailable(): boolean {
  return process.env.NATS_SERVER !== undefined || NATS_SERVER !== 'nats-server';
}

/** A free TCP port on the loopback interface. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Options of {@link NatsServer.start}. */
export interface NatsServerOptions {
  /** Its directory: config file and JetStream store. */
  readonly dir: string;
  readonly name?: string;
  readonly port?: number;
  /** Accepted credentials; without them anyone may connect. */
  readonly user?: string;
  readonly password?: string;
  /** A cluster: its name, this server's route port and every member's route port. */
  readonly cluster?: { readonly name: string; readonly port: number; readonly routes: readonly number[] };
}

export class NatsServer {
  readonly options: NatsServerOptions & { port: number; name: string };
  #proc: ChildProcess | undefined;
  #log = '';

  private constructor(options: NatsServerOptions & { port: number; name: string }) {
    this.options = options;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.options.port}`;
  }

  get pid(): number | undefined {
    return this.#proc?.pid;
  }

  /** What the server printed, for failure messages. */
  get log(): string {
    return this.#log;
  }

  static async start(options: NatsServerOptions): Promise<NatsServer> {
    const s = new NatsServer({ ...options, port: options.port ?? (await freePort()), name: options.name ?? 'n1' });
    await s.restart();
    return s;
  }

  /** (Re)starts it on the same port and store; resolves once it accepts clients. */
  async restart(): Promise<void> {
    const o = this.options;
    mkdirSync(join(o.dir, 'store'), { recursive: true });
    const lines = [
      `listen: "127.0.0.1:${o.port}"`,
      `server_name: "${o.name}"`,
      `jetstream { store_dir: "${join(o.dir, 'store')}" }`,
    ];
    if (o.user !== undefined) lines.push(`authorization { user: "${o.user}", password: "${o.password ?? ''}" }`);
    if (o.cluster !== undefined)
      lines.push(
        `cluster { name: "${o.cluster.name}", listen: "127.0.0.1:${o.cluster.port}", routes: [${o.cluster.routes
          .map((p) => `"nats-route://127.0.0.1:${p}"`)
          .join(', ')}] }`,
      );
    const config = join(o.dir, 'server.conf');
    writeFileSync(config, `${lines.join('\n')}\n`);
    const proc = spawn(NATS_SERVER, ['-c', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.#proc = proc;
    // This run's readiness, not the previous run's.
    this.#log = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`nats-server ${o.name} did not start in 20 s:\n${this.#log}`)),
        20_000,
      );
      proc.stderr!.setEncoding('utf8');
      proc.stderr!.on('data', (d: string) => {
        this.#log += d;
        if (this.#log.includes('Server is ready')) {
          clearTimeout(timer);
          resolve();
        }
      });
      proc.once('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`nats-server ${o.name} exited with ${code}:\n${this.#log}`));
      });
    });
  }

  /** Kills it (SIGKILL by default: nothing is flushed or said goodbye) and waits for it to be gone. */
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const p = this.#proc;
    this.#proc = undefined;
    if (p === undefined || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise((resolve) => p.once('exit', resolve));
    p.kill(signal);
    await gone;
  }
}

/** A cluster of `size` JetStream servers (named n1..nN) routed to each other, each in a directory under `dir`. */
export async function startCluster(dir: string, size = 3): Promise<NatsServer[]> {
  const ports = await Promise.all(Array.from({ length: size }, () => freePort()));
  const routes = await Promise.all(Array.from({ length: size }, () => freePort()));
  return Promise.all(
    ports.map((port, i) =>
      NatsServer.start({
        dir: join(dir, `n${i + 1}`),
        name: `n${i + 1}`,
        port,
        cluster: { name: 'evtrace-test', port: routes[i]!, routes },
      }),
    ),
  );
}

/**
 * Resolves once JetStream answers through `url` (a cluster elects its meta leader a while after its servers are up,
 * and again after a member was killed); rejects after `timeoutMs`.
 */
export async function jetStreamReady(url: string, timeoutMs = 30_000): Promise<void> {
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const until = Date.now() + timeoutMs;
  const nc = await connect({ servers: url });
  try {
    for (;;) {
      try {
        const jsm = await jetstreamManager(nc, { timeout: 1000 });
        await jsm.streams.list().next();
        return;
      } catch (error) {
        if (Date.now() > until) throw new Error(`JetStream at ${url} did not answer in ${timeoutMs} ms: ${error}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  } finally {
    await nc.close();
  }
}
