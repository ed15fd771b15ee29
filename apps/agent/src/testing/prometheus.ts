/**
 * A real Prometheus server (Debian's `prometheus`) for tests: scrapes the given targets every second into a private
 * storage directory and answers queries over its HTTP API.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Why Prometheus cannot run here, or undefined when it can. */
export function prometheusMissing(): string | undefined {
  const r = spawnSync('prometheus', ['--version'], { stdio: 'ignore' });
  return r.error !== undefined || r.status !== 0
    ? 'prometheus is not installed (apt-get install prometheus)'
    : undefined;
}

/** A free TCP port on 127.0.0.1 (bound and released: good enough for tests). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** One element of an instant vector. */
export interface PromSample {
  readonly metric: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Prometheus {
  readonly url: string;
  /** Runs an instant query. */
  query(expr: string): Promise<PromSample[]>;
  /** Polls `expr` until `ok` accepts its result; throws with the last result after `timeoutMs`. */
  waitFor(expr: string, ok: (samples: PromSample[]) => boolean, timeoutMs?: number): Promise<PromSample[]>;
  /** Its log so far, for failure messages. */
  log(): string;
  stop(): Promise<void>;
}

/** Starts Prometheus scraping `targets` (HOST:PORT, path /metrics) every second as job `evtrace`. */
export async function startPrometheus(targets: readonly string[]): Promise<Prometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-prometheus-'));
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: evtrace\n    static_configs:\n      - targets: [${targets.map((t) => `'${t}'`).join(', ')}]\n`,
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let output = '';
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout!.on('data', (d: Buffer) => (output += d));
  child.stderr!.on('data', (d: Buffer) => (output += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`prometheus exited with ${child.exitCode}:\n${output}`);
    }
    try {
      if ((await fetch(`${url}/-/ready`)).ok) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`prometheus not ready after 30 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const query = async (expr: string): Promise<PromSample[]> => {
    const response = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await response.json()) as {
      status: string;
      error?: string;
      data?: { result: { metric: Record<string, string>; value: [number, string] }[] };
    };
    if (body.status !== 'success') throw new Error(`prometheus query ${expr}: ${body.error}`);
    return body.data!.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  };
  return {
    url,
    query,
    async waitFor(expr, ok, timeoutMs = 20_000) {
      const until = Date.now() + timeoutMs;
      let last: PromSample[] = [];
      for (;;) {
        last = await query(expr);
        if (ok(last)) return last;
        if (Date.now() > until)
          throw new Error(
            `prometheus: ${expr} did not reach the expected value; last: ${JSON.stringify(last)}\n${output}`,
          );
        await new Promise((r) => setTimeout(r, 250));
      }
    },
    log: () => output,
    stop,
  };
}

/** Why node_exporter cannot run here, or undefined when it can. */
export function nodeExporterMissing(): string | undefined {
  const r = spawnSync('prometheus-node-exporter', ['--version'], { stdio: 'ignore' });
  return r.error !== undefined || r.status !== 0
    ? 'node_exporter is not installed (apt-get install prometheus-node-exporter)'
    : undefined;
}

export interface NodeExporter {
  /** HOST:PORT, a target for {@link startPrometheus}. */
  readonly address: string;
  stop(): Promise<void>;
}

/** Starts Debian's node_exporter with only its textfile collector, reading `dir`. */
export async function startNodeExporter(dir: string): Promise<NodeExporter> {
  const address = `127.0.0.1:${await freePort()}`;
  let output = '';
  const child = spawn(
    'prometheus-node-exporter',
    [
      '--collector.disable-defaults',
      '--collector.textfile',
      `--collector.textfile.directory=${dir}`,
      `--web.listen-address=${address}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout.on('data', (d: Buffer) => (output += d));
  child.stderr.on('data', (d: Buffer) => (output += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`node_exporter exited with ${child.exitCode}:\n${output}`);
    try {
      if ((await fetch(`http://${address}/metrics`)).ok) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`node_exporter not ready after 30 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { address, stop };
}
