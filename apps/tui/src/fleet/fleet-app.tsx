/**
 * The fleet view (`evtrace-view --nats URL`): the hosts with their last status, hardware errors across hosts as they
 * come, and a tail of the events agents export, each line with its host. One screen, sections sized to the terminal.
 */
import {
  eventText,
  FleetEventDecoder,
  type FleetRecord,
  type HardwareLine,
  type HostSummary,
  hostState,
  placeOf,
} from '@evtrace/fleet';
import { Box, Text, useApp, useInput, useWindowSize } from 'ink';
import { useEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react';
import { errorLine } from '../errors.ts';
import { fit } from '../ui/format.ts';
import { keyPresses } from '../ui/keys.ts';
import { useColour } from '../ui/theme.ts';
import type { FeedState, FleetFeed } from './feed.ts';
import { FLEET_KEYS } from './keys.ts';

const MAX_HOST_ROWS = 6;
const MAX_ERROR_ROWS = 5;

/** The fleet view of `feed`, reached at `url`. */
export function FleetApp(props: { feed: FleetFeed; url: string; stream: string }) {
  const { feed } = props;
  const live = useSyncExternalStore(
    (l) => feed.subscribe(l),
    () => feed.state,
  );
  const { columns, rows } = useWindowSize();
  const { exit } = useApp();
  const [paused, setPaused] = useState<FeedState | undefined>(undefined);
  const [help, setHelp] = useState(false);
  const [host, setHost] = useState<string | undefined>(undefined);
  const rate = useRate(live.events);
  useInput((input, key) => {
    for (const k of keyPresses(input, key)) {
      if (k === 'ctrl-c' || (k === 'q' && !help)) return exit();
      if (help) {
        setHelp(false);
        continue;
      }
      if (k === '?') setHelp(true);
      else if (k === ' ') setPaused((p) => (p === undefined ? live : undefined));
      else if (k === 'tab' || k === 'h') setHost((h) => nextHost(live.hosts, h));
      else if (k === 'H') setHost(undefined);
    }
  });
  const shown = paused ?? live;
  const colour = useColour();
  const width = Math.max(20, columns);
  const height = Math.max(10, rows);
  const hosts = live.hosts.filter((h) => host === undefined || h.host === host);
  const errors = live.errors.filter((e) => host === undefined || e.host === host);
  const tail = shown.tail.filter((r) => host === undefined || r.host === host);
  const hostRows = Math.min(MAX_HOST_ROWS, Math.max(1, hosts.length));
  const errorRows = Math.min(MAX_ERROR_ROWS, Math.max(1, errors.length));
  // Title, three section headers, the footer.
  const tailRows = Math.max(1, height - 5 - hostRows - errorRows);
  const title = `evtrace fleet  hosts ${live.hosts.length}  events ${rate}/s${host !== undefined ? `  host ${host}` : ''}${paused !== undefined ? '  PAUSED' : ''}  stream ${props.stream}  ${props.url}`;
  const footer = live.problem ?? 'q quit  ? help  space pause  Tab next host  H all hosts';
  if (help)
    return (
      <Box flexDirection="column" width={width} height={height}>
        <Text bold>{fit('Fleet view: keys', width)}</Text>
        {FLEET_KEYS.map(([k, what]) => (
          <Text key={k}>{fit(`  ${k.padEnd(12)} ${what}`, width)}</Text>
        ))}
        <Text>{fit('  Any key closes this help.', width)}</Text>
      </Box>
    );
  return (
    <Box flexDirection="column" width={width} height={height}>
      <Text bold inverse>
        {fit(title, width)}
      </Text>
      <Text bold color={colour('cyan')}>
        {fit(
          `${'HOST'.padEnd(16)} ${'LAST SEEN'.padEnd(9)} ${'VERSION'.padEnd(8)} ${'LOST'.padStart(7)} ${'DROPPED'.padStart(7)} SESSIONS`,
          width,
        )}
      </Text>
      {rowsOf(hosts.slice(0, hostRows).map(hostLine), hostRows, 'no host has published yet', width)}
      <Text bold color={colour('cyan')}>
        {fit('Hardware errors (last 24h, newest last)', width)}
      </Text>
      {rowsOf(errors.slice(-errorRows).map(errorText), errorRows, 'no hardware errors', width, colour('red'))}
      <Text bold color={colour('cyan')}>
        {fit(`Events${paused !== undefined ? ' (paused)' : ''}`, width)}
      </Text>
      <Tail records={tail.slice(-tailRows)} rows={tailRows} width={width} />
      <Text color={live.problem !== undefined ? colour('yellow') : undefined}>{fit(footer, width)}</Text>
    </Box>
  );
}

function rowsOf(lines: string[], rows: number, none: string, width: number, color?: string) {
  const out = lines.length === 0 ? [`  ${none}`] : lines;
  return Array.from({ length: rows }, (_, i) => (
    <Text key={i} color={lines.length > 0 ? color : undefined}>
      {fit(out[i] ?? '', width)}
    </Text>
  ));
}

/** The tail's rows: only the records on screen are decoded. */
function Tail(props: { records: readonly FleetRecord[]; rows: number; width: number }) {
  const decoder = useMemo(() => new FleetEventDecoder(), []);
  const lines = props.records.map((r) => {
    try {
      return eventText(r, decoder.decode(r.record, r.host, r.channel, r.seq));
    } catch (error) {
      return `${r.host} #${r.seq} ${errorLine(error)}`;
    }
  });
  return <>{rowsOf(lines, props.rows, 'waiting for exported events (sessions created with --export)', props.width)}</>;
}

function hostLine(h: HostSummary): string {
  const st = hostState(h);
  const seen = h.lastSeen === undefined ? 'never' : `${ago(h.lastSeen)} ago`;
  return `${h.host.padEnd(16)} ${seen.padEnd(9)} ${(st.version ?? '?').padEnd(8)} ${String(st.lost).padStart(7)} ${String(st.dropped).padStart(7)} ${st.sessions.join(',') || '-'}`;
}

function errorText(e: HardwareLine & { stored: Date }): string {
  const time = e.stored.toISOString().slice(11, 19);
  if (e.kind === 'threshold') {
    const t = e.record;
    return `${time} ${e.host} threshold ${placeOf(t)}: ${t.message} (${t.action}: ${t.result})`;
  }
  const r = e.record;
  return `${time} ${e.host} ${e.channel} ${r.severity} ${placeOf(r)}${r.count > 1 ? ` x${r.count}` : ''}: ${r.summary}`;
}

function ago(d: Date): string {
  const s = Math.max(0, Math.round((Date.now() - d.getTime()) / 1000));
  return s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`;
}

function nextHost(hosts: readonly HostSummary[], current: string | undefined): string | undefined {
  if (hosts.length === 0) return undefined;
  const i = current === undefined ? -1 : hosts.findIndex((h) => h.host === current);
  return i + 1 < hosts.length ? hosts[i + 1]!.host : undefined;
}

/** Events per second, from the count sampled each second. */
function useRate(count: number): number {
  const [rate, setRate] = useState(0);
  const sample = useRef({ count, at: Date.now(), now: count });
  sample.current.now = count;
  useEffect(() => {
    const t = setInterval(() => {
      const s = sample.current;
      const at = Date.now();
      setRate(Math.round(((s.now - s.count) * 1000) / Math.max(1, at - s.at)));
      s.count = s.now;
      s.at = at;
    }, 1000);
    return () => clearInterval(t);
  }, []);
  return rate;
}
