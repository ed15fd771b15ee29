/**
 * The viewer's frame: tab bar, the active view, footer with its keys, status bar; the help overlay; key routing
 * (global keys, then the view's; a view taking text gets every key but Ctrl-C); live refresh and pause.
 */
import { Box, Text, useApp, useInput, useWindowSize } from 'ink';
import { type ComponentType, memo, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { ViewerSource } from '../data/source.ts';
import type { EventStore } from '../data/store.ts';
import type { ViewDefinition, ViewProps, ViewStatus } from '../views/registry.ts';
import { countText, fit } from './format.ts';
import { KeyContext, type KeyHandler, type KeyPress, type KeyRouting, keyPresses } from './keys.ts';
import { type Theme, ThemeContext, useColour } from './theme.ts';

export interface AppProps {
  readonly source: ViewerSource;
  readonly views: readonly ViewDefinition[];
  readonly theme?: Theme;
  /** Fixed size (tests); default the terminal's, following resizes. */
  readonly size?: { readonly columns: number; readonly rows: number };
  /** Called when the user quits. */
  readonly onQuit?: () => void;
}

const GLOBAL_KEYS: readonly (readonly [string, string])[] = [
  ['Tab/1-9', 'views'],
  ['space', 'pause'],
  ['?', 'help'],
  ['q', 'quit'],
];

export function App(props: AppProps) {
  return (
    <ThemeContext.Provider value={props.theme ?? { colour: true }}>
      <Frame {...props} />
    </ThemeContext.Provider>
  );
}

function Frame({ source, views: allViews, size, onQuit }: AppProps) {
  const { exit } = useApp();
  const terminal = useWindowSize();
  const columns = size?.columns ?? (terminal.columns || 80);
  const rows = size?.rows ?? (terminal.rows || 24);
  const colour = useColour();
  const [store, setStore] = useState<EventStore>(() => source.store());
  // Views with nothing to show for this source's events are left out (a live source's classes grow as events come).
  // A trace file's views with nothing to show for its events are left out of the tabs (a live source's events may
  // still come, and those views say what to record); each view keeps its number key.
  const numbered = allViews.map((v, i) => ({ v, key: String(i + 1) }));
  const shown = source.live ? numbered : numbered.filter(({ v }) => v.shows?.(source.eventClasses()) ?? true);
  const views = shown.map(({ v }) => v);
  const [viewTitle, setViewTitle] = useState(views[0]!.title);
  const viewIndex = Math.max(
    0,
    views.findIndex((v) => v.title === viewTitle),
  );
  const setViewIndex = (f: number | ((i: number) => number)) =>
    setViewTitle(views[typeof f === 'number' ? f : f(viewIndex)]!.title);
  /** The help overlay's first line shown, while it is open. */
  const [help, setHelp] = useState<number | undefined>(undefined);
  const [paused, setPaused] = useState(false);
  const [tick, setTick] = useState(0);
  const [status, setStatus] = useState<ViewStatus>({});

  // Live sources: take a new snapshot at each refresh unless paused (the source keeps collecting meanwhile).
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
  useEffect(
    () =>
      source.subscribe(() => {
        if (pausedRef.current) return;
        setStore(source.store());
        setTick((t) => t + 1);
      }),
    [source],
  );

  const drawnBy = useRef(new Map<string, { store: EventStore; tick: number }>());
  const handlers = useRef<{ handler: KeyHandler; textInput: boolean }[]>([]);
  const routing = useMemo<KeyRouting>(
    () => ({
      register(handler, textInput) {
        const entry = { handler, textInput };
        handlers.current.push(entry);
        return () => {
          handlers.current = handlers.current.filter((h) => h !== entry);
        };
      },
    }),
    [],
  );

  const quit = useCallback(() => {
    onQuit?.();
    exit();
  }, [exit, onQuit]);

  const press = (key: KeyPress) => {
    if (key === 'ctrl-c') return quit();
    const view = handlers.current[handlers.current.length - 1];
    if (view?.textInput) {
      view.handler(key);
      return;
    }
    if (help !== undefined) {
      // j/k and the pages scroll the help, q quits, any other key closes it.
      if (key === 'q') return quit();
      const step = {
        j: 1,
        down: 1,
        k: -1,
        up: -1,
        pagedown: bodyHeight - 4,
        ' ': bodyHeight - 4,
        pageup: 4 - bodyHeight,
      }[key];
      setHelp(step === undefined ? undefined : Math.max(0, help + step));
      return;
    }
    if (key === 'q') return quit();
    if (key === '?') return setHelp(0);
    if (key === 'tab' || key === 'shift-tab') {
      setViewIndex((i) => (i + (key === 'tab' ? 1 : views.length - 1)) % views.length);
      return;
    }
    const numberKey = shown.findIndex((s) => s.key === key);
    if (numberKey >= 0) return setViewIndex(numberKey);
    if (key === ' ' && source.live) {
      setPaused((p) => {
        if (p) {
          setStore(source.store());
          setTick((t) => t + 1);
        }
        return !p;
      });
      return;
    }
    view?.handler(key);
  };
  // Keys typed fast arrive as one string: each is applied after the previous one's render, so every handler sees
  // the state its predecessors left (React would otherwise batch them against one stale state).
  const pressRef = useRef(press);
  pressRef.current = press;
  const queue = useRef<KeyPress[]>([]);
  const [, setKeyTick] = useState(0);
  useInput((input, key) => {
    queue.current.push(...keyPresses(input, key));
    setKeyTick((t) => t + 1);
  });
  useEffect(() => {
    const next = queue.current.shift();
    if (next === undefined) return;
    pressRef.current(next);
    if (queue.current.length > 0) setKeyTick((t) => t + 1);
  });

  const view = views[viewIndex]!;
  const stats = source.live || viewIndex !== 0 ? source.stats() : undefined;
  const bodyHeight = Math.max(3, rows - 3);
  const tabs = shown.map(({ v, key }) => `${key} ${v.title}`);
  const warnings = source.warnings();
  const statusParts = [
    source.label,
    source.live ? `${countText(stats?.eventsPerSec ?? 0)} ev/s` : `${countText(store.length)} events`,
    ...(stats?.received !== undefined ? [`received ${countText(stats.received)}`] : []),
    `lost ${countText(stats?.lost ?? source.lost())}`,
    ...(stats?.viewerLost ? [`viewer missed ${countText(stats.viewerLost)}`] : []),
    status.filter !== undefined
      ? `filter: ${status.filter}${status.filterNote ? ` (${status.filterNote})` : ''}`
      : 'no filter',
    ...(paused ? ['PAUSED'] : []),
    ...(warnings.length > 0 ? [`${warnings.length} warning${warnings.length > 1 ? 's' : ''}`] : []),
  ];
  const keys = [...view.keys, ...GLOBAL_KEYS.filter(([k]) => k !== 'space' || source.live)];
  return (
    <KeyContext.Provider value={routing}>
      <Box flexDirection="column" width={columns} height={rows}>
        <Box>
          {tabs.map((t, i) => (
            <Text
              key={t}
              inverse={i === viewIndex}
              bold={i === viewIndex}
              color={i === viewIndex ? undefined : colour('gray')}
            >
              {i === viewIndex ? `[${t}]` : ` ${t} `}
            </Text>
          ))}
          <Text>{fit('', Math.max(0, columns - tabs.join('   ').length - 2))}</Text>
        </Box>
        {help !== undefined ? (
          <HelpOverlay views={views} width={columns} height={bodyHeight} live={source.live} from={help} />
        ) : null}
        {/* Every view stays mounted (its place in the list, its filter) and only the current one is shown. */}
        {views.map((v, i) => {
          const active = help === undefined && i === viewIndex;
          // A hidden view keeps the events it last drew: a live refresh redraws only the view on screen.
          let drawn = drawnBy.current.get(v.title);
          if (active || drawn === undefined) drawnBy.current.set(v.title, (drawn = { store, tick }));
          const View = memoized(v.Component);
          return (
            <Box key={v.title} display={active ? 'flex' : 'none'}>
              <View
                source={source}
                store={drawn.store}
                tick={drawn.tick}
                paused={paused}
                active={active}
                width={columns}
                height={bodyHeight}
                onStatus={i === 0 ? setStatus : ignoreStatus}
              />
            </Box>
          );
        })}
        <Text color={colour('gray')} wrap="truncate">
          {fit(keys.map(([k, what]) => `${k} ${what}`).join('  '), columns)}
        </Text>
        <Text inverse wrap="truncate">
          {fit(` ${statusParts.join(' │ ')}`, columns)}
        </Text>
      </Box>
    </KeyContext.Provider>
  );
}

const ignoreStatus = () => {};

/** Each view's component, rendered again only when its props change (a hidden view's stay as it last drew). */
const memos = new WeakMap<ComponentType<ViewProps>, ComponentType<ViewProps>>();
function memoized(component: ComponentType<ViewProps>): ComponentType<ViewProps> {
  let m = memos.get(component);
  if (m === undefined) memos.set(component, (m = memo(component)));
  return m;
}

function HelpOverlay(props: {
  views: readonly ViewDefinition[];
  width: number;
  height: number;
  live: boolean;
  from: number;
}) {
  const colour = useColour();
  // Every key: the frame's, then each shown view's, as the footers list them.
  const sections: [string, readonly (readonly [string, string])[]][] = [
    [
      'everywhere',
      [
        ['q, Ctrl-C', 'quit'],
        ['?', 'this help (j/k scroll it, any other key closes it)'],
        ['Tab, Shift-Tab, 1-9', 'switch view'],
        ...(props.live ? [['space', 'pause or resume'] as const] : []),
      ],
    ],
    ...props.views.filter((v) => v.keys.length > 0).map((v) => [v.title, v.keys] as [string, typeof v.keys]),
    [
      'text boxes',
      [
        ['Ctrl-A/E, Home/End', 'start/end'],
        ['←/→, Ctrl-B/F', 'move'],
        ['Ctrl-U/K', 'cut before/after'],
        ['Ctrl-W', 'cut a word'],
        ['Backspace, Ctrl-D', 'delete'],
        ['Enter/Esc', 'apply/cancel'],
      ],
    ],
  ];
  const keyWidth = Math.max(...sections.flatMap(([, keys]) => keys.map(([k]) => k.length)));
  const lines: string[] = [];
  for (const [title, keys] of sections) {
    lines.push(`${title}:`);
    for (const [k, what] of keys) lines.push(`  ${k.padEnd(keyWidth)}  ${what}`);
  }
  // The box's border and title take three rows; the rest scrolls.
  const inner = Math.max(1, props.height - 3);
  const from = Math.min(props.from, Math.max(0, lines.length - inner));
  const shown = lines.slice(from, from + inner);
  const more = lines.length > inner ? ` (lines ${from + 1}-${from + shown.length} of ${lines.length}, j/k scroll)` : '';
  return (
    <Box
      flexDirection="column"
      width={props.width}
      height={props.height}
      borderStyle="round"
      paddingX={1}
      overflow="hidden"
    >
      <Text bold color={colour('cyan')}>
        {`evtrace-view keys${more}`}
      </Text>
      {shown.map((l, k) => (
        <Text key={k} wrap="truncate">
          {l}
        </Text>
      ))}
    </Box>
  );
}
