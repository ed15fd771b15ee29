import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listRawCpuFiles, openRawPagesDir, openTraceDat } from '@evtrace/trace-format';
import { findTracefs, listInstances } from '@evtrace/tracefs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { autoSource } from '../daemon/sources.ts';
import { ExitCode } from '../exit-codes.ts';
import { runCli } from '../program.ts';
import { durationOption } from '../units.ts';

const CLI = new URL('../cli.ts', import.meta.url).pathname;

function setup(): { tracefs: string; why?: undefined } | { tracefs?: undefined; why: string } {
  if (process.getuid?.() !== 0) return { why: 'not root: recording needs root' };
  try {
    return { tracefs: findTracefs() };
  } catch (error) {
    return { why: (error as Error).message };
  }
}

function hasTool(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;
}

async function run(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

/** The event counts of the summary: `  system:event  N` lines. */
function summaryCounts(stderr: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const m of stderr.matchAll(/^ {2}(\w+:\w+)\s+(\d+)$/gm)) counts.set(m[1]!, Number(m[2]));
  return counts;
}

const total = (counts: Map<string, number>) => [...counts.values()].reduce((a, b) => a + b, 0);

function reportCounts(file: string): Map<string, number> {
  const text = execFileSync('trace-cmd', ['report', file], { maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] });
  const counts = new Map<string, number>();
  for (const m of text.toString().matchAll(/^\s*\S.*?\[\d+\]\s+[\d.]+: (\w+):/gm)) {
    counts.set(m[1]!, (counts.get(m[1]!) ?? 0) + 1);
  }
  return counts;
}

const env = setup();
const work = mkdtempSync(join(tmpdir(), 'evtrace-record-'));
const own = (pid: number) => listInstances(env.tracefs!).filter((i) => i.startsWith(`evtrace-${pid}-`));

/** Whether the recorder of process `pid` has turned tracing on in its instance. */
function tracing(pid: number): boolean {
  const [name] = own(pid);
  if (name === undefined) return false;
  try {
    return readFileSync(join(env.tracefs!, 'instances', name, 'tracing_on'), 'utf8').trim() === '1';
  } catch {
    return false;
  }
}

/** Waits until `check` holds, polling. */
async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('--duration', () => {
  it('reads ms, s, m, h and bare seconds, and refuses anything else', () => {
    const duration = (text: string) => durationOption('--duration', text);
    expect([duration('250ms'), duration('1.5s'), duration('2m'), duration('3')]).toEqual([250, 1500, 120_000, 3000]);
    expect(() => duration('10 parsecs')).toThrow(/--duration: "10 parsecs" is not a duration/);
  });
});

describe('evtrace record --demo', () => {
  /** `evtrace record --demo ARGS --duration DURATION -o OUT`. */
  const demo = (duration: string, out: string, args: string[]) =>
    run('record', '--demo', ...args, '--duration', duration, '-o', out);

  it('writes trace.dat in the current directory without -o, as trace-cmd does, and refuses -o - naming why', async () => {
    const cwd = mkdtempSync(join(work, 'default-output-'));
    const r = spawnSync(process.execPath, [CLI, 'record', '--demo', '-e', 'kmem:kmalloc', '--duration', '100ms'], {
      cwd,
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(ExitCode.Ok);
    expect(r.stderr).toContain('into trace.dat (tracedat)');
    expect(openTraceDat(join(cwd, 'trace.dat')).eventClasses.length).toBeGreaterThan(0);
    const dash = await demo('100ms', '-', ['-e', 'kmem:kmalloc']);
    expect(dash.code).toBe(ExitCode.Usage);
    expect(dash.stderr).toContain('-o -: record cannot write to standard output');
    expect(readdirSync(cwd)).toEqual(['trace.dat']);
  });

  it('records synthetic events without tracefs, says DEMO, and applies the filter while writing', async () => {
    const out = join(work, 'demo.dat');
    const r = await demo('100ms', out, ['-e', 'kmem:kmalloc', '--filter', 'bytes_req > 100']);
    expect(r.code).toBe(ExitCode.Ok);
    expect(r.stderr).toMatch(/^evtrace: DEMO - evtrace demo: synthetic events, not recorded from a kernel$/m);
    const counts = summaryCounts(r.stderr);
    expect(counts.get('kmem:kmalloc')).toBeGreaterThan(0);
    if (hasTool('trace-cmd')) {
      const text = execFileSync('trace-cmd', ['report', out], {
        maxBuffer: 1 << 28,
        stdio: ['ignore', 'pipe', 'ignore'],
      }).toString();
      const sizes = [...text.matchAll(/bytes_req=(\d+)/g)].map((m) => Number(m[1]));
      expect(sizes.length).toBe(counts.get('kmem:kmalloc'));
      expect(sizes.every((n) => n > 100)).toBe(true);
    }
  });

  it('applies a --filter to the -e options before it, as trace-cmd -f does; events after it stay unfiltered', async () => {
    const out = join(work, 'demo-scoped.dat');
    const r = await demo('100ms', out, [
      '-e',
      'kmem:kmalloc',
      '--filter',
      'bytes_req > 100',
      '-e',
      'sched:sched_switch',
    ]);
    expect(r.code).toBe(ExitCode.Ok);
    const counts = summaryCounts(r.stderr);
    expect(counts.get('sched:sched_switch')).toBeGreaterThan(0);
    expect(r.stderr).toMatch(/^ {2}kmem:kmalloc: filter part applied in user space: bytes_req > 100$/m);
    expect(r.stderr).not.toMatch(/sched:sched_switch: filter part/);
    const events = [...openTraceDat(out).events()];
    const sizes = events.filter((e) => e.eventClass.name === 'kmem:kmalloc').map((e) => Number(e.fields.bytes_req));
    expect(sizes.length).toBe(counts.get('kmem:kmalloc'));
    expect(sizes.length).toBeGreaterThan(0);
    expect(sizes.every((n) => n > 100)).toBe(true);
    expect(events.filter((e) => e.eventClass.name === 'sched:sched_switch').length).toBe(
      counts.get('sched:sched_switch'),
    );
  });

  it('refuses a --filter with no -e since the previous one (exit 2), and one naming a field of another -e', async () => {
    const dangling = await demo('10ms', join(work, 'demo-dangling.dat'), [
      '-e',
      'kmem:kmalloc',
      '--filter',
      'bytes_req > 100',
      '--filter',
      'bytes_req < 4096',
    ]);
    expect(dangling.code).toBe(ExitCode.Usage);
    expect(dangling.stderr).toMatch(/--filter 'bytes_req < 4096' has no -e before it since the previous --filter/);
    const grouped = await demo('10ms', join(work, 'demo-grouped.dat'), [
      '-e',
      'kmem:kmalloc',
      '-e',
      'sched:sched_switch',
      '--filter',
      'bytes_req > 100',
    ]);
    expect(grouped.code).toBe(ExitCode.Usage);
    expect(grouped.stderr).toMatch(/invalid filter for sched:sched_switch at column 11:/);
    expect(existsSync(join(work, 'demo-grouped.dat.part'))).toBe(false);
  });

  it('rejects a filter naming a missing field, leaving nothing behind', async () => {
    const out = join(work, 'demo-bad.dat');
    const r = await demo('10ms', out, ['-e', 'kmem:kmalloc', '--filter', 'nope > 1']);
    expect(r.code).toBe(ExitCode.Usage);
    expect(r.stderr).toMatch(/Field not found/);
    expect([existsSync(out), existsSync(`${out}.part`)]).toEqual([false, false]);
  });
});

describe('evtrace record --source', () => {
  it('auto chooses the kernel only when root with tracefs reachable, and says why', () => {
    const mounted = () => '/sys/kernel/tracing';
    expect(autoSource({ uid: () => 0, tracefs: mounted })).toEqual({
      source: 'kernel',
      reason: 'root, tracefs at /sys/kernel/tracing',
    });
    expect(autoSource({ uid: () => 1000, tracefs: mounted })).toEqual({
      source: 'demo',
      reason: "not root (uid 1000): the kernel's tracefs needs root",
    });
    const missing = () => {
      throw new Error('tracefs is not mounted and /sys/kernel/tracing does not exist');
    };
    expect(autoSource({ uid: () => 0, tracefs: missing })).toEqual({
      source: 'demo',
      reason: 'tracefs unavailable: tracefs is not mounted and /sys/kernel/tracing does not exist',
    });
  });

  it('auto records from the source this machine allows and prints one line naming it', async () => {
    const out = join(work, 'auto.dat');
    const r = await run('record', '--source', 'auto', '-e', 'kmem:kmalloc', '--duration', '100ms', '-o', out);
    expect(r.code).toBe(ExitCode.Ok);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('evtrace: source: '));
    expect(lines).toEqual([
      env.why === undefined
        ? `evtrace: source: kernel (root, tracefs at ${env.tracefs})`
        : expect.stringMatching(/^evtrace: source: demo \(/),
    ]);
    expect(r.stderr.includes('evtrace: DEMO - ')).toBe(env.why !== undefined);
    expect(existsSync(out)).toBe(true);
  });

  it('refuses an unknown source and --demo with auto', async () => {
    const out = join(work, 'bad-source.dat');
    const bogus = await run('record', '--source', 'moon', '-e', 'kmem:kmalloc', '-o', out);
    expect(bogus.code).toBe(ExitCode.Usage);
    expect(bogus.stderr).toMatch(/--source must be one of kernel, demo, auto, not 'moon'/);
    const both = await run('record', '--demo', '--source', 'auto', '-e', 'kmem:kmalloc', '-o', out);
    expect(both.code).toBe(ExitCode.Usage);
    expect(existsSync(out)).toBe(false);
  });
});

describe.skipIf(env.why !== undefined)(`evtrace record${env.why ? ` (skipped: ${env.why})` : ''}`, () => {
  it.skipIf(!hasTool('trace-cmd'))(
    'records while a command runs; trace-cmd report agrees with the summary',
    async () => {
      const out = join(work, 'cmd.dat');
      const r = await run(
        'record',
        '-e',
        'kmem:kmalloc',
        '-e',
        'kmem:kfree',
        '-o',
        out,
        '--',
        'ls',
        '-R',
        '/proc/self',
      );
      expect(r.code).toBe(ExitCode.Ok);
      expect(r.stderr).toMatch(/^evtrace: recorded \d+ events in [\d.]+ s into .*cmd\.dat \(tracedat\)$/m);
      expect(r.stderr).toMatch(/^ {2}lost: cpu0 0, cpu1 0/m);
      expect(r.stderr).toMatch(/bytes written: \d+ \([\d.]+ bytes\/event/);
      const counts = summaryCounts(r.stderr);
      expect(total(counts)).toBeGreaterThan(0);
      const report = reportCounts(out);
      expect(report.get('kmalloc') ?? 0).toBe(counts.get('kmem:kmalloc'));
      expect(report.get('kfree') ?? 0).toBe(counts.get('kmem:kfree'));
      expect(existsSync(`${out}.part`)).toBe(false);
      // The pages' file became the trace.dat: private to its owner, as the kernel's addresses in it require.
      expect(statSync(out).mode & 0o777).toBe(0o600);
      expect(own(process.pid)).toEqual([]);
    },
  );

  it.skipIf(!hasTool('trace-cmd'))(
    'pushes a --filter down for the -e before it only; trace-cmd report shows it applied there and nowhere else',
    async () => {
      const out = join(work, 'scoped.dat');
      const events = ['-e', 'kmem:kmalloc', '--filter', 'bytes_req > 256', '-e', 'sched:sched_switch'];
      const r = await run('record', ...events, '-o', out, '--', 'ls', '-R', '/proc/self');
      expect(r.code).toBe(ExitCode.Ok);
      // All of it is the kernel's to evaluate: nothing is left for user space.
      expect(r.stderr).not.toMatch(/filter part applied in user space/);
      const counts = summaryCounts(r.stderr);
      const text = execFileSync('trace-cmd', ['report', out], {
        maxBuffer: 1 << 28,
        stdio: ['ignore', 'pipe', 'ignore'],
      }).toString();
      const sizes = [...text.matchAll(/ kmalloc: .*?bytes_req=(\d+)/g)].map((m) => Number(m[1]));
      expect(sizes.length).toBe(counts.get('kmem:kmalloc'));
      expect(sizes.length).toBeGreaterThan(0);
      expect(sizes.every((n) => n > 256)).toBe(true);
      const switches = [...text.matchAll(/ sched_switch: /g)].length;
      expect(switches).toBeGreaterThan(0);
      expect(switches).toBe(counts.get('sched:sched_switch'));
      expect(own(process.pid)).toEqual([]);
    },
  );

  it.skipIf(!hasTool('babeltrace2'))(
    'writes CTF with a glob of events; babeltrace2 agrees with the summary',
    async () => {
      const out = join(work, 'ctf');
      const r = await run('record', '-e', 'sched:sched_sw*', '--format', 'ctf', '--duration', '200ms', '-o', out);
      expect(r.code).toBe(ExitCode.Ok);
      const counts = summaryCounts(r.stderr);
      expect([...counts.keys()]).toContain('sched:sched_switch');
      const lines = execFileSync('babeltrace2', [out], { maxBuffer: 1 << 28 })
        .toString()
        .split('\n')
        .filter(Boolean);
      expect(lines.length).toBe(total(counts));
      expect(statSync(out).mode & 0o777).toBe(0o700);
    },
  );

  describe('errors leave no tracefs state and no output', () => {
    const cases: [string, string[], number, RegExp][] = [
      ['a missing output directory', ['-o', '/nonexistent-evtrace-dir/x.dat'], ExitCode.Failure, /does not exist/],
      ['an unknown event', ['-e', 'kmem:nope', '-o', join(work, 'u.dat')], ExitCode.Usage, /unknown event 'kmem:nope'/],
      [
        'an invalid filter',
        ['--filter', 'bytes_req > 64 && nod == 0', '-o', join(work, 'f.dat')],
        ExitCode.Usage,
        /Field not found/,
      ],
      ['a refused clock', ['--clock', 'sundial', '-o', join(work, 'c.dat')], ExitCode.Failure, /trace clock/],
    ];
    for (const [what, args, status, message] of cases) {
      it(what, async () => {
        const before = own(process.pid);
        const r = await run('record', '-e', 'kmem:kmalloc', '--duration', '50ms', ...args);
        expect(r.code).toBe(status);
        expect(r.stderr).toMatch(message);
        // The CLI runs in this process: its instances carry this pid (other suites record concurrently).
        expect(own(process.pid).filter((i) => !before.includes(i))).toEqual([]);
        const out = args[args.indexOf('-o') + 1]!;
        expect([existsSync(out), existsSync(`${out}.part`)]).toEqual([false, false]);
      });
    }

    it.skipIf(!hasTool('runuser'))('no permission (as nobody)', () => {
      const out = join(work, 'nobody.dat');
      const r = spawnSync('runuser', [
        '-u',
        'nobody',
        '--',
        process.execPath,
        CLI,
        'record',
        '-e',
        'kmem:kmalloc',
        '-o',
        out,
      ]);
      expect(r.status).toBe(ExitCode.Failure);
      expect(r.stderr.toString()).toMatch(/ERR_TRACEFS_PERMISSION: .*EACCES/);
      expect(existsSync(`${out}.part`)).toBe(false);
    });
  });

  it.skipIf(!hasTool('trace-cmd'))('stops cleanly on SIGINT: complete file, instance removed', async () => {
    const out = join(work, 'int.dat');
    const child = spawn(process.execPath, [CLI, 'record', '-e', 'kmem:kmalloc', '-e', 'kmem:kfree', '-o', out]);
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    await until(() => tracing(child.pid!));
    execFileSync('ls', ['-R', '/proc/self'], { stdio: 'ignore' });
    await new Promise((r) => setTimeout(r, 100));
    child.kill('SIGINT');
    expect(await exited).toBe(ExitCode.Ok);
    expect(own(child.pid!)).toEqual([]);
    const counts = summaryCounts(stderr);
    expect(total(counts)).toBeGreaterThan(0);
    const report = reportCounts(out);
    expect(report.get('kmalloc') ?? 0).toBe(counts.get('kmem:kmalloc'));
  });

  it('killed with SIGKILL: OUTPUT.part stays readable, the next start removes the stale instance', async () => {
    const out = join(work, 'kill.dat');
    const child = spawn(process.execPath, [CLI, 'record', '-e', 'kmem:kmalloc', '-e', 'sched:sched_switch', '-o', out]);
    const exited = new Promise((r) => child.on('exit', r));
    const part = `${out}.part`;
    // Bytes of pages: in the regions layout (ext4, XFS), every CPU's extent of cpus.raw; elsewhere each cpuN.raw
    // past the sparse hole of head_room bytes it starts with.
    const pages = () => {
      if (!existsSync(part)) return 0;
      if (existsSync(join(part, 'cpu_regions'))) return listRawCpuFiles(part).reduce((n, f) => n + f.end! - f.start, 0);
      const roomFile = join(part, 'head_room');
      const room = existsSync(roomFile) ? Number(readFileSync(roomFile, 'utf8')) : 0;
      // Caught between its creation and its write: not ready yet.
      if (!(room >= 0) || (room === 0 && existsSync(roomFile))) return 0;
      return readdirSync(part)
        .filter((f) => f.endsWith('.raw'))
        .reduce((n, f) => n + Math.max(0, statSync(join(part, f)).size - room), 0);
    };
    await until(() => {
      execFileSync('ls', ['/proc/self'], { stdio: 'ignore' });
      return pages() > 0;
    });
    child.kill('SIGKILL');
    await exited;
    expect(own(child.pid!).length).toBe(1);
    const events = [...openRawPagesDir(part, { lenient: true }).events()];
    expect(events.length).toBeGreaterThan(0);
    for (const e of events) expect(['kmem:kmalloc', 'sched:sched_switch']).toContain(e.eventClass.name);
    const next = await run('record', '-e', 'kmem:kmalloc', '--duration', '10ms', '-o', join(work, 'next.dat'));
    expect(next.code).toBe(ExitCode.Ok);
    expect(own(child.pid!)).toEqual([]);
  });
});

describe.skipIf(env.why !== undefined)(
  `evtrace record to a full disk${env.why ? ` (skipped: ${env.why})` : ''}`,
  () => {
    // A tmpfs with room for the metadata (kallsyms, ~5 MB) and 2 MiB of pages, filled by a busy kmalloc recording.
    const disk = join(work, 'small-disk');
    let mounted = false;
    beforeAll(() => {
      mkdirSync(disk);
      const mb = Math.ceil(readFileSync('/proc/kallsyms').length / (1 << 20)) + 3;
      execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mb}m`, 'tmpfs', disk]);
      mounted = true;
    });
    afterAll(() => {
      if (mounted) execFileSync('umount', [disk]);
    });
    const busy = ['--', 'sh', '-c', 'while :; do ls -R /usr/lib /usr/share >/dev/null 2>&1; done'];

    for (const format of ['tracedat', 'ctf'] as const) {
      it(`--format ${format}: exit 1 naming the file and ENOSPC, no instance left, the pages kept and convertible`, async () => {
        const out = join(disk, `full-${format}`);
        const part = `${out}.part`;
        const r = await run(
          'record',
          '-e',
          'kmem:kmalloc',
          '--format',
          format,
          '--duration',
          '20s',
          '-o',
          out,
          ...busy,
        );
        expect(r.code).toBe(ExitCode.Failure);
        const file = `${part.replaceAll('.', '\\.')}/cpu\\d+\\.raw`;
        expect(r.stderr).toMatch(
          new RegExp(`^evtrace: ERR_TRACEFS_OUTPUT: cannot write ${file}: ENOSPC \\(no space left on device\\);`),
        );
        expect(r.stderr).toContain(`kept in ${part} (evtrace cat ${part} reads them)`);
        expect(r.stderr).toContain(`evtrace convert ${part} --to ${format} -o ${out}`);
        expect(own(process.pid)).toEqual([]);
        expect(existsSync(out)).toBe(false);
        // What was recorded reads to its last whole page, and converts once moved where there is room.
        const text = await run('cat', part);
        expect(text.code).toBe(ExitCode.Ok);
        // Events, and trace-cmd's line before any the kernel lost others before.
        const lines = text.stdout
          .trimEnd()
          .split('\n')
          .filter((l) => !/^CPU:\d+ \[(\d+ )?EVENTS DROPPED\]$/.test(l));
        expect(lines.length).toBeGreaterThan(1000);
        expect(lines.every((l) => l.includes(' kmalloc: '))).toBe(true);
        const dat = join(work, `converted-${format}.dat`);
        expect((await run('convert', part, '--to', 'tracedat', '-o', dat)).code).toBe(ExitCode.Ok);
        if (hasTool('trace-cmd')) expect(reportCounts(dat).get('kmalloc')).toBe(lines.length);
        rmSync(part, { recursive: true });
      }, 60_000);
    }
  },
);

describe.skipIf(env.why !== undefined)(
  `evtrace record, no room for the output${env.why ? ` (skipped: ${env.why})` : ''}`,
  () => {
    // Room for OUTPUT.part (kallsyms is most of it) but not for a trace.dat of the same size beside it.
    const disk = join(work, 'half-disk');
    let mounted = false;
    beforeAll(() => {
      mkdirSync(disk);
      const mb = Math.ceil((1.5 * readFileSync('/proc/kallsyms').length) / (1 << 20));
      execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mb}m`, 'tmpfs', disk]);
      mounted = true;
    });
    afterAll(() => {
      if (mounted) execFileSync('umount', [disk]);
    });

    it('exit 1 naming the output and ENOSPC, no partial output, OUTPUT.part kept with the convert command', async () => {
      const out = join(disk, 'out.dat');
      const part = `${out}.part`;
      const r = await run('record', '-e', 'kmem:kmalloc', '--duration', '50ms', '-o', out);
      expect(r.code).toBe(ExitCode.Failure);
      expect(r.stderr).toContain(`evtrace: ERR_TRACEFS_OUTPUT: cannot write ${out}: ENOSPC (no space left on device)`);
      expect(r.stderr).toContain(`evtrace convert ${part} --to tracedat -o ${out}`);
      expect([existsSync(out), existsSync(part)]).toEqual([false, true]);
      expect(own(process.pid)).toEqual([]);
      expect((await run('cat', part)).code).toBe(ExitCode.Ok);
    }, 60_000);
  },
);
