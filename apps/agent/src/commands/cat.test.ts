import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { openTrace } from '@evtrace/trace-format';
import { createInstance, findTracefs, record } from '@evtrace/tracefs';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { kernelAccess, recordSystems } from '../testing/kernel-recording.ts';
import { run, sampleInputs } from '../testing/sample-traces.ts';
import { expectValid } from '../testing/schemas.ts';

describe('evtrace cat', () => {
  const { dat, raw, dir } = sampleInputs();

  it('prints trace.dat events in trace-cmd report style, with symbols, saved cmdlines and the kmem plugin', async () => {
    const r = await run('cat', dat);
    expect(r.code).toBe(ExitCode.Ok);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines.length).toBe(40);
    expect(lines[0]).toBe(
      '          worker-100   [000]     1.000000: kmalloc:              (kmalloc_caller+0x10) call_site=kmalloc_caller+0x10 ptr=0xffff888100000000 bytes_req=0 bytes_alloc=0 node=-1',
    );
    expect(lines[2]).toMatch(/^\s{11}<\.\.\.>-102 {3}\[000\] {5}1\.000002: kmalloc:/);
    expect(lines[3]).toBe(
      '          worker-100   [001]     1.000003: sched_process_exec:   filename=/bin/t3 pid=103 old_pid=103',
    );
  });

  it('--all-buffers reads every buffer (the same lines when there is only the top one); not with --buffer', async () => {
    const a = await run('cat', dat);
    const b = await run('cat', dat, '--all-buffers');
    expect(b.code).toBe(ExitCode.Ok);
    expect(b.stdout).toBe(a.stdout);
    expect((await run('cat', dat, '--all-buffers', '--json')).stdout).toBe((await run('cat', dat, '--json')).stdout);
    const both = await run('cat', dat, '--all-buffers', '--buffer', 'x');
    expect(both.code).toBe(ExitCode.Usage);
    expect(both.stderr).toMatch(/--buffer and --all-buffers contradict each other/);
  });

  it('prints the same events from a raw-pages directory', async () => {
    const a = await run('cat', dat);
    const b = await run('cat', raw);
    expect(b.code).toBe(ExitCode.Ok);
    expect(b.stdout).toBe(a.stdout);
  });

  it('--limit/-n prints only the first N events, after --filter', async () => {
    const all = (await run('cat', dat)).stdout.trimEnd().split('\n');
    const r = await run('cat', dat, '-n', '5');
    expect(r.code).toBe(ExitCode.Ok);
    expect(r.stdout.trimEnd().split('\n')).toEqual(all.slice(0, 5));
    const filtered = (await run('cat', dat, '--filter', 'common_pid > 100')).stdout.trimEnd().split('\n');
    expect(filtered.length).toBeGreaterThan(2);
    expect(filtered.length).toBeLessThan(all.length);
    const limited = await run('cat', dat, '--filter', 'common_pid > 100', '--limit', '2');
    expect(limited.stdout.trimEnd().split('\n')).toEqual(filtered.slice(0, 2));
    expect((await run('cat', dat, '-n', '1000')).stdout.trimEnd().split('\n')).toEqual(all);
    const bad = await run('cat', dat, '-n', 'ten');
    expect(bad.code).toBe(ExitCode.Usage);
    expect(bad.stderr).toMatch(/--limit must be a non-negative integer, not 'ten'/);
  });

  it('--json writes one object per line and nothing else, fields typed by their format, valid against the schema', async () => {
    const r = await run('cat', dat, '--json');
    expect(r.code).toBe(ExitCode.Ok);
    const objects = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(objects.length).toBe(40);
    for (const o of objects) expectValid('@evtrace/trace-format/schemas/event.json', o);
    // call_site is an unsigned long printed with %pS, ptr a pointer: hex; size_t and unsigned long: 64-bit strings.
    expect(objects[0]).toEqual({
      ts_ns: '1000000000',
      cpu: 0,
      event: 'kmem:kmalloc',
      pid: 100,
      comm: 'worker',
      flags: {
        irqs_off: false,
        need_resched: false,
        preempt_resched: false,
        hardirq: false,
        softirq: false,
        nmi: false,
        preempt_depth: 0,
        migrate_disable: 0,
      },
      fields: {
        call_site: '0xffffffff81200010',
        ptr: '0xffff888100000000',
        bytes_req: '0',
        bytes_alloc: '0',
        gfp_flags: '3264',
        node: -1,
      },
    });
    // A task neither saved_cmdlines nor the recording names.
    expect(objects[2]).toMatchObject({ pid: 102, comm: null });
    expect(objects[3]).toMatchObject({ event: 'sched:sched_process_exec', fields: { filename: '/bin/t3' } });
    expect(r.stderr).toBe('');
  });

  it('--filter keeps matching events and notes the classes it does not apply to on stderr', async () => {
    const r = await run('cat', dat, '--json', '--filter', 'bytes_req >= 200 && common_pid == 101');
    expect(r.code).toBe(ExitCode.Ok);
    const objects = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(objects.map((o) => o.fields.bytes_req)).toEqual(['220', '250', '280', '340', '370']);
    expect(r.stderr).toMatch(/filter does not apply to sched:sched_process_exec/);
    const bad = await run('cat', dat, '--filter', 'nosuch == 1');
    expect(bad.code).toBe(ExitCode.Usage);
    expect(bad.stderr).toMatch(/--filter:/);
    for (const json of [[], ['--json']]) {
      const none = await run('cat', dat, ...json, '-n', '0', '--filter', 'nosuch == 1');
      expect(none.code).toBe(ExitCode.Usage);
    }
  });

  it('fails with status 1 and the file and offset for a corrupt or unknown input', async () => {
    const junk = join(dir, 'junk');
    writeFileSync(junk, 'not a trace at all');
    const r = await run('cat', junk);
    expect(r.code).toBe(ExitCode.Failure);
    expect(r.stderr).toMatch(/ERR_TRACE_INPUT: .*junk: byte 0: not a trace\.dat file/);
    const missing = await run('cat', join(dir, 'missing'));
    expect(missing.code).toBe(ExitCode.Failure);
    const buffer = await run('cat', dat, '--buffer', 'nope');
    expect(buffer.code).toBe(ExitCode.Failure);
    expect(buffer.stderr).toMatch(/no buffer "nope" in the file \(it has ""\)/);
  });
});

const FIXTURES = new URL('../../../../../shared/fixtures/ctf-babeltrace-v2.0.4', import.meta.url).pathname;

describe.skipIf(!existsSync(FIXTURES))(
  `evtrace cat on CTF traces${existsSync(FIXTURES) ? '' : ` (skipped: ${FIXTURES} is absent)`}`,
  () => {
    it.each(['wk-heartbeat-u', 'smalltrace', 'succeed4'])('prints %s as babeltrace2 does', async (name) => {
      const r = await run('cat', `${FIXTURES}/tests/data/ctf-traces/succeed/${name}`);
      expect(r.code).toBe(ExitCode.Ok);
      const expected = gunzipSync(
        readFileSync(`${FIXTURES}/expected/succeed/${name}/babeltrace2-text.txt.gz`),
      ).toString();
      expect(r.stdout).toBe(expected);
    });

    it.each(['wk-heartbeat-u', 'smalltrace', 'sequence', 'struct-array-align-elem', '2packets', 'debug-info'])(
      "writes %s as JSON lines valid against the event schema, the task from LTTng's vtid context",
      async (name) => {
        const r = await run('cat', `${FIXTURES}/tests/data/ctf-traces/succeed/${name}`, '--json');
        expect(r.code, r.stderr).toBe(ExitCode.Ok);
        const objects = r.stdout
          .trimEnd()
          .split('\n')
          .map((l) => JSON.parse(l));
        expect(objects.length).toBeGreaterThan(0);
        for (const o of objects) expectValid('@evtrace/trace-format/schemas/event.json', o, name);
        // CTF records no ftrace flags.
        expect(objects.every((o) => o.flags === null)).toBe(true);
        if (name === 'wk-heartbeat-u') expect(objects[0]).toMatchObject({ pid: 3214, comm: null });
        // LTTng's statedump declares baddr a 64-bit integer of base 16: an address; memsz a 64-bit count.
        if (name === 'debug-info') expect(objects[0].fields).toMatchObject({ baddr: '0x7ffcbd1e1000', memsz: '0' });
      },
    );
  },
);

const recordWhy = kernelAccess('not root: recording needs root').why || undefined;

describe.skipIf(recordWhy !== undefined)(
  `--filter COMM over a recording${recordWhy ? ` (skipped: ${recordWhy})` : ''}`,
  () => {
    it("agrees with the kernel's own COMM filter, both names, on a task that renames itself without having been named", async () => {
      const tracefs = findTracefs();
      const dir = mkdtempSync(join(tmpdir(), 'evtrace-cat-rename-'));
      const tag = process.pid % 100_000;
      const [oldName, newName] = [`evt-old-${tag}`, `evt-new-${tag}`];
      // Started as oldName (exec'd through a link of that name) before anything records, so only its task_rename
      // and saved_cmdlines (which holds its last name) can name it in the recording.
      symlinkSync('/bin/sh', join(dir, oldName));
      const child = spawn(
        join(dir, oldName),
        [
          '-c',
          `echo ready; read go; : < /etc/hostname; : < /etc/passwd; printf ${newName} > /proc/self/comm; : < /etc/hostname; : < /etc/passwd`,
        ],
        { stdio: ['pipe', 'pipe', 'ignore'] },
      );
      const exited = once(child, 'exit');
      await once(child.stdout, 'data');
      // The kernel's verdicts: one instance per name, filtering the same events on COMM as they fire.
      const events = ['syscalls/sys_enter_openat', 'task/task_rename'];
      const judges = [oldName, newName].map((name) => {
        const inst = createInstance(tracefs);
        writeFileSync(join(inst.path, 'tracing_on'), '0');
        for (const e of events) {
          writeFileSync(join(inst.path, 'events', e, 'filter'), `COMM == "${name}"`);
          writeFileSync(join(inst.path, 'events', e, 'enable'), '1');
        }
        writeFileSync(join(inst.path, 'tracing_on'), '1');
        return { name, inst };
      });
      const kernel = new Map<string, string[]>();
      const raw = join(dir, 'raw');
      try {
        const stop = new AbortController();
        void exited.then(() => setTimeout(() => stop.abort(), 200));
        await record({
          events: events.map((e) => e.replace('/', ':')),
          dir: raw,
          tracefs,
          signal: stop.signal,
          onStart: () => child.stdin.end('go\n'),
        });
        for (const { name, inst } of judges) {
          writeFileSync(join(inst.path, 'tracing_on'), '0');
          kernel.set(
            name,
            readFileSync(join(inst.path, 'trace'), 'utf8')
              .split('\n')
              .filter((l) => l !== '' && !l.startsWith('#'))
              .map((l) => {
                // A syscall entry prints as the call, `sys_openat(dfd: ...)`; other events as `name: fields`.
                const m = /\[(\d+)\]\s+\S+\s+[\d.]+: (\w+)([:(])/.exec(l);
                if (m === null) throw new Error(`unexpected trace line: ${l}`);
                return `${Number(m[1])} ${m[3] === '(' ? m[2]!.replace(/^sys_/, 'sys_enter_') : m[2]}`;
              }),
          );
        }
      } finally {
        child.kill();
        for (const { inst } of judges) inst.remove();
      }
      expect((await exited)[0]).toBe(0);
      // Three opens and the rename under the old name (the rename fires before the name changes); two opens after.
      expect(kernel.get(oldName)!.map((k) => k.split(' ')[1])).toEqual([
        'sys_enter_openat',
        'sys_enter_openat',
        'sys_enter_openat',
        'task_rename',
      ]);
      expect(kernel.get(newName)!.map((k) => k.split(' ')[1])).toEqual(['sys_enter_openat', 'sys_enter_openat']);
      for (const name of [oldName, newName]) {
        const r = await run('cat', raw, '--json', '--filter', `COMM == "${name}"`);
        expect(r.code, r.stderr).toBe(ExitCode.Ok);
        const ours = r.stdout
          .trimEnd()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { cpu: number; event: string })
          .map((e) => `${e.cpu} ${e.event.slice(e.event.indexOf(':') + 1)}`);
        expect(ours, `COMM == "${name}"`).toEqual(kernel.get(name));
      }
    });

    it('selects a task by the name it had when each event fired, across a rename', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'evtrace-cat-comm-'));
      const dat = join(dir, 'rename.dat');
      const name = `evt-rn-${process.pid % 100_000}`;
      // The shell opens files itself for redirections (openat events), renames itself, then opens more.
      const script = `: < /etc/hostname; : < /etc/passwd; printf ${name} > /proc/self/comm; : < /etc/hostname; : < /etc/passwd`;
      const events = ['sched:sched_switch', 'sched:sched_process_fork', 'sched:sched_process_exec', 'task:task_rename'];
      const recorded = await run(
        'record',
        ...events.flatMap((e) => ['-e', e]),
        '-e',
        'syscalls:sys_enter_openat',
        '-o',
        dat,
        '--',
        '/bin/sh',
        '-c',
        script,
      );
      expect(recorded.code, recorded.stderr).toBe(ExitCode.Ok);

      // The truth from the decoded recording: the renamed task and the moment of its rename.
      const all = [...openTrace(dat).events()];
      const rename = all.find((e) => e.eventClass.name === 'task:task_rename' && e.fields.newcomm === name);
      expect(rename, 'the recording holds the rename').toBeDefined();
      const pid = rename!.fields.pid;
      const pidOf = (e: (typeof all)[number]) => e.scopes?.['event.context']?.common_pid;
      const key = (e: { ts_ns: string; cpu: number | null; event: string }) => `${e.ts_ns}/${e.cpu}/${e.event}`;
      const ofTask = all.filter((e) => pidOf(e) === pid);
      const before = ofTask.filter((e) => e.tsNs < rename!.tsNs && e.eventClass.name === 'syscalls:sys_enter_openat');
      const after = ofTask.filter((e) => e.tsNs > rename!.tsNs);
      // Opens of /etc/hostname, /etc/passwd and /proc/self/comm before; of /etc/hostname and /etc/passwd after.
      expect(before.length).toBeGreaterThanOrEqual(3);
      expect(after.filter((e) => e.eventClass.name === 'syscalls:sys_enter_openat').length).toBeGreaterThanOrEqual(2);
      const expected = after.map((e) => key({ ts_ns: String(e.tsNs), cpu: e.cpu, event: e.eventClass.name }));

      const selected = async (...args: string[]) => {
        const r = await run(...args);
        expect(r.code, r.stderr).toBe(ExitCode.Ok);
        return r.stdout
          .trimEnd()
          .split('\n')
          .filter(Boolean)
          .map((l) => key(JSON.parse(l)));
      };
      const upper = await selected('cat', dat, '--json', '--filter', `COMM == "${name}"`);
      expect(upper).toEqual(expected);
      expect(await selected('cat', dat, '--json', '--filter', `comm ~ "evt-rn-*" && common_pid == ${pid}`)).toEqual(
        expected,
      );
      // convert goes through the same filter.
      const jsonl = join(dir, 'renamed.jsonl');
      expect((await run('convert', dat, '-o', jsonl, '--to', 'jsonl', '--filter', `COMM == "${name}"`)).code).toBe(
        ExitCode.Ok,
      );
      expect(
        readFileSync(jsonl, 'utf8')
          .trimEnd()
          .split('\n')
          .map((l) => key(JSON.parse(l))),
      ).toEqual(expected);
      // The name before the rename selects the task's events from its exec (which renames it "sh") up to and
      // including its task_rename, which fires while the old name is still current.
      const exec = ofTask.find((e) => e.eventClass.name === 'task:task_rename' && e.fields.newcomm === 'sh');
      expect(exec, 'the exec of /bin/sh renames the task').toBeDefined();
      const asSh = ofTask
        .filter((e) => e.tsNs > exec!.tsNs && e.tsNs <= rename!.tsNs)
        .map((e) => key({ ts_ns: String(e.tsNs), cpu: e.cpu, event: e.eventClass.name }));
      expect(asSh.length).toBeGreaterThan(before.length);
      expect(await selected('cat', dat, '--json', '--filter', `COMM == "sh" && common_pid == ${pid}`)).toEqual(asSh);
    });
  },
);

const traceCmd = spawnSync('sh', ['-c', 'command -v trace-cmd']).status === 0;
const reportWhy = recordWhy ?? (traceCmd ? undefined : 'trace-cmd is not installed (apt install trace-cmd)');

describe.skipIf(reportWhy !== undefined)(
  `evtrace cat on an evtrace recording against trace-cmd report${reportWhy ? ` (skipped: ${reportWhy})` : ''}`,
  () => {
    it('prints every line as trace-cmd report does, for kmem, sched, irq, timer, workqueue, syscalls, tlb and rcu events', async () => {
      const { dat, systems } = await recordSystems(
        ['kmem', 'sched', 'irq', 'timer', 'workqueue', 'syscalls', 'tlb', 'rcu'],
        'for i in 1 2 3 4 5; do ls /proc/self > /dev/null; done; sleep 0.2',
        'evtrace-cat-report-',
      );
      const cat = await run('cat', dat);
      expect(cat.code, cat.stderr).toBe(ExitCode.Ok);
      const ours = cat.stdout.trimEnd().split('\n');
      const theirs = execFileSync('trace-cmd', ['report', dat], {
        encoding: 'utf8',
        maxBuffer: 1 << 30,
        stdio: ['ignore', 'pipe', 'ignore'],
      })
        .replace(/^cpus=\d+\n/, '')
        .trimEnd()
        .split('\n');
      expect(ours.length).toBe(theirs.length);
      for (const event of ['sched_switch', 'kmalloc', 'hrtimer_expire_entry', 'mm_page_alloc'])
        expect(theirs.some((l) => l.includes(` ${event}: `))).toBe(true);
      // rcu_utilization's string, from the printk formats the recording kept, not its address.
      if (systems.includes('rcu')) expect(theirs.some((l) => /rcu_utilization: +(Start|End) \S/.test(l))).toBe(true);
      // The one tolerated difference is trace-cmd's: it reads timer_start's `REC->flags & (A | B | C | D)` as
      // `(REC->flags & A) | B | C | D` (see isTimerStartFlags in @evtrace/trace-format's tests).
      const cut = (l: string) => (l.includes(' timer_start: ') ? l.replace(/ flags=\S*$/, '') : l);
      const differing = ours.filter((l, i) => cut(l) !== cut(theirs[i]!));
      expect(differing.length, differing.slice(0, 3).join('\n')).toBe(0);
    }, 60_000);
  },
);
