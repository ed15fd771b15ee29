/**
 * The Events view: a virtualized list (only the rows on screen are decoded and rendered, whatever the trace's
 * length) in the columns the user chose, values printed as `evtrace cat` prints them; a detail pane with every field
 * typed; search (`/`, `n`/`N`), the ftrace filter (`:`, with the kernel's verdict as you type), a jump to a time
 * (`t`), marks A and B with their delta (`m`), density strips per CPU or per task (`T`) and a histogram of the
 * event rate (`i`) over the span (timeline.tsx).
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
import {
  deltaText,
  parseTime,
  positionAtTime,
  type SearchProgress,
  searchPattern,
  searchStore,
} from '../data/navigate.ts';
import type { ViewerSource } from '../data/source.ts';
import { type EventStore, subsetStore } from '../data/store.ts';
import {
  COLUMN_HEADERS,
  COLUMN_IDS,
  type ColumnChoice,
  type ColumnId,
  layoutColumns,
  loadColumns,
  saveColumns,
  settingsPath,
} from '../ui/columns.ts';
import { bodyFormatter, countText, detailLines, eventText, fit, taskText, timeText } from '../ui/format.ts';
import { useKeys } from '../ui/keys.ts';
import { LineText } from '../ui/line-box.tsx';
import { editLine, type LineState, line } from '../ui/line-edit.ts';
import { useColour, useTheme } from '../ui/theme.ts';
import type { ViewDefinition, ViewProps } from './registry.ts';
import { histogramHeight, type StripKind, Timeline } from './timeline.tsx';

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

/** The text boxes of the view: what each is for and its prompt. */
type PromptKind = 'filter' | 'search' | 'time';
const PROMPTS: Record<PromptKind, string> = { filter: ': ', search: '/ ', time: 't ' };

/** Symbols for values: a file's own kallsyms only (as cat uses), this machine's too for live sources. */
function eventContext(source: ViewerSource) {
  return {
    taskName: (pid: number) => source.taskName(pid),
    kallsyms: () => {
      const known = source.symbols?.();
      return known !== undefined && (source.live || known.origin === 'trace') ? known.kallsyms : undefined;
    },
  };
}

function EventsView(props: ViewProps) {
  const { source, store: base, active, width, height, paused, onStatus } = props;
  const colour = useColour();
  const { colour: fancy } = useTheme();
  const [pos, setPos] = useState<ListPosition>({ cursor: 0, top: 0 });
  /** Live sources: the selection follows the newest event until the user moves up (like `less +F`). */
  const [follow, setFollow] = useState(source.live);
  const [detail, setDetail] = useState(false);
  /** The open text box: what it is for and its line. */
  const [prompt, setPrompt] = useState<{ kind: PromptKind; line: LineState } | undefined>(undefined);
  const [applied, setApplied] = useState<CompiledFilter | undefined>(undefined);
  const [scan, setScan] = useState<FilterScan | undefined>(undefined);
  const [search, setSearch] = useState<{ text: string; pattern: RegExp } | undefined>(undefined);
  /** A search under way: from where, which way; its progress. */
  const [seek, setSeek] = useState<{ from: number; step: 1 | -1; id: number } | undefined>(undefined);
  const [seekProgress, setSeekProgress] = useState<SearchProgress | undefined>(undefined);
  const [note, setNote] = useState<string | undefined>(undefined);
  const [marks, setMarks] = useState<{ a?: bigint; b?: bigint }>({});
  const [hscroll, setHscroll] = useState(0);
  /** The density strips: per CPU, per task, or none ('off'); undefined: per CPU where the view has room. */
  const [timeline, setTimeline] = useState<StripKind | 'off' | undefined>(undefined);
  const [histogram, setHistogram] = useState(false);
  const configPath = useMemo(() => settingsPath(), []);
  const [columns, setColumns] = useState<ColumnChoice>(() => loadColumns(configPath));
  /** The column chooser while open: the choice being edited and its selected row. */
  const [chooser, setChooser] = useState<{ order: ColumnId[]; shown: Set<ColumnId>; at: number } | undefined>();

  const taskName = source.taskName;
  const context = useMemo(() => eventContext(source), [source]);
  const body = useMemo(() => bodyFormatter(context), [context]);
  const editing = prompt?.kind === 'filter' ? prompt.line.text : undefined;
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

  /** The whole line of position `i` as text, whatever columns are shown: what the search reads. */
  const lineText = (i: number) => {
    const e = store.event(i);
    const pid = store.pid(i);
    return `${timeText(e.tsNs)} ${e.cpu ?? '-'} ${taskText(pid, taskName(pid))} ${eventText(e)} ${body(e)}`;
  };
  const lineTextRef = useRef(lineText);
  lineTextRef.current = lineText;

  // A search runs in slices; its result moves the selection.
  useEffect(() => {
    setSeekProgress(undefined);
    if (seek === undefined || search === undefined || store.length === 0) return;
    return searchStore(
      store,
      seek.from,
      seek.step,
      (i) => search.pattern.test(lineTextRef.current(i)),
      (p) => {
        setSeekProgress(p);
        if (!p.done) return;
        setSeek(undefined);
        if (p.found === undefined) setNote(`no match for /${search.text}/`);
        else {
          setNote(undefined);
          jump(p.found);
        }
      },
    );
  }, [seek, search, store]);

  const shownMarks = marks.a !== undefined ? 1 : 0;
  const chosen = timeline ?? (height >= 30 ? 'cpu' : 'off');
  const strips = chosen === 'off' ? undefined : chosen;
  const stripRows = strips === undefined ? 0 : stripHeight(source, strips, height);
  const histogramRows = histogram ? histogramHeight(height) : 0;
  const timelineRows = stripRows + histogramRows > 0 ? stripRows + histogramRows + 1 : 0;
  const promptRows = prompt === undefined ? 0 : prompt.kind === 'filter' ? (verdict?.ok === false ? 3 : 2) : 2;
  const infoRows = shownMarks > 0 || note !== undefined || seek !== undefined ? 1 : 0;
  const detailRows = detail ? Math.max(4, Math.floor((height - 1) / 2)) : 0;
  const rows = Math.max(1, height - 1 - promptRows - detailRows - timelineRows - infoRows);

  // Keep the selection inside the store; follow the newest event on live sources.
  const shown = follow && store.length > 0 ? scrollTo(store.length - 1, store.length, store.length, rows) : pos;
  const cursor = Math.min(shown.cursor, Math.max(0, store.length - 1));
  const top = Math.min(shown.top, Math.max(0, store.length - rows));

  function jump(to: number) {
    setPos(scrollTo(to, top, store.length, rows));
    if (source.live) setFollow(false);
  }

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

  // The layout: the fixed columns as wide as their widest content on screen, the fields column the rest.
  const visible: number[] = [];
  for (let i = top; i < Math.min(store.length, top + rows); i++) visible.push(i);
  const laid = layoutColumns(columns, width - 1, {
    time: Math.max(0, ...visible.map((i) => timeText(store.tsNs(i)).length)),
    cpu: Math.max(0, ...visible.map((i) => String(store.cpu(i) ?? '-').length)),
    task: Math.max(0, ...visible.map((i) => taskText(store.pid(i), taskName(store.pid(i))).length)),
    event: Math.max(0, ...visible.map((i) => eventText({ eventClass: store.eventClass(i) }).length)),
  });
  const fieldsWidth = laid.find((c) => c.id === 'fields')?.width ?? 0;
  const scrollStep = Math.max(8, Math.floor(fieldsWidth / 2));

  const submit = (kind: PromptKind, text: string) => {
    if (kind === 'filter') {
      if (text.trim() === '') setApplied(undefined);
      else if (verdict?.ok) {
        setApplied(verdict);
        setPos({ cursor: 0, top: 0 });
      } else return;
    } else if (kind === 'search') {
      if (text === '') setSearch(undefined);
      else {
        const next = { text, pattern: searchPattern(text) };
        setSearch(next);
        setSeek({ from: cursor, step: 1, id: Date.now() });
      }
    } else {
      const t = parseTime(text, store.length > 0 ? store.tsNs(cursor) : 0n);
      if ('error' in t) {
        setNote(t.error);
      } else if (store.length > 0) {
        setNote(undefined);
        jump(positionAtTime(store, t.ns));
      }
    }
    setPrompt(undefined);
  };

  useKeys(
    (key) => {
      if (prompt !== undefined) {
        if (key === 'escape') setPrompt(undefined);
        else if (key === 'enter') submit(prompt.kind, prompt.line.text);
        else {
          const next = editLine(prompt.line, key);
          if (next !== undefined) setPrompt({ kind: prompt.kind, line: next });
        }
        return true;
      }
      if (chooser !== undefined) {
        const { order, shown: on, at } = chooser;
        if (key === 'escape') setChooser(undefined);
        else if (key === 'enter') {
          const choice = order.filter((c) => on.has(c));
          if (choice.length > 0) {
            setColumns(choice);
            setNote(saveColumns(configPath, choice));
          }
          setChooser(undefined);
        } else if (key === 'j' || key === 'down') setChooser({ ...chooser, at: Math.min(order.length - 1, at + 1) });
        else if (key === 'k' || key === 'up') setChooser({ ...chooser, at: Math.max(0, at - 1) });
        else if (key === ' ' || key === 'x') {
          const next = new Set(on);
          if (!next.delete(order[at]!)) next.add(order[at]!);
          setChooser({ ...chooser, shown: next });
        } else if (key === 'J' || key === 'K') {
          const to = key === 'J' ? at + 1 : at - 1;
          if (to < 0 || to >= order.length) return true;
          const next = [...order];
          [next[at], next[to]] = [next[to]!, next[at]!];
          setChooser({ ...chooser, order: next, at: to });
        }
        return true;
      }
      switch (key) {
        case ':':
          setPrompt({ kind: 'filter', line: line(applied?.expression ?? '') });
          return true;
        case '/':
          setPrompt({ kind: 'search', line: line() });
          return true;
        case 't':
          setPrompt({ kind: 'time', line: line() });
          return true;
        case 'n':
        case 'N':
          if (search === undefined) setNote('no search yet: / starts one');
          else setSeek({ from: cursor, step: key === 'n' ? 1 : -1, id: Date.now() });
          return true;
        case 'm': {
          const ts = store.length > 0 ? store.tsNs(cursor) : undefined;
          if (ts === undefined) return true;
          setMarks(marks.a === undefined || marks.b !== undefined ? { a: ts } : { a: marks.a, b: ts });
          return true;
        }
        case 'M':
          setMarks({});
          return true;
        case 'T':
          // Per CPU, per task, hidden, and round again.
          setTimeline(strips === undefined ? 'cpu' : strips === 'cpu' ? 'task' : 'off');
          return true;
        case 'i':
          setHistogram(!histogram);
          return true;
        case 'c': {
          const order = [...columns, ...COLUMN_IDS.filter((c) => !columns.includes(c))];
          setChooser({ order, shown: new Set(columns), at: 0 });
          return true;
        }
        case '<':
        case 'left':
          setHscroll(Math.max(0, hscroll - scrollStep));
          return true;
        case '>':
        case 'right':
          setHscroll(hscroll + scrollStep);
          return true;
        case 'enter':
          setDetail(!detail);
          return true;
        case 'escape':
          if (detail) setDetail(false);
          else if (note !== undefined) setNote(undefined);
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
    prompt !== undefined,
  );

  const cell = (id: ColumnId, w: number, i: number): string => {
    switch (id) {
      case 'time':
        return fit(timeText(store.tsNs(i)), w);
      case 'cpu':
        return String(store.cpu(i) ?? '-').padStart(w);
      case 'task': {
        const pid = store.pid(i);
        return fit(taskText(pid, taskName(pid)), w);
      }
      case 'event':
        return fit(eventText({ eventClass: store.eventClass(i) }), w);
      case 'fields': {
        const text = body(store.event(i));
        return fit(hscroll > 0 ? `«${text.slice(hscroll + 1)}` : text, w);
      }
    }
  };
  const header = laid
    .map((c) => fit(c.id === 'fields' && hscroll > 0 ? `FIELDS +${hscroll}` : COLUMN_HEADERS[c.id], c.width))
    .join(' ');
  // Virtualized: only rows top..top+rows are read from the store (and so decoded).
  const lines = visible.map((i) => ({
    key: i,
    text: laid.map((c) => cell(c.id, c.width, i)).join(' '),
    selected: i === cursor,
    marked: marks.a === store.tsNs(i) ? 'A' : marks.b === store.tsNs(i) ? 'B' : undefined,
  }));
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
  const info =
    seek !== undefined
      ? `searching /${search?.text}/ ${store.length === 0 ? 0 : Math.floor(((seekProgress?.scanned ?? 0) / store.length) * 100)}%`
      : (note ?? marksText(marks));
  return (
    <Box flexDirection="column" width={width} height={height}>
      {timelineRows > 0 ? (
        <Timeline
          store={store}
          width={width}
          strips={strips}
          stripRows={stripRows}
          histogram={histogramRows}
          cursor={store.length > 0 ? store.tsNs(cursor) : undefined}
          marks={marks}
          ascii={!fancy}
          taskName={taskName}
        />
      ) : null}
      {chooser !== undefined ? (
        <ColumnChooser {...chooser} width={width} height={height - timelineRows} />
      ) : (
        <>
          <Text bold color={colour('cyan')}>
            {fit(` ${header}`, width)}
          </Text>
          {empty !== undefined ? <Text dimColor>{empty}</Text> : null}
          {lines.map((l) => (
            <Text key={l.key} inverse={l.selected} wrap="truncate">
              {l.marked ?? (l.selected ? '>' : ' ')}
              {fit(l.text, width - 1)}
            </Text>
          ))}
          {Array.from({ length: Math.max(0, rows - lines.length - (empty !== undefined ? 1 : 0)) }, (_, k) => (
            <Text key={`pad${k}`}> </Text>
          ))}
          {infoRows > 0 ? (
            <Text color={colour(note !== undefined ? 'yellow' : 'magenta')} wrap="truncate">
              {fit(info ?? '', width)}
            </Text>
          ) : null}
          {detail && store.length > 0 ? (
            <DetailPane store={store} index={cursor} rows={detailRows} width={width} kallsyms={context.kallsyms} />
          ) : null}
          {prompt !== undefined ? (
            <PromptBar kind={prompt.kind} line={prompt.line} verdict={verdict} width={width} />
          ) : null}
        </>
      )}
    </Box>
  );
}

/** `A 12.524003  B 12.530001  B-A +5.998 ms`, or undefined without marks. */
function marksText(marks: { a?: bigint; b?: bigint }): string | undefined {
  if (marks.a === undefined) return undefined;
  const a = `A ${timeText(marks.a)}`;
  if (marks.b === undefined) return `${a}  (m marks B)`;
  return `${a}  B ${timeText(marks.b)}  B-A ${deltaText(marks.b - marks.a)}`;
}

/** Rows the strips take: one per CPU, or per task, at most a quarter of the view. */
function stripHeight(source: ViewerSource, strips: StripKind, height: number): number {
  const quarter = Math.max(1, Math.floor(height / 4));
  return strips === 'task' ? quarter : Math.min(Math.max(1, source.stats().cpus.length), quarter);
}

function ColumnChooser(props: {
  order: readonly ColumnId[];
  shown: ReadonlySet<ColumnId>;
  at: number;
  width: number;
  height: number;
}) {
  const colour = useColour();
  return (
    <Box flexDirection="column" width={props.width} height={props.height}>
      <Text bold color={colour('cyan')}>
        {fit('COLUMNS: space shows/hides, J/K move down/up, Enter keeps (remembered), Esc cancels', props.width)}
      </Text>
      {props.order.map((c, k) => (
        <Text key={c} inverse={k === props.at}>
          {`${k === props.at ? '>' : ' '} [${props.shown.has(c) ? 'x' : ' '}] ${COLUMN_HEADERS[c]}`}
        </Text>
      ))}
    </Box>
  );
}

function DetailPane(props: {
  store: EventStore;
  index: number;
  rows: number;
  width: number;
  kallsyms: ReturnType<typeof eventContext>['kallsyms'];
}) {
  const colour = useColour();
  const lines = detailLines(props.store.event(props.index), props.kallsyms());
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

const HINTS: Record<PromptKind, string> = {
  filter: 'ftrace filter, e.g. bytes_req > 256 && COMM ~ "demo-*" (Enter applies, Esc cancels)',
  search: 'search: text or a regular expression (Enter finds, then n/N next/previous; Esc cancels)',
  time: 'go to time: seconds as shown, e.g. 12.524003, or +0.5 / -0.5 from the selection (Enter goes)',
};

function PromptBar(props: {
  kind: PromptKind;
  line: LineState;
  verdict: CompiledFilter | FilterProblem | undefined;
  width: number;
}) {
  const colour = useColour();
  const prompt = PROMPTS[props.kind];
  const v = props.kind === 'filter' ? props.verdict : undefined;
  return (
    <Box flexDirection="column">
      <Text wrap="truncate">
        <Text color={colour('yellow')}>{prompt}</Text>
        <LineText line={props.line} />
      </Text>
      {v === undefined ? (
        <Text dimColor wrap="truncate">
          {HINTS[props.kind]}
        </Text>
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
    ['/', 'search'],
    ['n/N', 'next/previous match'],
    [':', 'filter'],
    ['t', 'go to time'],
    ['m', 'mark A, B'],
    ['M', 'clear marks'],
    ['T', 'timeline: CPUs, tasks, off'],
    ['i', 'rate histogram'],
    ['</> ←/→', 'scroll fields'],
    ['c', 'columns'],
    ['Esc', 'back'],
  ],
  Component: EventsView,
};
