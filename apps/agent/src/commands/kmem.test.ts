import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionSpec, SessionStatus } from '@evtrace/agent-protocol';
import type { KmemReport } from '@evtrace/kmemtrace';
import { findTracefs, listEvents, matchEvents } from '@evtrace/tracefs';
import { afterAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { CLI, cli, eventually, type RunningAgent, startAgent, workDir } from '../testing/agent-daemon.ts';
import { run } from '../testing/sample-traces.ts';
import { expectValid } from '../testing/schemas.ts';
import { KMEM_RECORD_EVENTS } from './kmem.ts';

const dir = mkdtempSync(join(tmpdir(), 'evtrace-kmem-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const line = (cpu: number, us: number, what: string) =>
  `    perf 1 [00${cpu}]  10.${String(us).padStart(6, '0')}: kmem:${what}`;
const SCRIPT = [
  line(
    0,
    1,
    'kmalloc: call_site=alloc_pipe_info+0xd7 ptr=0xffff888100001000 bytes_req=640 bytes_alloc=1024 gfp_flags=GFP_KERNEL node=-1',
  ),
  line(
    0,
    2,
    'kmalloc: call_site=seq_open+0x10 ptr=0xffff888100002000 bytes_req=64 bytes_alloc=64 gfp_flags=GFP_KERNEL node=-1',
  ),
  line(
    0,
    3,
    'kmalloc: call_site=seq_open+0x10 ptr=0xffff888100003000 bytes_req=60 bytes_alloc=64 gfp_flags=GFP_KERNEL|__GFP_ZERO node=-1',
  ),
  line(1, 4, 'kfree: call_site=free_pipe_info+0x20 ptr=0xffff888100001000'),
  line(1, 5, 'kfree: call_site=seq_release+0x20 ptr=0xffff888100002000'),
  line(1, 6, 'kfree: call_site=seq_release+0x20 ptr=0xffff888100002000'),
].join('\n');
const scriptFile = join(dir, 'k.txt');
writeFileSync(scriptFile, `${SCRIPT}\n`);

/** Root, tracefs with kmem events, and perf: what the recording tests need. */
function recordingUnavailable(): string {
  if (process.getuid?.() !== 0) return 'not root';
  try {
    execFileSync('sh', ['-c', 'command -v perf'], { stdio: 'ignore' });
  } catch {
    return 'perf is not installed (Debian linux-perf)';
  }
  const mount = /^\S+ (\S+) tracefs /m.exec(readFileSync('/proc/mounts', 'utf8'))?.[1];
  if (mount === undefined || !existsSync(`${mount}/events/kmem/kmalloc`)) return 'no kmem tracepoints';
  return '';
}

describe('evtrace kmem report', () => {
  it('--json: the summary and perf kmem style caller rows, figures as numbers', async () => {
    const r = await run('kmem', 'report', scriptFile, '--caller', '--json');
    expect(r.code).toBe(ExitCode.Ok);
    expect(r.stderr).toBe('');
    const report = JSON.parse(r.stdout);
    expectValid('@evtrace/kmemtrace/schemas/report.json', report);
    expect(Object.keys(report)).toEqual(['summary', 'callers']);
    expect(report.summary).toMatchObject({ allocs: 3, frees: 3, total_req: 764, total_alloc: 1152, total_freed: 1152 });
    // As perf kmem counts them: the double free adds its size to the freed bytes again and, the allocation's CPU
    // being reset by the first free, counts as another cross-CPU free.
    expect(report.callers).toEqual([
      { site: 'alloc_pipe_info+0xd7', total_alloc: 1024, total_req: 640, hit: 1, ping_pong: 1, frag_pct: 37.5 },
      { site: 'seq_open+0x10', total_alloc: 128, total_req: 124, hit: 2, ping_pong: 2, frag_pct: 3.125 },
    ]);
  });

  it('text: sorted by --sort, cut to --lines; every section without section flags', async () => {
    const r = await run('kmem', 'report', scriptFile, '--caller', '--sort', 'hit', '--lines', '1');
    expect(r.code).toBe(ExitCode.Ok);
    const rows = r.stdout.split('\n').filter((l) => /^ \S+\s+\|\s+\d/.test(l));
    expect(rows).toEqual([
      ' seq_open+0x10                      |       128/64    |       124/62    |        2 |         2 |  3.125%',
    ]);
    const all = JSON.parse((await run('kmem', 'report', scriptFile, '--json')).stdout);
    expectValid('@evtrace/kmemtrace/schemas/report.json', all);
    expect(Object.keys(all)).toEqual(['summary', 'callers', 'allocs', 'pages', 'leaks', 'errors', 'timeseries']);
    expect(all.errors.counts.double_free).toBe(1);
    expect(all.leaks).toMatchObject({ count: 1, bytes: 64, sites: [{ site: 'seq_open+0x10', count: 1 }] });
  });

  it('usage errors exit 2; bad input exits 1 naming the place; --lenient keeps the valid lines', async () => {
    const sort = await run('kmem', 'report', scriptFile, '--sort', 'hit,size');
    expect(sort.code).toBe(ExitCode.Usage);
    expect(sort.stderr).toMatch(/--sort: unknown sort key 'size' at column 5/);
    expect((await run('kmem', 'report', scriptFile, '--lines', 'ten')).code).toBe(ExitCode.Usage);
    const missing = await run('kmem', 'report', join(dir, 'nope'));
    expect(missing.code).toBe(ExitCode.Failure);
    expect(missing.stderr).toMatch(/ERR_KMEM_INPUT: .*nope: cannot open: ENOENT/);
    const bad = join(dir, 'bad.txt');
    writeFileSync(bad, `${SCRIPT.replace('bytes_req=64 ', 'bytes_req=6x4 ')}\n`);
    const broken = await run('kmem', 'report', bad);
    expect(broken.code).toBe(ExitCode.Failure);
    expect(broken.stderr).toMatch(/ERR_KMEM_PERF_SCRIPT: .*bad\.txt:2:\d+: bytes_req: '6x4' is not a decimal integer/);
    const lenient = await run('kmem', 'report', bad, '--lenient', '--json', '--caller');
    expect(lenient.code).toBe(ExitCode.Ok);
    expect(JSON.parse(lenient.stdout).summary.allocs).toBe(2);
    expect(lenient.stderr).toMatch(/warning: .*bad\.txt:2:\d+/);
  });

  it('reads kmemtrace v1 relay files, symbolized with --kallsyms', async () => {
    const rec = (id: number, ptr: bigint, req: number, got: number, ts: number) => {
      const b = Buffer.alloc(56);
      b.writeUInt8(id, 0);
      b.writeUInt8(0, 1);
      b.writeUInt16LE(56, 2);
      b.writeInt32LE(-1, 4);
      b.writeBigUInt64LE(0xffffffff81000010n, 8);
      b.writeBigUInt64LE(ptr, 16);
      b.writeBigUInt64LE(BigInt(req), 24);
      b.writeBigUInt64LE(BigInt(got), 32);
      b.writeBigUInt64LE(0xcc0n, 40);
      b.writeBigInt64LE(BigInt(ts), 48);
      return b;
    };
    const file = join(dir, 'cpu0');
    writeFileSync(
      file,
      Buffer.concat([rec(1, 0xffff888100000000n, 100, 128, 1), rec(2, 0xffff888100000000n, 0, 0, 2)]),
    );
    const syms = join(dir, 'kallsyms');
    writeFileSync(syms, 'ffffffff81000000 T kmalloc_caller\nffffffff81001000 T other\n');
    const r = await run('kmem', 'report', file, '--caller', '--json', '--kallsyms', syms);
    expect(r.code).toBe(ExitCode.Ok);
    expect(JSON.parse(r.stdout).callers).toEqual([
      { site: 'kmalloc_caller+0x10', total_alloc: 128, total_req: 100, hit: 1, ping_pong: 0, frag_pct: 21.875 },
    ]);
    writeFileSync(file, rec(1, 1n, 1, 1, 1).subarray(0, 40));
    const cut = await run('kmem', 'report', file);
    expect(cut.code).toBe(ExitCode.Failure);
    expect(cut.stderr).toMatch(/ERR_KMEM_RELAY_RECORD: .*cpu0: byte 0: truncated record/);
  });
});

describe('evtrace kmem record', () => {
  // The kernel source records through a tracefs instance like evtrace record (tested there); the demo source here
  // keeps this file from creating instances while other test files check theirs.
  it('records through evtrace record and its recording reports consistently', async () => {
    const out = join(dir, 'demo.dat');
    const rec = await run('kmem', 'record', '--demo', '-o', out, '--duration', '300ms');
    expect(rec.code, rec.stderr).toBe(ExitCode.Ok);
    expect(rec.stderr).toMatch(/kmem:kmalloc\s+\d+/);
    expect(rec.stderr).toMatch(/kmem:kfree\s+\d+/);
    const r = await run('kmem', 'report', out, '--json');
    expect(r.code).toBe(ExitCode.Ok);
    const report = JSON.parse(r.stdout);
    expectValid('@evtrace/kmemtrace/schemas/report.json', report);
    expect(report.summary.allocs).toBeGreaterThan(0);
    const sum = (k: string) => report.callers.reduce((n: number, c: Record<string, number>) => n + c[k]!, 0);
    expect(sum('hit')).toBe(report.summary.allocs);
    expect(sum('total_alloc')).toBe(report.summary.total_alloc);
    expect(sum('ping_pong')).toBe(report.summary.cross_cpu_frees);
    const bad = await run('kmem', 'record', '--demo', '-o', join(dir, 'x.dat'), '--duration', 'soon');
    expect(bad.code).toBe(ExitCode.Usage);
    // Private as evtrace record makes it, unless --share, which is passed on.
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const shared = join(dir, 'shared.dat');
    expect((await run('kmem', 'record', '--demo', '-o', shared, '--duration', '100ms', '--share')).code).toBe(0);
    expect(statSync(shared).mode & 0o777).toBe(0o644 & ~process.umask());
  });
});

describe('evtrace kmem diff', () => {
  it('compares two recordings by call site name', async () => {
    const b = join(dir, 'b.txt');
    writeFileSync(b, `${SCRIPT.split('\n').slice(1).join('\n')}\n`);
    const r = await run('kmem', 'diff', scriptFile, b, '--json');
    expect(r.code).toBe(ExitCode.Ok);
    const d = JSON.parse(r.stdout);
    expectValid('@evtrace/kmemtrace/schemas/diff.json', d);
    expect(d.summary.allocs).toEqual({ a: 3, b: 2, delta: -1 });
    expect(d.callers[0]).toMatchObject({ site: 'alloc_pipe_info+0xd7', hit_a: 1, hit_b: 0, total_alloc_delta: -1024 });
    const text = await run('kmem', 'diff', scriptFile, b);
    expect(text.stdout).toMatch(/alloc_pipe_info\+0xd7\s+\|\s+1 \|\s+0 \|\s+1024 \|\s+0 \|\s+-1024/);
  });
});

const why = recordingUnavailable();
describe.skipIf(why !== '')(`the kernel's kmem events, and perf.data input${why ? ` (skipped: ${why})` : ''}`, () => {
  it('asks for events every glob of which this kernel has', () => {
    const mount = findTracefs();
    const available = listEvents(mount);
    for (const glob of KMEM_RECORD_EVENTS) expect(matchEvents(available, [glob]).length, glob).toBeGreaterThan(0);
    const names = matchEvents(available, [...KMEM_RECORD_EVENTS]).map((e) => `${e.system}:${e.event}`);
    expect(names).toEqual(
      expect.arrayContaining(['kmem:kmalloc', 'kmem:kfree', 'kmem:kmem_cache_alloc', 'kmem:mm_page_free']),
    );
  });

  it('a perf kmem record file is read directly, without perf: its report is that of its perf script text', async () => {
    const data = join(dir, 'perf.data');
    execFileSync(
      'perf',
      ['kmem', 'record', '-o', data, '--', 'perf', 'bench', 'sched', 'messaging', '-g', '1', '-l', '5'],
      {
        stdio: 'ignore',
      },
    );
    const text = join(dir, 'perf.txt');
    writeFileSync(text, execFileSync('perf', ['script', '-i', data], { maxBuffer: 1 << 29 }));
    // perf script's default text rounds times to microseconds, perf.data has them whole: the JSON (first_ns,
    // last_ns) and the leak ages equal those of its --ns text, the tables those of either.
    const ns = join(dir, 'perf-ns.txt');
    writeFileSync(ns, execFileSync('perf', ['script', '--ns', '-i', data], { maxBuffer: 1 << 29 }));
    const a = await run('kmem', 'report', data, '--caller', '--alloc', '--json');
    const b = await run('kmem', 'report', ns, '--caller', '--alloc', '--json');
    expect(a.code).toBe(ExitCode.Ok);
    expect(JSON.parse(a.stdout).callers.length).toBeGreaterThan(5);
    expectValid('@evtrace/kmemtrace/schemas/report.json', JSON.parse(a.stdout));
    expect(a.stdout).toBe(b.stdout);
    // The CLI as users run it, with no perf on its PATH: the same tables as from the text.
    const noPerf = spawnSync(process.execPath, [CLI, 'kmem', 'report', data, '--caller', '--alloc'], {
      env: { ...process.env, PATH: '/nonexistent' },
      encoding: 'utf8',
      maxBuffer: 1 << 28,
    });
    // At most warnings (the kernel may drop events under the workload: perf.data counts them).
    for (const l of noPerf.stderr.split('\n').filter(Boolean))
      expect(l).toMatch(/^evtrace: warning: .*lost \d+ events/);
    expect(noPerf.status).toBe(0);
    expect(noPerf.stdout).toBe((await run('kmem', 'report', text, '--caller', '--alloc')).stdout);
    const all = await run('kmem', 'report', data);
    expect(all.stdout).toContain('oldest');
    expect(all.stdout).toBe((await run('kmem', 'report', ns)).stdout);
  }, 60_000);
});

/** `evtrace kmem report --live ...` as a child process on the agent's socket, with its output so far. */
function liveReport(agent: RunningAgent, args: readonly string[]) {
  const proc = spawn(process.execPath, [CLI, 'kmem', 'report', '--live', ...args], {
    env: { ...process.env, EVTRACE_AGENT_SOCKET: agent.socket },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return {
    proc,
    exited,
    stdout: () => stdout,
    stderr: () => stderr,
    /** Resolves once the subscription is in place. */
    following: () => eventually(() => (/following session/.test(stderr) ? true : undefined), 30_000),
  };
}

/** The latest refresh header of a text `--live` report: events analysed so far. */
const analysedSoFar = (text: string) =>
  Number([...text.matchAll(/^-- session s, [\d.]+s: (\d+) kmem events/gm)].at(-1)?.[1] ?? -1);

/**
 * A session recording to an output file, followed from its start (its recent window holds everything so far) by
 * `kmem report --live` in text and in --json, until nothing more comes: with `quiesce`, the workload ends, both
 * readers catch up (their refresh headers count the events analysed) and the text reader is stopped with SIGINT,
 * then the session; without, the session's stop ends production and both readers. Each reader's final report must be
 * the offline report of the output file: the text one as `kmem report FILE` prints it, the --json one equal.
 */
async function liveMatchesOffline(
  agent: RunningAgent,
  dir: string,
  spec: Omit<SessionSpec, 'name' | 'mode' | 'output'>,
  quiesce?: () => void,
): Promise<{ live: KmemReport; status: SessionStatus }> {
  const client = await agent.connect();
  try {
    await client.createSession({
      name: 's',
      mode: 'overwrite',
      bufferSize: 16 << 20,
      output: { dir: join(dir, 'out'), format: 'tracedat' },
      ...spec,
    });
    await client.start('s');
    const common = ['--interval', '200ms', '--kallsyms', '/proc/kallsyms'];
    const json = liveReport(agent, ['s', '--json', ...common]);
    const text = liveReport(agent, ['s', ...common]);
    await json.following();
    await text.following();
    await eventually(() => (analysedSoFar(text.stdout()) > 200 ? true : undefined), 60_000);
    if (quiesce) {
      quiesce();
      // Caught up: everything the session holds is analysed, and nothing more comes.
      await eventually(async () => {
        const st = await client.status('s');
        await new Promise((r) => setTimeout(r, 500));
        return analysedSoFar(text.stdout()) >= st.events ? true : undefined;
      }, 60_000);
      await new Promise((r) => setTimeout(r, 1000));
      text.proc.kill('SIGINT');
      expect(await text.exited, text.stderr()).toBe(0);
    }
    const status = await client.stop('s');
    for (const reader of quiesce ? [json] : [json, text]) {
      expect(await reader.exited, reader.stderr()).toBe(0);
      expect(reader.stderr()).toMatch(/session stopped/);
    }
    // Nothing lost by either reader (the agent says so on their stderr), so nothing is missing from their reports.
    expect(json.stderr()).not.toMatch(/lost/);
    expect(text.stderr()).not.toMatch(/lost/);
    expect(status.files.length).toBe(1);
    const file = status.files[0]!;
    const final = /-- session s, final: (\d+) kmem events --\n([\s\S]*)$/.exec(text.stdout());
    expect(final, text.stdout().slice(-2000)).not.toBeNull();
    const offline = JSON.parse((await cli(agent, ['kmem', 'report', file, '--json', ...common])).stdout) as KmemReport;
    expect(offline.summary.events).toBe(status.events);
    expect(Number(final![1])).toBe(offline.summary.events);
    expect(final![2]).toBe((await cli(agent, ['kmem', 'report', file, ...common])).stdout);
    expect(final![2]).toMatch(/\s+Callsite\s+\|/);
    const live = JSON.parse(json.stdout()) as KmemReport;
    // The live report read the agent's JSON events: it keeps the report's contract.
    expectValid('@evtrace/kmemtrace/schemas/report.json', live);
    expect(live).toEqual(offline);
    return { live, status };
  } finally {
    client.close();
  }
}

describe('evtrace kmem report --live', () => {
  it('follows a demo session to its stop: refreshed text, both final reports equal to the offline one', async () => {
    const d = workDir('kmem-live-demo-');
    const agent = await startAgent(d, ['--demo-rate', '300']);
    try {
      const { live, status } = await liveMatchesOffline(agent, d, {
        events: ['kmem:kmalloc', 'kmem:kfree'],
        source: 'demo',
      });
      expect(status.lost).toBe(0);
      expect(status.overwrittenPages).toBe(0);
      // Both readers followed to the stop: every event the session recorded.
      expect(live.summary.events).toBeGreaterThan(200);
      expect(live.summary.events).toBe(status.events);
      expect(Object.keys(live)).toEqual(['summary', 'callers', 'allocs', 'pages', 'leaks', 'errors', 'timeseries']);
      const usage = await cli(agent, ['kmem', 'report', 'x.dat', '--live', 's']);
      expect(usage.code).toBe(ExitCode.Usage);
      expect((await cli(agent, ['kmem', 'report', 'x.dat', '--duration', '1s'])).code).toBe(ExitCode.Usage);
      const none = await cli(agent, ['kmem', 'report', '--live', 'nosuch']);
      expect(none.code).toBe(ExitCode.Failure);
      expect(none.stderr).toMatch(/nosuch/);
    } finally {
      await agent.stop();
      rmSync(d, { recursive: true, force: true });
    }
  }, 120_000);

  const kernel = recordingUnavailable();
  it.skipIf(kernel !== '')(
    `follows a kernel session recording kmem events through tracefs: the offline report of its output${kernel ? ` (skipped: ${kernel})` : ''}`,
    async () => {
      const d = workDir('kmem-live-kernel-');
      // A shell opening /proc files in a loop, in one process (builtins; \`sleep\` runs in a child): its allocations
      // are the session's (filtered by pid), few enough that neither the session nor a reader loses any.
      const loop = spawn('bash', ['-c', 'while :; do read -r x < /proc/self/stat; sleep 0.002; done'], {
        stdio: 'ignore',
      });
      const agent = await startAgent(d);
      try {
        const { live, status } = await liveMatchesOffline(
          agent,
          d,
          {
            events: ['kmem:kmalloc', 'kmem:kfree', 'kmem:kmem_cache_alloc', 'kmem:kmem_cache_free'],
            filter: `common_pid == ${loop.pid}`,
            source: 'kernel',
          },
          () => loop.kill(),
        );
        expect(status.source).toBe('kernel');
        expect(status.lost).toBe(0);
        expect(live.summary.allocs).toBeGreaterThan(100);
        expect(live.summary.frees).toBeGreaterThan(100);
        // Symbolized through this kernel's kallsyms.
        expect(live.callers!.some((c) => /^[a-z_]\w*\+0x[0-9a-f]+$/.test(c.site))).toBe(true);
      } finally {
        loop.kill();
        await agent.stop();
        rmSync(d, { recursive: true, force: true });
      }
    },
    120_000,
  );
});
