/**
 * The agent's metrics in a private prom-client registry. Counters live in the daemon (its sessions count events as
 * they record); each metric here reads them at scrape time through the {@link MetricsProvider}, so nothing is counted
 * twice and a destroyed session simply stops being exported.
 */
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import pkg from '../../package.json' with { type: 'json' };
import { MetricsError } from './errors.ts';
import type { AgentHealth, MetricsProvider, SessionCounters, SessionState } from './types.ts';

/** One sample of a contributed metric. */
export interface Sample {
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/**
 * A metric a subsystem contributes (hw-mce's `node_edac_*` counters, for example), in plain data so contributors need
 * not depend on prom-client. `collect` runs at every scrape.
 */
export interface CollectedMetric {
  /** The metric name; counters end in `_total`. */
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge';
  /** Every label a sample may carry. */
  readonly labelNames: readonly string[];
  collect(): Iterable<Sample>;
}

/** The agent's registry and the hook subsystems add their metrics through. */
export interface MetricsRegistry {
  /** The private prom-client registry (never the global one). */
  readonly registry: Registry;
  /**
   * Adds a contributed metric; returns a function that removes it. A collector that throws at scrape time exports
   * nothing that scrape and counts in `evtrace_collector_errors_total`.
   *
   * @throws {MetricsError} `ERR_METRICS_COLLECTOR` for an invalid or already registered name or invalid label names.
   */
  registerCollector(metric: CollectedMetric): () => void;
  /** The exposition text of every metric. */
  metrics(): Promise<string>;
  /** The content type of {@link metrics}'s text. */
  readonly contentType: string;
}

const SESSION_STATES: readonly SessionState[] = ['created', 'running', 'stopped', 'failed'];
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

interface Scrape {
  readonly sessions: readonly SessionCounters[];
  readonly health: AgentHealth;
}

/** A counter whose value comes from elsewhere: at each scrape it is cleared and set to the current totals. */
function mirror(
  registry: Registry,
  config: { name: string; help: string; labelNames: readonly string[]; type: 'counter' | 'gauge' },
  samples: () => Iterable<Sample>,
  onError?: (error: unknown) => void,
): Counter | Gauge {
  const fill = (set: (labels: Record<string, string>, value: number) => void) => {
    let list: Sample[];
    try {
      list = [...samples()];
    } catch (error) {
      if (onError === undefined) throw error;
      onError(error);
      return;
    }
    // Prometheus takes float64; a negative or non-finite total is a bug upstream and is left out, not exported.
    for (const s of list)
      if (Number.isFinite(s.value) && (config.type === 'gauge' || s.value >= 0)) set({ ...s.labels }, s.value);
  };
  const base = { name: config.name, help: config.help, labelNames: [...config.labelNames], registers: [registry] };
  if (config.type === 'counter') {
    return new Counter({
      ...base,
      collect() {
        this.reset();
        fill((labels, value) => this.inc(labels, value));
      },
    });
  }
  return new Gauge({
    ...base,
    collect() {
      this.reset();
      fill((labels, value) => this.set(labels, value));
    },
  });
}

/**
 * Creates the agent's registry over `provider`: per session, source and CPU the events, lost events and bytes
 * (`evtrace_events_total`, `evtrace_lost_events_total`, `evtrace_bytes_total`), session state and viewers, the agent's
 * health, its build (`evtrace_build_info`), and Node's process metrics (`process_*`, `nodejs_*`: start time, CPU and
 * resident memory are there, so the agent does not repeat them under its own names).
 */
export function createMetricsRegistry(provider: MetricsProvider): MetricsRegistry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // One read of the provider per scrape: every metric of a scrape sees the same moment.
  let current: Scrape | undefined;
  const scrape = (): Scrape => {
    if (current === undefined) {
      current = { sessions: provider.sessions(), health: provider.health() };
      setImmediate(() => {
        current = undefined;
      });
    }
    return current;
  };
  const perCpu = (field: 'events' | 'lost' | 'bytes') =>
    function* (): Iterable<Sample> {
      for (const s of scrape().sessions)
        for (const c of s.cpus)
          yield { labels: { session: s.name, source: s.source, cpu: String(c.cpu) }, value: c[field] };
    };
  const perSession = (value: (s: SessionCounters) => number) =>
    function* (): Iterable<Sample> {
      for (const s of scrape().sessions) yield { labels: { session: s.name, source: s.source }, value: value(s) };
    };
  const agent = (value: (h: AgentHealth) => number) => () => [{ labels: {}, value: value(scrape().health) }];
  const cpuLabels = ['session', 'source', 'cpu'];
  const sessionLabels = ['session', 'source'];
  const builtIn: [string, string, 'counter' | 'gauge', string[], () => Iterable<Sample>][] = [
    ['evtrace_events_total', 'Events recorded, per session, source and CPU.', 'counter', cpuLabels, perCpu('events')],
    [
      'evtrace_lost_events_total',
      'Events lost (overwritten or dropped), per session, source and CPU.',
      'counter',
      cpuLabels,
      perCpu('lost'),
    ],
    [
      'evtrace_bytes_total',
      'Bytes of event data recorded, per session, source and CPU.',
      'counter',
      cpuLabels,
      perCpu('bytes'),
    ],
    [
      'evtrace_session_state',
      'The state of each session: 1 for the current state, 0 for the others.',
      'gauge',
      ['session', 'source', 'mode', 'state'],
      function* () {
        for (const s of scrape().sessions)
          for (const state of SESSION_STATES)
            yield {
              labels: { session: s.name, source: s.source, mode: s.mode, state },
              value: s.state === state ? 1 : 0,
            };
      },
    ],
    [
      'evtrace_session_viewers',
      'Viewers attached to each session.',
      'gauge',
      sessionLabels,
      perSession((s) => s.viewers),
    ],
    [
      'evtrace_viewer_lost_events_total',
      "Events a session's viewers lost by reading too slowly (the session itself lost none of them).",
      'counter',
      sessionLabels,
      perSession((s) => s.viewerLost),
    ],
    ['evtrace_agent_uptime_seconds', 'Seconds since the agent started.', 'gauge', [], agent((h) => h.uptimeSeconds)],
    ['evtrace_agent_sessions', 'Sessions that exist.', 'gauge', [], agent((h) => h.sessions)],
    ['evtrace_agent_viewers', 'Viewers attached, over all sessions.', 'gauge', [], agent((h) => h.viewers)],
    [
      'evtrace_agent_viewer_queued_bytes',
      'Bytes of event text queued for viewers that read slower than events arrive, over all sessions.',
      'gauge',
      [],
      agent((h) => h.viewerQueuedBytes ?? 0),
    ],
    [
      'evtrace_agent_protocol_errors_total',
      'Control requests refused as malformed, oversize or not permitted.',
      'counter',
      [],
      agent((h) => h.protocolErrors),
    ],
    [
      'evtrace_build_info',
      'Always 1: the evtrace version and the Node.js version it runs on, as labels.',
      'gauge',
      ['version', 'node'],
      () => [{ labels: { version: pkg.version, node: process.versions.node }, value: 1 }],
    ],
  ];
  for (const [name, help, type, labelNames, samples] of builtIn)
    mirror(registry, { name, help, type, labelNames }, samples);

  const collectorErrors = new Counter({
    name: 'evtrace_collector_errors_total',
    help: 'Scrapes at which a contributed collector failed (its metric was left out).',
    labelNames: ['collector'],
    registers: [registry],
  });

  return {
    registry,
    contentType: registry.contentType,
    metrics: () => registry.metrics(),
    registerCollector(metric) {
      if (!METRIC_NAME.test(metric.name))
        throw new MetricsError(
          'ERR_METRICS_COLLECTOR',
          `${JSON.stringify(metric.name)} is not a Prometheus metric name`,
        );
      const badLabel = metric.labelNames.find((l) => !LABEL_NAME.test(l) || l.startsWith('__'));
      if (badLabel !== undefined)
        throw new MetricsError(
          'ERR_METRICS_COLLECTOR',
          `${metric.name}: ${JSON.stringify(badLabel)} is not a label name`,
        );
      if (registry.getSingleMetric(metric.name) !== undefined)
        throw new MetricsError('ERR_METRICS_COLLECTOR', `a metric named ${metric.name} is already registered`);
      mirror(
        registry,
        metric,
        () => metric.collect(),
        () => collectorErrors.inc({ collector: metric.name }),
      );
      return () => registry.removeSingleMetric(metric.name);
    },
  };
}
