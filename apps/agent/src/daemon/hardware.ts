/**
 * The agent's hardware monitoring (`evtrace agent --hardware`): a session named `hardware` whose source is
 * @evtrace/hw-mce's {@link HardwareSource} (tracefs `mce:mce_record` and `ras:mc_event`, /dev/mcelog, EDAC polling),
 * so machine checks and memory errors join the agent's event streams, trace-shots and live views like any session;
 * their counts on the Prometheus endpoint (node_exporter's `node_edac_*` names read from EDAC sysfs at each scrape,
 * per-DIMM EDAC counters, machine checks per bank and per DIMM); and mcelog-style leaky-bucket tracking whose
 * threshold crossings take a trace-shot of every running session.
 */
import { readFileSync } from 'node:fs';
import type { SessionSpec } from '@evtrace/agent-protocol';
import {
  type DecodedMce,
  EDAC_SYSFS,
  type EdacEvent,
  edacMetrics,
  HardwareSource,
  MceCounters,
  MceError,
  type MceMetric,
  noteText,
  parseMcelogConfig,
  Tracker,
  type TrackerConfig,
  type TrackerEvent,
  TriggerRunner,
} from '@evtrace/hw-mce';
import type { EventSource } from '@evtrace/trace-format';
import type { Command } from 'commander';
import type { CollectedMetric } from '../metrics/registry.ts';

/** The `evtrace agent` flags of hardware monitoring. */
export interface HardwareCliOptions {
  hardware?: boolean;
  edacSysfs?: string;
  mcelog?: string;
  mceInstance?: string;
  mcelogConfig?: string;
  runTriggers?: boolean;
}

/** The source kind the hardware session is saved under (its state file), so a restarted agent re-creates it. */
export const HARDWARE_SOURCE = 'mce';

/** Adds the hardware flags to `evtrace agent`. */
export function addHardwareOptions(cmd: Command): void {
  cmd
    .option(
      '--hardware',
      'run the "hardware" session: machine checks and EDAC memory errors, decoded, tracked and counted on the metrics endpoint',
    )
    .option('--edac-sysfs <dir>', `EDAC sysfs directory polled for memory error counters (default ${EDAC_SYSFS})`)
    .option(
      '--mcelog <device>',
      'the mcelog device, read when the mce:mce_record tracepoint is absent (default /dev/mcelog)',
    )
    .option('--mce-instance <name>', 'read mce:mce_record and ras:mc_event from this existing tracefs instance')
    .option('--mcelog-config <file>', "leaky-bucket thresholds in mcelog.conf's format (default: mcelog's defaults)")
    .option(
      '--run-triggers',
      "run the configured trigger commands with mcelog's environment when a threshold is crossed",
    );
}

/** What the hardware monitor does with the agent. */
export interface HardwareHost {
  /** Names of the running sessions. */
  running(): string[];
  /** Takes a trace-shot of a session (the agent logs it). */
  snapshot(name: string): unknown;
}

/** Hardware monitoring for one agent. */
export class Hardware {
  readonly session = 'hardware';
  readonly counters = new MceCounters();
  readonly tracker: Tracker;
  readonly #runner: TriggerRunner | undefined;
  readonly #o: HardwareCliOptions & { tracefs?: string; log: (line: string) => void };
  #host: HardwareHost | undefined;
  #source: HardwareSource | undefined;
  #pending = false;
  /** Memory error events seen (ras:mc_event, EDAC growth), per controller, DIMM label and type. */
  readonly #edacEvents = new Map<string, { labels: Record<string, string>; value: number }>();

  /** @throws MceError `ERR_MCE_CONFIG` for an unreadable `--mcelog-config`. */
  constructor(options: HardwareCliOptions & { tracefs?: string; log: (line: string) => void }) {
    this.#o = options;
    let config: TrackerConfig | undefined;
    if (options.mcelogConfig !== undefined) {
      let text: string;
      try {
        text = readFileSync(options.mcelogConfig, 'utf8');
      } catch (error) {
        throw new MceError('ERR_MCE_CONFIG', `cannot read: ${(error as NodeJS.ErrnoException).code ?? error}`, {
          location: { file: options.mcelogConfig },
        });
      }
      const parsed = parseMcelogConfig(text, options.mcelogConfig);
      for (const n of parsed.notes) options.log(`hardware: ${noteText(n)}`);
      config = parsed.config;
    }
    this.tracker = new Tracker(config);
    if (options.runTriggers === true)
      this.#runner = new TriggerRunner({
        ...(config?.trigger.directory ? { directory: config.trigger.directory } : {}),
        childrenMax: config?.trigger.childrenMax ?? 2,
      });
  }

  /** The agent's source factories: `mce` builds the hardware session's source. */
  get sources(): Readonly<Record<string, (spec: SessionSpec) => EventSource>> {
    return { [HARDWARE_SOURCE]: () => this.source() };
  }

  /** A new source wired to the counters and the tracker. */
  source(): HardwareSource {
    const o = this.#o;
    this.#source = new HardwareSource({
      ...(o.tracefs !== undefined ? { tracefs: o.tracefs } : {}),
      ...(o.mceInstance !== undefined ? { instance: o.mceInstance } : {}),
      ...(o.mcelog !== undefined ? { mcelog: o.mcelog } : {}),
      ...(o.edacSysfs !== undefined ? { edacSysfs: o.edacSysfs } : {}),
      onMce: (d) => this.#onMce(d),
      onEdac: (e) => this.#onEdac(e),
      onNote: (n) => o.log(`hardware: ${noteText(n)}`),
    });
    return this.#source;
  }

  #onMce(d: DecodedMce): void {
    this.counters.observe(d);
    for (const event of this.tracker.observe(d)) {
      const where = event.env.LOCATION;
      this.#o.log(`hardware: ${event.message}${where ? ` (${where})` : ''}`);
      this.#shot(event.message);
      if (this.#runner !== undefined && event.trigger !== undefined) this.#trigger(event);
    }
  }

  /** Runs the event's trigger (the agent goes on meanwhile) and logs how it ended. */
  #trigger(event: TrackerEvent): void {
    this.#runner!.run(event).then(
      (r) => {
        if (r !== undefined)
          this.#o.log(
            `hardware: trigger ${r.command} exited ${r.exitCode}${r.stderr.trim() ? `: ${r.stderr.trim().split('\n')[0]}` : ''}`,
          );
      },
      (error: Error) => this.#o.log(`hardware: ${error.message}`),
    );
  }

  #onEdac(e: EdacEvent): void {
    const labels = { controller: String(e.mc), label: e.label, type: e.errorType };
    const key = `${labels.controller}\u0000${labels.label}\u0000${labels.type}`;
    const s = this.#edacEvents.get(key);
    if (s) s.value += e.count;
    else this.#edacEvents.set(key, { labels, value: e.count });
  }

  /**
   * A threshold crossed: every running session keeps what led to it. Taken once the source's poll has written the
   * record (crossings of one poll share the shots).
   */
  #shot(why: string): void {
    if (this.#pending) return;
    this.#pending = true;
    setImmediate(() => {
      this.#pending = false;
      this.#shoot(why);
    });
  }

  #shoot(why: string): void {
    for (const name of this.#host?.running() ?? []) {
      try {
        this.#host!.snapshot(name);
      } catch (error) {
        this.#o.log(`hardware: ${why}: trace-shot of session ${name} failed: ${(error as Error).message}`);
      }
    }
  }

  /** Every metric the hardware monitor exports. */
  metrics(): CollectedMetric[] {
    const events: MceMetric = {
      name: 'evtrace_edac_events_errors_total',
      help: 'Memory errors reported as they happened (ras:mc_event, or EDAC counter growth when the tracepoint is absent), by controller, DIMM label and type.',
      type: 'counter',
      labelNames: ['controller', 'label', 'type'],
      collect: () => [...this.#edacEvents.values()].map((s) => ({ labels: s.labels, value: s.value })),
    };
    return [
      ...edacMetrics(this.#o.edacSysfs !== undefined ? { sysfs: this.#o.edacSysfs } : {}),
      ...this.counters.metrics(),
      events,
    ];
  }

  /**
   * Creates and starts the hardware session unless a recovered one exists; `host` is where trace-shots are taken.
   * Returns what happened, one line.
   */
  async boot(agent: {
    readonly sessionsByName: ReadonlyMap<string, { readonly state: string }>;
    create(spec: SessionSpec, source: string): Promise<unknown>;
    start(name: string): unknown;
    snapshot(name: string): unknown;
  }): Promise<string> {
    this.#host = {
      running: () => [...agent.sessionsByName].filter(([, s]) => s.state === 'running').map(([n]) => n),
      snapshot: (name) => agent.snapshot(name),
    };
    if (agent.sessionsByName.has(this.session))
      return `hardware: session ${this.session} kept as recovered; reading ${this.#source?.inputs.join(', ') || 'nothing'}`;
    try {
      await agent.create(
        { name: this.session, events: ['mce:mce_record', 'ras:mc_event'], mode: 'overwrite', bufferSize: 1 << 20 },
        HARDWARE_SOURCE,
      );
      agent.start(this.session);
    } catch (error) {
      const e = error as { code?: string; message: string };
      return `hardware: session ${this.session} not created: ${e.code ? `${e.code}: ` : ''}${e.message}`;
    }
    const src = this.#source;
    return `hardware: session ${this.session} created and started; reading ${src?.inputs.join(', ') || 'nothing'}${src?.missing.length ? `; not reading ${src.missing.join('; ')}` : ''}`;
  }
}
