/** The difference between two recordings' reports: summary figures and call sites matched by name. */
import type { KmemReport } from './report.ts';

export interface SiteDiff {
  site: string;
  hit_a: number;
  hit_b: number;
  hit_delta: number;
  total_alloc_a: number;
  total_alloc_b: number;
  total_alloc_delta: number;
  frag_pct_a: number;
  frag_pct_b: number;
}

export interface KmemDiff {
  summary: Record<string, { a: number; b: number; delta: number }>;
  /** Every call site of either report, largest change in allocated bytes first. */
  callers: SiteDiff[];
}

const FIGURES = [
  'allocs',
  'frees',
  'total_req',
  'total_alloc',
  'total_freed',
  'wasted',
  'frag_pct',
  'cross_cpu_frees',
] as const;

/** Compares B against A. Call sites are matched by name (`symbol+0xoff`), which survives a reboot; addresses do not. */
export function diffReports(a: KmemReport, b: KmemReport): KmemDiff {
  const summary: KmemDiff['summary'] = {};
  for (const k of FIGURES) summary[k] = { a: a.summary[k], b: b.summary[k], delta: b.summary[k] - a.summary[k] };
  const sites = new Map<string, SiteDiff>();
  const get = (site: string) => {
    let d = sites.get(site);
    if (d === undefined) {
      d = {
        site,
        hit_a: 0,
        hit_b: 0,
        hit_delta: 0,
        total_alloc_a: 0,
        total_alloc_b: 0,
        total_alloc_delta: 0,
        frag_pct_a: 0,
        frag_pct_b: 0,
      };
      sites.set(site, d);
    }
    return d;
  };
  for (const r of a.callers ?? [])
    Object.assign(get(r.site), { hit_a: r.hit, total_alloc_a: r.total_alloc, frag_pct_a: r.frag_pct });
  for (const r of b.callers ?? [])
    Object.assign(get(r.site), { hit_b: r.hit, total_alloc_b: r.total_alloc, frag_pct_b: r.frag_pct });
  const callers = [...sites.values()].map((d) => ({
    ...d,
    hit_delta: d.hit_b - d.hit_a,
    total_alloc_delta: d.total_alloc_b - d.total_alloc_a,
  }));
  callers.sort(
    (x, y) =>
      Math.abs(y.total_alloc_delta) - Math.abs(x.total_alloc_delta) ||
      Math.abs(y.hit_delta) - Math.abs(x.hit_delta) ||
      (x.site < y.site ? -1 : x.site > y.site ? 1 : 0),
  );
  return { summary, callers };
}

/** The diff as text: summary figures, then call sites. */
export function formatDiffText(diff: KmemDiff, lines?: number): string {
  const out = ['SUMMARY                      A              B          delta'];
  for (const [k, v] of Object.entries(diff.summary))
    out.push(`  ${k.padEnd(17)} ${fmt(v.a).padStart(13)} ${fmt(v.b).padStart(14)} ${fmt(v.delta, true).padStart(14)}`);
  out.push('', ` ${'Callsite'.padEnd(40)} |   Hit A |   Hit B |  Bytes A    |  Bytes B    |  Bytes delta`);
  for (const d of lines === undefined ? diff.callers : diff.callers.slice(0, lines))
    out.push(
      ` ${d.site.padEnd(40)} | ${String(d.hit_a).padStart(7)} | ${String(d.hit_b).padStart(7)} | ${String(d.total_alloc_a).padStart(11)} | ${String(d.total_alloc_b).padStart(11)} | ${fmt(d.total_alloc_delta, true).padStart(12)}`,
    );
  return `${out.join('\n')}\n`;
}

function fmt(n: number, signed = false): string {
  const s = Number.isInteger(n) ? String(n) : n.toFixed(3);
  return signed && n > 0 ? `+${s}` : s;
}
