import { describe, expect, it } from 'vitest';
import { AddressKeys } from './address.ts';
import { analyze } from './analyze.ts';
import { diffReports, formatDiffText } from './diff.ts';
import type { KmemEvent } from './event.ts';
import { buildReport, formatReportText, type KmemReport, parseSortKeys, printfFixed } from './report.ts';

const keys = new AddressKeys();
const SITE_A = keys.key(0xffffffff81000100n);
const SITE_B = keys.key(0xffffffff81000200n);
const SITE_FREE = keys.key(0xffffffff81000300n);
const P = (n: number) => keys.key(0xffff888100000000n + BigInt(n) * 64n);
const names = {
  siteName: (k: number) =>
    k === SITE_A ? 'a+0x10' : k === SITE_B ? 'b+0x20' : k === SITE_FREE ? 'f' : `0x${keys.address(k).toString(16)}`,
  ptrName: (k: number) => `0x${keys.address(k).toString(16)}`,
};

let ts = 0;
const alloc = (
  ptr: number,
  site: number,
  req: number,
  got: number,
  cpu = 0,
  more: Partial<KmemEvent> = {},
): KmemEvent => ({
  op: 'alloc',
  allocator: 'kmalloc',
  tsNs: (ts += 1000),
  cpu,
  callSite: site,
  ptr,
  bytesReq: req,
  bytesAlloc: got,
  gfpFlags: 0xcc0,
  node: -1,
  ...more,
});
const free = (ptr: number, cpu = 0, more: Partial<KmemEvent> = {}): KmemEvent => ({
  op: 'free',
  allocator: 'kmalloc',
  tsNs: (ts += 1000),
  cpu,
  callSite: SITE_FREE,
  ptr,
  bytesReq: 0,
  bytesAlloc: 0,
  gfpFlags: 0,
  node: -1,
  ...more,
});

describe('analysis', () => {
  it('counts hits, bytes, fragmentation and frees on another CPU (ping-pong) per call site and pointer', () => {
    const events = [
      alloc(P(1), SITE_A, 100, 128, 0),
      alloc(P(2), SITE_A, 60, 64, 1),
      alloc(P(3), SITE_B, 32, 32, 0),
      free(P(1), 1), // another CPU
      free(P(2), 1),
      alloc(P(1), SITE_B, 10, 16, 1), // reused by another site
      free(P(1), 0),
    ];
    const r = buildReport(analyze(events), names);
    expect(r.callers).toEqual([
      { site: 'a+0x10', total_alloc: 192, total_req: 160, hit: 2, ping_pong: 1, frag_pct: 100 - (100 * 160) / 192 },
      { site: 'b+0x20', total_alloc: 48, total_req: 42, hit: 2, ping_pong: 1, frag_pct: 12.5 },
    ]);
    expect(r.allocs!.map((x) => [x.ptr, x.site, x.hit, x.total_alloc, x.ping_pong])).toEqual([
      [names.ptrName(P(1)), 'b+0x20', 2, 144, 2],
      [names.ptrName(P(2)), 'a+0x10', 1, 64, 0],
      [names.ptrName(P(3)), 'b+0x20', 1, 32, 0],
    ]);
    expect(r.summary).toMatchObject({
      allocs: 4,
      frees: 3,
      total_req: 202,
      total_alloc: 240,
      total_freed: 128 + 64 + 16,
      net_alloc: 240 - 208,
      wasted: 38,
      cross_cpu_frees: 2,
    });
    expect(r.leaks).toEqual({
      count: 1,
      bytes: 32,
      sites: [{ site: 'b+0x20', count: 1, bytes: 32, oldest_ns: 4000, mean_age_ns: 4000 }],
    });
  });

  it('sorts with perf kmem keys, each descending, and limits rows', () => {
    const events = [
      alloc(P(1), SITE_A, 10, 100),
      alloc(P(2), SITE_B, 50, 64),
      alloc(P(3), SITE_B, 50, 64),
      alloc(P(4), SITE_B, 50, 64, 0),
      free(P(4), 1),
    ];
    const a = analyze(events);
    const sites = (sort: string, lines?: number) =>
      buildReport(a, names, { caller: true, sort: parseSortKeys(sort), ...(lines ? { lines } : {}) }).callers!.map(
        (c) => c.site,
      );
    expect(sites('frag')).toEqual(['a+0x10', 'b+0x20']);
    expect(sites('hit')).toEqual(['b+0x20', 'a+0x10']);
    expect(sites('bytes')).toEqual(['b+0x20', 'a+0x10']);
    expect(sites('pingpong,frag')).toEqual(['b+0x20', 'a+0x10']);
    expect(sites('callsite')).toEqual(['b+0x20', 'a+0x10']);
    expect(sites('hit', 1)).toEqual(['b+0x20']);
    expect(() => parseSortKeys('hit,size')).toThrow(/unknown sort key 'size' at column 5/);
  });

  it('classifies misuse: wrong interface, wrong cache, double and unknown frees, short allocations, missed frees', () => {
    const cache = (ptr: number, name: string) => alloc(ptr, SITE_B, 64, 64, 0, { allocator: 'cache', cache: name });
    const events = [
      alloc(P(1), SITE_A, 64, 64),
      free(P(1), 0, { allocator: 'cache', cache: 'kmalloc-64' }), // kmalloc object to kmem_cache_free
      cache(P(2), 'filp'),
      free(P(2), 0, { allocator: 'cache', cache: 'dentry' }),
      alloc(P(3), SITE_A, 32, 32),
      free(P(3)),
      free(P(3)),
      free(P(9)),
      free(0),
      alloc(P(4), SITE_A, 100, 64),
      alloc(P(4), SITE_A, 64, 64),
      cache(P(5), 'filp'),
      free(P(5)), // kfree of a cache object: fine on Linux >= 6.4
    ];
    const counts = (strict: boolean) => analyze(events, { kfreeOfCacheObjectIsError: strict }).errors.counts;
    expect(counts(false)).toEqual({
      wrong_free: 1,
      wrong_cache: 1,
      double_free: 1,
      unknown_free: 1,
      short_alloc: 1,
      missed_free: 1,
    });
    expect(counts(true).wrong_free).toBe(2);
    const r = buildReport(analyze(events), names, { errors: true });
    expect(r.errors!.examples.map((x) => [x.kind, x.detail])).toEqual([
      ['wrong_free', 'kmalloc object freed with kmem_cache_free'],
      ['wrong_cache', 'allocated from filp, freed to dentry'],
      ['double_free', 'freed again without an allocation in between'],
      ['unknown_free', 'free of a pointer not allocated in the window'],
      ['short_alloc', '64 bytes allocated for 100 requested'],
      ['missed_free', 'allocated again while live: its free was not seen'],
    ]);
    expect(r.errors!.examples[2]!.alloc_site).toBe('a+0x10');
    // --lines bounds the examples of each kind, not the counts.
    const twice = analyze([...events, free(P(3)), free(P(8))]);
    const limited = buildReport(twice, names, { errors: true, lines: 1 }).errors!;
    expect(limited.counts.double_free).toBe(2);
    expect(limited.examples.filter((x) => x.kind === 'double_free').length).toBe(1);
    expect(limited.examples.filter((x) => x.kind === 'unknown_free').length).toBe(1);
  });

  it('outstanding allocations ignore failed ones and pair frees by pointer whatever the context', () => {
    const events = [
      alloc(0, SITE_A, 4096, 0), // failed
      alloc(P(1), SITE_A, 64, 64, 0),
      free(P(1), 1, { interrupt: true }), // freed from an interrupt on the other CPU
      alloc(P(2), SITE_B, 64, 64, 1),
    ];
    const a = analyze(events);
    expect(a.summary.failedAllocs).toBe(1);
    expect(a.outstanding).toEqual({ count: 1, bytes: 64 });
    expect(a.leaks.map((l) => l.callSite)).toEqual([SITE_B]);
    expect(a.errors.counts.unknown_free).toBe(0);
  });

  it('page allocator: orders, migrate types, gfp flags, alloc-only, free-only and failures', () => {
    const page = (op: 'page_alloc' | 'page_free', pfn: number, order: number, mt = 0, gfp = 0xcc0): KmemEvent => ({
      op,
      allocator: 'page',
      tsNs: (ts += 10),
      cpu: 0,
      callSite: 0,
      ptr: pfn,
      bytesReq: 0,
      bytesAlloc: 0,
      gfpFlags: gfp,
      node: -1,
      order,
      ...(op === 'page_alloc' ? { migratetype: mt } : {}),
    });
    const r = buildReport(
      analyze([
        page('page_alloc', 100, 0),
        page('page_alloc', 200, 2, 1, 0x820),
        page('page_free', 100, 0),
        page('page_free', 300, 1),
        page('page_alloc', -1, 0),
      ]),
      names,
      { page: true },
    );
    expect(r.pages).toEqual({
      allocs: 3,
      frees: 2,
      failed: 1,
      pages_allocated: 5,
      pages_freed: 3,
      alloc_freed: 1,
      alloc_only: 2,
      free_only: 1,
      by_order: [
        { order: 0, count: 1 },
        { order: 2, count: 1 },
      ],
      by_order_migratetype: [
        { order: 0, migratetype: 0, count: 1 },
        { order: 2, migratetype: 1, count: 1 },
      ],
      by_migratetype: [
        { migratetype: 0, count: 1 },
        { migratetype: 1, count: 1 },
      ],
      by_gfp: [
        { gfp_flags: 'GFP_ATOMIC', value: 0x820, count: 1 },
        { gfp_flags: 'GFP_KERNEL', value: 0xcc0, count: 1 },
      ],
    });
  });

  it('time series: allocation rate and live bytes per interval; sparse over gaps', () => {
    const at = (t: number, e: KmemEvent): KmemEvent => ({ ...e, tsNs: t });
    const a = analyze(
      [
        at(0, alloc(P(1), SITE_A, 64, 64)),
        at(5, alloc(P(2), SITE_A, 32, 32)),
        at(12, free(P(1))),
        at(1e12, free(P(2))),
      ],
      { intervalNs: 10 },
    );
    expect(
      a.timeseries.map((p) => [p.startNs, p.allocs, p.frees, p.bytesAllocated, p.bytesFreed, p.liveBytes]),
    ).toEqual([
      [0, 2, 0, 96, 0, 96],
      [10, 0, 1, 0, 64, 32],
      [1e12, 0, 1, 0, 32, 0],
    ]);
  });

  it('text report: perf kmem tables, summary, printf rounding', () => {
    const text = formatReportText(buildReport(analyze([alloc(P(1), SITE_A, 100, 128)]), names));
    expect(text).toContain(
      ' a+0x10                             |       128/128   |       100/100   |        1 |         0 | 21.875%',
    );
    expect(text).toMatch(/Internal fragmentation: 21\.875000%/);
    expect(printfFixed(20.3125, 3)).toBe('20.312');
    expect(printfFixed(20.3135, 3)).toBe((20.3135).toFixed(3));
    expect(printfFixed(0.5, 0)).toBe('0');
  });

  it('text report: table cells laid out as padStart and padEnd lay them, names of any width or alphabet', () => {
    const rows = [
      ['ωmega_fn+0x1c', 1_000_000_007, 999, 3, 1, 12.5],
      ['a_call_site_name_longer_than_the_column+0x1234', 64, 64, 1, 0, 0],
      ['0xffffffff81234567', 0, 0, 1, 0, 0],
    ] as const;
    const report: KmemReport = {
      summary: buildReport(analyze([]), names).summary,
      callers: rows.map(([site, total_alloc, total_req, hit, ping_pong, frag_pct]) => ({
        site,
        total_alloc,
        total_req,
        hit,
        ping_pong,
        frag_pct,
      })),
    };
    const lines = formatReportText(report).split('\n');
    for (const [site, alloc, req, hit, ping, frag] of rows)
      expect(lines).toContain(
        ` ${site.padEnd(34)} | ${String(alloc).padStart(9)}/${String(Math.floor(alloc / hit)).padEnd(5)} | ${String(req).padStart(9)}/${String(Math.floor(req / hit)).padEnd(5)} | ${String(hit).padStart(8)} | ${String(ping).padStart(9)} | ${printfFixed(frag, 3).padStart(6)}%`,
      );
  });

  it('diff of two recordings matches call sites by name', () => {
    const a = buildReport(analyze([alloc(P(1), SITE_A, 10, 16), alloc(P(2), SITE_B, 10, 16)]), names);
    const b = buildReport(
      analyze([alloc(P(1), SITE_A, 10, 16), alloc(P(2), SITE_A, 10, 16), alloc(P(3), SITE_A, 100, 128)]),
      names,
    );
    const d = diffReports(a, b);
    expect(d.summary.allocs).toEqual({ a: 2, b: 3, delta: 1 });
    expect(d.summary.total_alloc).toEqual({ a: 32, b: 160, delta: 128 });
    expect(d.callers.map((c) => [c.site, c.hit_a, c.hit_b, c.total_alloc_delta])).toEqual([
      ['a+0x10', 1, 3, 144],
      ['b+0x20', 1, 0, -16],
    ]);
    expect(formatDiffText(d)).toMatch(/a\+0x10\s+\|\s+1 \|\s+3 \|\s+16 \|\s+160 \|\s+\+144/);
  });
});

describe('address keys', () => {
  it('round-trip canonical and other 64-bit addresses exactly, in hex without bigints', () => {
    const k = new AddressKeys();
    const addrs = [
      0n,
      16n,
      0x7fff_ffff_f000n,
      0xffff_8881_0000_0040n,
      0xffff_ffff_ffff_ffffn,
      0xdead_0000_0000_0001n,
      0x0010_0000_0000_0000n,
    ];
    for (const a of addrs) {
      const key = k.key(a);
      expect(k.address(key)).toBe(a);
      expect(k.hex(key)).toBe(`0x${a.toString(16)}`);
      expect(k.keyOfHex(`0x${a.toString(16)}`)).toBe(key);
    }
    expect(new Set(addrs.map((a) => k.key(a))).size).toBe(addrs.length);
    // Unsigned order within the canonical halves.
    expect(k.key(0xffff_8881_0000_0040n)).toBeLessThan(k.key(0xffff_ffff_ffff_ffffn));
    expect(k.key(0x7fff_ffff_f000n)).toBeLessThan(k.key(0xffff_8881_0000_0040n));
    expect(k.keyOfHex('0xzz')).toBeUndefined();
    expect(k.keyOfHex('0x12345678901234567')).toBeUndefined();
  });
});
