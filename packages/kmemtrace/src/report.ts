/**
 * Reports: the analysis as JSON-ready objects (figures as numbers, names as text) and as text tables laid out like
 * `perf kmem stat`'s. Sorting uses perf kmem's keys, each descending, ties in ascending call site / pointer order.
 */
import { ByteOut, utf8 } from '@evtrace/trace-format';
import { fragmentation, type KmemAnalysis, type SlabStat } from './analyze.ts';
import { KmemError } from './errors.ts';
import type { KmemSource } from './event.ts';
import { gfpNamer } from './gfp.ts';
import { orderColumn, type SlabColumns, slabColumns, sortedRows } from './slab-columns.ts';

/** perf kmem's slab sort keys. */
export const SORT_KEYS = ['frag', 'hit', 'bytes', 'ptr', 'callsite', 'pingpong'] as const;
export type SortKey = (typeof SORT_KEYS)[number];
/** perf kmem's default: `frag,hit,bytes`. */
export const DEFAULT_SORT: readonly SortKey[] = ['frag', 'hit', 'bytes'];

/**
 * Parses `--sort frag,hit` into keys.
 * @throws KmemError `ERR_KMEM_OPTION` naming an unknown key and its column.
 */
export function parseSortKeys(text: string): SortKey[] {
  const keys: SortKey[] = [];
  let column = 1;
  for (const part of text.split(',')) {
    const k = part.trim();
    if (!(SORT_KEYS as readonly string[]).includes(k))
      throw new KmemError(
        'ERR_KMEM_OPTION',
        `unknown sort key '${k}' at column ${column} (keys: ${SORT_KEYS.join(', ')})`,
      );
    keys.push(k as SortKey);
    column += part.length + 1;
  }
  return keys;
}

type Order = (key: number) => number | string;

/** Sorts a slab table by `keys` (each descending), ties by ascending key. */
export function sortSlabStats(
  stats: readonly SlabStat[],
  keys: readonly SortKey[],
  table: 'callers' | 'allocs',
  siteOrder: Order = (k) => k,
): SlabStat[] {
  return Array.from(slabOrder(slabColumns(stats), keys, table, siteOrder), (i) => stats[i]!);
}

/** The row indexes of a slab table in report order: by `keys`, each descending, ties by ascending key. */
function slabOrder(
  columns: SlabColumns,
  keys: readonly SortKey[],
  table: 'callers' | 'allocs',
  siteOrder: Order = (k) => k,
): Int32Array {
  const n = columns.length;
  const column = (key: SortKey): Float64Array => {
    switch (key) {
      case 'frag':
        return fragColumn(columns);
      case 'hit':
        return columns.hit;
      case 'bytes':
        return columns.totalAlloc;
      case 'pingpong':
        return columns.pingPong;
      case 'callsite':
        return orderColumn(Array.from(columns.callSite, (k) => siteOrder(k)));
      default:
        // 'ptr': the pointer of an alloc row; caller rows have none.
        return table === 'allocs' ? columns.key : new Float64Array(n);
    }
  };
  const tie = table === 'callers' ? orderColumn(Array.from(columns.key, (k) => siteOrder(k))) : columns.key;
  return sortedRows(n, keys.map(column), tie);
}

/** Each row's fragmentation. */
function fragColumn(columns: SlabColumns): Float64Array {
  const frag = new Float64Array(columns.length);
  for (let i = 0; i < frag.length; i++) frag[i] = fragmentation(columns.totalReq[i]!, columns.totalAlloc[i]!);
  return frag;
}

export interface ReportOptions {
  /** Which sections; none set means all of them. The summary is always there. */
  readonly caller?: boolean;
  readonly alloc?: boolean;
  readonly page?: boolean;
  readonly leaks?: boolean;
  readonly errors?: boolean;
  readonly timeseries?: boolean;
  /** Sort keys of the caller and alloc tables; default perf's frag,hit,bytes. */
  readonly sort?: readonly SortKey[];
  /** Rows per table (and error examples per kind); default all. */
  readonly lines?: number;
}

export interface CallerRow {
  site: string;
  total_alloc: number;
  total_req: number;
  hit: number;
  ping_pong: number;
  frag_pct: number;
}

export interface AllocRow extends CallerRow {
  ptr: string;
}

/** The JSON report. Sections not asked for are absent. */
export interface KmemReport {
  summary: {
    events: number;
    allocs: number;
    frees: number;
    failed_allocs: number;
    total_req: number;
    total_alloc: number;
    total_freed: number;
    net_alloc: number;
    wasted: number;
    frag_pct: number;
    cross_cpu_frees: number;
    /** Timestamps of the first and last events, nanoseconds as decimal strings (64-bit, as everywhere in evtrace's JSON). */
    first_ns?: string;
    last_ns?: string;
  };
  callers?: CallerRow[];
  allocs?: AllocRow[];
  pages?: {
    allocs: number;
    frees: number;
    failed: number;
    pages_allocated: number;
    pages_freed: number;
    alloc_freed: number;
    alloc_only: number;
    free_only: number;
    by_order: { order: number; count: number }[];
    by_order_migratetype: { order: number; migratetype: number; count: number }[];
    by_migratetype: { migratetype: number; count: number }[];
    by_gfp: { gfp_flags: string; value: number; count: number }[];
  };
  leaks?: {
    count: number;
    bytes: number;
    sites: { site: string; count: number; bytes: number; oldest_ns: number; mean_age_ns: number }[];
  };
  errors?: {
    counts: Record<string, number>;
    examples: {
      kind: string;
      ts_ns: string;
      cpu: number;
      ptr: string;
      site: string;
      alloc_site?: string;
      detail: string;
    }[];
  };
  timeseries?: {
    interval_ns: number;
    points: {
      start_ns: string;
      allocs: number;
      frees: number;
      bytes_allocated: number;
      bytes_freed: number;
      live_bytes: number;
    }[];
  };
}

type Names = Pick<KmemSource, 'siteName' | 'ptrName' | 'ptrBytes' | 'siteOrder' | 'gfpNames'>;

/** Builds the report of `analysis`, naming addresses through `names` (a {@link KmemSource}). */
export function buildReport(analysis: KmemAnalysis, names: Names, options: ReportOptions = {}): KmemReport {
  const all =
    !options.caller && !options.alloc && !options.page && !options.leaks && !options.errors && !options.timeseries;
  const want = (flag: boolean | undefined) => all || flag === true;
  const sort = options.sort ?? DEFAULT_SORT;
  const limit = <T>(rows: T[]) => (options.lines === undefined ? rows : rows.slice(0, options.lines));
  const s = analysis.summary;
  const report: KmemReport = {
    summary: {
      events: s.events,
      allocs: s.allocs,
      frees: s.frees,
      failed_allocs: s.failedAllocs,
      total_req: s.totalReq,
      total_alloc: s.totalAlloc,
      total_freed: s.totalFreed,
      net_alloc: s.totalAlloc - s.totalFreed,
      wasted: s.wasted,
      frag_pct: s.fragPct,
      cross_cpu_frees: s.crossCpuFrees,
      ...(s.firstNs !== undefined ? { first_ns: String(s.firstNs), last_ns: String(s.lastNs!) } : {}),
    },
  };
  const lines = (order: Int32Array) => (options.lines === undefined ? order : order.subarray(0, options.lines));
  if (want(options.caller)) {
    const columns = analysis.callerColumns;
    const order = lines(slabOrder(columns, sort, 'callers', names.siteOrder));
    deferRows(report, 'callers', { columns, order, names });
  }
  if (want(options.alloc)) {
    const columns = analysis.allocColumns;
    const order = lines(slabOrder(columns, sort, 'allocs', names.siteOrder));
    deferRows(report, 'allocs', { columns, order, names });
  }
  if (want(options.page)) {
    const p = analysis.pages;
    const gfp = names.gfpNames ?? gfpNamer();
    report.pages = {
      allocs: p.allocs,
      frees: p.frees,
      failed: p.failed,
      pages_allocated: p.pagesAllocated,
      pages_freed: p.pagesFreed,
      alloc_freed: p.allocFreed,
      alloc_only: p.allocOnly,
      free_only: p.freeOnly,
      by_order: [...p.byOrder].sort((a, b) => a[0] - b[0]).map(([order, count]) => ({ order, count })),
      by_order_migratetype: [...p.byOrderMigratetype]
        .sort((a, b) => a[0] - b[0])
        .flatMap(([order, row]) =>
          [...row].sort((a, b) => a[0] - b[0]).map(([migratetype, count]) => ({ order, migratetype, count })),
        ),
      by_migratetype: [...p.byMigratetype]
        .sort((a, b) => a[0] - b[0])
        .map(([migratetype, count]) => ({ migratetype, count })),
      by_gfp: [...p.byGfp]
        .sort((a, b) => b[1] - a[1] || a[0] - b[0])
        .map(([value, count]) => ({ gfp_flags: gfp(value), value, count })),
    };
  }
  if (want(options.leaks))
    report.leaks = {
      count: analysis.outstanding.count,
      bytes: analysis.outstanding.bytes,
      sites: limit(
        analysis.leaks.map((l) => ({
          site: names.siteName(l.callSite),
          count: l.count,
          bytes: l.bytes,
          oldest_ns: l.oldestNs,
          mean_age_ns: Math.round(l.meanAgeNs),
        })),
      ),
    };
  if (want(options.errors))
    report.errors = {
      counts: { ...analysis.errors.counts },
      examples: perKind(analysis.errors.examples, options.lines).map((x) => ({
        kind: x.kind,
        ts_ns: String(x.tsNs),
        cpu: x.cpu,
        ptr: names.ptrName(x.ptr),
        site: names.siteName(x.callSite),
        ...(x.allocSite !== undefined ? { alloc_site: names.siteName(x.allocSite) } : {}),
        detail: x.detail,
      })),
    };
  if (want(options.timeseries))
    report.timeseries = {
      interval_ns: analysis.intervalNs,
      points: analysis.timeseries.map((t) => ({
        start_ns: String(t.startNs),
        allocs: t.allocs,
        frees: t.frees,
        bytes_allocated: t.bytesAllocated,
        bytes_freed: t.bytesFreed,
        live_bytes: t.liveBytes,
      })),
    };
  return report;
}

/** The first `limit` examples of each kind (all without a limit). */
function perKind<T extends { kind: string }>(examples: readonly T[], limit: number | undefined): T[] {
  if (limit === undefined) return [...examples];
  const seen = new Map<string, number>();
  return examples.filter((x) => {
    const n = seen.get(x.kind) ?? 0;
    seen.set(x.kind, n + 1);
    return n < limit;
  });
}

const RULE = '-'.repeat(105);

/**
 * `x` with `digits` decimals as C's printf rounds: an exact binary tie (20.3125 to 3 digits) goes to the even digit,
 * where toFixed rounds away from zero.
 */
export function printfFixed(x: number, digits: number): string {
  const scale = 10 ** digits;
  const scaled = x * scale;
  const floor = Math.floor(scaled);
  if (scaled - floor === 0.5 && scaled / scale === x)
    return ((floor % 2 === 0 ? floor : floor + 1) / scale).toFixed(digits);
  return x.toFixed(digits);
}

/** A slab table sorted and limited, its rows not yet made objects. */
interface SortedSlab {
  readonly columns: SlabColumns;
  /** The rows shown, as indexes into `columns`, in report order. */
  readonly order: Int32Array;
  readonly names: Names;
}

/** Tables of reports whose rows were never read: the text is written from their columns. */
const sortedSlabs = new WeakMap<KmemReport, { callers?: SortedSlab; allocs?: SortedSlab }>();

/**
 * Makes `report[table]` the rows of `slab`, made on first read (the JSON report reads them, the text does not); after
 * a read or an assignment it is a plain property, and the text follows it.
 */
function deferRows(report: KmemReport, table: 'callers' | 'allocs', slab: SortedSlab): void {
  const settle = (rows: CallerRow[] | AllocRow[]) => {
    Object.defineProperty(report, table, { value: rows, writable: true, enumerable: true, configurable: true });
    const slabs = sortedSlabs.get(report);
    if (slabs !== undefined) delete slabs[table];
  };
  Object.defineProperty(report, table, {
    enumerable: true,
    configurable: true,
    get() {
      const rows = slabRows(slab, table);
      settle(rows);
      return rows;
    },
    set: settle,
  });
  const slabs = sortedSlabs.get(report);
  if (slabs === undefined) sortedSlabs.set(report, { [table]: slab });
  else slabs[table] = slab;
}

/** The JSON rows of a sorted slab table. */
function slabRows({ columns: c, order, names }: SortedSlab, table: 'callers' | 'allocs'): CallerRow[] | AllocRow[] {
  const rows: (CallerRow | AllocRow)[] = [];
  for (let r = 0; r < order.length; r++) {
    const i = order[r]!;
    const site = names.siteName(c.callSite[i]!);
    const totalAlloc = c.totalAlloc[i]!;
    const totalReq = c.totalReq[i]!;
    const hit = c.hit[i]!;
    const pingPong = c.pingPong[i]!;
    const frag = fragmentation(totalReq, totalAlloc);
    rows.push(
      table === 'callers'
        ? { site, total_alloc: totalAlloc, total_req: totalReq, hit, ping_pong: pingPong, frag_pct: frag }
        : ({
            ptr: names.ptrName(c.key[i]!),
            site,
            total_alloc: totalAlloc,
            total_req: totalReq,
            hit,
            ping_pong: pingPong,
            frag_pct: frag,
          } satisfies AllocRow),
    );
  }
  return rows as CallerRow[] | AllocRow[];
}

/** What a slab table's lines print: per row its name (call site or pointer) and figures. */
interface SlabLines {
  /** The rows shown, as indexes into the columns below, in report order. */
  readonly order: Int32Array;
  /** Writes row `i`'s name to `out`; returns its length in characters. */
  readonly name: (i: number, out: ByteOut) => number;
  readonly totalAlloc: Float64Array;
  readonly totalReq: Float64Array;
  readonly hit: Float64Array;
  readonly pingPong: Float64Array;
  /** Fragmentation per row, or undefined to compute it from the bytes. */
  readonly frag: Float64Array | undefined;
}

/** Writes `text` to `out`; returns its length. */
function written(out: ByteOut, text: string): number {
  out.text(text);
  return text.length;
}

/** The lines of `report[table]`: from its columns while its rows were not read, else from the rows. */
function slabLines(report: KmemReport, table: 'callers' | 'allocs'): SlabLines | undefined {
  const slab = sortedSlabs.get(report)?.[table];
  if (slab !== undefined) {
    const { columns: c, names } = slab;
    const key = c.key;
    const ptrBytes = names.ptrBytes;
    return {
      order: slab.order,
      name:
        table === 'callers'
          ? (i, out) => written(out, names.siteName(key[i]!))
          : ptrBytes !== undefined
            ? (i, out) => {
                const start = out.length;
                ptrBytes(key[i]!, out);
                return out.length - start;
              }
            : (i, out) => written(out, names.ptrName(key[i]!)),
      totalAlloc: c.totalAlloc,
      totalReq: c.totalReq,
      hit: c.hit,
      pingPong: c.pingPong,
      frag: undefined,
    };
  }
  const rows = report[table];
  if (rows === undefined) return undefined;
  const figures = (f: (r: CallerRow) => number) => Float64Array.from(rows, f);
  return {
    order: Int32Array.from(rows, (_, i) => i),
    name:
      table === 'callers'
        ? (i, out) => written(out, rows[i]!.site)
        : (i, out) => written(out, (rows[i] as AllocRow).ptr),
    totalAlloc: figures((r) => r.total_alloc),
    totalReq: figures((r) => r.total_req),
    hit: figures((r) => r.hit),
    pingPong: figures((r) => r.ping_pong),
    frag: figures((r) => r.frag_pct),
  };
}

const HEADER = (title: string) =>
  utf8(`${RULE}\n ${title.padEnd(34)} | Total_alloc/Per | Total_req/Per   | Hit      | Ping-pong | Frag\n${RULE}\n`);
const CALLER_HEADER = HEADER('Callsite');
const ALLOC_HEADER = HEADER('Alloc Ptr');
const RULE_BYTES = utf8(RULE);
/** Bytes written before they are handed to the sink. */
const CHUNK = 1 << 16;

/**
 * A slab table's lines, as perf kmem prints them. Written as bytes: a table of pointers runs to tens of thousands of
 * rows, and a string per cell, padded and joined, cost several times more.
 */
function writeSlab(out: ByteOut, header: Uint8Array, lines: SlabLines, flush: () => void): void {
  out.raw(header);
  const { order, totalAlloc, totalReq, hit, pingPong, frag } = lines;
  // Few distinct fragmentations among many rows, and sorted rows repeat the one before.
  const frags = new Map<number, Uint8Array>();
  let lastFrag = Number.NaN;
  let lastFragText: Uint8Array = new Uint8Array(0);
  for (let r = 0; r < order.length; r++) {
    const i = order[r]!;
    const alloc = totalAlloc[i]!;
    const req = totalReq[i]!;
    const hits = hit[i]!;
    const f = frag === undefined ? fragmentation(req, alloc) : frag[i]!;
    if (f !== lastFrag) {
      let text = frags.get(f);
      if (text === undefined) frags.set(f, (text = utf8(`${printfFixed(f, 3).padStart(6)}%\n`)));
      lastFrag = f;
      lastFragText = text;
    }
    out.byte(32);
    const chars = lines.name(i, out);
    // Room for the rest of the line: six figures (the longest String() of a number is 24 characters) and separators.
    out.reserve(256);
    const bytes = out.bytes;
    let at = out.length;
    for (let k = chars; k < 34; k++) bytes[at++] = 32;
    at = separator(bytes, at);
    at = figure(bytes, at, alloc, 9, false);
    bytes[at++] = 47;
    at = figure(bytes, at, Math.floor(alloc / hits), 5, true);
    at = separator(bytes, at);
    at = figure(bytes, at, req, 9, false);
    bytes[at++] = 47;
    at = figure(bytes, at, Math.floor(req / hits), 5, true);
    at = separator(bytes, at);
    at = figure(bytes, at, hits, 8, false);
    at = separator(bytes, at);
    at = figure(bytes, at, pingPong[i]!, 9, false);
    at = separator(bytes, at);
    out.length = at;
    out.raw(lastFragText);
    if (out.length >= CHUNK) flush();
  }
  out.raw(RULE_BYTES);
}

/** Writes ` | ` at `at`; returns where it ends. */
function separator(bytes: Uint8Array, at: number): number {
  bytes[at] = 32;
  bytes[at + 1] = 124;
  bytes[at + 2] = 32;
  return at + 3;
}

/**
 * Writes a number as String() writes it, padded with spaces to `width` characters (after it when `left`, else
 * before), at `at`; returns where it ends. Non-negative integers' digits are written from the value.
 */
function figure(bytes: Uint8Array, at: number, value: number, width: number, left: boolean): number {
  if (!(value >= 0 && Number.isSafeInteger(value))) {
    const s = String(value);
    if (!left) for (let k = s.length; k < width; k++) bytes[at++] = 32;
    for (let k = 0; k < s.length; k++) bytes[at++] = s.charCodeAt(k);
    if (left) for (let k = s.length; k < width; k++) bytes[at++] = 32;
    return at;
  }
  let digits = 1;
  for (let t = 10; t <= value && digits < 16; t *= 10) digits++;
  if (!left) for (let k = digits; k < width; k++) bytes[at++] = 32;
  let v = value;
  let d = at + digits;
  const end = d;
  for (; v >= 2147483648; v = Math.floor(v / 10)) bytes[--d] = 48 + (v % 10);
  for (let n = v | 0; d > at; n = (n / 10) | 0) bytes[--d] = 48 + (n % 10);
  at = end;
  if (left) for (let k = digits; k < width; k++) bytes[at++] = 32;
  return at;
}

/** Requests by order (rows) and migrate type (columns, the kernel's numbers: 0 unmovable, 1 movable, 2 reclaimable). */
function orderTable(cells: readonly { order: number; migratetype: number; count: number }[]): string[] {
  if (cells.length === 0) return [];
  const types = [...new Set(cells.map((c) => c.migratetype))].sort((a, b) => a - b);
  const orders = [...new Set(cells.map((c) => c.order))].sort((a, b) => a - b);
  const count = new Map(cells.map((c) => [`${c.order}/${c.migratetype}`, c.count]));
  return [
    `Order  ${types.map((t) => `migratetype ${t}`.padStart(14)).join('')}`,
    ...orders.map(
      (o) =>
        `${String(o).padStart(5)}  ${types.map((t) => String(count.get(`${o}/${t}`) ?? '.').padStart(14)).join('')}`,
    ),
  ];
}

/**
 * Writes the report as text (the bytes of {@link formatReportText}) to `write`, a piece at a time: each piece ends at
 * the end of a line, and is only valid during the call (its buffer is reused).
 */
export function writeReportText(report: KmemReport, write: (bytes: Uint8Array) => void): void {
  const out = new ByteOut(CHUNK + 1024);
  const flush = () => {
    write(out.bytes.subarray(0, out.length));
    out.length = 0;
  };
  reportText(report, out, flush);
  flush();
}

/** The report as text: perf kmem's tables and summary, then the sections perf does not have. */
export function formatReportText(report: KmemReport): string {
  const out = new ByteOut();
  reportText(report, out, () => {});
  return out.toString();
}

/** Writes the report's text to `out`, calling `flush` now and then for `out`'s bytes to be taken. */
function reportText(report: KmemReport, text: ByteOut, flush: () => void): void {
  const callers = slabLines(report, 'callers');
  if (callers !== undefined) {
    writeSlab(text, CALLER_HEADER, callers, flush);
    text.text('\n\n');
  }
  const allocs = slabLines(report, 'allocs');
  if (allocs !== undefined) {
    writeSlab(text, ALLOC_HEADER, allocs, flush);
    text.text('\n\n');
  }
  const out: string[] = [];
  const s = report.summary;
  out.push(
    'SUMMARY (SLAB allocator)',
    '========================',
    `Total bytes requested: ${s.total_req}`,
    `Total bytes allocated: ${s.total_alloc}`,
    `Total bytes freed:     ${s.total_freed}`,
    `Net total bytes allocated: ${s.net_alloc}`,
    `Total bytes wasted on internal fragmentation: ${s.wasted}`,
    `Internal fragmentation: ${printfFixed(s.frag_pct, 6)}%`,
    `Cross CPU frees: ${s.cross_cpu_frees}/${s.frees}`,
    `Allocations: ${s.allocs} (${s.failed_allocs} failed), frees: ${s.frees}`,
  );
  if (report.pages) {
    const p = report.pages;
    out.push(
      '',
      'SUMMARY (page allocator)',
      '========================',
      `Total allocation requests: ${p.allocs} (${p.failed} failed), pages: ${p.pages_allocated}`,
      `Total free requests:       ${p.frees}, pages: ${p.pages_freed}`,
      `Alloc+freed: ${p.alloc_freed}, alloc-only: ${p.alloc_only}, free-only: ${p.free_only}`,
      `By order:       ${p.by_order.map((o) => `${o.order}:${o.count}`).join(' ') || '-'}`,
      `By migratetype: ${p.by_migratetype.map((o) => `${o.migratetype}:${o.count}`).join(' ') || '-'}`,
      ...orderTable(p.by_order_migratetype),
      'By gfp flags:',
      ...p.by_gfp.map((g) => `  ${String(g.count).padStart(9)}  ${g.gfp_flags}`),
    );
  }
  if (report.leaks) {
    const l = report.leaks;
    out.push('', 'OUTSTANDING at the end of the window', '====================================');
    out.push(`${l.count} allocations, ${l.bytes} bytes`);
    for (const x of l.sites)
      out.push(
        `  ${x.site.padEnd(40)} ${String(x.count).padStart(8)} objs ${String(x.bytes).padStart(10)} B  oldest ${(x.oldest_ns / 1e6).toFixed(3)} ms  mean age ${(x.mean_age_ns / 1e6).toFixed(3)} ms`,
      );
  }
  if (report.errors) {
    const e = report.errors;
    out.push('', 'ERRORS', '======');
    for (const [kind, n] of Object.entries(e.counts)) out.push(`  ${kind.padEnd(14)} ${n}`);
    for (const x of e.examples)
      out.push(
        `  ${x.kind}: ptr ${x.ptr} at ${x.site}${x.alloc_site ? ` (allocated at ${x.alloc_site})` : ''} cpu ${x.cpu}: ${x.detail}`,
      );
  }
  if (report.timeseries) {
    const t = report.timeseries;
    out.push('', `TIME SERIES (${t.interval_ns / 1e6} ms intervals)`, '===========');
    out.push('  start_ms      allocs     frees   bytes_alloc    bytes_freed     live_bytes');
    const t0 = Number(t.points[0]?.start_ns ?? 0);
    for (const p of t.points)
      out.push(
        `  ${((Number(p.start_ns) - t0) / 1e6).toFixed(1).padStart(8)} ${String(p.allocs).padStart(10)} ${String(p.frees).padStart(9)} ${String(p.bytes_allocated).padStart(13)} ${String(p.bytes_freed).padStart(14)} ${String(p.live_bytes).padStart(14)}`,
      );
  }
  text.text(`${out.join('\n')}\n`);
}
