/**
 * Error tracking with mcelog's semantics (leaky-bucket.c, memdb.c, page.c, yellow/bus/unknown triggers): corrected and
 * uncorrected memory errors counted per DIMM and per socket, corrected errors per 4 KiB page with the page actions
 * (account, soft / hard offline), cache errors whose threshold status turned yellow, bus, IOMCA and unknown errors.
 * A bucket of capacity C per T seconds overflows when C errors arrive before it has aged; an overflow empties it (no
 * second trigger for the same burst) and fires a {@link TrackerEvent}. Time is the record's wall time (the kernel's),
 * or the clock when the record has none.
 */
import type { Rate, TrackerConfig } from './config.ts';
import { DEFAULT_CONFIG } from './config.ts';
import type { DecodedMce } from './decode.ts';

/** One leaky bucket (mcelog's struct leaky_bucket). */
export class LeakyBucket {
  count = 0;
  excess = 0;
  stamp: number;
  readonly rate: Rate;
  constructor(rate: Rate, now: number) {
    this.rate = rate;
    this.stamp = now;
  }
  /** Ages the bucket to `now`: whole elapsed periods drain `capacity` each. */
  age(now: number, multiplier = 1): void {
    const diff = now - this.stamp;
    if (diff >= this.rate.ageSeconds) {
      const drained = Math.floor((diff / this.rate.ageSeconds) * this.rate.capacity * multiplier);
      this.stamp = now;
      this.count = drained > this.count ? 0 : this.count - drained;
      this.excess = 0;
    }
  }
  /** Adds `inc` errors at `now`; true when the bucket overflowed (and was emptied). */
  account(inc: number, now: number, multiplier = 1): boolean {
    this.age(now, multiplier);
    this.count += inc;
    if (this.count >= this.rate.capacity * multiplier) {
      this.excess += this.count;
      this.count = 0;
      return true;
    }
    return false;
  }
  /** `N in T<unit>` as mcelog prints a threshold. */
  text(): string {
    const s = this.rate.ageSeconds;
    const [n, u] =
      s % 86400 === 0 ? [s / 86400, 'd'] : s % 3600 === 0 ? [s / 3600, 'h'] : s % 60 === 0 ? [s / 60, 'm'] : [s, 's'];
    return `${this.count + this.excess} in ${n}${u}`;
  }
}

export type TrackerEventKind =
  | 'dimm-ce'
  | 'dimm-uc'
  | 'socket-ce'
  | 'socket-uc'
  | 'bank-ce'
  | 'bank-uc'
  | 'page'
  | 'page-counter-replacement'
  | 'cache'
  | 'bus'
  | 'iomca'
  | 'unknown';

/** A threshold crossed (or an error class that always reports): what mcelog would run its trigger for. */
export interface TrackerEvent {
  readonly kind: TrackerEventKind;
  readonly message: string;
  /** The trigger command configured for it, if any. */
  readonly trigger: string | undefined;
  /** The environment mcelog gives that trigger (THRESHOLD, TOTALCOUNT, LOCATION, SOCKETID, CHANNEL, DIMM...). */
  readonly env: Readonly<Record<string, string>>;
  /** Page actions: offline the page at `address` (done by {@link applyPageAction} when enabled). */
  readonly action?: 'soft-offline' | 'hard-offline' | 'soft-then-hard-offline';
  readonly address?: bigint;
  readonly record: DecodedMce;
}

interface Counted {
  ce: number;
  uc: number;
  readonly ceBucket: LeakyBucket;
  readonly ucBucket: LeakyBucket;
}

interface PageCounter {
  ce: number;
  readonly bucket: LeakyBucket;
  offlined: 'online' | 'offline' | 'failed';
  lastUse: number;
}

/** Per-DIMM and per-socket counts, for metrics and the viewer. */
export interface DimmCount {
  readonly socket: number;
  readonly channel: number | undefined;
  readonly dimm: number | undefined;
  readonly ce: number;
  readonly uc: number;
  /** Errors in the current bucket window against its capacity. */
  readonly ceWindow: number;
  readonly ceCapacity: number;
}

export class Tracker {
  readonly config: TrackerConfig;
  readonly #now: () => number;
  readonly #dimms = new Map<
    string,
    Counted & { socket: number; channel: number | undefined; dimm: number | undefined }
  >();
  readonly #sockets = new Map<number, Counted>();
  readonly #banks = new Map<string, Counted>();
  readonly #pages = new Map<bigint, PageCounter>();
  #replacements: { count: number; bucket: LeakyBucket } | undefined;
  #useClock = 0;
  #latest = 0;

  constructor(config: TrackerConfig = DEFAULT_CONFIG, options: { now?: () => number } = {}) {
    this.config = config;
    this.#now = options.now ?? (() => Math.floor(Date.now() / 1000));
  }

  /** Accounts one decoded record and returns the events it caused, in mcelog's order. */
  observe(d: DecodedMce): TrackerEvent[] {
    const out: TrackerEvent[] = [];
    const t = d.record.time !== 0n ? Number(d.record.time) : this.#now();
    if (t > this.#latest) this.#latest = t;
    const c = this.config;
    const socket = d.location.socket ?? 0;
    const cpu = d.location.cpu;
    if (d.class === 'memory-controller') this.#memory(d, t, socket, out);
    if (c.bank.enabled && d.class !== 'thermal') this.#bank(d, t, socket, out);
    const track = d.status.threshold;
    if (track === 'yellow' && (d.class === 'cache' || d.class === 'tlb')) {
      const level = d.code.level;
      out.push(
        event(
          'cache',
          d,
          c.cache.trigger,
          `CPU ${cpu} has large number of corrected cache errors: ${d.code.description}`,
          {
            CPU: String(cpu),
            SOCKETID: String(socket),
            LEVEL: level === undefined ? 'unknown' : String(level),
            TYPE: d.code.transactionType ?? 'unknown',
            MESSAGE: `Large number of corrected cache errors on CPU ${cpu}. System operating, but might lead to uncorrected errors soon`,
            THRESHOLD_STATUS: 'yellow',
          },
        ),
      );
    }
    if (d.class === 'bus' || d.class === 'io') {
      out.push(
        event('bus', d, c.socket.busTrigger, `Bus error on socket ${socket} CPU ${cpu}: ${d.code.description}`, {
          SOCKETID: String(socket),
          CPU: String(cpu),
          LEVEL: String(d.code.level ?? ''),
          PP: d.code.participation ?? '',
          RRRR: d.code.request ?? '',
          II: d.code.memoryOrIo ?? '',
          TIMEOUT: d.code.timeout ? 'Request-timed-out' : 'Request-did-not-timeout',
          MESSAGE: d.summary,
        }),
      );
    }
    if (d.code.class === 'io' && d.status.miscValid) {
      const port = String(d.fields.rootPort ?? '');
      const [seg = '', bus = '', devfn = ''] = port.split(':');
      const [dev = '', fn = ''] = devfn.split('.');
      out.push(
        event('iomca', d, c.socket.iomcaTrigger, `IOMCA reported by root port ${port}`, {
          SOCKETID: String(socket),
          CPU: String(cpu),
          SEG: seg,
          BUS: bus,
          DEVICE: dev,
          FUNCTION: fn,
          MESSAGE: d.summary,
        }),
      );
    }
    // mcelog's unknown trigger: codes the architecture leaves unexplained (internal timer and unclassified internal
    // errors, unknown encodings) and thermal events.
    const unexplained = d.code.mnemonic === 'INTERNAL_TIMER' || d.code.mnemonic === 'INTERNAL_UNCLASSIFIED';
    if (d.class === 'unknown' || d.class === 'thermal' || unexplained) {
      out.push(
        event(
          'unknown',
          d,
          c.socket.unknownTrigger,
          `Unknown or internal error on socket ${socket} CPU ${cpu}: ${d.code.description}`,
          {
            SOCKETID: String(socket),
            CPU: String(cpu),
            STATUS: `0x${d.record.status.toString(16)}`,
            MISC: `0x${d.record.misc.toString(16)}`,
            ADDR: `0x${d.record.addr.toString(16)}`,
            MCGSTATUS: `0x${d.record.mcgstatus.toString(16)}`,
            BANK: String(d.record.bank),
            MESSAGE: d.summary,
          },
        ),
      );
    }
    return out;
  }

  #memory(d: DecodedMce, t: number, socket: number, out: TrackerEvent[]): void {
    const c = this.config;
    const { channel, dimm } = d.location;
    const uc = d.status.uncorrected;
    if (c.dimm.enabled && (channel !== undefined || dimm !== undefined)) {
      const key = `${socket}/${channel ?? '?'}/${dimm ?? '?'}`;
      let md = this.#dimms.get(key);
      if (md === undefined)
        this.#dimms.set(key, (md = { socket, channel, dimm, ...counted(c.dimm.ceThreshold, c.dimm.ucThreshold, t) }));
      this.#account(
        md,
        d,
        t,
        uc,
        'dimm',
        c.dimm.ceTrigger,
        c.dimm.ucTrigger,
        locationText(socket, channel, dimm),
        { socket, channel, dimm },
        out,
      );
    }
    if (c.socket.enabled) {
      let ms = this.#sockets.get(socket);
      if (ms === undefined) this.#sockets.set(socket, (ms = counted(c.socket.ceThreshold, c.socket.ucThreshold, t)));
      const where = locationText(socket, undefined, undefined);
      // Errors the count says were corrected before this one, with no record of their own (mcelog's "fallback").
      const before = d.status.correctedCount ?? 0;
      if (before > 1) {
        ms.ce += before - 1;
        if (ms.ceBucket.account(before - 1, t)) {
          out.push(
            memoryEvent(
              'socket-ce',
              d,
              c.socket.ceTrigger,
              `Fallback socket memory error count ${before - 1} exceeded threshold`,
              ms,
              ms.ceBucket,
              where,
              { socket },
              t,
            ),
          );
        }
      }
      this.#account(ms, d, t, uc, 'socket', c.socket.ceTrigger, c.socket.ucTrigger, where, { socket }, out);
    }
    if (c.page.action !== 'off' && d.status.addrValid && !uc) this.#page(d, t, socket, out);
  }

  /** Errors per bank of a socket: a bank shared by the socket's cores (UMC, L3) or the same unit on every core. */
  #bank(d: DecodedMce, t: number, socket: number, out: TrackerEvent[]): void {
    const c = this.config.bank;
    const bank = d.location.bank;
    const key = `${socket}/${bank}`;
    let m = this.#banks.get(key);
    if (m === undefined) this.#banks.set(key, (m = counted(c.ceThreshold, c.ucThreshold, t)));
    const where = `SOCKET:${socket} BANK:${bank} [${d.location.unit ?? ''}]`;
    this.#account(m, d, t, d.status.uncorrected, 'bank', c.ceTrigger, c.ucTrigger, where, { socket, bank }, out);
  }

  #account(
    m: Counted,
    d: DecodedMce,
    t: number,
    uc: boolean,
    type: 'dimm' | 'socket' | 'bank',
    ceTrigger: string | undefined,
    ucTrigger: string | undefined,
    where: string,
    at: Place,
    out: TrackerEvent[],
  ): void {
    const message = `${uc ? 'Uncorrected' : 'Corrected'} ${type}${type === 'bank' ? '' : ' memory'} error count exceeded threshold`;
    if (uc) {
      m.uc++;
      if (m.ucBucket.account(1, t))
        out.push(memoryEvent(`${type}-uc`, d, ucTrigger, message, m, m.ucBucket, where, at, t));
    } else {
      m.ce++;
      if (m.ceBucket.account(1, t))
        out.push(memoryEvent(`${type}-ce`, d, ceTrigger, message, m, m.ceBucket, where, at, t));
    }
  }

  #page(d: DecodedMce, t: number, socket: number, out: TrackerEvent[]): void {
    const c = this.config.page;
    const address = d.record.addr & ~0xfffn;
    let p = this.#pages.get(address);
    if (p === undefined) {
      if (this.#pages.size >= c.maxCounters) {
        // Out of counters: the least recently used one is reused, and reuse itself has a threshold.
        let oldest: bigint | undefined;
        let oldestUse = Number.POSITIVE_INFINITY;
        for (const [a, q] of this.#pages) {
          if (q.lastUse < oldestUse) [oldest, oldestUse] = [a, q.lastUse];
        }
        if (oldest !== undefined) this.#pages.delete(oldest);
        this.#replacements ??= { count: 0, bucket: new LeakyBucket(c.replacementThreshold, t) };
        const r = this.#replacements;
        r.count++;
        if (r.bucket.account(1, t)) {
          const thresh = r.bucket.text();
          const message = `Replacements of page correctable error counter exceed threshold ${thresh}`;
          out.push(
            event('page-counter-replacement', d, c.replacementTrigger, message, {
              THRESHOLD: thresh,
              TOTALCOUNT: String(r.count),
              LASTEVENT: String(t),
              AGETIME: String(c.replacementThreshold.ageSeconds),
              MESSAGE: `${message}: ${thresh}`,
              THRESHOLD_COUNT: String(r.bucket.count),
            }),
          );
        }
      }
      p = { ce: 0, bucket: new LeakyBucket(c.threshold, t), offlined: 'online', lastUse: 0 };
      this.#pages.set(address, p);
    }
    p.lastUse = ++this.#useClock;
    p.ce++;
    if (!p.bucket.account(1, t)) return;
    // Triggers and actions only for pages still online (mcelog without offline retries).
    if (p.offlined !== 'online') return;
    const { channel, dimm } = d.location;
    const thresh = p.bucket.text();
    const message = `Corrected memory errors on page ${address.toString(16)} exceed threshold ${thresh}`;
    const action =
      c.action === 'soft'
        ? 'soft-offline'
        : c.action === 'hard'
          ? 'hard-offline'
          : c.action === 'soft-then-hard'
            ? 'soft-then-hard-offline'
            : undefined;
    const e = memoryEvent(
      'page',
      d,
      c.trigger,
      message,
      { ce: p.ce, uc: 0 },
      p.bucket,
      locationText(socket, channel, dimm),
      { socket, channel, dimm },
      t,
    );
    out.push(action ? { ...e, action, address } : { ...e, address });
    // mcelog marks the page offline when the kernel takes it; the caller reports a refusal with pageActionFailed.
    if (action) p.offlined = 'offline';
  }

  /** The kernel refused to offline a page: it stays eligible, as mcelog marks it failed. */
  pageActionFailed(address: bigint): void {
    const p = this.#pages.get(address & ~0xfffn);
    if (p) p.offlined = 'failed';
  }

  /** Wall time (seconds) of the newest record observed; 0 before any. */
  get latest(): number {
    return this.#latest;
  }

  /**
   * Per-DIMM counts with the threshold windows aged to `at` (default: the clock; a recording's viewer passes
   * {@link latest}, the recording's own "now").
   */
  dimmCounts(at?: number): DimmCount[] {
    const now = at ?? this.#now();
    return [...this.#dimms.values()].map((m) => {
      m.ceBucket.age(now);
      return {
        socket: m.socket,
        channel: m.channel,
        dimm: m.dimm,
        ce: m.ce,
        uc: m.uc,
        ceWindow: m.ceBucket.count,
        ceCapacity: m.ceBucket.rate.capacity,
      };
    });
  }
}

/** Where a count is kept: a socket, a DIMM of it, or a bank of it. */
interface Place {
  readonly socket: number;
  readonly channel?: number | undefined;
  readonly dimm?: number | undefined;
  readonly bank?: number | undefined;
}

function counted(ce: Rate, uc: Rate, t: number): Counted {
  return { ce: 0, uc: 0, ceBucket: new LeakyBucket(ce, t), ucBucket: new LeakyBucket(uc, t) };
}

function locationText(socket: number, channel: number | undefined, dimm: number | undefined): string {
  return `SOCKET:${socket} CHANNEL:${channel ?? '?'} DIMM:${dimm ?? '?'} []`;
}

function event(
  kind: TrackerEventKind,
  record: DecodedMce,
  trigger: string | undefined,
  message: string,
  env: Record<string, string>,
): TrackerEvent {
  return { kind, record, trigger, message, env };
}

/** The environment of memdb_trigger: THRESHOLD, TOTALCOUNT, LOCATION, DIMM, CHANNEL, SOCKETID, CECOUNT, UCCOUNT... */
function memoryEvent(
  kind: TrackerEventKind,
  d: DecodedMce,
  trigger: string | undefined,
  message: string,
  counts: { ce: number; uc: number },
  bucket: LeakyBucket,
  where: string,
  at: Place,
  t: number,
): TrackerEvent {
  const thresh = bucket.text();
  const env: Record<string, string> = {
    THRESHOLD: thresh,
    TOTALCOUNT: String(kind.endsWith('-uc') ? counts.uc : counts.ce),
    LOCATION: where,
  };
  if (at.dimm !== undefined) env.DIMM = String(at.dimm);
  if (at.channel !== undefined) env.CHANNEL = String(at.channel);
  if (at.bank !== undefined) Object.assign(env, { BANK: String(at.bank), UNIT: d.location.unit ?? '' });
  Object.assign(env, {
    SOCKETID: String(at.socket),
    CECOUNT: String(counts.ce),
    UCCOUNT: String(counts.uc),
    LASTEVENT: String(t),
    AGETIME: String(bucket.rate.ageSeconds),
    MESSAGE: `${message}: ${thresh}`,
    THRESHOLD_COUNT: String(bucket.count),
  });
  return event(kind, d, trigger, message, env);
}
