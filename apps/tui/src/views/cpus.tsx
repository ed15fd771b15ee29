/**
 * The CPUs view: per CPU an event-rate sparkline and the event and loss counters; under them what the source can
 * tell of its buffers: a live session's fill and loss per CPU over time (the agent's gauges), or for a file what
 * the file says of each CPU (events, bytes, the losses it marks), labelled as such; below, the rate of each event
 * type.
 */
import { Box, Text } from 'ink';
import { useMemo } from 'react';
import type { SourceStats } from '../data/source.ts';
import { bytesText, countText, fit, gauge, sparkline } from '../ui/format.ts';
import { useColour, useTheme } from '../ui/theme.ts';
import type { ViewDefinition, ViewProps } from './registry.ts';

function CpusView(props: ViewProps) {
  const { source, width, height, tick } = props;
  const colour = useColour();
  const { colour: fancy } = useTheme();
  // Live stats change with every refresh; a file's are computed once, on first show.
  const stats = useMemo(() => source.stats(), [source, tick]);
  const spark = Math.max(10, Math.min(60, width - 34));
  // Rates and buffers take a row per CPU each, with two headers and a label: the rest goes to the event types.
  const perSection = Math.max(1, Math.floor((height - 6) / 3));
  const cpuRows = stats.cpus.slice(0, perSection);
  const buffers = bufferRows(stats, source.live, width, !fancy, perSection);
  const typeRows = stats.types.slice(0, Math.max(0, height - 3 - cpuRows.length - buffers.length));
  const rateTitle = source.live ? 'events/s, last 60 s' : 'events/s across the trace';
  return (
    <Box flexDirection="column" width={width} height={height}>
      <Text bold color={colour('cyan')}>
        {fit(`${fit('CPU', 5)} ${fit(rateTitle, spark)} ${fit('now', 8)} ${fit('events', 9)} lost`, width)}
      </Text>
      {cpuRows.map((c) => {
        const now = c.rates.length > 0 ? c.rates[c.rates.length - 1]! : 0;
        return (
          <Text key={c.cpu} wrap="truncate">
            {fit(`cpu${c.cpu}`, 5)} <Text color={colour('green')}>{sparkline(c.rates, spark, !fancy)}</Text>{' '}
            {fit(countText(now), 8)} {fit(countText(c.events), 9)}{' '}
            <Text color={c.lost > 0 ? colour('red') : undefined}>{countText(c.lost)}</Text>
          </Text>
        );
      })}
      {buffers.map((row, k) => (
        <Text key={k} wrap="truncate" bold={row.head} color={row.head ? colour('cyan') : undefined}>
          {row.text}
          {row.loss !== undefined ? <Text color={colour('red')}>{row.loss}</Text> : null}
          {row.tail}
        </Text>
      ))}
      <Text bold color={colour('cyan')}>
        {fit(`${fit('EVENT TYPE', 30)} ${fit('events/s', 10)} ${fit('events', 10)}`, width)}
      </Text>
      {typeRows.map((t) => (
        <Text key={t.name} wrap="truncate">
          {fit(t.name, 30)} {fit(countText(t.rate), 10)} {fit(countText(t.events), 10)}
        </Text>
      ))}
      {stats.types.length === 0 ? <Text dimColor>no events yet</Text> : null}
    </Box>
  );
}

/** A row of the buffers section: its text, a loss sparkline drawn in red and the text after it, or a header. */
interface Row {
  readonly text: string;
  readonly loss?: string;
  readonly tail?: string;
  readonly head?: boolean;
}

/**
 * The buffers section: a live session's gauges per CPU (fill now, fill and loss per interval over time, lost,
 * unread), a file's own account of its CPUs, or why a live source has none.
 */
export function bufferRows(stats: SourceStats, live: boolean, width: number, ascii: boolean, max: number): Row[] {
  if (!live) {
    const bytes = stats.cpus.some((c) => c.bytes !== undefined);
    const rows: Row[] = [
      {
        text: fit('FROM THE FILE (events, bytes and lost marks per CPU; a file has no buffer fill)', width),
        head: true,
      },
      {
        text: fit(`${fit('CPU', 5)} ${fit('events', 10)} ${fit('bytes', 11)} lost (marked in the file)`, width),
        head: true,
      },
    ];
    for (const c of stats.cpus.slice(0, max))
      rows.push({
        text: fit(
          `${fit(`cpu${c.cpu}`, 5)} ${fit(countText(c.events), 10)} ${fit(bytes && c.bytes !== undefined ? bytesText(c.bytes) : 'n/a', 11)} ${countText(c.lost)}`,
          width,
        ),
      });
    return rows;
  }
  const g = stats.buffers;
  if (g === undefined) {
    const why = stats.buffersUnavailable ?? "waiting for the agent's first sample";
    return [{ text: fit(`BUFFERS  n/a: ${why}`, width), head: true }];
  }
  // cpu, gauge and percentage, lost, unread take 46 columns; the two histories share the rest. The fill history is
  // each interval's peak (the agent drains its buffers within milliseconds: the fill at a sample is mostly empty).
  const hist = Math.max(4, Math.floor((width - 46) / 2));
  const every = g.intervalMs % 1000 === 0 ? `${g.intervalMs / 1000} s` : `${g.intervalMs} ms`;
  const rows: Row[] = [
    { text: fit(`BUFFERS  ${g.origin}, every ${every}`, width), head: true },
    {
      text: fit(
        `${fit('CPU', 5)} ${fit('fill', 18)} ${fit('peak fill when read', hist)} ${fit('lost', 8)} ${fit(`lost/${every}`, hist)} unread`,
        width,
      ),
      head: true,
    },
  ];
  for (const c of g.cpus.slice(0, max)) {
    const pct = `${Math.round(c.fill * 100)}%`;
    const unread = c.entries !== null ? `${countText(c.entries)} ev` : `${countText(Math.max(0, c.head - c.read))} pg`;
    rows.push({
      text: `${fit(`cpu${c.cpu}`, 5)} ${gauge(c.fill, 12)} ${fit(pct, 5)} ${sparkline(c.fills, hist, ascii, 1)} ${fit(countText(c.lost), 8)} `,
      loss: sparkline(c.losses, hist, ascii),
      tail: ` ${fit(unread, 9)}`,
    });
  }
  return rows;
}

export const cpusView: ViewDefinition = {
  title: 'CPUs',
  keys: [],
  Component: CpusView,
};
