import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseFormatFile, type TraceEvent, writeTraceDat } from '@evtrace/trace-format';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { AddressKeys } from './address.ts';
import { analyze } from './analyze.ts';
import { openKmemInput } from './inputs.ts';
import { buildReport } from './report.ts';
import { fromTraceEvent, kmemKind } from './tracepoints.ts';

const COMMON = `\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
`;
// The gfp table as kernels before 6.1 printed it: gfp_t of 4 bytes, masks as hex literals with u suffixes.
const GFP = `(REC->gfp_flags) ? __print_flags(REC->gfp_flags, "|", {(unsigned long)((( gfp_t)(0x400u|0x800u)) | (( gfp_t)0x40u) | (( gfp_t)0x80u)), "GFP_KERNEL"}, {(unsigned long)((( gfp_t)0x20u)|(( gfp_t)0x800u)), "GFP_ATOMIC"}, {(unsigned long)(( gfp_t)0x100u), "__GFP_ZERO"}, {(unsigned long)(( gfp_t)0x2000u), "__GFP_NOWARN"}) : "none"`;
const ALLOC_FIELDS = `\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;
\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;
\tfield:size_t bytes_req;\toffset:24;\tsize:8;\tsigned:0;
\tfield:size_t bytes_alloc;\toffset:32;\tsize:8;\tsigned:0;
\tfield:gfp_t gfp_flags;\toffset:40;\tsize:4;\tsigned:0;
\tfield:int node;\toffset:44;\tsize:4;\tsigned:1;`;
const ALLOC_FMT = `print fmt: "call_site=%pS ptr=%p bytes_req=%zu bytes_alloc=%zu gfp_flags=%s node=%d", (void *)REC->call_site, REC->ptr, REC->bytes_req, REC->bytes_alloc, ${GFP}, REC->node`;
const FREE_FIELDS = `\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;
\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;`;
const FREE_FMT = 'print fmt: "call_site=%pS ptr=%p", (void *)REC->call_site, REC->ptr';

const format = (name: string, id: number, fields: string, fmt: string) =>
  parseFormatFile(`name: ${name}\nID: ${id}\nformat:\n${COMMON}\n${fields}\n\n${fmt}\n`, { system: 'kmem' });

// Linux 5.x: kmalloc_node and kmem_cache_alloc_node, no cache names.
const kmallocNode = format('kmalloc_node', 301, ALLOC_FIELDS, ALLOC_FMT);
const cacheAllocNode = format('kmem_cache_alloc_node', 302, ALLOC_FIELDS, ALLOC_FMT);
const kfree = format('kfree', 303, FREE_FIELDS, FREE_FMT);
const cacheFree = format('kmem_cache_free', 304, FREE_FIELDS, FREE_FMT);
const KALLSYMS = 'ffffffff81000000 T _stext\nffffffff81200000 T alloc_site\nffffffff81300000 T free_site\n';

function event(i: number, cls: typeof kfree, fields: TraceEvent['fields'], flags = 0, cpu = 0): TraceEvent {
  return {
    tsNs: 1_000_000n + BigInt(i) * 1000n,
    cpu,
    eventClass: cls,
    fields,
    scopes: { 'event.context': { common_type: cls.id, common_flags: flags, common_preempt_count: 0, common_pid: 7 } },
  };
}

const dir = mkdtempSync(join(tmpdir(), 'kmem-tp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('kmem tracepoints of older kernels', () => {
  it('reads kmalloc_node / kmem_cache_alloc_node recordings with the kernel’s gfp table and kallsyms', () => {
    const alloc = (ptr: bigint, req: number, got: number, gfp: number) => ({
      call_site: 0xffffffff81200010n,
      ptr,
      bytes_req: BigInt(req),
      bytes_alloc: BigInt(got),
      gfp_flags: gfp,
      node: 0,
    });
    const free = (ptr: bigint) => ({ call_site: 0xffffffff81300020n, ptr });
    const file = join(dir, 'old.dat');
    writeTraceDat(
      file,
      [kmallocNode, cacheAllocNode, kfree, cacheFree],
      [
        event(0, kmallocNode, alloc(0xffff888100000000n, 100, 128, 0xcc0 | 0x100)),
        event(1, cacheAllocNode, alloc(0xffff888100001000n, 64, 64, 0x820)),
        // Freed by a hard interrupt on the other CPU.
        event(2, kfree, free(0xffff888100000000n), 0x08, 1),
        event(3, cacheFree, free(0xffff888100001000n)),
      ],
      { kallsyms: KALLSYMS },
    );
    const source = openKmemInput(file);
    const events = [...source.events];
    expect(events.map((e) => [e.op, e.allocator, e.interrupt, e.node])).toEqual([
      ['alloc', 'kmalloc', false, 0],
      ['alloc', 'cache', false, 0],
      ['free', 'kmalloc', true, -1],
      ['free', 'cache', false, -1],
    ]);
    expect(source.gfpNames!(0xcc0 | 0x100)).toBe('GFP_KERNEL|__GFP_ZERO');
    // The kernel's own table is used: a flag it lacks stays hex (the built-in table would name it).
    expect(source.gfpNames!(0x8)).toBe('0x8');
    const report = buildReport(analyze(events), source, { caller: true, leaks: true });
    expect(report.callers).toEqual([
      {
        site: 'alloc_site+0x10',
        total_alloc: 192,
        total_req: 164,
        hit: 2,
        ping_pong: 1,
        frag_pct: 100 - (100 * 164) / 192,
      },
    ]);
    expect(report.leaks!.count).toBe(0);
  });

  it('knows the events by ftrace and LTTng names, and no others', () => {
    expect(kmemKind({ name: 'kmem:kmalloc_node' })).toEqual({ op: 'alloc', allocator: 'kmalloc' });
    expect(kmemKind({ name: 'kmem_kmalloc' })).toEqual({ op: 'alloc', allocator: 'kmalloc' });
    expect(kmemKind({ name: 'kmem_cache_free' })).toEqual({ op: 'free', allocator: 'cache' });
    expect(kmemKind({ name: 'kmem_mm_page_alloc' })).toEqual({ op: 'page_alloc', allocator: 'page' });
    expect(kmemKind({ name: 'kmem:mm_page_alloc_zone_locked' })).toBeUndefined();
    expect(kmemKind({ name: 'sched:kmalloc' })).toBeUndefined();
  });

  it('fuzz: any field values (a foreign class of the same name) convert without throwing', () => {
    const value = fc.oneof(
      fc.bigInt({ min: -(1n << 70n), max: 1n << 70n }),
      fc.double(),
      fc.integer(),
      fc.string({ maxLength: 20 }),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.integer(), { maxLength: 3 }),
    );
    const names = [
      'call_site',
      'ptr',
      'bytes_req',
      'bytes_alloc',
      'gfp_flags',
      'node',
      'pfn',
      'order',
      'migratetype',
      'name',
    ];
    const keys = new AddressKeys();
    fc.assert(
      fc.property(
        fc.constantFrom(
          kmallocNode,
          cacheAllocNode,
          kfree,
          cacheFree,
          format(
            'mm_page_alloc',
            305,
            '\tfield:unsigned long pfn;\toffset:8;\tsize:8;\tsigned:0;',
            'print fmt: "pfn=%lu", REC->pfn',
          ),
        ),
        fc.dictionary(fc.constantFrom(...names), value),
        fc.oneof(fc.integer({ min: 0, max: 255 }), fc.string()),
        (cls, fields, flags) => {
          const e = fromTraceEvent(event(0, cls, fields as TraceEvent['fields'], flags as number), keys);
          expect(e).toBeDefined();
          for (const v of [e!.callSite, e!.ptr, e!.bytesReq, e!.bytesAlloc, e!.gfpFlags, e!.node])
            expect(Number.isFinite(v)).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });
});
