/**
 * The JSON contract of events on a real kernel recording: every line of `evtrace cat --json` valid against the
 * published schema, one JSON type per field across a class's events, addresses as hex and 64-bit integers as decimal
 * strings, and the task and flags columns trace-cmd prints beside the fields (`trace-cmd report -l`). Then the README's
 * jq recipes, run by a shell on that output and on an agent session, checked against answers computed here.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventClassSchema, openTrace } from '@evtrace/trace-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { CLI, cli, startAgent, workDir } from '../testing/agent-daemon.ts';
import { kernelAccess } from '../testing/kernel-recording.ts';
import { run } from '../testing/sample-traces.ts';
import { expectValid, expectValidAgainst } from '../testing/schemas.ts';

const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;

function kernelWhy(): string {
  if (process.getuid?.() !== 0) return 'not root: recording needs root';
  if (!has('trace-cmd')) return 'trace-cmd is not installed (apt-get install trace-cmd)';
  return kernelAccess('').why;
}

const dir = workDir('evtrace-json-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A directory with an `evtrace` that runs this CLI, for shell pipelines as the README writes them. */
function shim(): string {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'evtrace'), `#!/bin/sh\nexec '${process.execPath}' '${CLI}' "$@"\n`);
  chmodSync(join(bin, 'evtrace'), 0o755);
  return bin;
}

/** The README's jq recipes: each command line after its comment. */
function recipes(): Map<string, string> {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const block = /<!-- jq recipes -->\n```sh\n([\s\S]*?)```/.exec(readme)?.[1];
  expect(block, 'the README has its jq recipes').toBeDefined();
  const out = new Map<string, string>();
  const lines = block!.trimEnd().split('\n');
  for (let i = 0; i + 1 < lines.length; i += 2) out.set(lines[i]!.replace(/^# /, ''), lines[i + 1]!);
  return out;
}

/** Runs a README recipe through bash (a failure anywhere in its pipeline fails it) with FILE and SESSION in place of its examples'. */
function recipe(name: string, replace: [string, string]): string {
  const line = recipes().get(name);
  expect(line, `recipe "${name}"`).toBeDefined();
  const r = spawnSync('bash', ['-o', 'pipefail', '-c', line!.replace(replace[0], replace[1])], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
    env: { ...process.env, PATH: `${shim()}:${process.env.PATH}` },
  });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

interface JsonEvent {
  ts_ns: string;
  cpu: number;
  event: string;
  pid: number | null;
  comm: string | null;
  flags: Record<string, boolean | number> | null;
  fields: Record<string, unknown>;
}

/** A JSON value's kind as the contract tells them apart. */
function kind(v: unknown): string {
  if (typeof v === 'string') return /^0x[0-9a-f]+$/.test(v) ? 'hex' : /^-?\d+$/.test(v) ? 'decimal' : 'text';
  if (Array.isArray(v)) return `[${[...new Set(v.map(kind))].join('|')}]`;
  return v === null ? 'null' : typeof v;
}

const why = kernelWhy();

describe.skipIf(why !== '')(`evtrace cat --json on a kernel recording${why ? ` (skipped: ${why})` : ''}`, () => {
  const dat = join(dir, 'k.dat');
  let events: JsonEvent[] = [];
  let stdout = '';

  beforeAll(async () => {
    const r = await run(
      'record',
      ...['-e', 'kmem:kmalloc', '-e', 'kmem:kfree', '-e', 'sched:sched_switch', '-e', 'sched:sched_process_exec'],
      ...['-e', 'irq:softirq_entry', '-e', 'timer:hrtimer_start', '-o', dat],
      ...['--', 'sh', '-c', 'ls -R /proc/self > /dev/null; cat /etc/passwd > /dev/null; sleep 0.1'],
    );
    expect(r.code, r.stderr).toBe(ExitCode.Ok);
    const cat = await run('cat', dat, '--json');
    expect(cat.code, cat.stderr).toBe(ExitCode.Ok);
    stdout = cat.stdout;
    events = stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
  }, 60_000);

  it('writes lines valid against the schema, each field with one JSON type for every event of its class', () => {
    expect(events.length).toBeGreaterThan(50);
    for (const e of events) expectValid('@evtrace/trace-format/schemas/event.json', e);
    const types = new Map<string, Set<string>>();
    for (const e of events)
      for (const [k, v] of Object.entries(e.fields)) {
        const key = `${e.event}.${k}`;
        if (!types.has(key)) types.set(key, new Set());
        // A decimal string and an address are both strings, told apart by their form: one form per field.
        types.get(key)!.add(kind(v));
      }
    const mixed = [...types].filter(([, t]) => t.size > 1).map(([k, t]) => `${k}: ${[...t].join(', ')}`);
    expect(mixed).toEqual([]);
    // And each event against its class's own schema, built from the recording's formats.
    const classes = new Map(openTrace(dat).eventClasses.map((c) => [c.name, eventClassSchema(c)]));
    for (const e of events)
      expectValidAgainst(classes.get(e.event)!, e, '@evtrace/trace-format/schemas/event.json', e.event);
    const of = (name: string) => events.filter((e) => e.event === name);
    const kmalloc = of('kmem:kmalloc');
    expect(kmalloc.length).toBeGreaterThan(0);
    for (const e of kmalloc) {
      // unsigned long printed with %pS, a void pointer, two size_t.
      expect(e.fields.call_site).toMatch(/^0xffff[0-9a-f]{12}$/);
      expect(e.fields.ptr).toMatch(/^0x[0-9a-f]+$/);
      expect(e.fields.bytes_req).toMatch(/^\d+$/);
      expect(e.fields.bytes_alloc).toMatch(/^\d+$/);
      expect(typeof e.fields.node).toBe('number');
    }
    for (const e of of('sched:sched_switch')) {
      expect(typeof e.fields.prev_pid).toBe('number');
      expect(typeof e.fields.prev_comm).toBe('string');
    }
    // hrtimer_start's function is a void * printed with %ps.
    for (const e of of('timer:hrtimer_start')) expect(e.fields.function).toMatch(/^0xffff[0-9a-f]{12}$/);
  });

  it('gives each event the pid, CPU, time and latency flags trace-cmd report -l prints, and the task names it shows', () => {
    const text = execFileSync('trace-cmd', ['report', '-l', '-t', dat], {
      encoding: 'utf8',
      maxBuffer: 1 << 28,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const theirs = [...text.matchAll(/^\s*(.*?)-(\d+)\s+(\d+)(\S{5})\s+(\d+)\.(\d{9}): (\w+):/gm)].map((m) => ({
      pid: Number(m[2]),
      cpu: Number(m[3]),
      lat: m[4]!,
      ts: `${BigInt(m[5]!) * 1_000_000_000n + BigInt(m[6]!)}`,
      name: m[7]!,
    }));
    expect(theirs.length).toBe(events.length);
    events.forEach((e, i) => {
      const t = theirs[i]!;
      expect([e.ts_ns, e.cpu, e.event.split(':')[1], e.pid]).toEqual([t.ts, t.cpu, t.name, t.pid]);
      const f = e.flags!;
      const lat = [
        f.irqs_off ? 'd' : '.',
        f.need_resched ? 'N' : '.',
        f.hardirq && f.softirq ? 'H' : f.hardirq ? 'h' : f.softirq ? 's' : '.',
        f.preempt_depth === 0 ? '.' : (f.preempt_depth as number).toString(16),
        f.migrate_disable === 0 ? '.' : String(f.migrate_disable),
      ].join('');
      expect(lat, JSON.stringify(e)).toBe(t.lat);
    });
    expect(events.some((e) => e.flags!.softirq)).toBe(true);
    // trace-cmd names tasks by saved_cmdlines, the last name each had; evtrace by the name each had when the event
    // fired. They can only agree on tasks that kept one name: those whose every sched_switch record (written by the
    // kernel with the name of the moment) shows trace-cmd's name.
    const plain = execFileSync('trace-cmd', ['report', '-t', dat], {
      encoding: 'utf8',
      maxBuffer: 1 << 28,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const comms = [...plain.matchAll(/^\s*(.*?)-(\d+)\s+\[\d+\]\s+\d+\.\d{9}: \w+:/gm)].map((m) => m[1]!);
    expect(comms.length).toBe(events.length);
    const names = new Map<number, Set<unknown>>();
    const saw = (pid: unknown, comm: unknown) => {
      if (!names.has(pid as number)) names.set(pid as number, new Set());
      names.get(pid as number)!.add(comm);
    };
    for (const e of events.filter((x) => x.event === 'sched:sched_switch')) {
      saw(e.fields.prev_pid, e.fields.prev_comm);
      saw(e.fields.next_pid, e.fields.next_comm);
    }
    // A task that exec'd while recorded had a second name from then on (evtrace names its later events by it,
    // trace-cmd by whichever saved_cmdlines kept), whether or not it switched again.
    const execd = new Set(events.filter((x) => x.event === 'sched:sched_process_exec').map((x) => x.fields.pid));
    // How many events are of such tasks depends on what else ran during the recording, so the bound is on the
    // events of tasks seen under one name, not on all events.
    let eligible = 0;
    let compared = 0;
    events.forEach((e, i) => {
      const seen = names.get(e.pid!);
      if (e.pid === 0 || seen?.size !== 1 || execd.has(e.pid)) return;
      eligible++;
      if (!seen.has(comms[i])) return;
      expect(e.comm, JSON.stringify(e)).toBe(comms[i]);
      compared++;
    });
    expect(compared).toBeGreaterThan(20);
    expect(compared / eligible).toBeGreaterThan(0.9);
    // The kernel's own record of a switch names the task switching out: the name evtrace gives its event.
    const switches = events.filter((e) => e.event === 'sched:sched_switch' && e.pid !== 0);
    const agree = switches.filter((e) => e.comm === e.fields.prev_comm);
    expect(agree.length / switches.length).toBeGreaterThan(0.95);
    expect(events.filter((e) => e.pid === 0).every((e) => e.comm === `swapper/${e.cpu}`)).toBe(true);
  });

  it('convert --to jsonl writes the same lines', async () => {
    const out = join(dir, 'k.jsonl');
    expect((await run('convert', dat, '--to', 'jsonl', '-o', out)).code).toBe(ExitCode.Ok);
    expect(readFileSync(out, 'utf8')).toBe(stdout);
  });

  it("keeps each field's type through a conversion to CTF: the same objects but the task names CTF does not carry", async () => {
    const ctf = join(dir, 'k.ctf');
    expect((await run('convert', dat, '--to', 'ctf', '-o', ctf)).code).toBe(ExitCode.Ok);
    const back = await run('cat', ctf, '--json');
    expect(back.code, back.stderr).toBe(ExitCode.Ok);
    const strip = ({ comm: _comm, ...rest }: JsonEvent) => rest;
    const theirs = back.stdout
      .trimEnd()
      .split('\n')
      .map((l) => strip(JSON.parse(l)));
    expect(theirs).toEqual(events.map(strip));
  });

  it.skipIf(!has('jq'))("runs the README's jq recipes on it: their answers are the events'", () => {
    const bytes = new Map<string, number>();
    for (const e of events.filter((x) => x.event === 'kmem:kmalloc')) {
      const site = e.fields.call_site as string;
      bytes.set(site, (bytes.get(site) ?? 0) + Number(e.fields.bytes_alloc));
    }
    const top = JSON.parse(recipe('kmalloc bytes by call site, most first', ['k.dat', dat])) as {
      call_site: string;
      bytes: number;
    }[];
    expect(top.length).toBe(Math.min(10, bytes.size));
    for (const row of top) expect(row.bytes).toBe(bytes.get(row.call_site));
    expect(top[0]!.bytes).toBe(Math.max(...bytes.values()));
    expect(top.map((r) => r.bytes)).toEqual(top.map((r) => r.bytes).sort((a, b) => b - a));

    const count = new Map<string, number>();
    for (const e of events) count.set(`${e.comm ?? '?'}-${e.pid}`, (count.get(`${e.comm ?? '?'}-${e.pid}`) ?? 0) + 1);
    const tasks = recipe('the tasks with the most events', ['k.dat', dat])
      .trimEnd()
      .split('\n')
      .map((l) => /^\s*(\d+) (.*)$/.exec(l)!);
    expect(tasks.length).toBe(Math.min(5, count.size));
    for (const m of tasks) expect(Number(m[1])).toBe(count.get(m[2]!));
    expect(Number(tasks[0]![1])).toBe(Math.max(...count.values()));

    const irq = new Map<number, number>();
    for (const e of events) if (e.flags!.hardirq || e.flags!.softirq) irq.set(e.cpu, (irq.get(e.cpu) ?? 0) + 1);
    const perCpu = JSON.parse(recipe('events in interrupt context per CPU', ['k.dat', dat]));
    expect(perCpu).toEqual([...irq].sort((a, b) => a[0] - b[0]).map(([cpu, n]) => ({ cpu, events: n })));
  });
});

const noJq = has('jq') ? '' : ' (skipped: jq is not installed (apt-get install jq))';

describe.skipIf(!has('jq'))(`the README's session recipe${noJq}`, () => {
  it("prints each CPU's lost events as session status --json has them", { timeout: 60_000 }, async () => {
    const agent = await startAgent(workDir('evtrace-json-agent-'), ['--demo-rate', '2000']);
    try {
      const created = await cli(agent, [
        'session',
        'create',
        'flight',
        '--events',
        'kmem:*',
        '--source',
        'demo',
        '--mode',
        'discard',
      ]);
      expect(created.code, created.stderr).toBe(0);
      expect((await cli(agent, ['session', 'start', 'flight'])).code).toBe(0);
      const status = await cli(agent, ['session', 'status', 'flight', '--json']);
      const s = JSON.parse(status.stdout) as { cpus: { cpu: number; lost: number }[] };
      expectValid('@evtrace/agent-protocol/schemas/session-status.json', s);
      expect(s.cpus.length).toBeGreaterThan(0);
      const r = spawnSync('bash', ['-o', 'pipefail', '-c', recipes().get('events lost per CPU by a session')!], {
        encoding: 'utf8',
        env: { ...process.env, PATH: `${shim()}:${process.env.PATH}`, EVTRACE_AGENT_SOCKET: agent.socket },
      });
      expect(r.status, r.stderr).toBe(0);
      const got = r.stdout
        .trimEnd()
        .split('\n')
        .map((l) => /^cpu(\d+) lost (\d+)$/.exec(l)!.slice(1).map(Number));
      expect(got.map(([cpu]) => cpu)).toEqual(s.cpus.map((c) => c.cpu));
      for (const [, lost] of got) expect(lost).toBeGreaterThanOrEqual(0);
    } finally {
      await agent.stop();
    }
  });
});
