import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTextFormatter, openRawPagesDir, openTrace, openTraceDat, parseHeaderPage } from '@evtrace/trace-format';
import { afterAll, describe, expect, it } from 'vitest';
import { planEventFilter, writeKernelFilter } from '../filter/filter.ts';
import { cleanStaleInstances, createInstance, listInstances } from '../instance/instance.ts';
import { finalizeRecording } from '../output/output.ts';
import { regionsSupported } from '../output/regions.ts';
import { countPageRecords } from '../pages/pages.ts';
import { hasTool, smallWorkload, threadsScheduling, tracefsForTests } from '../testing/env.ts';
import type { RecordOptions } from './options.ts';
import { record } from './recorder.ts';

const env = tracefsForTests();
const tracefs = env.path!;
const work = mkdtempSync(join(tmpdir(), 'evtrace-rec-'));
let n = 0;
const fresh = (name: string) => join(work, `${n++}-${name}`);
/** A tmpfs directory: holes there cannot be closed, so head room gives each CPU its own file. */
const shm = existsSync('/dev/shm') && !regionsSupported('/dev/shm') ? mkdtempSync('/dev/shm/evtrace-rec-') : undefined;
const KMEM = ['kmem:kmalloc', 'kmem:kfree'];

/** Our instances only: other suites record in parallel in their own. */
const ours = () => listInstances(tracefs).filter((i) => new RegExp(`^evtrace-${process.pid}-`).test(i));

async function recorded(options: Partial<RecordOptions> = {}) {
  const dir = fresh('raw');
  const r = await record({ events: KMEM, dir, durationMs: 120, priority: false, onStart: smallWorkload, ...options });
  return r;
}

/** trace-cmd report's event lines, by event name. */
function reportCounts(file: string): Map<string, number> {
  const text = execFileSync('trace-cmd', ['report', file], { maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] });
  const counts = new Map<string, number>();
  for (const line of text.toString().split('\n')) {
    const m = /^\s*\S.*?\[\d+\]\s+[\d.]+: (\w+):/.exec(line);
    if (m !== null) counts.set(m[1]!, (counts.get(m[1]!) ?? 0) + 1);
  }
  return counts;
}

/** trace-cmd report shows as many kmallocs and kfrees as the recorder counted. */
function expectReportCounts(file: string, r: { events: ReadonlyMap<string, number> }): void {
  const counts = reportCounts(file);
  expect(counts.get('kmalloc') ?? 0).toBe(r.events.get('kmem:kmalloc'));
  expect(counts.get('kfree') ?? 0).toBe(r.events.get('kmem:kfree'));
}

/**
 * Finalizes `r` to trace.dat over an existing `out` with mode 0600, and checks that `file` of the raw directory became
 * it (same inode: renamed, not copied), that the mode was kept and the directory removed.
 */
function finalizeInPlace(r: { dir: string; total: number }, out: string, file: string) {
  const inode = statSync(file).ino;
  writeFileSync(out, 'old');
  chmodSync(out, 0o600);
  const w = finalizeRecording(r.dir, out, 'tracedat', { recorded: r.total });
  expect(existsSync(r.dir)).toBe(false);
  expect(statSync(out).ino).toBe(inode);
  expect(statSync(out).mode & 0o777).toBe(0o600);
  expect(w.bytes).toBe(statSync(out).size);
  return { ...w, out };
}

afterAll(() => {
  if (shm !== undefined) rmSync(shm, { recursive: true, force: true });
  expect(ours()).toEqual([]);
});

describe.skipIf(env.why !== undefined)(`recording from tracefs${env.why ? ` (skipped: ${env.why})` : ''}`, () => {
  it.skipIf(!hasTool('trace-cmd'))('writes a trace.dat that trace-cmd report reads with the same counts', async () => {
    const before = listInstances(tracefs);
    const r = await recorded();
    expect(ours()).toEqual([]);
    expect(r.instance).toMatch(/^evtrace-\d+-\d+$/);
    expect(before).not.toContain(r.instance);
    expect(r.total).toBeGreaterThan(0);
    expect(r.lost.every((l) => l.dropped + l.overrun + l.commitOverrun === 0)).toBe(true);
    const out = fresh('trace.dat');
    const w = finalizeRecording(r.dir, out, 'tracedat', { recorded: r.total });
    expect(existsSync(r.dir)).toBe(false);
    expect(w.bytes).toBe(readFileSync(out).length);
    expectReportCounts(out, r);
  });

  it.skipIf(!hasTool('trace-cmd') || !regionsSupported(work))(
    `with head room on ext4 or XFS, writes every CPU into one file and closes the holes between them${regionsSupported(work) ? '' : ` (skipped: ${work} cannot collapse)`}`,
    async () => {
      const r = await recorded({ headRoom: true });
      const room = Number(readFileSync(join(r.dir, 'head_room'), 'utf8'));
      expect(room % r.pageSize).toBe(0);
      expect(room).toBeGreaterThan(statSync(join(r.dir, 'kallsyms')).size);
      expect(readdirSync(r.dir).filter((n) => /^cpu\d+\.raw$/.test(n))).toEqual([]);
      const regions = readFileSync(join(r.dir, 'cpu_regions'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => l.split(' ').map(Number) as [number, number]);
      expect(regions.map(([cpu]) => cpu)).toEqual(r.lost.map((l) => l.cpu));
      expect(regions[0]![1]).toBe(room);
      // Terabytes apart, and the holes take no space.
      expect(regions[1]![1] - regions[0]![1]).toBeGreaterThanOrEqual(2 ** 38);
      const pages = join(r.dir, 'cpus.raw');
      expect(statSync(pages).blocks * 512).toBeLessThan(room + r.rawBytes + (4 << 20));
      expect([...openRawPagesDir(r.dir).events()].length).toBe(r.total);
      // The pages file becomes the trace.dat: the head in the room, every CPU's pages right after the previous one's.
      const w = finalizeInPlace(r, fresh('regions.dat'), pages);
      const out = w.out;
      expect(w.bytes).toBe(room + r.rawBytes);
      const cpus = openTraceDat(out).info.buffers[0]!.cpus;
      let at = room;
      for (const [cpu] of regions) {
        if (cpus[cpu]!.size === 0) continue;
        expect(cpus[cpu]!.offset).toBe(at);
        at += cpus[cpu]!.size;
      }
      expect(at).toBe(w.bytes);
      expectReportCounts(out, r);
    },
  );

  it.skipIf(!hasTool('trace-cmd') || !regionsSupported(work) || !hasTool('taskset'))(
    'in the regions layout, moves the pages of a later CPU down to the head room when the first CPU recorded none',
    async () => {
      // Only one exec matches the filter, pinned to the last CPU: every other region stays empty.
      const probe = join(mkdtempSync(join(tmpdir(), 'evtrace-probe-')), 'evtrace-region-probe');
      symlinkSync('/bin/true', probe);
      const cpus = readdirSync(join(tracefs, 'per_cpu')).filter((n) => /^cpu\d+$/.test(n)).length;
      const r = await recorded({
        events: ['sched:sched_process_exec'],
        filter: `filename ~ "*evtrace-region-probe"`,
        headRoom: true,
        onStart: () => execFileSync('taskset', ['-c', String(cpus - 1), probe]),
      });
      expect(r.total).toBe(1);
      const room = Number(readFileSync(join(r.dir, 'head_room'), 'utf8'));
      const out = fresh('one-region.dat');
      const w = finalizeRecording(r.dir, out, 'tracedat', { recorded: r.total });
      // Not terabytes: the one page sits right after the head.
      expect(w.bytes).toBe(room + r.pageSize);
      expect(statSync(out).size).toBe(w.bytes);
      expect(openTraceDat(out).info.buffers[0]!.cpus[cpus - 1]!.offset).toBe(room);
      expect(reportCounts(out).get('sched_process_exec')).toBe(1);
    },
  );

  it.skipIf(!hasTool('trace-cmd') || shm === undefined)(
    `with head room where holes cannot be closed, builds the trace.dat around the largest CPU file${shm === undefined ? ' (skipped: no tmpfs at /dev/shm)' : ''}`,
    async () => {
      const r = await recorded({ headRoom: true, dir: join(shm!, `${n++}-raw`) });
      expect(existsSync(join(r.dir, 'cpu_regions'))).toBe(false);
      const room = Number(readFileSync(join(r.dir, 'head_room'), 'utf8'));
      // The head (kallsyms is most of it) fits in the room, a hole of whole pages before every file's pages.
      expect(room % r.pageSize).toBe(0);
      expect(room).toBeGreaterThan(statSync(join(r.dir, 'kallsyms')).size);
      const sizes = r.lost.map((l) => statSync(join(r.dir, `cpu${l.cpu}.raw`)).size - room);
      expect(sizes.every((s) => s >= 0 && s % r.pageSize === 0)).toBe(true);
      expect([...openRawPagesDir(r.dir).events()].length).toBe(r.total);
      const largest = sizes.indexOf(Math.max(...sizes));
      // The largest CPU's file becomes the trace.dat, its pages where they were written. Beside the raw directory,
      // as `evtrace record` puts it: renamed, not copied.
      const { out } = finalizeInPlace(
        r,
        join(shm!, `${n++}-in-place.dat`),
        join(r.dir, `cpu${r.lost[largest]!.cpu}.raw`),
      );
      expect(openTraceDat(out).info.buffers[0]!.cpus[r.lost[largest]!.cpu]!.offset).toBe(room);
      expectReportCounts(out, r);
    },
  );

  it.skipIf(!hasTool('trace-cmd'))(
    'writes through an output that is a symbolic link (copied, not renamed over the link)',
    async () => {
      const r = await recorded({ headRoom: true });
      const target = fresh('link-target.dat');
      writeFileSync(target, 'old');
      const link = fresh('link.dat');
      symlinkSync(target, link);
      finalizeRecording(r.dir, link, 'tracedat');
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      expectReportCounts(target, r);
    },
  );

  for (const layout of ['regions', 'files'] as const) {
    const base = layout === 'regions' ? (regionsSupported(work) ? work : undefined) : shm;
    it.skipIf(!hasTool('trace-cmd') || base === undefined)(
      `keeps the pages readable when building in place fails at the last step, and converts them later (${layout}${base === undefined ? '; skipped: no such file system here' : ''})`,
      async () => {
        const r = await recorded({ headRoom: true, dir: join(base!, `${n++}-raw`) });
        expect(existsSync(join(r.dir, 'cpu_regions'))).toBe(layout === 'regions');
        // The rename to a directory that does not exist fails after the head and the other pages were written.
        expect(() => finalizeRecording(r.dir, join(base!, 'no-such-dir', 'x.dat'), 'tracedat')).toThrow(
          expect.objectContaining({ code: 'ERR_TRACEFS_OUTPUT', errno: 'ENOENT' }),
        );
        if (layout === 'regions') {
          // Every hole closed: the marker's last layout is the one that holds.
          const lines = readFileSync(join(r.dir, 'finalizing_regions'), 'utf8').trim().split('\n');
          expect(Number(lines.at(-1)!.split(' ')[0])).toBe(statSync(join(r.dir, 'cpus.raw')).size);
        } else {
          expect(readFileSync(join(r.dir, 'finalizing'), 'utf8')).toMatch(/^\d+ \d+ \d+\n$/);
        }
        expect([...openRawPagesDir(r.dir).events()].length).toBe(r.total);
        const out = fresh('after-failure.dat');
        finalizeRecording(r.dir, out, 'tracedat');
        expect(existsSync(r.dir)).toBe(false);
        expectReportCounts(out, r);
      },
    );
  }

  it.skipIf(!hasTool('trace-cmd') || !existsSync(join(tracefs, 'events', 'rcu', 'rcu_utilization')))(
    "keeps the kernel's printk strings: rcu_utilization prints as trace-cmd report prints it, in the trace.dat and from the pages",
    async () => {
      const r = await recorded({ events: ['rcu:rcu_utilization', 'sched:sched_switch'] });
      expect(r.events.get('rcu:rcu_utilization')).toBeGreaterThan(0);
      const ours = (reader: ReturnType<typeof openTrace>) => {
        // Every event goes through the formatter, as trace-cmd prints every one: its sched plugin learns task names
        // from the switches, which the rcu lines then show.
        const line = createTextFormatter(reader);
        return [...reader.events()].map(line).filter((l) => / rcu_utilization: /.test(l));
      };
      const fromPages = ours(openTrace(r.dir));
      const out = fresh('rcu.dat');
      finalizeRecording(r.dir, out, 'tracedat', { removeRaw: false });
      const theirs = execFileSync('trace-cmd', ['report', out], {
        maxBuffer: 1 << 28,
        stdio: ['ignore', 'pipe', 'ignore'],
      })
        .toString()
        .split('\n')
        .filter((l) => / rcu_utilization: /.test(l));
      // The strings themselves, not their addresses.
      expect(theirs.length).toBeGreaterThan(0);
      expect(theirs.filter((l) => !/rcu_utilization: +(Start|End) \S/.test(l))).toEqual([]);
      expect(fromPages).toEqual(theirs);
      expect(ours(openTrace(out))).toEqual(theirs);
    },
  );

  it.skipIf(!hasTool('babeltrace2'))('writes CTF that babeltrace2 reads with the same count', async () => {
    const r = await recorded({ events: ['sched:sched_switch', 'kmem:kmalloc'] });
    const out = fresh('ctf');
    const w = finalizeRecording(r.dir, out, 'ctf');
    expect(w.events).toBe(r.total);
    const lines = execFileSync('babeltrace2', [out], { maxBuffer: 1 << 28 })
      .toString()
      .trimEnd()
      .split('\n');
    expect(lines.length).toBe(r.total);
    expect(lines.filter((l) => l.includes(' sched:sched_switch:')).length).toBe(r.events.get('sched:sched_switch'));
  });

  it('pushes the filter down to the kernel: every recorded event satisfies it', async () => {
    const r = await recorded({ events: ['kmem:kmalloc'], filter: 'bytes_req > 128 && bytes_req < 2000' });
    expect(r.userSpaceFilters.size).toBe(0);
    const events = [...openRawPagesDir(r.dir).events()];
    expect(events.length).toBe(r.total);
    for (const e of events) {
      const b = Number(e.fields.bytes_req);
      expect(b > 128 && b < 2000).toBe(true);
    }
  });

  it('reads as SCHED_FIFO by default (every thread, per-CPU readers too) and puts every thread back afterwards', async () => {
    const policies = () => [...threadsScheduling().values()].map((t) => t.policy);
    for (const threads of ['single', 'per-cpu'] as const) {
      expect(policies().every((p) => p === 0)).toBe(true);
      let during: number[] = [];
      const stop = new AbortController();
      const r = await record({
        events: KMEM,
        dir: fresh(`fifo-${threads}`),
        signal: stop.signal,
        threads,
        // onStart runs just before the threads are raised: look a little later, then end the recording.
        onStart: () =>
          void setTimeout(() => {
            during = policies();
            stop.abort();
          }, 50),
      });
      expect(r).toMatchObject({ realtime: 1, priority: undefined });
      expect(during.length).toBeGreaterThan(0);
      expect(during.every((p) => p === 1)).toBe(true);
      expect(policies().every((p) => p === 0)).toBe(true);
    }
  });

  it('reads each CPU in its own thread when asked (threads: per-cpu), head room or not', async () => {
    for (const headRoom of [false, true]) {
      const r = await recorded({ threads: 'per-cpu', events: ['kmem:kmalloc', 'kmem:kfree'], headRoom });
      expect(r.total).toBeGreaterThan(0);
      expect([...openRawPagesDir(r.dir).events()].length).toBe(r.total);
      expect(ours()).toEqual([]);
      if (!hasTool('trace-cmd')) continue;
      const out = fresh(`per-cpu-${headRoom}.dat`);
      finalizeRecording(r.dir, out, 'tracedat');
      expectReportCounts(out, r);
    }
  });

  it('naps in Atomics.wait when asked (sleep: blocking), still turning to the event loop for timers and the abort', async () => {
    const stop = new AbortController();
    let ticks = 0;
    let ticker: NodeJS.Timeout | undefined;
    let startedAt = 0;
    // Timers armed once tracing is on: only the recording loop's turns to the event loop can run them.
    let wakePercent: string | undefined;
    const onStart = () => {
      smallWorkload();
      startedAt = performance.now();
      ticker = setInterval(() => ticks++, 20);
      setTimeout(() => stop.abort(), 1000);
      // The kernel wakes the waiting reader at 18% of a buffer (poll(2) on the raw pipes).
      const own = listInstances(env.path!).find((i) => i.startsWith(`evtrace-${process.pid}-`));
      if (own !== undefined) wakePercent = readFileSync(join(env.path!, 'instances', own, 'buffer_percent'), 'utf8');
    };
    try {
      // The deadline is only a bound: the abort, which needs the event loop, must end it long before.
      const r = await recorded({ sleep: 'blocking', durationMs: 20_000, signal: stop.signal, onStart });
      const took = performance.now() - startedAt;
      expect(took).toBeGreaterThanOrEqual(990);
      expect(took).toBeLessThan(10_000);
      expect(r.total).toBeGreaterThan(0);
      expect([...openRawPagesDir(r.dir).events()].length).toBe(r.total);
      expect(wakePercent?.trim()).toBe('18');
    } finally {
      clearInterval(ticker);
    }
    // A turn every 100 ms: the 20 ms interval ran on several of them (about 10 on a quiet machine).
    expect(ticks).toBeGreaterThanOrEqual(3);
    expect(ours()).toEqual([]);
  });

  it('sets the buffer, sub-buffer size and clock it is given', async () => {
    const r = await recorded({ bufferKb: 256, subbufKb: 8, clock: 'mono' });
    expect(r.pageSize).toBe(8192);
    expect(readFileSync(join(r.dir, 'trace_clock'), 'utf8')).toContain('[mono]');
    expect(readdirSync(r.dir).filter((f) => f.endsWith('.raw')).length).toBe(r.lost.length);
    expect([...openRawPagesDir(r.dir).events()].length).toBe(r.total);
  });

  it('writes a recording cut mid-page (a killed recorder) up to its last complete page', async () => {
    const r = await recorded({ events: ['kmem:kmalloc', 'kmem:kfree', 'sched:sched_switch'] });
    const cpu = r.lost.find((l) => readFileSync(join(r.dir, `cpu${l.cpu}.raw`)).length > 0)!.cpu;
    const file = join(r.dir, `cpu${cpu}.raw`);
    const bytes = readFileSync(file);
    const layout = parseHeaderPage(readFileSync(join(r.dir, 'events', 'header_page'), 'utf8'), {
      pageSize: r.pageSize,
    });
    const last = countPageRecords(bytes, bytes.length - r.pageSize, layout, new Float64Array(65536), {
      records: 0,
      dataBytes: 0,
      missed: false,
      corruptAt: -1,
    }).records;
    truncateSync(file, bytes.length - 100);
    const out = fresh('cut.dat');
    finalizeRecording(r.dir, out, 'tracedat', { removeRaw: false });
    const decoded = [...openRawPagesDir(r.dir, { lenient: true }).events()].length;
    expect(decoded).toBeGreaterThanOrEqual(r.total - last);
    if (hasTool('trace-cmd')) {
      const counts = reportCounts(out);
      expect([...counts.values()].reduce((a, b) => a + b, 0)).toBe(r.total - last);
    }
  });

  describe('failures leave no tracefs state and no output', () => {
    const cases: [string, Partial<RecordOptions>, RegExp][] = [
      ['an unknown event', { events: ['kmem:no_such_event'] }, /ERR_TRACEFS_EVENT|unknown event 'kmem:no_such_event'/],
      ['an invalid filter', { filter: 'bytes_req > 64 && nod == 0' }, /Field not found/],
      ['a missing output directory', { dir: '/nonexistent-evtrace/out.part' }, /does not exist/],
      ['a clock the kernel refuses', { clock: 'no_such_clock' }, /trace clock/],
      ['a sub-buffer size the kernel refuses', { subbufKb: 100000 }, /sub-buffer size/],
    ];
    for (const [what, options, message] of cases) {
      it(`${what}`, async () => {
        const dir = fresh('fail');
        await expect(record({ events: KMEM, dir, durationMs: 50, priority: false, ...options })).rejects.toThrow(
          message,
        );
        // Only this process's instances: other test files record in parallel.
        expect(ours()).toEqual([]);
        expect(existsSync(options.dir ?? dir)).toBe(false);
      });
    }
  });

  it("removes one-shot instances of dead evtrace processes, and only those (an owner's are left to it)", () => {
    const dead = spawnSync('true').pid!;
    const stale = `evtrace-${dead}-0`;
    const alive = `evtrace-${process.pid}-99999`;
    const owned = `evtrace-0123abcd-${dead}-0`;
    for (const name of [stale, alive, owned]) mkdirSync(join(tracefs, 'instances', name));
    try {
      const removed = cleanStaleInstances(tracefs);
      expect(removed).toContain(stale);
      expect(removed).not.toContain(owned);
      expect(listInstances(tracefs)).not.toContain(stale);
      expect(listInstances(tracefs)).toContain(alive);
      expect(listInstances(tracefs)).toContain(owned);
    } finally {
      for (const name of [stale, alive, owned]) {
        try {
          execFileSync('rmdir', [join(tracefs, 'instances', name)], { stdio: 'ignore' });
        } catch {}
      }
    }
  });
});

describe.skipIf(env.why !== undefined)(`user-space filter remainder${env.why ? ` (skipped: ${env.why})` : ''}`, () => {
  it('is applied while writing trace.dat and CTF, counting what it kept', async () => {
    const r = await recorded({ events: ['kmem:kmalloc', 'kmem:kfree'] });
    const reader = openRawPagesDir(r.dir);
    const kmalloc = reader.eventClasses.find((c) => c.name === 'kmem:kmalloc')!;
    const all = [...reader.events()];
    const expected = all.filter((e) => e.eventClass.name !== 'kmem:kmalloc' || Number(e.fields.bytes_req) > 64);
    // As if the kernel could not take this part: the whole expression is left to user space.
    const plan = { ...planEventFilter('bytes_req > 64', kmalloc), kernel: undefined, userSpace: 'bytes_req > 64' };
    const filters = new Map([['kmem:kmalloc', plan]]);
    const dat = fresh('us.dat');
    const w = finalizeRecording(r.dir, dat, 'tracedat', { userSpaceFilters: filters, removeRaw: false });
    expect(w.events).toBe(expected.length);
    expect(w.byEvent?.get('kmem:kfree')).toBe(all.filter((e) => e.eventClass.name === 'kmem:kfree').length);
    if (hasTool('trace-cmd')) expect([...reportCounts(dat).values()].reduce((a, b) => a + b, 0)).toBe(expected.length);
    const ctf = fresh('us-ctf');
    expect(finalizeRecording(r.dir, ctf, 'ctf', { userSpaceFilters: filters }).events).toBe(expected.length);
  });
});

describe.skipIf(env.why !== undefined)(`kernel filter refusal${env.why ? ` (skipped: ${env.why})` : ''}`, () => {
  it('explains a filter the kernel refuses with its error_log entry, and the instance goes away', () => {
    const inst = createInstance(tracefs);
    try {
      expect(() => writeKernelFilter(inst.path, join(inst.path, 'events', 'kmem', 'kmalloc'), 'nod == 0')).toThrowError(
        expect.objectContaining({ code: 'ERR_TRACEFS_FILTER', message: expect.stringMatching(/Field not found/) }),
      );
    } finally {
      inst.remove();
    }
    expect(listInstances(tracefs)).not.toContain(inst.name);
  });
});
