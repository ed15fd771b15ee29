import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { analyze } from './analyze.ts';
import { KmemError } from './errors.ts';
import { gfpValue } from './gfp.ts';
import { openKmemInput } from './inputs.ts';
import { parsePerfScript } from './perf-script.ts';
import { buildReport } from './report.ts';

// Lines in perf script's default layout, as perf 6.1 prints a perf kmem record file of Linux 6.18.
const LINES = [
  '            perf 18781 [000]  8692.510260:          kmem:kmalloc: call_site=sched_setaffinity+0x127 ptr=0xffff888103599200 bytes_req=32 bytes_alloc=32 gfp_flags=GFP_KERNEL node=-1 accounted=false',
  '            perf 18781 [001]  8692.510316:            kmem:kfree: call_site=sched_setaffinity+0x17b ptr=0xffff888103599200',
  '            perf 18781 [001]  8692.510321: kmem:kmem_cache_alloc: call_site=getname_flags.part.0+0x24 ptr=0xffff888100869000 name=names_cache bytes_req=4096 bytes_alloc=4096 gfp_flags=GFP_KERNEL|__GFP_ZERO node=-1 accounted=false',
  '     kworker/u8:2 977/977 [001]  8692.510342:  kmem:kmem_cache_free: call_site=do_sys_openat2+0xa2 ptr=0xffff888100869000 name=names_cache',
  '  Web Content 4242 [000]  8692.600001:        kmem:mm_page_alloc: page=0xffffea0004e2e400 pfn=0x138b90 order=2 migratetype=1 gfp_flags=GFP_KERNEL',
  '  Web Content 4242 [000]  8692.600002:         kmem:mm_page_free: page=0xffffea0004e2e400 pfn=0x138b90 order=2',
  '            perf 18781 [000]  8692.700000:        sched:sched_switch: prev_comm=perf prev_pid=18781',
];

function thrown(fn: () => unknown): KmemError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(KmemError);
    return error as KmemError;
  }
  throw new Error('expected a KmemError');
}

describe('perf script text', () => {
  it('reads every kmem event of the default layout, comm with spaces and pid/tid included', () => {
    const s = parsePerfScript(LINES.join('\n'));
    expect(s.ignored).toBe(1);
    expect(s.events.map((e) => [e.op, e.allocator, e.cpu, e.tsNs])).toEqual([
      ['alloc', 'kmalloc', 0, 8692510260000],
      ['free', 'kmalloc', 1, 8692510316000],
      ['alloc', 'cache', 1, 8692510321000],
      ['free', 'cache', 1, 8692510342000],
      ['page_alloc', 'page', 0, 8692600001000],
      ['page_free', 'page', 0, 8692600002000],
    ]);
    const [kmalloc, kfree, cache, , page] = s.events;
    expect(s.siteName(kmalloc!.callSite)).toBe('sched_setaffinity+0x127');
    expect(s.ptrName(kmalloc!.ptr)).toBe('0xffff888103599200');
    expect(kfree!.ptr).toBe(kmalloc!.ptr);
    expect([kmalloc!.bytesReq, kmalloc!.bytesAlloc, kmalloc!.gfpFlags, kmalloc!.node]).toEqual([32, 32, 0xcc0, -1]);
    expect(cache!.gfpFlags).toBe(0xcc0 | 0x100);
    expect(cache!.cache).toBe('names_cache');
    expect([page!.ptr, page!.order, page!.migratetype]).toEqual([0x138b90, 2, 1]);
  });

  it('skips the callchains perf prints under events recorded with -g', () => {
    const chain = [
      '\tffffffff81638ebb __alloc_frozen_pages_noprof+0x26b ([kernel.kallsyms])',
      '\t           f838f __GI___libc_write+0x4f (/usr/lib/x86_64-linux-gnu/libc.so.6)',
      '',
    ];
    const s = parsePerfScript([LINES[4], ...chain, LINES[5], ...chain].join('\n'));
    expect(s.events.map((e) => e.op)).toEqual(['page_alloc', 'page_free']);
  });

  it('a malformed line is an error with its line and column', () => {
    const noCpu = LINES[0]!.replace('[000]', '000');
    const noTime = LINES[0]!.replace('8692.510260:', '8692:');
    const badPtr = LINES[0]!.replace('ptr=0xffff888103599200', 'ptr=0xfffz888103599200');
    const badInt = LINES[0]!.replace('bytes_req=32', 'bytes_req=3x2');
    const noKey = LINES[1]!.replace('ptr=', 'ptr ');
    const cases: [string, number, RegExp][] = [
      [noCpu, noCpu.length + 1, /expected \[CPU\]/],
      [noTime, noTime.indexOf('8692:') + 1, /expected a timestamp/],
      [badPtr, badPtr.indexOf('0xfffz') + 1, /ptr: '0xfffz888103599200' is not a hexadecimal address/],
      [badInt, badInt.indexOf('3x2') + 1, /bytes_req: '3x2' is not a decimal integer/],
      [LINES[0]!.replace(' bytes_alloc=32', ''), LINES[0]!.length - 14, /lacks the field bytes_alloc/],
      [noKey, noKey.indexOf('ptr ') + 1, /expected key=value, found 'ptr'/],
    ];
    for (const [line, column, message] of cases) {
      const e = thrown(() => parsePerfScript(`${LINES[1]}\n\n${line}\n`, { file: 'k.txt' }));
      expect(e.code).toBe('ERR_KMEM_PERF_SCRIPT');
      expect(e.message).toMatch(message);
      expect(e.location.file).toBe('k.txt');
      expect(e.location.line).toBe(3);
      expect(e.location.column, line).toBe(column);
    }
    // The column points at the offending token.
    const bad = LINES[0]!.replace('bytes_req=32', 'bytes_req=3x2');
    const e = thrown(() => parsePerfScript(bad));
    expect(bad.slice(e.location.column! - 1)).toMatch(/^3x2 /);
  });

  it('lenient mode keeps every valid line and reports the others as diagnostics', () => {
    const text = [LINES[0], 'garbage', LINES[1], LINES[2]!.replace('bytes_req=4096', 'bytes_req=')].join('\n');
    const s = parsePerfScript(text, { lenient: true, file: 'x' });
    expect(s.events.map((e) => e.op)).toEqual(['alloc', 'free']);
    expect(s.diagnostics).toEqual([
      expect.stringMatching(/^x:2:\d+: expected \[CPU\]/),
      expect.stringMatching(/^x:4:\d+: bytes_req: '' is not a decimal integer/),
    ]);
  });

  it('fuzz: mutated real lines give events or a KmemError with a position inside the line', () => {
    const text = LINES.join('\n');
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(text.length - 1), fc.constantFrom(...' =[]:.x0-\n\t|+(')), { maxLength: 8 }),
        fc.boolean(),
        (edits, lenient) => {
          const chars = [...text];
          for (const [at, c] of edits) chars[at] = c;
          const mutated = chars.join('');
          try {
            const s = parsePerfScript(mutated, { lenient });
            expect(s.events.length).toBeLessThanOrEqual(mutated.split('\n').length);
          } catch (error) {
            expect(error).toBeInstanceOf(KmemError);
            const { line, column } = (error as KmemError).location;
            const lines = mutated.split('\n');
            expect(line).toBeGreaterThanOrEqual(1);
            expect(column).toBeLessThanOrEqual(lines[line! - 1]!.length + 1);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('headers read by hand and by the header expression agree: COMM with blanks, digits and brackets, odd blanks', () => {
    // The expression perf-script.ts falls back to, written out here as the reference.
    const header = /^\s*(.*?)\s+(-?\d+)(?:\/(-?\d+))?\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+(\w+):(\w+):[ \t]*/;
    const blank = fc.constantFrom(' ', '  ', '\t', ' \u00a0');
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('a', ' ', '1', '[', ']', '-', '/', '\t', ':'), { maxLength: 10 }),
        fc.oneof(blank, fc.constant('')),
        fc.oneof(fc.constant('42'), fc.constant('-1'), fc.constant('977/978'), fc.constant('x')),
        blank,
        fc.nat(3),
        blank,
        fc.stringMatching(/^\d{1,5}\.\d{1,12}$/),
        fc.constantFrom('kmem:kfree', 'kmem:kmalloc', 'sched:sched_switch', 'kmem:mm_page_free'),
        (comm, b1, pid, b2, cpu, b3, ts, event) => {
          const head = `${comm.join('')}${b1}${pid}${b2}[${String(cpu).padStart(3, '0')}]${b3}${ts}: ${event}: `;
          const line = `${head}call_site=f+0x1 ptr=0xffff888100869000 page=0x1 pfn=0x1 order=0 bytes_req=8 bytes_alloc=8`;
          const m = header.exec(line);
          let events: ReturnType<typeof parsePerfScript>['events'] | undefined;
          try {
            events = parsePerfScript(line).events;
          } catch (error) {
            expect(error).toBeInstanceOf(KmemError);
          }
          if (m === null) {
            expect(events).toBeUndefined();
            return;
          }
          const frac = m[6]!.slice(0, 9).padEnd(9, '0');
          expect(events).toEqual(
            m[7] !== 'kmem'
              ? []
              : [expect.objectContaining({ cpu: Number(m[4]), tsNs: Number(m[5]) * 1e9 + Number(frac) })],
          );
        },
      ),
      { numRuns: 1000 },
    );
  });
});

/** A kmem event as perf script prints it, and what reading its line must give (the expectations above, generalized). */
interface Model {
  readonly line: string;
  readonly expected: {
    readonly op: string;
    readonly allocator: string;
    readonly cpu: number;
    readonly tsNs: number;
    readonly site: string;
    readonly ptr: string;
    readonly bytesReq: number;
    readonly bytesAlloc: number;
    readonly gfpFlags: number;
    readonly node: number;
    readonly cache: string | undefined;
  };
  /** Where each field's value starts in the line (0-based, in characters). */
  readonly values: Readonly<Record<string, number>>;
}

const SLAB_EVENTS = {
  kmalloc: ['alloc', 'kmalloc'],
  kmalloc_node: ['alloc', 'kmalloc'],
  kfree: ['free', 'kmalloc'],
  kmem_cache_alloc: ['alloc', 'cache'],
  kmem_cache_alloc_node: ['alloc', 'cache'],
  kmem_cache_free: ['free', 'cache'],
} as const;

const hexDigits = (min: number, max: number) =>
  fc.array(fc.constantFrom(...'0123456789abcdef'), { minLength: min, maxLength: max }).map((d) => d.join(''));

const model: fc.Arbitrary<Model> = fc
  .record({
    event: fc.constantFrom(...(Object.keys(SLAB_EVENTS) as (keyof typeof SLAB_EVENTS)[])),
    comm: fc.oneof(
      fc.stringMatching(/^[a-zA-Z0-9:/_.-][a-zA-Z0-9:/_. -]{0,14}$/),
      fc.constantFrom('Web Content', 'ωmega 2', 'kworker/u8:2'),
    ),
    pid: fc.nat(4_194_304),
    tid: fc.option(fc.nat(4_194_304), { nil: undefined }),
    cpu: fc.nat(511),
    secs: fc.nat(9_999_999),
    frac: fc.stringMatching(/^\d{1,12}$/),
    site: fc.oneof(
      fc.tuple(fc.stringMatching(/^[a-z_][a-z0-9_.]{0,40}$/), hexDigits(1, 4)).map(([f, o]) => `${f}+0x${o}`),
      hexDigits(16, 16).map((h) => `0x${h}`),
    ),
    ptr: fc.oneof(
      fc.bigInt({ min: 0xffff_8880_0000_0000n, max: 0xffff_ffff_ffff_ffffn }),
      fc.bigInt({ min: 0n, max: 0xffff_ffff_ffff_ffffn }),
      fc.constant(0n),
    ),
    req: fc.nat(1 << 22),
    alloc: fc.nat(1 << 22),
    gfp: fc.constantFrom(
      'GFP_KERNEL',
      'GFP_KERNEL|__GFP_ZERO',
      'GFP_ATOMIC|__GFP_NOWARN',
      'GFP_NOWAIT',
      '3264',
      'none',
    ),
    node: fc.integer({ min: -1, max: 7 }),
    cache: fc.stringMatching(/^[a-z][a-z0-9_:-]{0,24}$/),
    accounted: fc.constantFrom(undefined, 'true', 'false'),
  })
  .map((m) => {
    const [op, allocator] = SLAB_EVENTS[m.event];
    const alloc = op === 'alloc';
    const ptr = m.ptr === 0n ? '(nil)' : `0x${m.ptr.toString(16)}`;
    const fields: [string, string][] = [
      ['call_site', m.site],
      ['ptr', ptr],
    ];
    if (allocator === 'cache') fields.push(['name', m.cache]);
    if (alloc) {
      fields.push(['bytes_req', String(m.req)], ['bytes_alloc', String(m.alloc)], ['gfp_flags', m.gfp]);
      fields.push(['node', String(m.node)]);
      if (m.accounted !== undefined) fields.push(['accounted', m.accounted]);
    }
    const pid = m.tid === undefined ? `${m.pid}` : `${m.pid}/${m.tid}`;
    const head = `${m.comm.padStart(16)} ${pid.padStart(5)} [${String(m.cpu).padStart(3, '0')}] ${m.secs}.${m.frac}: ${`kmem:${m.event}`.padStart(22)}: `;
    const values: Record<string, number> = {};
    let line = head;
    for (const [key, value] of fields) {
      values[key] = line.length + key.length + 1;
      line += `${key}=${value} `;
    }
    line = line.slice(0, -1);
    return {
      line,
      values,
      expected: {
        op,
        allocator,
        cpu: m.cpu,
        tsNs: m.secs * 1e9 + Number(m.frac.slice(0, 9).padEnd(9, '0')),
        site: m.site,
        ptr: `0x${m.ptr.toString(16)}`,
        bytesReq: alloc ? m.req : 0,
        bytesAlloc: alloc ? m.alloc : 0,
        gfpFlags: alloc ? (/^\d+$/.test(m.gfp) ? Number(m.gfp) : (gfpValue(m.gfp) ?? 0)) : 0,
        node: alloc ? m.node : -1,
        cache: allocator === 'cache' ? m.cache : undefined,
      },
    };
  });

/** Lines between the events that give none: blank, comments, other events, callchains. */
const noise = fc.constantFrom(
  '',
  '   ',
  '# perf script',
  LINES[6]!,
  '\tffffffff81638ebb __alloc_frozen_pages_noprof+0x26b ([kernel.kallsyms])',
  '            perf 18781 [000]  8692.700001:  kmem:rss_stat: mm_id=1 curr=1 type=MM_ANONPAGES size=4096B',
);

/** The text's UTF-8 bytes cut at the given places, as a file read a piece at a time is. */
function cut(text: string, at: readonly number[]): Uint8Array[] {
  const bytes = Buffer.from(text, 'utf8');
  const cuts = [...new Set(at.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Uint8Array[] = [];
  let from = 0;
  for (const c of [...cuts, bytes.length]) {
    pieces.push(new Uint8Array(bytes.subarray(from, c)));
    from = c;
  }
  return pieces;
}

const dir = mkdtempSync(join(tmpdir(), 'kmem-perf-script-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('perf script text read from bytes', () => {
  it('property: generated lines give the events they print, whole or cut into chunks anywhere', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(model, fc.option(noise, { nil: undefined })), { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(4000), { maxLength: 6 }),
        (items, cuts) => {
          const lines = items.flatMap(([m, n]) => (n === undefined ? [m.line] : [n, m.line]));
          const text = `${lines.join('\n')}\n`;
          for (const input of [text, cut(text, cuts)]) {
            const s = parsePerfScript(input);
            expect(s.diagnostics).toEqual([]);
            expect(
              s.events.map((e) => ({
                op: e.op,
                allocator: e.allocator,
                cpu: e.cpu,
                tsNs: e.tsNs,
                site: s.siteName(e.callSite),
                ptr: s.ptrName(e.ptr),
                bytesReq: e.bytesReq,
                bytesAlloc: e.bytesAlloc,
                gfpFlags: e.gfpFlags,
                node: e.node,
                cache: e.cache,
              })),
            ).toEqual(items.map(([m]) => m.expected));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: a bad value is an error at its line and the column of the value, whole or in chunks', () => {
    fc.assert(
      fc.property(
        fc.array(model, { minLength: 2, maxLength: 6 }),
        fc.nat(),
        fc.constantFrom('x', '0xq', '-', ''),
        fc.array(fc.nat(2000), { maxLength: 4 }),
        (models, which, bad, cuts) => {
          const at = which % models.length;
          const m = models[at]!;
          const keys = ['ptr', 'bytes_req', 'bytes_alloc', 'node'].filter((k) => m.values[k] !== undefined);
          const key = keys[Math.floor(which / models.length) % keys.length]!;
          const start = m.values[key]!;
          const end = m.line.indexOf(' ', start) < 0 ? m.line.length : m.line.indexOf(' ', start);
          const broken = `${m.line.slice(0, start)}${bad}${m.line.slice(end)}`;
          const text = models.map((x, i) => (i === at ? broken : x.line)).join('\n');
          for (const input of [text, cut(text, cuts)]) {
            const e = thrown(() => parsePerfScript(input, { file: 'g.txt' }));
            expect(e.code).toBe('ERR_KMEM_PERF_SCRIPT');
            expect(e.location).toEqual({ file: 'g.txt', line: at + 1, column: start + 1 });
            expect(e.message).toMatch(new RegExp(`^g\\.txt:${at + 1}:${start + 1}: ${key}: '`));
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a text file of several chunks, read as it is analysed, gives the report of the text parsed whole', () => {
    const lines = fc.sample(model, { numRuns: 20_000, seed: 23 }).map((m) => m.line);
    const text = `${lines.join('\n')}\n`;
    expect(text.length).toBeGreaterThan(2 * (1 << 20));
    const file = join(dir, 'many.txt');
    writeFileSync(file, text);
    const whole = parsePerfScript(text);
    const streamed = openKmemInput(file);
    const options = { caller: true, alloc: true, leaks: true, errors: true } as const;
    expect(buildReport(analyze(streamed.events), streamed, options)).toEqual(
      buildReport(analyze(whole.events), whole, options),
    );
    expect(whole.events.length).toBe(lines.length);
  });
});
