import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { eventToJsonLine, openTrace } from '@evtrace/trace-format';
import { recordDemo } from '@evtrace/tracefs';
import { describe, expect, it } from 'vitest';
import { analyze } from './analyze.ts';
import { openKmemInput } from './inputs.ts';
import { buildReport, formatReportText } from './report.ts';
import { perfKmemUnavailable, WORKLOAD } from './testing/env.ts';

const run = promisify(execFile);
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README example', () => {
  it('prints the caller table of a perf script file and the top call site as JSON-ready figures', async () => {
    const code = /```ts\n([\s\S]*?)```/.exec(README)?.[1];
    expect(code).toBeDefined();
    const cwd = mkdtempSync(join(tmpdir(), 'kmem-readme-'));
    const input = join(cwd, 'kmem.txt');
    const line = (cpu: number, t: number, what: string) =>
      `    perf 1 [00${cpu}]  10.${String(t).padStart(6, '0')}: kmem:${what}`;
    writeFileSync(
      input,
      [
        line(
          0,
          1,
          'kmalloc: call_site=alloc_pipe_info+0xd7 ptr=0xffff888100001000 bytes_req=640 bytes_alloc=1024 gfp_flags=GFP_KERNEL node=-1',
        ),
        line(1, 2, 'kfree: call_site=free_pipe_info+0x20 ptr=0xffff888100001000'),
        line(
          0,
          3,
          'kmalloc: call_site=seq_open+0x10 ptr=0xffff888100002000 bytes_req=64 bytes_alloc=64 gfp_flags=GFP_KERNEL node=-1',
        ),
      ].join('\n'),
    );
    // Inside the package, so its import resolves as a user's would (to the built package).
    const file = new URL('../readme-example.tmp.ts', import.meta.url).pathname;
    writeFileSync(file, code!);
    try {
      const { stdout } = await run(process.execPath, [file, input], { cwd });
      expect(stdout).toContain(
        ' alloc_pipe_info+0xd7               |      1024/1024  |       640/640   |        1 |         1 | 37.500%',
      );
      expect(stdout).toMatch(/Total bytes requested: 704/);
      expect(stdout).toMatch(
        /site: 'alloc_pipe_info\+0xd7',\s+total_alloc: 1024,\s+total_req: 640,\s+hit: 1,\s+ping_pong: 1,\s+frag_pct: 37\.5/,
      );
    } finally {
      rmSync(file, { force: true });
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it.skipIf(perfKmemUnavailable() !== '')(
    `the same example on a perf kmem record file prints what it prints for its perf script text${perfKmemUnavailable() ? ` (skipped: ${perfKmemUnavailable()})` : ''}`,
    async () => {
      const code = /```ts\n([\s\S]*?)```/.exec(README)![1]!;
      const cwd = mkdtempSync(join(tmpdir(), 'kmem-readme-'));
      const file = new URL('../readme-perf-data.tmp.ts', import.meta.url).pathname;
      writeFileSync(file, code);
      try {
        await run('perf', ['kmem', 'record', '-o', 'perf.data', '--', ...WORKLOAD], { cwd });
        const text = join(cwd, 'kmem.txt');
        writeFileSync(text, (await run('perf', ['script', '-i', 'perf.data'], { cwd, maxBuffer: 1 << 28 })).stdout);
        const fromData = await run(process.execPath, [file], { cwd });
        expect(fromData.stdout).toMatch(/Total bytes requested: [1-9]/);
        expect(fromData.stdout).toBe((await run(process.execPath, [file, text], { cwd })).stdout);
      } finally {
        rmSync(file, { force: true });
        rmSync(cwd, { recursive: true, force: true });
      }
    },
    60_000,
  );

  it('live: the report of JSON lines on stdin, as the offline report of the same recording', async () => {
    const code = [...README.matchAll(/```ts\n([\s\S]*?)```/g)][1]?.[1];
    expect(code).toMatch(/LiveKmemAnalysis/);
    const cwd = mkdtempSync(join(tmpdir(), 'kmem-readme-'));
    const raw = join(cwd, 'raw');
    await recordDemo({ events: ['kmem:kmalloc', 'kmem:kfree'], dir: raw, durationMs: 200, rate: 5000, cpus: 2 });
    const input = join(cwd, 'events.jsonl');
    writeFileSync(input, [...openTrace(raw).events()].map(eventToJsonLine).join(''));
    const file = new URL('../readme-live.tmp.ts', import.meta.url).pathname;
    writeFileSync(file, code!);
    try {
      const { stdout } = await run('sh', ['-c', `"${process.execPath}" "${file}" < "${input}"`], { cwd });
      const source = openKmemInput(raw);
      expect(stdout).toBe(formatReportText(buildReport(analyze(source.events), source, { caller: true, lines: 10 })));
      expect(stdout).toMatch(/Total bytes requested: [1-9]/);
    } finally {
      rmSync(file, { force: true });
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});
