/**
 * The Events view: a virtualized list (only the rows on screen are decoded and rendered, whatever the trace's
 * length), a detail pane for the selected event, and the filter bar with the kernel's verdict as you type.
 */
import { Box, Text } from 'ink';
import { useEffect, useMemo, useRef, useState } from 'react';
import {
  type CompiledFilter,
  commResolver,
  type FilterProblem,
  type FilterScan,
  scanFilter,
  validateFilter,
} from '../data/filter.ts';
import { type EventStore, subsetStore } from '../data/store.ts';
import { countText, detailLines, fieldsLine, fit, taskText, timeText } from '../ui/format.ts';
import { useKeys } from '../ui/keys.ts';
import { useColour } from '../ui/theme.ts';
import type { ViewDefinition, ViewProps } from './registry.ts';

/** Column widths of the list (the fields take the rest). */
const W = { time: 17, cpu: 4, task: 20, event: 24 } as const;

/** Where the list is: the selected row and the first row on screen. */
export interface ListPosition {
  readonly cursor: number;
  readonly top: number;
}

/** Moves the selection by a key and keeps it on screen; pure, so tests and the benchmark drive it directly. */
export function moveCursor(pos: ListPosition, key: string, length: number, rows: number): ListPosition | undefined {
  const last = Math.max(0, length - 1);
  let cursor: number;
  switch (key) {
    case 'j':
    case 'down':
      cursor = pos.cursor + 1;
      break;
    case 'k':
    case 'up':
      cursor = pos.cursor - 1;
      break;
    case 'pagedown':
    case 'ctrl-f':
    case ' ':
      cursor = pos.cursor + rows;
      break;
    case 'pageup':
    case 'ctrl-b':
      cursor = pos.cursor - rows;
      break;
    case 'g':
    case 'home':
      cursor = 0;
      break;
    case 'G':
    case 'end':
      cursor = last;
      break;
    default:
      return undefined;
  }
  return scrollTo(Math.min(last, Math.max(0, cursor)), pos.top, length, rows);
}

/** The position with `cursor` selected, scrolling as little as needed. */
export function scrollTo(cursor: number, top: number, length: number, rows: number): ListPosition {
  const maxTop = Math.max(0, length - rows);
  if (cursor < top) top = cursor;
  else if (cursor >= top + rows) top = cursor - rows + 1;
  return { cursor, top: Math.min(maxTop, Math.max(0, top)) };
}

function EventsView(props: ViewProps) {
  const { source, store: base, active, width, height, paused, onStatus } = props;
  const colour = useColour();
  const [pos, setPos] = useState<ListPosition>({ cursor: 0, top: 0 });
  /** Live sources: the selection follows the newest event until the user moves up (like `less +F`). */
  const [follow, setFollow] = useState(source.live);
  const [detail, setDetail] = useState(false);
  /** The filter bar while editing: its text and the verdict on it. */
  const [editing, setEditing] = useState<string | undefined>(undefined);
  const [applied, setApplied] = useState<CompiledFilter | undefined>(undefined);
  const [scan, setScan] = useState<FilterScan | undefined>(undefined);
  const taskName = source.taskName;
  const verdict = useMemo<CompiledFilter | FilterProblem | undefined>(
    () =>
      editing === undefined || editing.trim() === ''
        ? undefined
        : validateFilter(editing, source.eventClasses(), commResolver(taskName).comm),
    [editing, source, taskName],
  );

  // Applying a filter scans the store in slices; a live store is rescanned at each refresh.
  useEffect(() => {
    setScan(undefined);
    if (applied === undefined) return;
    return scanFilter(base, applied, commResolver(taskName), setScan);
  }, [applied, base, taskName]);

  const store: EventStore = useMemo(
    () => (applied === undefined ? base : subsetStore(base, scan?.matches ?? new Uint32Array(0), scan?.count ?? 0)),
    [applied, base, scan],
  );

  const filterRows = editing !== undefined ? (verdict?.ok === false ? 3 : 2) : 0;
  const detailRows = detail ? Math.max(4, Math.floor((height - 1) / 2)) : 0;
  const rows = Math.max(1, height - 1 - filterRows - detailRows);

  // Keep the selection inside the store; follow the newest event on live sources.
  const shown = follow && store.length > 0 ? scrollTo(store.length - 1, store.length, store.length, rows) : pos;
  const cursor = Math.min(shown.cursor, Math.max(0, store.length - 1));
  const top = Math.min(shown.top, Math.max(0, store.length - rows));

  const statusRef = useRef('');
  useEffect(() => {
    const filterNote =
      applied === undefined
        ? undefined
        : scan === undefined || !scan.done
          ? `filtering ${base.length === 0 ? 100 : Math.floor(((scan?.scanned ?? 0) / base.length) * 100)}%, ${countText(scan?.count ?? 0)} so far`
          : `${scan.count.toLocaleString('en-US')} of ${base.length.toLocaleString('en-US')} match`;
    const key = `${applied?.expression}|${filterNote}`;
    if (statusRef.current === key) return;
    statusRef.current = key;
    onStatus(applied === undefined ? {} : { filter: applied.expression, ...(filterNote ? { filterNote } : {}) });
  });

  useKeys(
    (key) => {
      if (editing !== undefined) {
        if (key === 'escape') setEditing(undefined);
        else if (key === 'enter') {
          if (editing.trim() === '') {
            setApplied(undefined);
            setEditing(undefined);
          } else if (verdict?.ok) {
            setApplied(verdict);
            setEditing(undefined);
            setPos({ cursor: 0, top: 0 });
          }
        } else if (key === 'backspace') setEditing(editing.slice(0, -1));
        else if (key.length === 1) setEditing(editing + key);
        return true;
      }
      if (key === '/') {
        setEditing(applied?.expression ?? '');
        return true;
      }
      if (key === 'enter') {
        setDetail(!detail);
        return true;
      }
      if (key === 'escape') {
        if (detail) setDetail(false);
        else if (applied !== undefined) setApplied(undefined);
        else return false;
        return true;
      }
      const next = moveCursor({ cursor, top }, key, store.length, rows);
      if (next === undefined) return false;
      setPos(next);
      if (source.live) setFollow(next.cursor === store.length - 1 && (key === 'G' || key === 'end'));
      return true;
    },
    active,
    editing !== undefined,
  );

  const fieldsWidth = Math.max(0, width - W.time - W.cpu - W.task - W.event - 4);
  const header = `${fit('TIME', W.time)} ${fit('CPU', W.cpu)} ${fit('TASK', W.task)} ${fit('EVENT', W.event)} ${fit('FIELDS', fieldsWidth)}`;
  const lines: { key: number; text: string; selected: boolean }[] = [];
  // Virtualized: only rows top..top+rows are read from the store (and so decoded).
  for (let i = top; i < Math.min(store.length, top + rows); i++) {
    const e = store.event(i);
    const pid = store.pid(i);
    const text = `${fit(timeText(e.tsNs), W.time)} ${fit(String(e.cpu ?? '-'), W.cpu)} ${fit(taskText(pid, taskName(pid)), W.task)} ${fit(e.eventClass.name, W.event)} ${fit(fieldsLine(e), fieldsWidth)}`;
    lines.push({ key: i, text, selected: i === cursor });
  }
  const empty =
    store.length === 0
      ? applied !== undefined
        ? scan?.done
          ? 'no event matches the filter (Esc clears it)'
          : 'filtering…'
        : source.live
          ? paused
            ? 'paused before the first event'
            : 'waiting for events…'
          : 'the trace holds no events'
      : undefined;
  return (
    <Box flexDirection="column" width={width} height={height}>
      <Text bold color={colour('cyan')}>
        {fit(header, width)}
      </Text>
      {empty !== undefined ? <Text dimColor>{empty}</Text> : null}
      {lines.map((l) => (
        <Text key={l.key} inverse={l.selected} wrap="truncate">
          {l.selected ? '>' : ' '}
          {fit(l.text, width - 1)}
        </Text>
      ))}
      {Array.from({ length: Math.max(0, rows - lines.length - (empty !== undefined ? 1 : 0)) }, (_, k) => (
        <Text key={`pad${k}`}> </Text>
      ))}
      {detail && store.length > 0 ? <DetailPane store={store} index={cursor} rows={detailRows} width={width} /> : null}
      {editing !== undefined ? <FilterBar text={editing} verdict={verdict} width={width} /> : null}
    </Box>
  );
}

function DetailPane(props: { store: EventStore; index: number; rows: number; width: number }) {
  const colour = useColour();
  const lines = detailLines(props.store.event(props.index));
  const title = `event ${(props.index + 1).toLocaleString('en-US')} of ${props.store.length.toLocaleString('en-US')} (Esc closes)`;
  return (
    <Box flexDirection="column" height={props.rows}>
      <Text color={colour('yellow')}>{fit(`── ${title} `.padEnd(props.width, '─'), props.width)}</Text>
      {lines.slice(0, props.rows - 1).map((l, k) => (
        <Text key={k} wrap="truncate">
          {l}
        </Text>
      ))}
    </Box>
  );
}

function FilterBar(props: { text: string; verdict: CompiledFilter | FilterProblem | undefined; width: number }) {
  const colour = useColour();
  const v = props.verdict;
  const prompt = '/ ';
  return (
    <Box flexDirection="column">
      <Text>
        <Text color={colour('yellow')}>{prompt}</Text>
        {props.text}
        <Text inverse> </Text>
      </Text>
      {v === undefined ? (
        <Text dimColor>ftrace filter, e.g. bytes_req {'>'} 256 && COMM ~ "demo-*" (Enter applies, Esc cancels)</Text>
      ) : v.ok ? (
        <Text color={colour('green')}>{fit(`ok: applies to ${v.applies.join(', ')}`, props.width)}</Text>
      ) : (
        <>
          <Text color={colour('red')}>{`${' '.repeat(prompt.length + v.column)}^`}</Text>
          <Text color={colour('red')}>{fit(v.message, props.width)}</Text>
        </>
      )}
    </Box>
  );
}

export const eventsView: ViewDefinition = {
  title: 'Events',
  keys: [
    ['j/k ↑/↓', 'move'],
    ['g/G', 'first/last'],
    ['PgUp/PgDn', 'page'],
    ['Enter', 'details'],
    ['/', 'filter'],
    ['Esc', 'back'],
  ],
  Component: EventsView,
};
