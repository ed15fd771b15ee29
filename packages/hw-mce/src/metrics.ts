/**
 * Metrics for the agent's Prometheus endpoint, as plain data in the shape of its `registerCollector` hook (name, help,
 * type, label names, and a `collect()` run at every scrape), so this package needs no Prometheus client. EDAC keeps
 * node_exporter's names and labels (`node_edac_correctable_errors_total{controller}`,
 * `node_edac_csrow_correctable_errors_total{controller,csrow}` with `csrow="unknown"` for errors without location, and
 * the uncorrectable twins); per-DIMM EDAC counters and machine-check counts per bank and per DIMM are added under
 * `evtrace_`.
 */
import type { DecodedMce } from './decode.ts';
import { EDAC_SYSFS, type EdacControllerCounters, readEdacSysfs } from './edac.ts';
import type { Severity } from './severity.ts';

/** One sample of a metric. */
export interface MetricSample {
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A metric the agent registers (the shape of its `CollectedMetric`). */
export interface MceMetric {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge';
  readonly labelNames: readonly string[];
  collect(): Iterable<MetricSample>;
}

/**
 * EDAC metrics read from sysfs at each scrape (one read serves all of a scrape's metrics: the tree is read again when
 * the first metric of the next scrape collects).
 */
export function edacMetrics(options: { sysfs?: string; read?: () => EdacControllerCounters[] } = {}): MceMetric[] {
  const root = options.sysfs ?? EDAC_SYSFS;
  const read = options.read ?? (() => readEdacSysfs(root).controllers);
  let cached: EdacControllerCounters[] | undefined;
  // The first metric of a scrape reads; the others reuse it.
  const first = () => (cached = read());
  const again = () => cached ?? read();
  const controller = (c: EdacControllerCounters) => String(c.mc);
  return [
    {
      name: 'node_edac_correctable_errors_total',
      help: 'Total correctable memory errors.',
      type: 'counter',
      labelNames: ['controller'],
      collect: () => first().map((c) => ({ labels: { controller: controller(c) }, value: c.ce })),
    },
    {
      name: 'node_edac_uncorrectable_errors_total',
      help: 'Total uncorrectable memory errors.',
      type: 'counter',
      labelNames: ['controller'],
      collect: () => again().map((c) => ({ labels: { controller: controller(c) }, value: c.ue })),
    },
    {
      name: 'node_edac_csrow_correctable_errors_total',
      help: 'Total correctable memory errors for this csrow.',
      type: 'counter',
      labelNames: ['controller', 'csrow'],
      collect: () =>
        again().flatMap((c) => [
          { labels: { controller: controller(c), csrow: 'unknown' }, value: c.ceNoInfo },
          ...c.csrows.map((r) => ({ labels: { controller: controller(c), csrow: String(r.csrow) }, value: r.ce })),
        ]),
    },
    {
      name: 'node_edac_csrow_uncorrectable_errors_total',
      help: 'Total uncorrectable memory errors for this csrow.',
      type: 'counter',
      labelNames: ['controller', 'csrow'],
      collect: () =>
        again().flatMap((c) => [
          { labels: { controller: controller(c), csrow: 'unknown' }, value: c.ueNoInfo },
          ...c.csrows.map((r) => ({ labels: { controller: controller(c), csrow: String(r.csrow) }, value: r.ue })),
        ]),
    },
    {
      name: 'evtrace_edac_dimm_correctable_errors_total',
      help: 'Correctable memory errors per DIMM (EDAC dimmN/rankN, or csrowN channel K of the legacy layout).',
      type: 'counter',
      labelNames: ['controller', 'dimm', 'label', 'location'],
      collect: () =>
        again().flatMap((c) =>
          c.dimms.map((d) => ({
            labels: { controller: controller(c), dimm: d.name, label: d.label, location: d.location },
            value: d.ce,
          })),
        ),
    },
    {
      name: 'evtrace_edac_dimm_uncorrectable_errors_total',
      help: 'Uncorrectable memory errors per DIMM (per-DIMM layout only).',
      type: 'counter',
      labelNames: ['controller', 'dimm', 'label', 'location'],
      collect: () =>
        again().flatMap((c) =>
          c.dimms
            .filter((d) => d.ue !== undefined)
            .map((d) => ({
              labels: { controller: controller(c), dimm: d.name, label: d.label, location: d.location },
              value: d.ue!,
            })),
        ),
    },
  ];
}

/** Machine-check counts kept as records stream by, exported per bank and per DIMM. */
export class MceCounters {
  readonly #banks = new Map<string, { labels: Record<string, string>; value: number }>();
  readonly #dimms = new Map<string, { labels: Record<string, string>; value: number }>();

  /** Counts one decoded record. */
  observe(d: DecodedMce): void {
    const socket = d.location.socket === undefined ? 'unknown' : String(d.location.socket);
    const severity: Severity = d.severity;
    bump(this.#banks, { socket, bank: String(d.location.bank), severity, class: d.class });
    if (d.class === 'memory-controller' && (d.location.channel !== undefined || d.location.dimm !== undefined)) {
      bump(this.#dimms, {
        socket,
        channel: d.location.channel === undefined ? 'unknown' : String(d.location.channel),
        dimm: d.location.dimm === undefined ? 'unknown' : String(d.location.dimm),
        severity,
      });
    }
  }

  metrics(): MceMetric[] {
    return [
      {
        name: 'evtrace_mce_errors_total',
        help: 'Machine-check records by socket, bank, severity (corrected, deferred, ucna, srao, srar, fatal) and class.',
        type: 'counter',
        labelNames: ['socket', 'bank', 'severity', 'class'],
        collect: () => [...this.#banks.values()].map((s) => ({ labels: s.labels, value: s.value })),
      },
      {
        name: 'evtrace_mce_dimm_errors_total',
        help: 'Memory machine checks by socket, channel, DIMM and severity.',
        type: 'counter',
        labelNames: ['socket', 'channel', 'dimm', 'severity'],
        collect: () => [...this.#dimms.values()].map((s) => ({ labels: s.labels, value: s.value })),
      },
    ];
  }
}

function bump(
  map: Map<string, { labels: Record<string, string>; value: number }>,
  labels: Record<string, string>,
): void {
  const key = Object.values(labels).join('\u0000');
  const s = map.get(key);
  if (s) s.value++;
  else map.set(key, { labels, value: 1 });
}

/** Prometheus text exposition of metrics (for `evtrace mce` output and tests). */
export function exposition(metrics: readonly MceMetric[]): string {
  const out: string[] = [];
  const esc = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
  for (const m of metrics) {
    out.push(`# HELP ${m.name} ${m.help}`, `# TYPE ${m.name} ${m.type}`);
    for (const s of m.collect()) {
      const labels = Object.entries(s.labels).map(([k, v]) => `${k}="${esc(v)}"`);
      out.push(`${m.name}${labels.length ? `{${labels.join(',')}}` : ''} ${s.value}`);
    }
  }
  return `${out.join('\n')}\n`;
}
