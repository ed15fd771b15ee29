/**
 * The CPUs view: per CPU an event-rate sparkline, a buffer fill gauge and the lost-event counter; below, the rate of
 * each event type.
 */
import { Box, Text } from 'ink';
import { useMemo } from 'react';
import { countText, fit, gauge, sparkline } from '../ui/format.ts';
import { useColour, useTheme } from '../ui/theme.ts';
import type { ViewDefinition, ViewProps } from './registry.ts';

function CpusView(props: ViewProps) {
  const { source, width, height, tick } = props;
  const colour = useColour();
  const { colour: fancy } = useTheme();
  // Live stats change with every refresh; a file's are computed once, on first show.
  const stats = useMemo(() => source.stats(), [source, tick]);
  const spark = Math.max(10, Math.min(60, width - 62));
  const cpuRows = stats.cpus.slice(0, Math.max(1, Math.floor((height - 4) / 2)));
  const typeRows = stats.types.slice(0, Math.max(0, height - 5 - cpuRows.length));
  const rateTitle = source.live ? 'events/s, last 60 s' : 'events/s across the trace';
  return (
    <Box flexDirection="column" width={width} height={height}>
      <Text bold color={colour('cyan')}>
        {fit(
          `${fit('CPU', 5)} ${fit(rateTitle, spark)} ${fit('now', 8)} ${fit('fill', 20)} ${fit('events', 9)} lost`,
          width,
        )}
      </Text>
      {cpuRows.map((c) => {
        const now = c.rates.length > 0 ? c.rates[c.rates.length - 1]! : 0;
        const fill =
          c.fill === undefined ? fit('n/a', 20) : `${gauge(c.fill, 14)} ${fit(`${Math.round(c.fill * 100)}%`, 5)}`;
        return (
          <Text key={c.cpu} wrap="truncate">
            {fit(`cpu${c.cpu}`, 5)} <Text color={colour('green')}>{sparkline(c.rates, spark, !fancy)}</Text>{' '}
            {fit(countText(now), 8)} {fit(fill, 20)} {fit(countText(c.events), 9)}{' '}
            <Text color={c.lost > 0 ? colour('red') : undefined}>{countText(c.lost)}</Text>
          </Text>
        );
      })}
      <Text dimColor>{fit(cpuRows[0]?.fillLabel ? `fill: ${cpuRows[0].fillLabel}` : '', width)}</Text>
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

export const cpusView: ViewDefinition = {
  title: 'CPUs',
  keys: [],
  Component: CpusView,
};
