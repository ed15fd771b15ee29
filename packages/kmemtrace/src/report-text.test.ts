import { ByteOut } from '@evtrace/trace-format';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AddressKeys, hexAddress } from './address.ts';
import { analyze, fragmentation, type SlabStat } from './analyze.ts';
import type { KmemEvent } from './event.ts';
import {
  type AllocRow,
  buildReport,
  type CallerRow,
  formatReportText,
  type KmemReport,
  printfFixed,
  SORT_KEYS,
  sortSlabStats,
  writeReportText,
} from './report.ts';

/** A slab table as perf kmem lays it out, cell by cell with padStart and padEnd: what the byte writer must equal. */
function referenceTable(title: string, rows: readonly CallerRow[], name: (r: CallerRow) => string): string {
  const rule = '-'.repeat(105);
  const lines = [
    rule,
    ` ${title.padEnd(34)} | Total_alloc/Per | Total_req/Per   | Hit      | Ping-pong | Frag`,
    rule,
    ...rows.map(
      (r) =>
        ` ${name(r).padEnd(34)} | ${String(r.total_alloc).padStart(9)}/${String(Math.floor(r.total_alloc / r.hit)).padEnd(5)} | ${String(r.total_req).padStart(9)}/${String(Math.floor(r.total_req / r.hit)).padEnd(5)} | ${String(r.hit).padStart(8)} | ${String(r.ping_pong).padStart(9)} | ${printfFixed(r.frag_pct, 3).padStart(6)}%`,
    ),
    rule,
  ];
  return lines.join('\n');
}

/** The tables' part of the reference text (the summary after them is the same code either way). */
function referenceTables(report: KmemReport): string {
  let text = '';
  if (report.callers) text += `${referenceTable('Callsite', report.callers, (r) => r.site)}\n\n`;
  if (report.allocs) text += `${referenceTable('Alloc Ptr', report.allocs, (r) => (r as AllocRow).ptr)}\n\n`;
  return text;
}

const summary = buildReport(analyze([]), { siteName: String, ptrName: String }).summary;

/** Figures of every kind String() prints: small and wide integers, fractions, zero hits (NaN and Infinity per hit). */
const figure = fc.oneof(
  fc.nat(1000),
  fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  fc.double({ min: 0, max: 1e25, noNaN: true }),
  fc.constantFrom(0, 9, 10, 99_999, 100_000, 999_999_999, 2 ** 31 - 1, 2 ** 31, 2 ** 53, -1),
);
const name = fc.oneof(
  fc.string({ maxLength: 50 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.stringMatching(/^[a-z_]{1,40}\+0x[0-9a-f]{1,4}$/),
);
const callerRow = fc.record({
  site: name,
  total_alloc: figure,
  total_req: figure,
  hit: figure,
  ping_pong: figure,
  frag_pct: fc.oneof(fc.double({ min: -100, max: 100, noNaN: true }), fc.constantFrom(0, 12.5, 20.3125, 21.875)),
});
const allocRow = fc.record({ ptr: name, row: callerRow }).map(({ ptr, row }): AllocRow => ({ ptr, ...row }));

/** Canonical kernel and user addresses (short and with leading zero digits), and others, interned. */
const address = fc.oneof(
  fc.bigInt({ min: 0n, max: (1n << 52n) - 1n }),
  fc.bigInt({ min: 0xfff0_0000_0000_0000n, max: (1n << 64n) - 1n }),
  fc.bigInt({ min: 0n, max: 0xffffn }).map((low) => 0xfff0_0000_0000_0000n | low),
  fc.bigInt({ min: 1n << 52n, max: 0xffef_ffff_ffff_ffffn }),
);

const keys = new AddressKeys();

describe('the text of the report: bytes written from figures', () => {
  it('slab tables of any rows read as padStart, padEnd and String() lay them out', () => {
    fc.assert(
      fc.property(
        fc.array(callerRow, { maxLength: 30 }),
        fc.option(fc.array(allocRow, { maxLength: 30 }), { nil: undefined }),
        (callers, allocs) => {
          const report: KmemReport = { summary, callers, ...(allocs !== undefined ? { allocs } : {}) };
          const text = formatReportText(report);
          const tables = referenceTables(report);
          expect(text.slice(0, tables.length)).toBe(tables);
          expect(text.slice(tables.length)).toMatch(/^SUMMARY \(SLAB allocator\)\n/);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('pointers written from their keys read as their names', () => {
    fc.assert(
      fc.property(address, (addr) => {
        const key = keys.key(addr);
        const out = new ByteOut(1);
        out.text('>');
        keys.writeHex(key, out);
        expect(out.toString()).toBe(`>${hexAddress(addr)}`);
        expect(keys.hex(key)).toBe(hexAddress(addr));
      }),
      { numRuns: 500 },
    );
  });

  it('a report built from an analysis prints what its rows read back say, in pieces that join to it', () => {
    const site = (n: number) => keys.key(0xffffffff81000000n + BigInt(n) * 0x40n);
    const names = {
      siteName: (k: number) => `site_${(k % 1000).toString(36)}+0x${(k % 64).toString(16)}`,
      ptrName: (k: number) => keys.hex(k),
      ptrBytes: (k: number, out: ByteOut) => keys.writeHex(k, out),
    };
    const event = fc.record({
      free: fc.boolean(),
      ptr: address,
      site: fc.nat(20),
      req: fc.nat(5000),
      extra: fc.nat(300),
      cpu: fc.nat(3),
    });
    fc.assert(
      fc.property(
        fc.array(event, { maxLength: 200 }),
        fc.subarray([...SORT_KEYS], { minLength: 1 }),
        fc.option(fc.nat(50), { nil: undefined }),
        (steps, sort, lines) => {
          const events = steps.map(
            (s, i): KmemEvent => ({
              op: s.free ? 'free' : 'alloc',
              allocator: 'kmalloc',
              tsNs: i * 1000,
              cpu: s.cpu,
              callSite: site(s.site),
              ptr: keys.key(s.ptr),
              bytesReq: s.free ? 0 : s.req,
              bytesAlloc: s.free ? 0 : s.req + s.extra,
              gfpFlags: 0,
              node: -1,
            }),
          );
          const analysis = analyze(events);
          const options = { caller: true, alloc: true, sort, ...(lines !== undefined ? { lines } : {}) };
          const pieces: Buffer[] = [];
          writeReportText(buildReport(analysis, names, options), (b) => pieces.push(Buffer.from(b)));
          const text = formatReportText(buildReport(analysis, names, options));
          expect(Buffer.concat(pieces).toString('utf8')).toBe(text);
          // Rows read make the text come from them: the same text.
          const read = buildReport(analysis, names, options);
          expect(read.allocs!.length).toBe(Math.min(lines ?? Infinity, analysis.allocColumns.length));
          expect(text.startsWith(referenceTables(read))).toBe(true);
          expect(formatReportText(read)).toBe(text);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a table of thousands of rows comes in pieces that end at line ends and join to the text', () => {
    const rows = Array.from(
      { length: 5000 },
      (_, i): CallerRow => ({
        site: i % 7 === 0 ? `ωmega_${i}` : `fn_${i}+0x${i.toString(16)}`,
        total_alloc: i * 64,
        total_req: i * 60,
        hit: i + 1,
        ping_pong: i % 3,
        frag_pct: 6.25,
      }),
    );
    const report: KmemReport = { summary, callers: rows };
    const pieces: Buffer[] = [];
    writeReportText(report, (b) => pieces.push(Buffer.from(b)));
    expect(pieces.length).toBeGreaterThan(2);
    for (const p of pieces) expect(p.at(-1)).toBe(10);
    expect(Buffer.concat(pieces).toString('utf8')).toBe(formatReportText(report));
    expect(formatReportText(report).startsWith(referenceTables(report))).toBe(true);
  });

  it('tables sort as a comparator of the keys does (each descending, ties by ascending key), stably', () => {
    const stat = fc.record({
      key: fc.integer({ min: -5, max: 2 ** 53 }),
      callSite: fc.nat(5),
      hit: fc.nat(4),
      totalAlloc: fc.nat(6),
      totalReq: fc.nat(6),
      pingPong: fc.nat(3),
    });
    fc.assert(
      fc.property(
        fc.array(stat, { maxLength: 300 }),
        fc.shuffledSubarray([...SORT_KEYS]),
        fc.constantFrom('callers' as const, 'allocs' as const),
        fc.boolean(),
        (stats, sort, table, named) => {
          // Call sites ordered by text for some sources: a name that does not sort as the number.
          const siteOrder = named ? (k: number) => `s${(k * 7919) % 13}` : (k: number) => k;
          const value = (s: SlabStat, key: (typeof SORT_KEYS)[number]) =>
            key === 'frag'
              ? fragmentation(s.totalReq, s.totalAlloc)
              : key === 'hit'
                ? s.hit
                : key === 'bytes'
                  ? s.totalAlloc
                  : key === 'pingpong'
                    ? s.pingPong
                    : key === 'callsite'
                      ? siteOrder(s.callSite)
                      : table === 'allocs'
                        ? s.key
                        : 0;
          const cmp = (a: number | string, b: number | string) => (a < b ? -1 : a > b ? 1 : 0);
          const expected = [...stats].sort((a, b) => {
            for (const k of sort) {
              const d = cmp(value(b, k), value(a, k));
              if (d !== 0) return d;
            }
            return table === 'callers' ? cmp(siteOrder(a.key), siteOrder(b.key)) : cmp(a.key, b.key);
          });
          const sorted = sortSlabStats(stats, sort, table, siteOrder);
          expect(sorted.length).toBe(stats.length);
          for (let i = 0; i < sorted.length; i++) expect(sorted[i]).toBe(expected[i]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('rows are made when read, and the text then follows them: read and changed, or replaced', () => {
    const site = keys.key(0xffffffff81000040n);
    const events = [1n, 2n, 3n].map(
      (n, i): KmemEvent => ({
        op: 'alloc',
        allocator: 'kmalloc',
        tsNs: i,
        cpu: 0,
        callSite: site,
        ptr: keys.key(0xffff888100000000n + n * 64n),
        bytesReq: 10 * Number(n),
        bytesAlloc: 16 * Number(n),
        gfpFlags: 0,
        node: -1,
      }),
    );
    const names = { siteName: () => 'fn+0x40', ptrName: (k: number) => keys.hex(k) };
    const analysis = analyze(events);
    const untouched = formatReportText(buildReport(analysis, names, { caller: true, alloc: true }));
    expect(untouched).toContain(' 0xffff8881000000c0                 |        48/48    |        30/30    |');
    expect(analysis.allocs.map((s) => s.totalAlloc)).toEqual([16, 32, 48]);

    const changed = buildReport(analysis, names, { caller: true, alloc: true });
    changed.allocs![0]!.ptr = 'changed';
    const text = formatReportText(changed);
    expect(text).toContain(' changed                            |        48/48    |');
    expect(text).not.toContain('0xffff8881000000c0');
    expect(JSON.parse(JSON.stringify(changed)).allocs[0].ptr).toBe('changed');

    const replaced = buildReport(analysis, names, { caller: true, alloc: true });
    replaced.callers = [];
    expect(formatReportText(replaced)).toBe(untouched.replace(/\n fn\+0x40 [^\n]*/, ''));
    expect(Object.keys(replaced)).toEqual(['summary', 'callers', 'allocs']);
  });
});
