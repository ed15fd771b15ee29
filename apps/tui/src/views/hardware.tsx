/**
 * The Hardware view: machine checks (`mce:mce_record`) and EDAC memory errors (`ras:mc_event`) of the source, decoded
 * by @evtrace/hw-mce — errors by severity, the thresholds the agent saw crossed (`evtrace:mce_threshold`: what, where,
 * what it did about it), per-DIMM counts against mcelog's default DIMM threshold, the list of errors and, on Enter, the
 * decoded record (what failed, where, how bad, what to do).
 */
import {
  DEFAULT_CONFIG,
  type DecodedMce,
  decodeMce,
  edacFromTraceFields,
  edacSeverity,
  edacSummary,
  mceFromTraceFields,
  SEVERITY_ORDER,
  type Severity,
  Tracker,
  toText,
} from '@evtrace/hw-mce';
import { Box, Text } from 'ink';
import { useMemo, useState } from 'react';
import type { EventStore } from '../data/store.ts';
import { countText, fit, gauge } from '../ui/format.ts';
import { useKeys } from '../ui/keys.ts';
import { useColour } from '../ui/theme.ts';
import type { ViewDefinition, ViewProps } from './registry.ts';

/** One row of the error list. */
interface HwError {
  readonly tsNs: bigint;
  readonly severity: Severity;
  readonly summary: string;
  /** The decoded record's operator text (machine checks), or the EDAC event's summary. */
  readonly detail: () => string;
}

/** A threshold crossing the agent recorded (`evtrace:mce_threshold`), in one line. */
interface HwCrossing {
  readonly tsNs: bigint;
  readonly text: string;
  /** The action failed (a page the kernel would not offline). */
  readonly failed: boolean;
}

interface HwSummary {
  readonly errors: HwError[];
  readonly bySeverity: Record<Severity, number>;
  readonly dimms: ReturnType<Tracker['dimmCounts']>;
  readonly crossings: HwCrossing[];
}

/** Reads the hardware events of a store (a scan of event classes: no decoding of other events). */
export function hardwareSummary(store: EventStore): HwSummary {
  const tracker = new Tracker({ ...DEFAULT_CONFIG, dimm: { ...DEFAULT_CONFIG.dimm, enabled: true } });
  const errors: HwError[] = [];
  const crossings: HwCrossing[] = [];
  const bySeverity = Object.fromEntries(SEVERITY_ORDER.map((s) => [s, 0])) as Record<Severity, number>;
  for (let i = 0; i < store.length; i++) {
    const name = store.eventClass(i).name;
    if (name === 'mce:mce_record') {
      const e = store.event(i);
      const d: DecodedMce = decodeMce(mceFromTraceFields(e.fields, { kind: 'trace' }));
      tracker.observe(d);
      bySeverity[d.severity]++;
      errors.push({ tsNs: e.tsNs, severity: d.severity, summary: d.summary, detail: () => toText(d) });
    } else if (name === 'ras:mc_event') {
      const e = store.event(i);
      const m = edacFromTraceFields(e.fields, { kind: 'trace' }, e.tsNs);
      const severity = edacSeverity(m.errorType);
      bySeverity[severity] += Math.max(1, m.count);
      const summary = edacSummary(m);
      errors.push({ tsNs: e.tsNs, severity, summary, detail: () => `${severity.toUpperCase()}: ${summary}\n` });
    } else if (name === 'evtrace:mce_threshold') {
      const { fields, tsNs } = store.event(i);
      const f = (k: string) => String(fields[k] ?? '');
      const did = f('action') === 'none' ? '' : `; ${f('action')}: ${f('result')}`;
      crossings.push({
        tsNs,
        text: `${f('message')}${f('location') ? ` at ${f('location')}` : ''}${did}`,
        failed: f('result').startsWith('failed'),
      });
    }
  }
  return { errors, bySeverity, dimms: tracker.dimmCounts(tracker.latest || undefined), crossings };
}

const SEVERITY_COLOUR: Record<Severity, string> = {
  corrected: 'green',
  deferred: 'yellow',
  ucna: 'yellow',
  srao: 'magenta',
  srar: 'red',
  fatal: 'red',
};

function HardwareView(props: ViewProps) {
  const { store, tick, width, height, active } = props;
  const colour = useColour();
  // Every view stays mounted: scan the store only while this one is on screen.
  const summary = useMemo(() => (active ? hardwareSummary(store) : undefined), [store, tick, active]);
  const [cursor, setCursor] = useState(0);
  const [open, setOpen] = useState(false);
  const n = summary?.errors.length ?? 0;
  const at = Math.min(cursor, Math.max(0, n - 1));
  useKeys((key) => {
    if (key === 'enter') setOpen((o) => !o && n > 0);
    else if (key === 'escape') setOpen(false);
    else if (key === 'down' || key === 'j') setCursor((c) => Math.max(0, Math.min(n - 1, c + 1)));
    else if (key === 'up' || key === 'k') setCursor((c) => Math.max(0, Math.min(c, n - 1) - 1));
    else return false;
    return true;
  }, active);
  if (summary === undefined) return <Box width={width} height={height} />;
  const dimmRows = summary.dimms.slice(0, Math.max(0, Math.floor((height - 6) / 3)));
  const latest = summary.crossings.at(-1);
  const listRows = Math.max(1, height - 5 - dimmRows.length - (latest !== undefined ? 1 : 0));
  const top = Math.max(0, Math.min(at - Math.floor(listRows / 2), n - listRows));
  if (open && n > 0) {
    const lines = summary.errors[at]!.detail().trimEnd().split('\n');
    return (
      <Box flexDirection="column" width={width} height={height}>
        <Text bold color={colour('cyan')}>
          {fit(`error ${at + 1} of ${n} (Enter or Esc: back to the list)`, width)}
        </Text>
        {lines.slice(0, height - 1).map((l, i) => (
          <Text key={i} wrap="truncate">
            {l}
          </Text>
        ))}
      </Box>
    );
  }
  return (
    <Box flexDirection="column" width={width} height={height}>
      <Text wrap="truncate">
        {SEVERITY_ORDER.map((s) => (
          <Text key={s} color={summary.bySeverity[s] > 0 ? colour(SEVERITY_COLOUR[s]) : undefined}>
            {`${s} ${countText(summary.bySeverity[s])}   `}
          </Text>
        ))}
      </Text>
      {latest !== undefined ? (
        <Text wrap="truncate" color={colour(latest.failed ? 'red' : 'yellow')}>
          {`thresholds crossed ${countText(summary.crossings.length)}, latest: ${latest.text}`}
        </Text>
      ) : null}
      <Text bold color={colour('cyan')}>
        {fit(
          `${fit('DIMM (socket/channel/dimm)', 28)} ${fit('corrected', 10)} ${fit('uncorr.', 8)} window vs threshold`,
          width,
        )}
      </Text>
      {dimmRows.map((d) => (
        <Text key={`${d.socket}/${d.channel}/${d.dimm}`} wrap="truncate">
          {fit(`${d.socket}/${d.channel ?? '?'}/${d.dimm ?? '?'}`, 28)} {fit(countText(d.ce), 10)}{' '}
          {fit(countText(d.uc), 8)} {gauge(d.ceWindow / d.ceCapacity, 14)} {`${d.ceWindow}/${d.ceCapacity}`}
        </Text>
      ))}
      {dimmRows.length === 0 ? <Text dimColor>no memory errors with a DIMM</Text> : null}
      <Text bold color={colour('cyan')}>
        {fit(`${fit('SEVERITY', 10)} SUMMARY`, width)}
      </Text>
      {summary.errors.slice(top, top + listRows).map((e, i) => (
        <Text key={top + i} wrap="truncate" inverse={top + i === at}>
          {`${top + i === at ? '>' : ' '}${fit(e.severity, 9)} `}
          {e.summary}
        </Text>
      ))}
      {n === 0 ? <Text dimColor>no machine checks or EDAC errors in this source</Text> : null}
    </Box>
  );
}

export const hardwareView: ViewDefinition = {
  title: 'Hardware',
  keys: [
    ['↑/↓', 'select an error'],
    ['Enter', 'decoded record'],
  ],
  Component: HardwareView,
  shows: (classes) =>
    classes.some((c) => c.name === 'mce:mce_record' || c.name === 'ras:mc_event' || c.name === 'evtrace:mce_threshold'),
};
