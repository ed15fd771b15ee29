/** Test support: recording with `perf kmem record` and reading `perf kmem stat`'s tables. */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * `perf kmem record` of `perf bench sched messaging -g GROUPS -l LOOPS` into `perf.data` of a new directory named
 * from `prefix` (the caller removes it), and the file's bytes. Needs root and perf (see perfKmemUnavailable).
 */
export function recordPerfKmem(
  prefix: string,
  groups: number,
  loops: number,
): { readonly dir: string; readonly data: string; readonly bytes: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const data = join(dir, 'perf.data');
  const workload = ['perf', 'bench', 'sched', 'messaging', '-g', String(groups), '-l', String(loops)];
  execFileSync('perf', ['kmem', 'record', '-o', data, '--', ...workload], { stdio: 'ignore' });
  return { dir, data, bytes: readFileSync(data) };
}

export interface PerfRow {
  /** Call site normalized to `symbol+0xoff` (perf prints `symbol+off` in hex without 0x), or the pointer. */
  readonly key: string;
  readonly totalAlloc: number;
  readonly allocPerHit: number;
  readonly totalReq: number;
  readonly reqPerHit: number;
  readonly hit: number;
  readonly pingPong: number;
  readonly frag: number;
}

/** perf's `sym+2a` as the kernel's `%pS` prints it: `sym+0x2a`, `sym` at offset 0. Hex addresses stay. */
export function normalizePerfSite(site: string): string {
  const m = /^(.+)\+([0-9a-f]+)$/.exec(site);
  if (m === null || site.startsWith('0x')) return site;
  return m[2] === '0' ? m[1]! : `${m[1]}+0x${m[2]}`;
}

const ROW = /^ (\S+)\s+\|\s+(\d+)\/(\d+)\s*\|\s+(\d+)\/(\d+)\s*\|\s+(\d+) \|\s+(\d+) \|\s+([\d.]+)%$/;

/** The Callsite and Alloc Ptr tables and the SUMMARY figures of `perf kmem --caller --alloc stat` output. */
export function parsePerfKmemStat(text: string): {
  callers: PerfRow[];
  allocs: PerfRow[];
  summary: Record<string, number>;
} {
  const tables: PerfRow[][] = [];
  let current: PerfRow[] | undefined;
  const summary: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (/^ (Callsite|Alloc Ptr)\s+\|/.test(line)) {
      current = [];
      tables.push(current);
      continue;
    }
    const m = ROW.exec(line);
    if (m !== null && current !== undefined) {
      const caller = tables.length === 1;
      current.push({
        key: caller ? normalizePerfSite(m[1]!) : m[1]!,
        totalAlloc: Number(m[2]),
        allocPerHit: Number(m[3]),
        totalReq: Number(m[4]),
        reqPerHit: Number(m[5]),
        hit: Number(m[6]),
        pingPong: Number(m[7]),
        frag: Number(m[8]),
      });
      continue;
    }
    const s =
      /^(Total bytes requested|Total bytes allocated|Total bytes freed|Net total bytes allocated|Total bytes wasted on internal fragmentation|Internal fragmentation|Cross CPU allocations):\s+([\d,.]+)%?(?:\/([\d,]+))?/.exec(
        line,
      );
    if (s !== null) {
      summary[s[1]!] = Number(s[2]!.replaceAll(',', ''));
      if (s[3] !== undefined) summary['Total allocations'] = Number(s[3].replaceAll(',', ''));
    }
  }
  return { callers: tables[0] ?? [], allocs: tables[1] ?? [], summary };
}

/** Records the workload's kmem events into `output` with perf (no samples lost with -m 16384). */
export async function perfKmemRecord(output: string, workload: readonly string[]): Promise<void> {
  await run('perf', ['kmem', 'record', '-m', '16384', '-o', output, '--', ...workload], { maxBuffer: 1 << 26 });
}

export async function perfScript(input: string): Promise<string> {
  return (await run('perf', ['script', '-i', input], { maxBuffer: 1 << 30 })).stdout;
}

export async function perfKmemStat(input: string, extra: readonly string[] = []): Promise<string> {
  // Options before `stat`: after it perf silently prints only the summary.
  return (await run('perf', ['kmem', '-i', input, '--caller', '--alloc', ...extra, 'stat'], { maxBuffer: 1 << 28 }))
    .stdout;
}

/** The SUMMARY (page allocator) counts of `perf kmem --page stat` and its order by migrate type table. */
export function parsePerfKmemPageStat(text: string): {
  summary: Record<string, { count: number; kb: number }>;
  /** Counts by order, then by column (perf's columns are the kernel's migrate type numbers 0..4). */
  table: Map<number, number[]>;
} {
  const summary: Record<string, { count: number; kb: number }> = {};
  const table = new Map<number, number[]>();
  for (const line of text.split('\n')) {
    const s = /^(Total [\w+-]+ requests|Total allocation failures)\s*:\s*([\d,]+)\s+\[\s*([\d,]+) KB \]/.exec(line);
    if (s !== null)
      summary[s[1]!.replace(/\s+/g, ' ').trim()] = {
        count: Number(s[2]!.replaceAll(',', '')),
        kb: Number(s[3]!.replaceAll(',', '')),
      };
    const t = /^\s*(\d+)((?:\s+(?:\d+|\.))+)\s*$/.exec(line);
    if (t !== null && Object.keys(summary).length > 0)
      table.set(
        Number(t[1]),
        t[2]!
          .trim()
          .split(/\s+/)
          .map((c) => (c === '.' ? 0 : Number(c))),
      );
  }
  return { summary, table };
}

/** Records the workload's page allocator events with perf (kmem --page record adds callchains). */
export async function perfKmemPageRecord(output: string, workload: readonly string[]): Promise<void> {
  await run('perf', ['kmem', '--page', 'record', '-m', '16384', '-o', output, '--', ...workload], {
    maxBuffer: 1 << 26,
  });
}

export async function perfKmemPageStat(input: string): Promise<string> {
  return (await run('perf', ['kmem', '-i', input, '--page', 'stat'], { maxBuffer: 1 << 28 })).stdout;
}
