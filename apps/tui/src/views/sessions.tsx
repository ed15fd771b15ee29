/**
 * The Sessions view: the agent's sessions (mode, state, counts) and their control from the keyboard, and the
 * persistent buffers (through the agent when attached to one). Without an agent it explains how to get one.
 */
import { Box, Text } from 'ink';
import { useCallback, useEffect, useState } from 'react';
import type { SessionControl, SessionInfo } from '../data/source.ts';
import { countText, fit } from '../ui/format.ts';
import { useKeys } from '../ui/keys.ts';
import { LineText } from '../ui/line-box.tsx';
import { editLine, type LineState, line } from '../ui/line-edit.ts';
import { useColour } from '../ui/theme.ts';
import { PERSISTENT_ROWS, PersistentBuffers } from './persistent.tsx';
import type { ViewDefinition, ViewProps } from './registry.ts';

/** Events a session created from the keyboard records. */
export const NEW_SESSION_EVENTS = ['sched:sched_switch', 'kmem:kmalloc', 'kmem:kfree'];

function SessionsView(props: ViewProps) {
  const control = props.source.sessions;
  const agent = props.height - PERSISTENT_ROWS;
  return (
    <Box flexDirection="column" width={props.width} height={props.height}>
      {control === undefined ? (
        <Box height={agent}>
          <NoAgent width={props.width} live={props.source.live} />
        </Box>
      ) : (
        <SessionList {...props} height={agent} control={control} />
      )}
      <PersistentBuffers width={props.width} active={props.active} agent={control?.buffers} />
    </Box>
  );
}

function NoAgent(props: { width: number; live: boolean }) {
  const colour = useColour();
  return (
    <Box flexDirection="column" width={props.width}>
      <Text bold color={colour('cyan')}>
        No agent
      </Text>
      <Text wrap="wrap">
        {props.live
          ? 'No evtrace agent answered, so this viewer runs the embedded demo source instead.'
          : 'This viewer shows a trace file; sessions belong to a running evtrace agent.'}
      </Text>
      <Text wrap="wrap">Sessions are recordings the agent keeps running. To see and control them here:</Text>
      <Text> 1. start the agent: evtrace agent (as root for kernel events)</Text>
      <Text> 2. run evtrace-view with no argument, or evtrace-view --agent SOCKET</Text>
    </Box>
  );
}

type Prompt = { kind: 'name'; line: LineState } | { kind: 'destroy'; name: string };

function SessionList(props: ViewProps & { control: SessionControl }) {
  const { control, active, width, height } = props;
  const colour = useColour();
  const [sessions, setSessions] = useState<readonly SessionInfo[] | undefined>(undefined);
  const [cursor, setCursor] = useState(0);
  const [note, setNote] = useState('');
  const [prompt, setPrompt] = useState<Prompt | undefined>(undefined);

  const refresh = useCallback(() => {
    control.list().then(setSessions, (e: Error) => setNote(`list failed: ${e.message}`));
  }, [control]);
  useEffect(() => {
    if (!active) return;
    refresh();
    const timer = setInterval(refresh, 1000);
    return () => clearInterval(timer);
  }, [active, refresh]);

  const selected = sessions?.[Math.min(cursor, (sessions?.length ?? 1) - 1)];
  const run = (what: string, action: Promise<unknown>) => {
    setNote(`${what}…`);
    action.then(
      (result) => {
        setNote(`${what}: done${typeof result === 'string' && result ? ` (${result})` : ''}`);
        refresh();
      },
      (e: Error) => setNote(`${what} failed: ${e.message}`),
    );
  };

  useKeys(
    (key) => {
      if (prompt?.kind === 'name') {
        if (key === 'escape') setPrompt(undefined);
        else if (key === 'enter') {
          setPrompt(undefined);
          const name = prompt.line.text;
          if (name !== '') run(`create ${name}`, control.create(name, NEW_SESSION_EVENTS));
        } else {
          // Session names are words, dots and dashes: other characters are not typed in.
          const next = key.length === 1 && !/[\w.-]/.test(key) ? undefined : editLine(prompt.line, key);
          if (next !== undefined) setPrompt({ kind: 'name', line: next });
        }
        return true;
      }
      if (prompt?.kind === 'destroy') {
        setPrompt(undefined);
        if (key === 'y') run(`destroy ${prompt.name}`, control.destroy(prompt.name));
        else setNote('destroy cancelled');
        return true;
      }
      const n = sessions?.length ?? 0;
      switch (key) {
        case 'j':
        case 'down':
          setCursor(Math.min(n - 1, cursor + 1));
          return true;
        case 'k':
        case 'up':
          setCursor(Math.max(0, cursor - 1));
          return true;
        case 'g':
          setCursor(0);
          return true;
        case 'G':
          setCursor(Math.max(0, n - 1));
          return true;
        case 'c':
          setPrompt({ kind: 'name', line: line() });
          return true;
        case 'x':
          if (selected) run(`stop ${selected.name}`, control.stop(selected.name));
          return true;
        case 's':
          if (selected) run(`snapshot ${selected.name}`, control.snapshot(selected.name));
          return true;
        case 'd':
          if (selected) setPrompt({ kind: 'destroy', name: selected.name });
          return true;
        default:
          return false;
      }
    },
    active,
    prompt !== undefined,
  );

  const header = `${fit('SESSION', 20)} ${fit('SOURCE', 8)} ${fit('MODE', 10)} ${fit('STATE', 10)} ${fit('EVENTS', 9)} ${fit('LOST', 8)} BYTES`;
  return (
    <Box flexDirection="column" width={width} height={height}>
      <Text bold color={colour('cyan')}>
        {fit(header, width)}
      </Text>
      {sessions === undefined ? <Text dimColor>asking the agent…</Text> : null}
      {sessions?.length === 0 ? <Text dimColor>the agent has no sessions: c creates one</Text> : null}
      {(sessions ?? []).slice(0, Math.max(1, height - 4)).map((s) => (
        <Text key={s.name} inverse={s === selected} wrap="truncate">
          {s === selected ? '>' : ' '}
          {fit(s.name, 19)} {fit(s.source ?? '', 8)} {fit(s.mode, 10)} {fit(s.state, 10)} {fit(countText(s.events), 9)}{' '}
          {fit(countText(s.lost), 8)} {countText(s.bytes)}
        </Text>
      ))}
      <Box flexGrow={1} />
      {prompt?.kind === 'name' ? (
        <Text>
          new session name: <LineText line={prompt.line} /> (records {NEW_SESSION_EVENTS.join(', ')}; Enter creates, Esc
          cancels)
        </Text>
      ) : prompt?.kind === 'destroy' ? (
        <Text color={colour('red')}>destroy session {prompt.name}? y to confirm, any other key cancels</Text>
      ) : (
        <Text dimColor>{fit(note, width)}</Text>
      )}
    </Box>
  );
}

export const sessionsView: ViewDefinition = {
  title: 'Sessions',
  keys: [
    ['j/k', 'move'],
    ['c', 'create'],
    ['x', 'stop'],
    ['s', 'snapshot'],
    ['d', 'destroy'],
  ],
  Component: SessionsView,
};
