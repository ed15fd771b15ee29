import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openTrace } from '@evtrace/trace-format';
import { finalizeRecording, record } from '@evtrace/tracefs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyze, fragmentation } from './analyze.ts';
import { openKmemInput } from './inputs.ts';
import { parsePerfScript } from './perf-script.ts';
import { buildReport, type CallerRow, formatReportText, printfFixed } from './report.ts';
import { perfKmemUnavailable, WORKLOAD } from './testing/env.ts';
import {
  type PerfRow,
  parsePerfKmemPageStat,
  parsePerfKmemStat,
  perfKmemPageRecord,
  perfKmemPageStat,
  perfKmemStat,
  perfScript,
} from './testing/perf-kmem.ts';

const why = perfKmemUnavailable();

/** Runs `perf kmem record` on the workload while evtrace records kmem:* into a trace.dat, both of the same kernel. */
async function recordBoth(
  dir: string,
): Promise<{ perfData: string; traceDat: string; raw: string; ctf: string; lost: number }> {
  const perfData = join(dir, 'perf.data');
  const traceDat = join(dir, 'kmem.dat');
  const controller = new AbortController();
  let failure: Error | undefined;
  const result = await record({
    events: ['kmem:*'],
    dir: join(dir, 'raw'),
    bufferKb: 8192,
    signal: controller.signal,
    durationMs: 60_000,
    onStart: () => {
      const child = spawn('perf', ['kmem', 'record', '-m', '16384', '-o', perfData, '--', ...WORKLOAD], {
        stdio: 'ignore',
      });
      child.on('error', (e) => {
        failure = e;
        controller.abort();
      });
      child.on('exit', (code) => {
        if (code !== 0) failure = new Error(`perf kmem record exited with ${code}`);
        controller.abort();
      });
    },
  });
  if (failure) throw failure;
  const ctf = join(dir, 'ctf');
  finalizeRecording(result.dir, traceDat, 'tracedat', { removeRaw: false });
  finalizeRecording(result.dir, ctf, 'ctf', { removeRaw: false });
  const lost = result.lost.reduce((n, l) => n + l.overrun + l.dropped + l.commitOverrun, 0);
  return { perfData, traceDat, raw: result.dir, ctf, lost };
}

/** The sort keys of a row (perf's default frag,hit,bytes), to compare orders up to ties. */
const sortKey = (r: { frag: number; hit: number; totalAlloc: number }) =>
  `${printfFixed(r.frag, 3)}|${r.hit}|${r.totalAlloc}`;

function expectSameRows(perf: readonly PerfRow[], ours: readonly CallerRow[], key: (r: CallerRow) => string) {
  const byKey = new Map(ours.map((r) => [key(r), r]));
  expect(ours.length).toBe(perf.length);
  const mismatches: string[] = [];
  for (const p of perf) {
    const o = byKey.get(p.key);
    const figures = o && [o.total_alloc, o.total_req, o.hit, o.ping_pong];
    // perf prints %6.3f; the per-hit columns are integer divisions.
    if (
      o === undefined ||
      figures!.join() !== [p.totalAlloc, p.totalReq, p.hit, p.pingPong].join() ||
      Math.abs(o.frag_pct - p.frag) > 0.0005 + 1e-9 ||
      Math.floor(o.total_alloc / o.hit) !== p.allocPerHit ||
      Math.floor(o.total_req / o.hit) !== p.reqPerHit
    )
      mismatches.push(`${p.key}: perf ${JSON.stringify(p)}, evtrace ${JSON.stringify(o)}`);
  }
  expect(mismatches.slice(0, 5)).toEqual([]);
  // Same order, up to rows equal in every sort key (perf breaks those ties by address).
  expect(ours.map((r) => sortKey({ frag: r.frag_pct, hit: r.hit, totalAlloc: r.total_alloc }))).toEqual(
    perf.map((p) => sortKey({ frag: p.frag, hit: p.hit, totalAlloc: p.totalAlloc })),
  );
}

describe.skipIf(why !== '')(`parity with perf kmem${why ? ` (skipped: ${why})` : ''}`, () => {
  let dir: string;
  let rec: Awaited<ReturnType<typeof recordBoth>>;
  let script: string;
  let stat: ReturnType<typeof parsePerfKmemStat>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kmem-parity-'));
    rec = await recordBoth(dir);
    [script, stat] = await Promise.all([perfScript(rec.perfData), perfKmemStat(rec.perfData).then(parsePerfKmemStat)]);
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('perf script of a perf kmem record file: the caller table equals perf kmem --caller', () => {
    const source = parsePerfScript(script);
    expect(source.events.length).toBeGreaterThan(1000);
    const report = buildReport(analyze(source.events), source, { caller: true });
    expect(stat.callers.length).toBeGreaterThan(10);
    expectSameRows(stat.callers, report.callers!, (r) => r.site);
  });

  it('the perf.data read directly (no perf script): caller and alloc tables equal perf kmem --caller --alloc', () => {
    const source = openKmemInput(rec.perfData);
    const report = buildReport(analyze(source.events), source, { caller: true, alloc: true });
    expectSameRows(stat.callers, report.callers!, (r) => r.site);
    expectSameRows(stat.allocs, report.allocs!, (r) => (r as CallerRow & { ptr: string }).ptr);
  });

  it('the alloc table equals perf kmem --alloc, pointer by pointer', () => {
    const source = parsePerfScript(script);
    const report = buildReport(analyze(source.events), source, { alloc: true });
    expect(stat.allocs.length).toBeGreaterThan(100);
    expectSameRows(stat.allocs, report.allocs!, (r) => (r as CallerRow & { ptr: string }).ptr);
  });

  it('the summary equals perf kmem SUMMARY, and the text output prints the same tables', () => {
    const file = join(dir, 'script.txt');
    writeFileSync(file, script);
    const source = openKmemInput(file);
    const report = buildReport(analyze(source.events), source, { caller: true, alloc: true });
    const s = report.summary;
    expect(s.total_req).toBe(stat.summary['Total bytes requested']);
    expect(s.total_alloc).toBe(stat.summary['Total bytes allocated']);
    expect(s.total_freed).toBe(stat.summary['Total bytes freed']);
    expect(s.net_alloc).toBe(stat.summary['Net total bytes allocated']);
    expect(s.wasted).toBe(stat.summary['Total bytes wasted on internal fragmentation']);
    expect(s.allocs).toBe(stat.summary['Total allocations']);
    expect(Math.abs(s.frag_pct - stat.summary['Internal fragmentation']!)).toBeLessThan(5e-7);
    // Our text, read back with the same parser, gives perf's rows (ties aside, in perf's order).
    const back = parsePerfKmemStat(formatReportText(report));
    const norm = (rows: PerfRow[]) => rows.map((r) => JSON.stringify(r)).sort();
    expect(norm(back.callers)).toEqual(norm(stat.callers));
    expect(norm(back.allocs)).toEqual(norm(stat.allocs));
  });

  it('evtrace record of the same workload: a trace.dat whose analysis is self-consistent and covers perf’s window', () => {
    const reader = openTrace(rec.traceDat);
    const source = openKmemInput(rec.traceDat);
    const a = analyze(source.events);
    const report = buildReport(a, source);
    const s = report.summary;
    expect(s.allocs).toBeGreaterThan(1000);
    // The summary is the sum of the caller table, and of the alloc table.
    for (const table of [report.callers!, report.allocs!]) {
      expect(table.reduce((n, r) => n + r.total_alloc, 0)).toBe(s.total_alloc);
      expect(table.reduce((n, r) => n + r.total_req, 0)).toBe(s.total_req);
      expect(table.reduce((n, r) => n + r.hit, 0)).toBe(s.allocs);
      expect(table.reduce((n, r) => n + r.ping_pong, 0)).toBe(s.cross_cpu_frees);
    }
    expect(s.frag_pct).toBeCloseTo(fragmentation(s.total_req, s.total_alloc), 12);
    expect(s.net_alloc).toBe(s.total_alloc - s.total_freed);
    // Outstanding bytes: what was allocated in the window and not freed in it.
    const live = report.timeseries!.points.at(-1)!.live_bytes;
    expect(report.leaks!.bytes).toBe(live);
    expect(report.leaks!.sites.reduce((n, l) => n + l.bytes, 0)).toBe(live);
    // Call sites symbolized from the recording's own kallsyms, as the kernel's %pS prints them.
    const named = report.callers!.filter((r) => /^[\w.$]+(\+0x[0-9a-f]+)?( \[\w+\])?$/.test(r.site));
    expect(named.length).toBeGreaterThan(report.callers!.length * 0.95);
    // The kernel's own gfp flag table came with the format files.
    expect(report.pages!.allocs).toBeGreaterThan(0);
    expect(report.pages!.by_gfp.some((g) => /GFP_/.test(g.gfp_flags))).toBe(true);
    expect(reader.eventClasses.some((c) => c.name === 'kmem:kmalloc')).toBe(true);
    // evtrace's window contains perf's (it starts before perf and stops after): every call site perf saw is there at
    // least as often, but for the events evtrace's ring buffers lost, each of which leaves one site one hit short.
    const ours = new Map(report.callers!.map((r) => [r.site, r.hit]));
    const missing = stat.callers
      .map((p) => ({ site: p.key, perf: p.hit, evtrace: ours.get(p.key) ?? 0 }))
      .filter((p) => p.evtrace < p.perf);
    expect(
      missing.reduce((n, p) => n + p.perf - p.evtrace, 0),
      JSON.stringify(missing.slice(0, 10)),
    ).toBeLessThanOrEqual(rec.lost);
    expect(s.allocs + rec.lost).toBeGreaterThanOrEqual(stat.summary['Total allocations']!);
  });

  it('the same recording as raw pages, trace.dat and CTF gives the same report', () => {
    const kallsyms = openTrace(rec.traceDat).metadata!.kallsyms()!;
    const reports = [rec.raw, rec.traceDat, rec.ctf].map((input) => {
      const source = openKmemInput(input, { kallsyms });
      return buildReport(analyze(source.events), source, { caller: true, alloc: true, leaks: true, page: true });
    });
    expect(reports[0]!.summary.allocs).toBeGreaterThan(1000);
    // As text: deep equality of reports with tens of thousands of rows costs most of a minute on a loaded machine.
    expect(JSON.stringify(reports[1])).toBe(JSON.stringify(reports[0]));
    const [raw, , ctf] = reports;
    // CTF keeps the events, fields and order; its clock may start elsewhere.
    const strip = (r: (typeof reports)[number]) => ({
      ...r,
      summary: { ...r.summary, first_ns: 0, last_ns: 0 },
      leaks: { ...r.leaks!, sites: r.leaks!.sites.map((l) => l.site) },
    });
    expect(JSON.stringify(strip(ctf!))).toBe(JSON.stringify(strip(raw!)));
  }, 120_000);
});

describe.skipIf(why !== '')(`page allocator parity with perf kmem --page${why ? ` (skipped: ${why})` : ''}`, () => {
  let dir: string;
  let script: string;
  let stat: ReturnType<typeof parsePerfKmemPageStat>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kmem-page-'));
    const data = join(dir, 'perf.data');
    await perfKmemPageRecord(data, WORKLOAD);
    [script, stat] = await Promise.all([perfScript(data), perfKmemPageStat(data).then(parsePerfKmemPageStat)]);
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('the page allocator summary and the order by migrate type table equal perf kmem --page stat', () => {
    const source = parsePerfScript(script);
    const p = buildReport(analyze(source.events), source, { page: true }).pages!;
    const s = stat.summary;
    expect(s['Total allocation requests']!.count).toBeGreaterThan(100);
    expect({
      allocs: p.allocs,
      frees: p.frees,
      allocFreed: p.alloc_freed,
      allocOnly: p.alloc_only,
      freeOnly: p.free_only,
      failed: p.failed,
    }).toEqual({
      allocs: s['Total allocation requests']!.count,
      frees: s['Total free requests']!.count,
      allocFreed: s['Total alloc+freed requests']!.count,
      allocOnly: s['Total alloc-only requests']!.count,
      freeOnly: s['Total free-only requests']!.count,
      failed: s['Total allocation failures']!.count,
    });
    // 4 KiB pages: 2^order of them per request.
    expect(p.pages_freed * 4).toBe(s['Total free requests']!.kb);
    if (p.failed === 0) expect(p.pages_allocated * 4).toBe(s['Total allocation requests']!.kb);
    // perf's columns are the kernel's migrate type numbers in order (its headers are those of old kernels).
    const ours = new Map<number, number[]>();
    for (const c of p.by_order_migratetype) {
      const row = ours.get(c.order) ?? [0, 0, 0, 0, 0];
      row[c.migratetype] = c.count;
      ours.set(c.order, row);
    }
    for (const [order, row] of stat.table) expect(ours.get(order) ?? [0, 0, 0, 0, 0], `order ${order}`).toEqual(row);
  });

  it('the perf.data read directly (a callchain in every sample): the page report of its perf script text', () => {
    const text = parsePerfScript(script);
    const data = openKmemInput(join(dir, 'perf.data'));
    const fromData = buildReport(analyze(data.events), data, { page: true }).pages!;
    expect(fromData.allocs).toBeGreaterThan(100);
    expect(fromData).toEqual(buildReport(analyze(text.events), text, { page: true }).pages);
  });
});
