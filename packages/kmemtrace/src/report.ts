/**
 * Reports: the analysis as JSON-ready objects (figures as numbers, names as text) and as text tables laid out like
 * `perf kmem stat`'s. Sorting uses perf kmem's keys, each descending, ties in ascending call site / pointer order.
 */
import { fragmentation, type KmemAnalysis, type SlabStat } from './analyze.ts';
import { KmemError } from './errors.ts';
import type { KmemSource } from './event.ts';
import { gfpNamer } from './gfp.ts';

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

const cmp = (a: number | string, b: number | string) => (a < b ? -1 : a > b ? 1 : 0);

/** Sorts a slab table by `keys` (each descending), ties by ascending key. */
export function sortSlabStats(
  stats: readonly SlabStat[],
  keys: readonly SortKey[],
  table: 'callers' | 'allocs',
  siteOrder: Order = (k) => k,
): SlabStat[] {
  // Each key's values computed once per row, then an index sort: tables have tens of thousands of rows.
  const column = (key: SortKey): (number | string)[] =>
    stats.map((s) => {
      switch (key) {
        case 'frag':
          return fragmentation(s.totalReq, s.totalAlloc);
        case 'hit':
          return s.hit;
        case 'bytes':
          return s.totalAlloc;
        case 'pingpong':
          return s.pingPong;
        case 'callsite':
          return siteOrder(s.callSite);
        default:
          // 'ptr': the pointer of an alloc row; caller rows have none.
          return table === 'allocs' ? s.key : 0;
      }
    });
  const columns = keys.map(column);
  const tie = stats.map((s) => (table === 'callers' ? siteOrder(s.key) : s.key));
  const order = stats.map((_, i) => i);
  if ([...columns, tie].every((c) => c.every((v) => typeof v === 'number'))) {
    // All numeric (the usual case): typed columns and subtraction, several times faster on big tables.
    const nums = columns.map((c) => Float64Array.from(c as number[]));
    const ties = Float64Array.from(tie as number[]);
    order.sort((a, b) => {
      for (const c of nums) {
        const d = c[b]! - c[a]!;
        if (d !== 0) return d;
      }
      return ties[a]! - ties[b]!;
    });
  } else
    order.sort((a, b) => {
      for (const c of columns) {
        const d = cmp(c[b]!, c[a]!);
        if (d !== 0) return d;
      }
      return cmp(tie[a]!, tie[b]!);
    });
  return order.map((i) => stats[i]!);
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

type Names = Pick<KmemSource, 'siteName' | 'ptrName' | 'siteOrder' | 'gfpNames'>;

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
  const row = (x: SlabStat): CallerRow => ({
    site: names.siteName(x.callSite),
    total_alloc: x.totalAlloc,
    total_req: x.totalReq,
    hit: x.hit,
    ping_pong: x.pingPong,
    frag_pct: fragmentation(x.totalReq, x.totalAlloc),
  });
  if (want(options.caller))
    report.callers = limit(sortSlabStats(analysis.callers, sort, 'callers', names.siteOrder)).map(row);
  if (want(options.alloc))
    report.allocs = limit(sortSlabStats(analysis.allocs, sort, 'allocs', names.siteOrder)).map(
      (x): AllocRow => ({
        ptr: names.ptrName(x.key),
        site: names.siteName(x.callSite),
        total_alloc: x.totalAlloc,
        total_req: x.totalReq,
        hit: x.hit,
        ping_pong: x.pingPong,
        frag_pct: fragmentation(x.totalReq, x.totalAlloc),
      }),
    );
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

/**
 * Text assembled as UTF-8 bytes and decoded once: a table of pointers runs to tens of thousands of rows, and a string
 * per cell, padded and joined, cost several times more.
 */
class TextBytes {
  #bytes = Buffer.allocUnsafe(1 << 16);
  #at = 0;

  #room(n: number): void {
    if (this.#at + n <= this.#bytes.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.#bytes.length * 2, this.#at + n));
    this.#bytes.copy(grown, 0, 0, this.#at);
    this.#bytes = grown;
  }

  /** `text`, padded with spaces to `width` characters (as padEnd, or padStart unless `left`). */
  text(text: string, width = 0, left = true): this {
    const pad = Math.max(0, width - text.length);
    this.#room(pad + text.length * 3);
    if (!left) this.#spaces(pad);
    this.#write(text);
    if (left) this.#spaces(pad);
    return this;
  }

  /** A number as String() writes it, padded as {@link text}; integers' digits written directly. */
  number(value: number, width: number, left: boolean): this {
    if (!Number.isSafeInteger(value) || value < 0) return this.text(String(value), width, left);
    let digits = 1;
    for (let v = value; v >= 10; v = Math.floor(v / 10)) digits++;
    const pad = Math.max(0, width - digits);
    this.#room(pad + digits);
    if (!left) this.#spaces(pad);
    const bytes = this.#bytes;
    let v = value;
    for (let i = this.#at + digits - 1; i >= this.#at; i--) {
      bytes[i] = 48 + (v % 10);
      v = Math.floor(v / 10);
    }
    this.#at += digits;
    if (left) this.#spaces(pad);
    return this;
  }

  #write(text: string): void {
    const bytes = this.#bytes;
    const at = this.#at;
    // ASCII byte by byte (the separators, numbers and names of a table), anything else encoded by Buffer.
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c >= 128) {
        this.#at = at + bytes.write(text, at, 'utf8');
        return;
      }
      bytes[at + i] = c;
    }
    this.#at = at + text.length;
  }

  #spaces(n: number): void {
    const bytes = this.#bytes;
    for (let i = 0; i < n; i++) bytes[this.#at + i] = 32;
    this.#at += n;
  }

  toString(): string {
    return this.#bytes.toString('utf8', 0, this.#at);
  }
}

/** A slab table, its lines joined by newlines. */
function slabTable(title: string, rows: readonly CallerRow[], key: (r: CallerRow) => string): string {
  const out = new TextBytes();
  out.text(
    `${RULE}\n ${title.padEnd(34)} | Total_alloc/Per | Total_req/Per   | Hit      | Ping-pong | Frag\n${RULE}\n`,
  );
  // Few distinct fragmentations among many rows.
  const frags = new Map<number, string>();
  for (const r of rows) {
    let frag = frags.get(r.frag_pct);
    if (frag === undefined) frags.set(r.frag_pct, (frag = `${printfFixed(r.frag_pct, 3).padStart(6)}%\n`));
    const hit = r.hit;
    out.text(' ').text(key(r), 34).text(' | ');
    out
      .number(r.total_alloc, 9, false)
      .text('/')
      .number(Math.floor(r.total_alloc / hit), 5, true)
      .text(' | ');
    out
      .number(r.total_req, 9, false)
      .text('/')
      .number(Math.floor(r.total_req / hit), 5, true)
      .text(' | ');
    out.number(hit, 8, false).text(' | ').number(r.ping_pong, 9, false).text(' | ').text(frag);
  }
  return out.text(RULE).toString();
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

/** The report as text: perf kmem's tables and summary, then the sections perf does not have. */
export function formatReportText(report: KmemReport): string {
  const out: string[] = [];
  if (report.callers)
    out.push(
      slabTable('Callsite', report.callers, (r) => r.site),
      '',
    );
  if (report.allocs)
    out.push(
      slabTable('Alloc Ptr', report.allocs, (r) => (r as AllocRow).ptr),
      '',
    );
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
  return `${out.join('\n')}\n`;
}
