import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openTraceDat, sliceOf, writeTraceDatPages } from '@evtrace/trace-format';
import { beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from './exit-codes.ts';
import { printSliced, sliceReading } from './sliced-lines.ts';
import { kernelAccess, recordSystems } from './testing/kernel-recording.ts';
import { run } from './testing/sample-traces.ts';
import { openInput } from './trace-input.ts';

const why = kernelAccess('not root: recording needs root').why || undefined;

/** `cat` on `threads` threads with slices of about `records` records, as text. */
async function sliced(
  dat: string,
  threads: number,
  records: number,
  options: { json?: boolean; filter?: string } = {},
): Promise<{ text: string; failure?: string; notes: readonly string[] }> {
  const opened = openInput(dat, options.filter !== undefined ? { filter: options.filter } : {});
  const plan = sliceReading(dat, opened, { threads, limited: false, recordsPerSlice: records });
  expect(plan, 'a recording with pages is shared').toBeDefined();
  const parts: Buffer[] = [];
  const read = await printSliced(
    dat,
    { json: options.json === true, ...(options.filter !== undefined ? { filter: options.filter } : {}) },
    plan!,
    (bytes) => parts.push(Buffer.from(bytes)),
  );
  return {
    text: Buffer.concat(parts).toString('utf8'),
    ...(read.failure !== undefined ? { failure: String(read.failure) } : {}),
    notes: read.notes,
  };
}

describe.skipIf(why !== undefined)(
  `cat on several threads prints what one thread prints${why ? ` (skipped: ${why})` : ''}`,
  () => {
    let dat = '';
    /** The recording without saved cmdlines: tasks are named only by the sched events as they are printed. */
    let unnamed = '';
    let slices = 0;
    beforeAll(async () => {
      // Tasks that come and go, rename themselves and sleep: sched_switch, fork, exec and rename events name them.
      ({ dat } = await recordSystems(
        ['kmem', 'sched', 'irq', 'timer', 'workqueue', 'task'],
        'for i in 1 2 3 4 5 6 7 8; do (printf w$i > /proc/self/comm; ls /proc/self > /dev/null; sleep 0.01); done',
        'evtrace-sliced-',
      ));
      const copy = openTraceDat(dat).pagesInput();
      if (!('input' in copy)) throw new Error(copy.reason);
      const { cmdlines: _, ...input } = copy.input;
      unnamed = join(dat, '..', 'unnamed.dat');
      writeTraceDatPages(unnamed, input);
      const opened = openInput(dat, {});
      const plan = sliceReading(dat, opened, { threads: 2, limited: false, recordsPerSlice: 64 });
      const seen = new Set<number>();
      for (const e of opened.events()) seen.add(sliceOf(plan!.slices, e.tsNs));
      slices = seen.size;
    }, 60_000);

    it('splits the recording into many slices, named tasks among them', async () => {
      expect(slices).toBeGreaterThan(10);
      const one = await run('cat', dat, '--threads', '1');
      expect(one.stdout).toMatch(/ sched_switch: /);
      expect(one.stdout).toMatch(/ task_rename: /);
    });

    for (const [label, options] of [
      ['text', {}],
      ['--json', { json: true }],
      ['--filter on the record', { filter: 'common_pid > 0' }],
      ['--filter on COMM', { filter: 'COMM ~ "w*" || COMM == "sh"' }],
    ] as const) {
      it(`${label}: two and three threads print the single thread's bytes`, async () => {
        const args = [
          ...('json' in options ? ['--json'] : []),
          ...('filter' in options ? ['--filter', options.filter] : []),
        ];
        const one = await run('cat', dat, '--threads', '1', ...args);
        expect(one.code, one.stderr).toBe(ExitCode.Ok);
        expect(one.stdout.length).toBeGreaterThan(1000);
        for (const threads of [2, 3]) {
          const r = await sliced(dat, threads, 64, options);
          expect(r.failure).toBeUndefined();
          expect(r.text === one.stdout, `${threads} threads`).toBe(true);
        }
      }, 60_000);
    }

    it('text without saved cmdlines: every thread learns the names the sched events print', async () => {
      const one = await run('cat', unnamed, '--threads', '1');
      expect(one.code, one.stderr).toBe(ExitCode.Ok);
      // Names learnt from sched events head lines that would otherwise read <...>.
      const named = one.stdout.split('\n').filter((l) => /^\s*[^<\s][^\s]*-\d+ /.test(l) && !/^\s*<idle>-0 /.test(l));
      expect(named.length).toBeGreaterThan(10);
      for (const threads of [2, 3]) expect((await sliced(unnamed, threads, 64)).text === one.stdout).toBe(true);
    }, 60_000);

    it('a failed write stops the threads and is the answer, not a hang', async () => {
      const opened = openInput(dat, {});
      const plan = sliceReading(dat, opened, { threads: 2, limited: false, recordsPerSlice: 64 })!;
      let written = 0;
      const full = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      const read = await printSliced(dat, { json: false }, plan, (bytes) => {
        if (written > 100_000) throw full;
        written += bytes.length;
      });
      expect(read.failure).toBe(full);
      expect(written).toBeGreaterThan(100_000);
    }, 60_000);

    it('through the CLI: --threads 2 prints the same, and refuses a bad count', async () => {
      const one = await run('cat', dat, '--threads', '1');
      const two = await run('cat', dat, '--threads', '2');
      expect(two.code, two.stderr).toBe(ExitCode.Ok);
      expect(two.stdout).toBe(one.stdout);
      expect(two.stderr).toBe(one.stderr);
      const bad = await run('cat', dat, '--threads', '0');
      expect(bad.code).toBe(ExitCode.Usage);
      expect(bad.stderr).toMatch(/^evtrace: ERR_CLI_USAGE: --threads must be an integer from 1 to 64, not '0'/m);
    });

    it("a filter that fits no event class is the single thread's usage error", async () => {
      const one = await run('cat', dat, '--threads', '1', '--filter', 'no_such_field > 1');
      const two = await run('cat', dat, '--threads', '2', '--filter', 'no_such_field > 1');
      expect(one.code).toBe(ExitCode.Usage);
      expect(two.code).toBe(ExitCode.Usage);
      expect(two.stderr).toBe(one.stderr);
    });

    it('a corrupt page fails naming it, after printing only lines a single thread prints', async () => {
      // An uncompressed copy, one page in the middle of the busiest CPU's data given an impossible commit.
      const copy = openTraceDat(dat).pagesInput();
      if (!('input' in copy)) throw new Error(copy.reason);
      const flat = join(mkdtempSync(join(tmpdir(), 'evtrace-sliced-bad-')), 'flat.dat');
      writeTraceDatPages(flat, copy.input, { version: 6 });
      const info = openTraceDat(flat).info;
      const cpu = info.buffers[0]!.cpus.reduce((a, b) => (b.size > a.size ? b : a));
      const page = info.pageSize;
      const bytes = readFileSync(flat);
      const at = cpu.offset + Math.floor(cpu.size / page / 2) * page;
      bytes.writeBigUInt64LE(0x3fffffffn, at + 8);
      const bad = join(flat, '..', 'bad.dat');
      writeFileSync(bad, bytes);
      const one = await run('cat', bad, '--threads', '1');
      const two = await run('cat', bad, '--threads', '2');
      expect(one.stdout.length).toBeGreaterThan(1000);
      expect(one.code).not.toBe(ExitCode.Ok);
      expect(two.code).toBe(one.code);
      const errorLine = (s: string) => s.split('\n').find((l) => /^evtrace: ERR_/.test(l));
      expect(errorLine(two.stderr)).toBe(errorLine(one.stderr));
      const lines = new Set(one.stdout.split('\n'));
      expect(two.stdout.split('\n').every((l) => lines.has(l))).toBe(true);
    });
  },
);

describe('which reads are shared between threads', () => {
  it('not CTF, not with --lenient or --limit, not one thread; small recordings only when asked', async () => {
    const { sampleInputs } = await import('./testing/sample-traces.ts');
    const { dat } = sampleInputs();
    const opened = openInput(dat, {});
    expect(sliceReading(dat, opened, { threads: 1, limited: false })).toBeUndefined();
    expect(sliceReading(dat, opened, { threads: 2, limited: true })).toBeUndefined();
    expect(sliceReading(dat, opened, { threads: 2, lenient: true, limited: false })).toBeUndefined();
    // 40 events: one thread, unless the user asks for more.
    expect(sliceReading(dat, opened, { limited: false })).toBeUndefined();
    expect(sliceReading(dat, opened, { threads: 2, limited: false })?.count).toBe(2);
    // Standard input is read once.
    expect(sliceReading('-', opened, { threads: 2, limited: false })).toBeUndefined();
    const ctf = mkdtempSync(join(tmpdir(), 'evtrace-sliced-ctf-'));
    expect((await run('convert', dat, '-o', join(ctf, 'out'), '--to', 'ctf')).code).toBe(ExitCode.Ok);
    expect(
      sliceReading(join(ctf, 'out'), openInput(join(ctf, 'out'), {}), { threads: 2, limited: false }),
    ).toBeUndefined();
    expect(execFileSync('ls', [join(ctf, 'out')], { encoding: 'utf8' })).toMatch(/metadata/);
  });
});
