/**
 * mcelog's configuration file (mcelog.conf(5)): `key = value` lines in `[section]`s, `#` comments. The tracker reads
 * the keys that shape thresholds and triggers; others are listed as notes so nothing is silently ignored. Rates are
 * mcelog's `COUNT [kmg] / TIME [smhd]` leaky-bucket strings (`2 / 1min` is two per minute: only the first letter of
 * the unit counts, as mcelog reads it).
 */
import { type InputNote, MceError } from './errors.ts';

/** A leaky-bucket rate: `capacity` events per `ageSeconds`. */
export interface Rate {
  readonly capacity: number;
  readonly ageSeconds: number;
  /** As written, for messages. */
  readonly text: string;
}

const UNIT: Readonly<Record<string, number>> = { '': 1, s: 1, m: 60, h: 3600, d: 86400 };
const SCALE: Readonly<Record<string, number>> = { '': 1, k: 1e3, m: 1e6, g: 1e9 };

/** Parses `COUNT [kmg] / TIME [smhd]`. @throws MceError `ERR_MCE_CONFIG`. */
export function parseRate(text: string, where: { file?: string; line?: number } = {}): Rate {
  const m = /^\s*(\d+)\s*([kmgKMG])?\s*\/\s*(\d+)\s*([A-Za-z]*)\s*$/.exec(text);
  const unit = m?.[4]?.[0]?.toLowerCase() ?? '';
  if (!m || Number(m[1]) === 0 || Number(m[3]) === 0 || !(unit in UNIT)) {
    throw new MceError('ERR_MCE_CONFIG', `bad rate '${text}': expected COUNT / TIME, e.g. '10 / 24h'`, {
      location: where,
    });
  }
  return {
    capacity: Number(m[1]) * SCALE[(m[2] ?? '').toLowerCase()]!,
    ageSeconds: Number(m[3]) * UNIT[unit]!,
    text: text.trim(),
  };
}

export type PageAction = 'off' | 'account' | 'soft' | 'hard' | 'soft-then-hard';

export interface TrackerConfig {
  readonly dimm: {
    readonly enabled: boolean;
    readonly ceThreshold: Rate;
    readonly ucThreshold: Rate;
    readonly ceTrigger?: string;
    readonly ucTrigger?: string;
  };
  readonly socket: {
    readonly enabled: boolean;
    readonly ceThreshold: Rate;
    readonly ucThreshold: Rate;
    readonly ceTrigger?: string;
    readonly ucTrigger?: string;
    readonly busTrigger?: string;
    readonly iomcaTrigger?: string;
    readonly unknownTrigger?: string;
  };
  /** Per machine-check bank of a socket (evtrace's own section, in the [dimm] section's terms). */
  readonly bank: {
    readonly enabled: boolean;
    readonly ceThreshold: Rate;
    readonly ucThreshold: Rate;
    readonly ceTrigger?: string;
    readonly ucTrigger?: string;
  };
  readonly cache: { readonly trigger?: string };
  readonly page: {
    readonly action: PageAction;
    readonly threshold: Rate;
    readonly trigger?: string;
    readonly preSoftTrigger?: string;
    readonly postSoftTrigger?: string;
    readonly maxCounters: number;
    readonly replacementThreshold: Rate;
    readonly replacementTrigger?: string;
  };
  readonly trigger: { readonly directory?: string; readonly childrenMax: number };
}

/** mcelog's defaults (mcelog.conf as shipped). */
export const DEFAULT_CONFIG: TrackerConfig = {
  dimm: { enabled: false, ceThreshold: parseRate('100 / 24h'), ucThreshold: parseRate('1 / 24h') },
  socket: { enabled: false, ceThreshold: parseRate('100 / 24h'), ucThreshold: parseRate('1 / 24h') },
  bank: { enabled: false, ceThreshold: parseRate('100 / 24h'), ucThreshold: parseRate('1 / 24h') },
  cache: {},
  page: {
    action: 'off',
    threshold: parseRate('10 / 24h'),
    maxCounters: 2 ** 31,
    replacementThreshold: parseRate('50 / 24h'),
  },
  trigger: { childrenMax: 2 },
};

/** Keys read elsewhere or meaningless here (mcelog daemon plumbing, DMI, the upstream test harness). */
const IGNORED = new Set([
  'cpu',
  'dmi',
  'filter-memory-errors',
  'num-errors',
  'logfile',
  'syslog',
  'syslog-error',
  'no-syslog',
  'raw',
  'cpumhz',
  'daemon',
  'foreground',
  'pidfile',
  'server/socket-path',
  'server/server-user',
  'server/server-group',
  'server/client-user',
  'server/client-group',
  'dimm/dimm-dmi-check',
  'dimm/ce-error-log',
  'dimm/uc-error-log',
  'socket/mem-ce-error-log',
  'socket/mem-uc-error-log',
  'cache/cache-threshold-log',
  'bank/ce-error-log',
  'bank/uc-error-log',
  'page/memory-ce-log',
]);

/** Parses an mcelog configuration. Bad values throw with their line; unknown keys are notes. */
export function parseMcelogConfig(text: string, file?: string): { config: TrackerConfig; notes: InputNote[] } {
  const notes: InputNote[] = [];
  const values = new Map<string, { value: string; line: number }>();
  let section = '';
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (line === '') return;
    const sec = /^\[\s*([\w-]+)\s*\]$/.exec(line);
    if (sec) {
      section = sec[1]!;
      return;
    }
    const kv = /^([\w-]+)\s*=\s*(.*)$/.exec(line);
    if (!kv) {
      notes.push({ location: { file, line: i + 1 }, message: `not a 'key = value' line, ignored: ${line}` });
      return;
    }
    values.set(section ? `${section}/${kv[1]}` : kv[1]!, { value: kv[2]!.trim(), line: i + 1 });
  });
  const used = new Set<string>();
  const str = (k: string) => {
    used.add(k);
    return values.get(k)?.value;
  };
  const yes = (k: string) => /^(?:yes|1|on|true)$/i.test(str(k) ?? '');
  const rate = (k: string, d: Rate) => {
    const v = values.get(k);
    used.add(k);
    return v === undefined ? d : parseRate(v.value, { file, line: v.line });
  };
  const int = (k: string, d: number) => {
    const v = values.get(k);
    used.add(k);
    if (v === undefined) return d;
    if (!/^\d+$/.test(v.value))
      throw new MceError('ERR_MCE_CONFIG', `${k} must be a number, not '${v.value}'`, {
        location: { file, line: v.line },
      });
    return Number(v.value);
  };
  const d = DEFAULT_CONFIG;
  const action = (str('page/memory-ce-action') ?? 'off') as PageAction;
  if (!['off', 'account', 'soft', 'hard', 'soft-then-hard'].includes(action)) {
    throw new MceError(
      'ERR_MCE_CONFIG',
      `memory-ce-action must be off|account|soft|hard|soft-then-hard, not '${action}'`,
      {
        location: { file, line: values.get('page/memory-ce-action')?.line },
      },
    );
  }
  const opt = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
  const config: TrackerConfig = {
    dimm: opt({
      enabled: yes('dimm/dimm-tracking-enabled'),
      ceThreshold: rate('dimm/ce-error-threshold', d.dimm.ceThreshold),
      ucThreshold: rate('dimm/uc-error-threshold', d.dimm.ucThreshold),
      ceTrigger: str('dimm/ce-error-trigger'),
      ucTrigger: str('dimm/uc-error-trigger'),
    }),
    socket: opt({
      enabled: yes('socket/socket-tracking-enabled'),
      ceThreshold: rate('socket/mem-ce-error-threshold', d.socket.ceThreshold),
      ucThreshold: rate('socket/mem-uc-error-threshold', d.socket.ucThreshold),
      ceTrigger: str('socket/mem-ce-error-trigger'),
      ucTrigger: str('socket/mem-uc-error-trigger'),
      busTrigger: str('socket/bus-uc-threshold-trigger'),
      iomcaTrigger: str('socket/iomca-threshold-trigger'),
      unknownTrigger: str('socket/unknown-threshold-trigger'),
    }),
    bank: opt({
      enabled: yes('bank/bank-tracking-enabled'),
      ceThreshold: rate('bank/ce-error-threshold', d.bank.ceThreshold),
      ucThreshold: rate('bank/uc-error-threshold', d.bank.ucThreshold),
      ceTrigger: str('bank/ce-error-trigger'),
      ucTrigger: str('bank/uc-error-trigger'),
    }),
    cache: opt({ trigger: str('cache/cache-threshold-trigger') }),
    page: opt({
      action,
      threshold: rate('page/memory-ce-threshold', d.page.threshold),
      trigger: str('page/memory-ce-trigger'),
      preSoftTrigger: str('page/memory-pre-sync-soft-ce-trigger'),
      postSoftTrigger: str('page/memory-post-sync-soft-ce-trigger'),
      maxCounters: int('max-corr-err-counters', d.page.maxCounters),
      replacementThreshold: rate('page/memory-ce-counter-replacement-threshold', d.page.replacementThreshold),
      replacementTrigger: str('page/memory-ce-counter-replacement-trigger'),
    }),
    trigger: opt({
      directory: str('trigger/directory'),
      childrenMax: int('trigger/children-max', d.trigger.childrenMax),
    }),
  };
  for (const [k, v] of values) {
    if (!used.has(k) && !IGNORED.has(k))
      notes.push({ location: { file, line: v.line }, message: `unknown setting '${k}', ignored` });
  }
  return { config, notes };
}
