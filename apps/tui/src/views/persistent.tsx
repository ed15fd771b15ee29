/**
 * Persistent buffers in the Sessions view: the named buffers of both backends (@evtrace/persistent-events: user-space
 * flight recorders, kernel ftrace instances). Attached to an agent, the agent lists them (what it can open, with the
 * session attached to each); without one, or with an agent that cannot list them, this process reads the directory
 * and tracefs itself. The list is read again every 2 s while the view is on screen.
 */
import type { BufferList } from '@evtrace/agent-protocol';
import { type ListOptions, listPersistent } from '@evtrace/persistent-events';
import { Box, Text } from 'ink';
import { useEffect, useState } from 'react';
import { countText, fit } from '../ui/format.ts';
import { useColour } from '../ui/theme.ts';

/** Rows the section uses at most: title, header, up to four buffers, one note. */
export const PERSISTENT_ROWS = 7;

const percent = (f: number | null) => (f === null ? '-' : `${Math.round(f * 100)}%`);
const maybe = (n: number | null) => (n === null ? '-' : countText(n));

function size(bytes: number): string {
  if (bytes >= 1 << 30) return `${(bytes / 2 ** 30).toFixed(1)}G`;
  if (bytes >= 1 << 20) return `${(bytes / 2 ** 20).toFixed(1)}M`;
  return `${Math.round(bytes / 1024)}K`;
}

export function PersistentBuffers(props: {
  width: number;
  active: boolean;
  options?: ListOptions;
  /** The agent's listing (SessionControl.buffers); without it, or when it fails, the buffers are listed directly. */
  agent?: (() => Promise<BufferList>) | undefined;
}) {
  const colour = useColour();
  const [listing, setListing] = useState<BufferList | undefined>(undefined);
  const [via, setVia] = useState<'agent' | 'direct'>('direct');
  const [error, setError] = useState('');
  const { active, options, agent } = props;
  useEffect(() => {
    if (!active) return;
    let live = true;
    const direct = (why: string) => {
      try {
        const l = listPersistent(options);
        if (!live) return;
        setListing(l);
        setVia('direct');
        setError(why);
      } catch (e) {
        if (live) setError((e as Error).message);
      }
    };
    const refresh = () => {
      if (agent === undefined) return direct('');
      agent().then(
        (l) => {
          if (!live) return;
          setListing(l);
          setVia('agent');
          setError('');
        },
        (e: Error) => direct(`the agent did not list them (${e.message}): read directly`),
      );
    };
    refresh();
    const timer = setInterval(refresh, 2000);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [active, options, agent]);

  const buffers = listing?.buffers ?? [];
  const header = `${fit(via === 'agent' ? 'PERSISTENT (agent)' : 'PERSISTENT', 24)} ${fit('BACKEND', 8)} ${fit('SIZE', 7)} ${fit('MODE', 10)} ${fit('FILL', 5)} ${fit('LOST', 7)} ${fit('W', 3)} ${fit('R', 3)} ${fit('OWNER', 8)} SESSION`;
  const note =
    error ||
    [
      buffers.length > PERSISTENT_ROWS - 3 ? `${buffers.length - (PERSISTENT_ROWS - 3)} more: evtrace ls` : '',
      listing?.unreadable.length ? `${listing.unreadable.length} unreadable (evtrace ls says why)` : '',
      listing?.kernelUnavailable ? 'kernel buffers: need root and tracefs' : '',
    ]
      .filter(Boolean)
      .join('; ');
  return (
    <Box flexDirection="column" width={props.width}>
      <Text bold color={colour('cyan')}>
        {fit(header, props.width)}
      </Text>
      {listing === undefined && !error ? <Text dimColor>reading persistent buffers…</Text> : null}
      {listing !== undefined && buffers.length === 0 ? (
        <Text dimColor>no persistent buffers (evtrace persistent create NAME --size 1M)</Text>
      ) : null}
      {buffers.slice(0, PERSISTENT_ROWS - 3).map((b) => (
        <Text key={`${b.backend}:${b.name}`} wrap="truncate">
          {' '}
          {fit(b.name, 23)} {fit(b.boot ? 'boot' : b.backend, 8)} {fit(size(b.size), 7)} {fit(b.mode, 10)}{' '}
          {fit(percent(b.fill), 5)} {fit(maybe(b.lost), 7)} {fit(maybe(b.writers), 3)} {fit(maybe(b.readers), 3)}{' '}
          {fit(b.owner, 8)} {b.session ?? '-'}
        </Text>
      ))}
      {note ? <Text dimColor>{fit(note, props.width)}</Text> : null}
    </Box>
  );
}
