/**
 * The gauges of an agent session's buffers, followed over time: the agent samples them at its steady interval and
 * keeps the recent samples (the `stats` op); this asks for the ones after the last it has, at the same interval, so
 * the CPUs view draws fill and loss per CPU over time, with the history from before the viewer attached.
 */
import { type AgentClient, type BufferStats, type BufferStatsSample, ProtocolError } from '@evtrace/agent-protocol';
import type { BufferGaugeView, CpuGauge, SourceStats } from './source.ts';

/** Samples kept per CPU: the longest sparkline the view draws. */
const KEEP = 120;

/** Follows the gauges of one session; {@link view} is what the CPUs view draws. */
export class BufferGaugeFeed {
  readonly #client: AgentClient;
  readonly #name: string;
  readonly #samples: BufferStatsSample[] = [];
  #meta: Pick<BufferStats, 'origin' | 'instance' | 'interval' | 'unit'> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #inFlight = false;
  #closed = false;
  /** Why there are no gauges (an agent without the `stats` op), once known. */
  unavailable: string | undefined;

  constructor(client: AgentClient, name: string) {
    this.#client = client;
    this.#name = name;
  }

  /** Asks now, then at the agent's interval, until {@link close}. */
  start(): void {
    void this.poll();
  }

  /** One request for the samples after the last one held. */
  async poll(): Promise<void> {
    if (this.#inFlight || this.#closed) return;
    this.#inFlight = true;
    try {
      const r = await this.#client.stats(this.#name, this.#samples.at(-1)?.seq);
      this.#meta = { origin: r.origin, instance: r.instance, interval: r.interval, unit: r.unit };
      this.#samples.push(...r.samples);
      if (this.#samples.length > KEEP) this.#samples.splice(0, this.#samples.length - KEEP);
    } catch (error) {
      if (error instanceof ProtocolError && error.code === 'ERR_AGENT_UNKNOWN_OP') {
        this.unavailable = 'the agent does not report buffer gauges (an older agent)';
        return;
      }
      if (error instanceof ProtocolError && error.code === 'ERR_AGENT_CLOSED') return;
      this.unavailable = `buffer gauges: ${(error as Error).message}`;
    } finally {
      this.#inFlight = false;
    }
    if (!this.#closed && this.unavailable === undefined)
      this.#timer = setTimeout(() => void this.poll(), this.#meta?.interval ?? 1000);
  }

  /** The gauges as the CPUs view draws them, undefined before the first reply. */
  view(): BufferGaugeView | undefined {
    const meta = this.#meta;
    if (meta === undefined) return undefined;
    return gaugeView(meta, this.#samples);
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }
}

/**
 * Per CPU: fill now, and the fullest the buffer was when read in each interval; lost in total and per interval (the
 * first sample's loss counts from zero).
 */
export function gaugeView(
  meta: Pick<BufferStats, 'origin' | 'instance' | 'interval' | 'unit'>,
  samples: readonly BufferStatsSample[],
): BufferGaugeView {
  const byCpu = new Map<number, { fills: number[]; losses: number[]; prev: number | undefined }>();
  let last: BufferStatsSample | undefined;
  for (const s of samples) {
    last = s;
    for (const c of s.cpus) {
      let h = byCpu.get(c.cpu);
      if (h === undefined) byCpu.set(c.cpu, (h = { fills: [], losses: [], prev: undefined }));
      h.fills.push(c.peakFill);
      h.losses.push(Math.max(0, c.lost - (h.prev ?? c.lost)));
      h.prev = c.lost;
    }
  }
  const cpus: CpuGauge[] = (last?.cpus ?? []).map((c) => {
    const h = byCpu.get(c.cpu)!;
    return {
      cpu: c.cpu,
      size: c.size,
      fill: c.fill,
      fills: h.fills,
      lost: c.lost,
      losses: h.losses,
      entries: c.entries,
      read: c.read,
      head: c.head,
    };
  });
  return {
    origin:
      meta.origin === 'tracefs'
        ? `kernel per-CPU stats of instance ${meta.instance ?? '?'}`
        : 'the session ring buffers (headers)',
    unit: meta.unit,
    intervalMs: meta.interval,
    cpus,
  };
}

/** A live source's gauges for its stats, or why there are none. */
export function gaugeStats(gauges: BufferGaugeFeed | undefined): Pick<SourceStats, 'buffers' | 'buffersUnavailable'> {
  const view = gauges?.view();
  if (view !== undefined) return { buffers: view };
  return gauges?.unavailable !== undefined ? { buffersUnavailable: gauges.unavailable } : {};
}
