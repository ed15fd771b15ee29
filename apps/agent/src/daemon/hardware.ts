/**
 * The agent's hardware monitoring (`evtrace agent --hardware`): a session named `hardware` whose source is
 * @evtrace/hw-mce's {@link HardwareSource} (tracefs `mce:mce_record` and `ras:mc_event`, /dev/mcelog, EDAC polling),
 * so machine checks and memory errors join the agent's event streams, trace-shots and live views like any session;
 * their counts on the Prometheus endpoint (node_exporter's `node_edac_*` names read from EDAC sysfs at each scrape,
 * per-DIMM EDAC counters, machine checks per bank and per DIMM); and mcelog-style leaky-bucket tracking whose
 * threshold crossings become `evtrace:mce_threshold` events of the session, take a trace-shot of every running
 * session, run mcelog.conf's triggers (with --run-triggers) and offline pages through sysfs as mcelog's [page]
 * memory-ce-action says (or --page-offline).
 */
import { readFileSync } from 'node:fs';
import type { SessionSpec } from '@evtrace/agent-protocol';
import {
  applyPageAction,
  DEFAULT_CONFIG,
  type DecodedMce,
  EDAC_SYSFS,
  type EdacEvent,
  edacMetrics,
  HardwareSource,
  MceCounters,
  MceError,
  type MceMetric,
  MEMORY_SYSFS,
  noteText,
  type PageAction,
  parseMcelogConfig,
  type ThresholdOutcome,
  Tracker,
  type TrackerConfig,
  type TrackerEvent,
  TriggerRunner,
} from '@evtrace/hw-mce';
import type { EventSource } from '@evtrace/trace-format';
import type { Command } from 'commander';
import { PAGE_OFFLINE_ACTIONS } from '../config/schema.ts';
import type { CollectedMetric } from '../metrics/registry.ts';

/** The `evtrace agent` flags of hardware monitoring. */
export interface HardwareCliOptions {
  hardware?: boolean;
  edacSysfs?: string;
  nodeEdacMetrics?: boolean;
  mcelog?: string;
  mceInstance?: string;
  mcelogConfig?: string;
  runTriggers?: boolean;
  pageOffline?: string;
  memorySysfs?: string;
}

/** The options of {@link HardwareCliOptions} besides `hardware` itself, which a [hardware] table also sets. */
export const HARDWARE_OPTION_NAMES: readonly (keyof HardwareCliOptions)[] = [
  'edacSysfs',
  'nodeEdacMetrics',
  'mcelog',
  'mceInstance',
  'mcelogConfig',
  'runTriggers',
  'pageOffline',
  'memorySysfs',
];

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
      '--node-edac-metrics',
      "also count EDAC errors under node_exporter's node_edac_* names (for hosts without node_exporter's edac collector)",
    )
    .option(
      '--mcelog <device>',
      'the mcelog device, read when the mce:mce_record tracepoint is absent (default /dev/mcelog)',
    )
    .option('--mce-instance <name>', 'read mce:mce_record and ras:mc_event from this existing tracefs instance')
    .option('--mcelog-config <file>', "leaky-bucket thresholds in mcelog.conf's format (default: mcelog's defaults)")
    .option(
      '--run-triggers',
      "run the configured trigger commands with mcelog's environment when a threshold is crossed",
    )
    .option(
      '--page-offline <action>',
      `what a page whose corrected errors cross [page] memory-ce-threshold gets: ${PAGE_OFFLINE_ACTIONS.join('|')} (default: --mcelog-config's memory-ce-action, else off)`,
    )
    .option('--memory-sysfs <dir>', `where page offline requests are written (default ${MEMORY_SYSFS})`);
}

/** Who else is told of each decoded error and threshold crossing (the fleet export). */
export interface HardwareReport {
  mce(d: DecodedMce): void;
  edac(e: EdacEvent): void;
  threshold(event: TrackerEvent, outcome: ThresholdOutcome): void;
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
  /** Threshold crossings by what was done (`action\0result`). */
  readonly #crossings = new Map<string, number>();
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
    if (options.pageOffline !== undefined) {
      const action = options.pageOffline as PageAction;
      if (!PAGE_OFFLINE_ACTIONS.includes(action))
        throw new MceError(
          'ERR_MCE_CONFIG',
          `--page-offline must be ${PAGE_OFFLINE_ACTIONS.join('|')}, not '${options.pageOffline}'`,
        );
      const base = config ?? DEFAULT_CONFIG;
      config = { ...base, page: { ...base.page, action } };
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

  /** Set by the fleet export: told of what the monitor decodes. */
  report: HardwareReport | undefined;

  #onMce(d: DecodedMce): void {
    this.counters.observe(d);
    this.report?.mce(d);
    for (const event of this.tracker.observe(d)) {
      const where = event.env.LOCATION;
      this.#o.log(`hardware: ${event.message}${where ? ` (${where})` : ''}`);
      const outcome = this.#act(event);
      // Failures by kind, not by message: a label value per errno would grow without bound.
      const key = `${outcome.action}\u0000${outcome.result.startsWith('failed') ? 'failed' : outcome.result}`;
      this.#crossings.set(key, (this.#crossings.get(key) ?? 0) + 1);
      this.#source?.noteThreshold(event, outcome);
      this.report?.threshold(event, outcome);
      this.#shot(event.message);
    }
  }

  /**
   * Does what the crossing calls for: its trigger, as mcelog runs it (with --run-triggers), and the page action. The
   * event records the page action when there is one, else the trigger.
   */
  #act(event: TrackerEvent): ThresholdOutcome {
    let triggered: string | undefined;
    if (event.trigger !== undefined) {
      if (this.#runner === undefined) triggered = 'disabled (no --run-triggers)';
      else {
        this.#trigger(event);
        triggered = 'started';
      }
    }
    if (event.action !== undefined && event.address !== undefined) {
      const page = `0x${event.address.toString(16)}`;
      try {
        const done = applyPageAction(event, { sysfs: this.#o.memorySysfs ?? MEMORY_SYSFS });
        this.#o.log(`hardware: page ${page} ${done}-offlined`);
        return { action: `${done}-offline`, result: 'ok' };
      } catch (error) {
        // The page stays eligible, as mcelog marks a refused page failed and may try it again.
        this.tracker.pageActionFailed(event.address);
        this.#o.log(`hardware: ${(error as Error).message}`);
        return { action: event.action, result: `failed: ${(error as Error).message}` };
      }
    }
    if (event.kind === 'page' && this.tracker.config.page.action === 'account')
      return { action: 'account', result: 'ok' };
    return triggered === undefined ? { action: 'none', result: 'ok' } : { action: 'trigger', result: triggered };
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
    this.report?.edac(e);
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
    const crossings: MceMetric = {
      name: 'evtrace_mce_threshold_crossings_total',
      help: 'Leaky-bucket thresholds crossed (mcelog.conf), by the action taken (none, trigger, account, soft-offline, hard-offline, soft-then-hard-offline) and its result (ok, started, failed, disabled...).',
      type: 'counter',
      labelNames: ['action', 'result'],
      collect: () =>
        [...this.#crossings].map(([k, value]) => {
          const [action = '', result = ''] = k.split('\u0000');
          return { labels: { action, result }, value };
        }),
    };
    // node_exporter's edac collector exports node_edac_* itself: the same series from two jobs only when asked.
    const edac = edacMetrics(this.#o.edacSysfs !== undefined ? { sysfs: this.#o.edacSysfs } : {}).filter(
      (m) => this.#o.nodeEdacMetrics === true || !m.name.startsWith('node_edac_'),
    );
    return [...edac, ...this.counters.metrics(), events, crossings];
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
        {
          name: this.session,
          events: ['mce:mce_record', 'ras:mc_event', 'evtrace:mce_threshold'],
          mode: 'overwrite',
          bufferSize: 1 << 20,
        },
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
