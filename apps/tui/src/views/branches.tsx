/**
 * The Branches view: the branch trace inside the source's events (`bts:branch`, attributed to tasks by
 * `sched:sched_switch`, in stream order) for one selected task: its last branches, newest at the bottom, and its
 * function call history with nesting, as @evtrace/hw-bts reconstructs it (names need symbols; without them the
 * history says so).
 */
import {
  type BranchList,
  branchesFromEvents,
  type CallSegment,
  callHistory,
  FunctionNames,
  hexAddress,
  Symbolizer,
} from '@evtrace/hw-bts';
import type { TraceEvent } from '@evtrace/trace-format';
import { Box, Text } from 'ink';
import { useMemo, useState } from 'react';
import type { EventStore } from '../data/store.ts';
import type { KernelSymbols } from '../data/symbols.ts';
import { countText, fit, taskText } from '../ui/format.ts';
import { useKeys } from '../ui/keys.ts';
import { useColour } from '../ui/theme.ts';
import type { ViewDefinition, ViewProps } from './registry.ts';

/** The events the view needs, decoded; every other event is skipped by its class alone (no decoding). */
function* branchEvents(store: EventStore): Generator<TraceEvent> {
  for (let i = 0; i < store.length; i++) {
    const name = store.eventClass(i).name;
    if (name === 'bts:branch' || name === 'sched:sched_switch') yield store.event(i);
  }
}

/** Tasks with branches, most branches first. */
export function tasksOf(list: BranchList): { tid: number; branches: number }[] {
  const counts = new Map<number, number>();
  for (let i = 0; i < list.length; i++) {
    const t = list.tid[i]!;
    if (t >= 0) counts.set(t, (counts.get(t) ?? 0) + 1);
  }
  return [...counts]
    .map(([tid, branches]) => ({ tid, branches }))
    .sort((a, b) => b.branches - a.branches || a.tid - b.tid);
}

const FLAG_LETTERS: Readonly<Record<number, string>> = { 1: 'P', 2: 'M', 4: 'X', 8: 'A' };

function flagText(bits: number): string {
  let s = '';
  for (const bit of [1, 2, 4, 8]) if ((bits & bit) !== 0) s += FLAG_LETTERS[bit];
  return s || '-';
}

function BranchesView(props: ViewProps) {
  const { source, store, width, height, active } = props;
  const colour = useColour();
  // Every view stays mounted: scan the store only while this one is on screen.
  const all = useMemo(() => (active ? branchesFromEvents(branchEvents(store)).branches : undefined), [store, active]);
  const tasks = useMemo(() => (all === undefined ? [] : tasksOf(all)), [all]);
  const [pick, setPick] = useState(0);
  const selected = tasks.length === 0 ? undefined : tasks[Math.min(pick, tasks.length - 1)]!;
  const mine = useMemo(
    () => (all === undefined || selected === undefined ? undefined : all.filter((i) => all.tid[i] === selected.tid)),
    [all, selected?.tid],
  );
  const known = useMemo(() => (active ? source.symbols?.() : undefined), [source, active]);
  const symbolizer = useMemo(
    () => (known === undefined ? undefined : new Symbolizer().setKallsyms(known.kallsyms)),
    [known],
  );
  const history = useMemo<CallSegment[]>(
    () => (mine === undefined ? [] : callHistory(mine, symbolizer)),
    [mine, symbolizer],
  );
  useKeys((key) => {
    if (tasks.length === 0) return false;
    if (key === ']' || key === 'right') setPick((p) => (Math.min(p, tasks.length - 1) + 1) % tasks.length);
    else if (key === '[' || key === 'left')
      setPick((p) => (Math.min(p, tasks.length - 1) + tasks.length - 1) % tasks.length);
    else return false;
    return true;
  }, active);

  if (all === undefined) return <Box width={width} height={height} />;
  if (selected === undefined || mine === undefined)
    return (
      <Box flexDirection="column" width={width} height={height}>
        <Text dimColor>no branches: the source has no bts:branch events with a task (sched:sched_switch)</Text>
      </Box>
    );
  const names = new FunctionNames(mine, symbolizer);
  const rows = Math.max(1, Math.floor((height - 4) / 2));
  const first = Math.max(0, mine.length - rows);
  const branchLines: string[] = [];
  for (let i = first; i < mine.length; i++) {
    const from = names.describe(i, 0) ?? hexAddress(mine.fromHi[i]!, mine.fromLo[i]!);
    const to = names.describe(i, 1) ?? hexAddress(mine.toHi[i]!, mine.toLo[i]!);
    branchLines.push(
      `${fit(String(i), 9)} ${fit(from, 28)} -> ${fit(to, 28)} ${fit(mine.kindOf(i), 8)} ${flagText(mine.flags[i]!)}`,
    );
  }
  const named = history.some((s) => s.name !== '??');
  const callRows = Math.max(1, height - 4 - branchLines.length);
  const calls = named ? history.slice(Math.max(0, history.length - callRows)) : [];
  const taskBar = tasks
    .map(
      (t) =>
        `${t.tid === selected.tid ? '[' : ' '}${taskText(t.tid, source.taskName(t.tid))} ${countText(t.branches)}${t.tid === selected.tid ? ']' : ' '}`,
    )
    .join(' ');
  return (
    <Box flexDirection="column" width={width} height={height}>
      <Text wrap="truncate">{fit(`task ${taskBar}`, width)}</Text>
      <Text bold color={colour('cyan')}>
        {fit(
          `LAST ${branchLines.length} OF ${countText(mine.length)} BRANCHES (newest last; symbols: ${symbolsText(known)})`,
          width,
        )}
      </Text>
      {branchLines.map((l) => (
        <Text key={l} wrap="truncate">
          {l}
        </Text>
      ))}
      <Text bold color={colour('cyan')}>
        {fit(`CALL HISTORY (${countText(history.length)} segments)`, width)}
      </Text>
      {named ? (
        calls.map((s) => (
          <Text key={s.number} wrap="truncate">
            {fit(`${s.number}\t${'  '.repeat(s.level)}${s.name}`.replace('\t', ' '), width)}
          </Text>
        ))
      ) : (
        <Text dimColor>
          {fit(
            known === undefined
              ? 'no function names: the source carries no kallsyms and /proc/kallsyms is not readable'
              : `no function names: ${symbolsText(known)} does not cover these addresses`,
            width,
          )}
        </Text>
      )}
    </Box>
  );
}

function symbolsText(known: KernelSymbols | undefined): string {
  return known === undefined ? 'none' : known.origin === 'trace' ? "the trace's kallsyms" : known.origin;
}

export const branchesView: ViewDefinition = {
  title: 'Branches',
  keys: [['[ ]', 'previous/next task']],
  Component: BranchesView,
  shows: (classes) => classes.some((c) => c.name === 'bts:branch'),
};
