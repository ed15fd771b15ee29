/**
 * The Memory view: kernel memory allocations of the kmem events on screen (@evtrace/kmemtrace's analysis, as
 * `evtrace kmem report` computes it): a summary with fragmentation, outstanding bytes over time, and the top call
 * sites, sortable. A file is analysed once; a live source incrementally, as `evtrace kmem report --live` does: each
 * refresh feeds the analysis only the events new in the window, so the figures cover everything the viewer received
 * since it attached, not just the window.
 */
import { readFileSync } from 'node:fs';
import {
  AddressKeys,
  fragmentation,
  fromTraceEvent,
  type KmemAnalysis,
  KmemAnalyzer,
  kmemKind,
  LiveKmemAnalysis,
  type SortKey,
  sortSlabStats,
} from '@evtrace/kmemtrace';
import { Kallsyms } from '@evtrace/trace-format';
import { Box, Text } from 'ink';
import { useMemo, useRef, useState } from 'react';
import type { EventStore } from '../data/store.ts';
import { bytesText, countText, fit, sparkline } from '../ui/format.ts';
import { useKeys } from '../ui/keys.ts';
import { useColour, useTheme } from '../ui/theme.ts';
import type { ViewDefinition, ViewProps } from './registry.ts';

/** The sort orders `s` cycles through: perf kmem's keys, each descending. */
export const MEMORY_SORTS: readonly { readonly name: string; readonly keys: readonly SortKey[] }[] = [
  { name: 'bytes', keys: ['bytes', 'hit'] },
  { name: 'hits', keys: ['hit', 'bytes'] },
  { name: 'frag', keys: ['frag', 'hit', 'bytes'] },
  { name: 'ping-pong', keys: ['pingpong', 'hit'] },
];

/** The analysis of a store's kmem events, with time series intervals that fit `slots` columns. */
export function analyzeStore(store: EventStore, slots: number): { analysis: KmemAnalysis; keys: AddressKeys } {
  const keys = new AddressKeys();
  const span = store.length > 1 ? Number(store.tsNs(store.length - 1) - store.tsNs(0)) : 0;
  const analyzer = new KmemAnalyzer({ intervalNs: Math.max(1, Math.ceil((span + 1) / Math.max(1, slots))) });
  for (let i = 0; i < store.length; i++) {
    // The class costs no decoding: only kmem events are decoded.
    if (kmemKind(store.eventClass(i)) === undefined) continue;
    const e = fromTraceEvent(store.event(i), keys);
    if (e !== undefined) analyzer.push(e);
  }
  return { analysis: analyzer.result(), keys };
}

/** Live time series intervals: one sparkline column per second. */
export const LIVE_INTERVAL_NS = 1_000_000_000;

/**
 * A live source's analysis across refreshes. Each window is in time order and overlaps the previous one; `update`
 * finds where the events already fed end (by time, then by how many of that last time were fed) and feeds the rest.
 */
export class LiveMemory {
  readonly live = new LiveKmemAnalysis({ intervalNs: LIVE_INTERVAL_NS });
  #lastTs: bigint | undefined;
  /** Events fed whose time is #lastTs. */
  #atLast = 0;
  /** Events of the windows that were gone before they were fed (the window moved past them while paused). */
  missed = 0;

  update(store: EventStore): void {
    const n = store.length;
    let from = 0;
    const last = this.#lastTs;
    if (last !== undefined) {
      // The first event at or after the last time fed (binary search: windows hold 100 000 events).
      let lo = 0;
      let hi = n;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (store.tsNs(mid) < last) lo = mid + 1;
        else hi = mid;
      }
      let same = 0;
      while (lo + same < n && same < this.#atLast && store.tsNs(lo + same) === last) same++;
      from = lo + same;
    }
    for (let i = from; i < n; i++) {
      const ts = store.tsNs(i);
      if (ts === this.#lastTs) this.#atLast++;
      else {
        this.#lastTs = ts;
        this.#atLast = 1;
      }
      if (kmemKind(store.eventClass(i)) !== undefined) this.live.pushTrace(store.event(i));
    }
  }
}

let running: Kallsyms | null | undefined;
/** This machine's symbols, for live sources (a file may come from another boot: its addresses stay hex). */
function runningKallsyms(): Kallsyms | undefined {
  if (running === undefined) {
    try {
      running = Kallsyms.parse(readFileSync('/proc/kallsyms', 'latin1'));
      if (running.size === 0) running = null;
    } catch {
      running = null;
    }
  }
  return running ?? undefined;
}

function MemoryView(props: ViewProps) {
  const { source, store, width, height, tick, active } = props;
  const colour = useColour();
  const { colour: fancy } = useTheme();
  const [sort, setSort] = useState(0);
  useKeys((key) => {
    if (key !== 's') return false;
    setSort((s) => (s + 1) % MEMORY_SORTS.length);
    return true;
  }, active);
  const spark = Math.max(10, width - 32);
  // A live source is followed while hidden too (only new events cost anything); a file is analysed once on screen.
  const liveMemory = useRef<{ source: ViewProps['source']; memory: LiveMemory } | undefined>(undefined);
  const result = useMemo(() => {
    if (source.live) {
      if (liveMemory.current?.source !== source) liveMemory.current = { source, memory: new LiveMemory() };
      const memory = liveMemory.current.memory;
      memory.update(store);
      return active ? { analysis: memory.live.analysis(), keys: memory.live.keys } : undefined;
    }
    return active ? analyzeStore(store, spark) : undefined;
  }, [active, source, store, tick, spark]);
  if (result === undefined) return <Box width={width} height={height} />;
  const { analysis, keys } = result;
  const kallsyms = source.live ? runningKallsyms() : undefined;
  const site = (key: number) => {
    const addr = keys.address(key);
    return kallsyms?.format(addr) ?? keys.hex(key);
  };
  const s = analysis.summary;
  const order = MEMORY_SORTS[sort]!;
  const rows = sortSlabStats(analysis.callers, order.keys, 'callers').slice(0, Math.max(0, height - 6));
  // A live analysis' series grows by one point a second: the newest that fit.
  const live = analysis.timeseries.slice(-spark).map((p) => p.liveBytes);
  const W = { site: Math.max(20, width - 58) };
  if (s.allocs === 0 && s.frees === 0 && analysis.pages.allocs === 0)
    return (
      <Box flexDirection="column" width={width} height={height}>
        <Text dimColor>
          {source.live ? 'no kmem events yet' : 'no kmem allocator events in this trace'} (record kmem:kmalloc,
          kmem:kfree, kmem:kmem_cache_alloc, kmem:kmem_cache_free: evtrace kmem record)
        </Text>
      </Box>
    );
  return (
    <Box flexDirection="column" width={width} height={height}>
      <Text wrap="truncate">
        {fit(
          `allocs ${countText(s.allocs)}  frees ${countText(s.frees)}  requested ${bytesText(s.totalReq)}  allocated ${bytesText(s.totalAlloc)}  fragmentation ${s.fragPct.toFixed(2)}%  cross-CPU frees ${countText(s.crossCpuFrees)}`,
          width,
        )}
      </Text>
      <Text wrap="truncate">
        {fit(
          `outstanding ${bytesText(analysis.outstanding.bytes)} in ${countText(analysis.outstanding.count)} objects  page allocs ${countText(analysis.pages.allocs)} (${countText(analysis.pages.pagesAllocated)} pages)`,
          width,
        )}
      </Text>
      <Text wrap="truncate">
        {fit('outstanding bytes', 20)} <Text color={colour('green')}>{sparkline(live, spark, !fancy)}</Text>{' '}
        {bytesText(live[live.length - 1] ?? 0)}
      </Text>
      <Text bold color={colour('cyan')}>
        {fit(
          `${fit(`CALL SITE (by ${order.name}; s: sort)`, W.site)} ${fit('HITS', 8)} ${fit('ALLOCATED', 11)} ${fit('REQUESTED', 11)} ${fit('FRAG%', 7)} ${fit('PING-PONG', 9)}`,
          width,
        )}
      </Text>
      {rows.map((r) => (
        <Text key={r.key} wrap="truncate">
          {fit(site(r.key), W.site)} {fit(countText(r.hit), 8)} {fit(bytesText(r.totalAlloc), 11)}{' '}
          {fit(bytesText(r.totalReq), 11)} {fit(fragmentation(r.totalReq, r.totalAlloc).toFixed(2), 7)}{' '}
          {fit(countText(r.pingPong), 9)}
        </Text>
      ))}
    </Box>
  );
}

export const memoryView: ViewDefinition = {
  title: 'Memory',
  keys: [['s', 'sort call sites: bytes, hits, fragmentation, ping-pong']],
  Component: MemoryView,
  shows: (classes) => classes.some((c) => kmemKind(c) !== undefined),
};
