/**
 * Live events carry their task: `pid` (the record's common_pid) and `comm` (the name the task had), for the demo
 * source (names from its saved_cmdlines) and the kernel (judged by sched_switch, whose prev_pid/prev_comm the
 * kernel itself wrote into the same record).
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { LiveEvent } from '@evtrace/agent-protocol';
import { CommTracker } from '@evtrace/filters';
import {
  createFtraceTextFormatter,
  encodeJsonEvent,
  eventToJsonLine,
  ftraceTimestamp,
  JsonEventDecoder,
  openRawPagesDir,
  type TraceEvent,
} from '@evtrace/trace-format';
import { findTracefs, recordDemo } from '@evtrace/tracefs';
import { afterAll, describe, expect, it } from 'vitest';
import { liveTextFormatter } from '../output/live-text.ts';
import { cli, type RunningAgent, startAgent, workDir } from '../testing/agent-daemon.ts';
import { expectValid } from '../testing/schemas.ts';
import { liveEventJson, TaskNames } from './viewer.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const fresh = () => {
  const d = workDir('agent-tasks-');
  dirs.push(d);
  return d;
};

/** The first `n` events a new viewer of `session` gets, as the agent sent them (the codec writes back what it read). */
async function liveEvents(agent: RunningAgent, session: string, n: number): Promise<LiveEvent[]> {
  const client = await agent.connect();
  const view = await client.subscribe(session, { queue: 20_000 });
  const events: LiveEvent[] = [];
  for await (const item of view) {
    if (item.kind === 'event') events.push(JSON.parse(encodeJsonEvent(item.event)) as LiveEvent);
    if (events.length >= n) break;
  }
  await view.close();
  client.close();
  return events;
}

async function session(agent: RunningAgent, name: string, args: readonly string[]): Promise<void> {
  const created = await cli(agent, ['session', 'create', name, '--mode', 'overwrite', ...args]);
  expect(created.code, created.stderr).toBe(0);
  expect((await cli(agent, ['session', 'start', name])).code).toBe(0);
}

describe('liveEventJson', () => {
  it("is cat --json's object: comm the task's name when the event fired, null for tasks it cannot name", async () => {
    const dir = fresh();
    const raw = join(dir, 'raw');
    await recordDemo({ events: ['kmem:*', 'sched:*'], dir: raw, durationMs: 100, rate: 5000, cpus: 2 });
    const reader = openRawPagesDir(raw);
    const cmdlines = reader.metadata.cmdlines;
    expect(cmdlines.size).toBeGreaterThan(0);
    const tracker = new CommTracker();
    for (const [pid, comm] of cmdlines) tracker.seed(pid, comm);
    const tasks = new TaskNames(cmdlines, false);
    let named = 0;
    for (const e of reader.events()) {
      const got = JSON.parse(liveEventJson(e, tasks));
      const pid = e.scopes!['event.context']!.common_pid as number;
      const comm = tracker.resolve(e);
      tracker.observe(e);
      const { fields, ...rest } = JSON.parse(eventToJsonLine(e));
      expect(got).toEqual({ ...rest, pid, comm: comm ?? null, fields });
      expect(Object.keys(got)).toEqual(['ts_ns', 'cpu', 'event', 'pid', 'comm', 'flags', 'fields']);
      if (comm !== undefined) named++;
    }
    expect(named).toBeGreaterThan(0);
  });

  it('leaves events without a task (CTF, no common_pid) as cat --json prints them: pid, comm and flags null', () => {
    const e = {
      tsNs: 5n,
      cpu: 0,
      eventClass: { id: 1, name: 'a:b', streamId: 0, payload: { kind: 'struct', members: [], minAlign: 1 } },
      fields: { x: 1 },
    } as TraceEvent;
    const line = liveEventJson(e, new TaskNames(new Map(), false));
    expect(line).toBe(eventToJsonLine(e).slice(0, -1));
    expect(JSON.parse(line)).toMatchObject({ pid: null, comm: null, flags: null });
  });
});

describe("cat --live's text", () => {
  it("is cat's line for the file's event, from the event decoded by its class: task, CPU, time in ns, system:event", async () => {
    const dir = fresh();
    const raw = join(dir, 'raw');
    await recordDemo({ events: ['kmem:*', 'sched:*'], dir: raw, durationMs: 100, rate: 5000, cpus: 2 });
    const reader = openRawPagesDir(raw);
    const decoder = new JsonEventDecoder(reader.eventClasses);
    const tasks = new TaskNames(reader.metadata.cmdlines, false);
    const file = createFtraceTextFormatter({ cmdlines: reader.metadata.cmdlines, nanoseconds: true });
    const live = liveTextFormatter();
    let n = 0;
    let switches = 0;
    for (const e of reader.events()) {
      const text = live(decoder.decodeLine(liveEventJson(e, tasks)));
      const line = file(e);
      const name = e.eventClass.ftrace!.event;
      // The file's line: `comm-pid [CPU] secs.ns: name:` padded to a column, then the body.
      const body = line.slice(line.indexOf(`: ${name}:`) + 2 + Math.max(21, name.length + 1) + 1);
      const m = /^\s*(\S+)-(\d+)\s+\[(\d{3})\] (\d+\.\d{9}): (\S+): (.*)\n$/.exec(text);
      expect(m, text).not.toBeNull();
      expect([m![1], Number(m![2]), Number(m![3]), m![4], m![5], m![6]]).toEqual([
        /^\s*(\S+)-/.exec(line)![1],
        e.scopes!['event.context']!.common_pid,
        e.cpu,
        ftraceTimestamp(e.tsNs, true),
        e.eventClass.name,
        body,
      ]);
      n++;
      if (text.includes(' ==> ')) switches++;
    }
    expect(n).toBeGreaterThan(100);
    // sched_switch through trace-cmd's plugin, as cat prints it.
    expect(switches).toBeGreaterThan(0);
  });
});

describe('live events of the demo source', { timeout: 60_000 }, () => {
  it("carry the demo task's pid and name, in the stream and in evtrace cat --live", async () => {
    const dir = fresh();
    const agent = await startAgent(dir, ['--demo-rate', '3000']);
    try {
      await session(agent, 'd', ['--events', 'kmem:kmalloc,kmem:kfree', '--source', 'demo']);
      const cmdlines = readFileSync(join(agent.stateDir, 'sessions', 'd', 'meta', 'saved_cmdlines'), 'utf8');
      const names = new Map(
        cmdlines
          .trim()
          .split('\n')
          .map((l) => l.split(' ') as [string, string])
          .map(([pid, comm]) => [Number(pid), comm]),
      );
      expect(names.size).toBeGreaterThan(1);
      const events = await liveEvents(agent, 'd', 300);
      for (const e of events) expect(e.comm, JSON.stringify(e)).toBe(names.get(e.pid!));
      expect(new Set(events.map((e) => e.pid)).size).toBeGreaterThan(1);
      for (const e of events) expectValid('@evtrace/trace-format/schemas/event.json', e);

      // cat --live --json prints the stream's events as they came: the same contract.
      const json = await cli(agent, ['cat', '--live', 'd', '-n', '20', '--json']);
      expect(json.code, json.stderr).toBe(0);
      const printed = json.stdout
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(printed).toHaveLength(20);
      for (const e of printed) expectValid('@evtrace/trace-format/schemas/event.json', e);
      // kmalloc's call_site (printed with %pS) and ptr are addresses; bytes_req a size_t.
      const kmalloc = printed.find((e) => e.event === 'kmem:kmalloc');
      expect(kmalloc?.fields).toMatchObject({
        call_site: expect.stringMatching(/^0x[0-9a-f]+$/),
        bytes_req: expect.stringMatching(/^\d+$/),
      });

      const text = await cli(agent, ['cat', '--live', 'd', '-n', '20']);
      expect(text.code, text.stderr).toBe(0);
      const lines = text.stdout.trim().split('\n');
      expect(lines).toHaveLength(20);
      for (const l of lines) {
        const m = /^\s*(\S+)-(\d+)\s+\[\d{3}\] \d+\.\d{9}: kmem:(kmalloc|kfree): /.exec(l);
        expect(m, l).not.toBeNull();
        expect(m![1]).toBe(names.get(Number(m![2])));
      }
    } finally {
      await agent.stop();
    }
  });
});

const root = process.getuid?.() === 0;
let why = root ? '' : 'not root: kernel sessions need root';
try {
  if (root) findTracefs();
} catch (error) {
  why = (error as Error).message;
}

describe.skipIf(why !== '')(
  `live events of a kernel session${why ? ` (skipped: ${why})` : ''}`,
  { timeout: 60_000 },
  () => {
    it("carry the task the kernel recorded: sched_switch's pid is its prev_pid and its comm the prev_comm", async () => {
      const dir = fresh();
      const agent = await startAgent(dir);
      try {
        await session(agent, 'k', ['--events', 'sched:sched_switch', '--source', 'kernel']);
        const events = await liveEvents(agent, 'k', 400);
        expect(events.every((e) => e.event === 'sched:sched_switch')).toBe(true);
        for (const e of events) expect(e.pid, JSON.stringify(e)).toBe(e.fields.prev_pid);
        // A switch names the task switching out: that name, not a later look at /proc (the task may be gone).
        for (const e of events) expect(e.comm, JSON.stringify(e)).toBe(e.fields.prev_comm);
        // The agent's own thread switches out all the time; its name is what /proc says.
        const self = readFileSync(`/proc/${agent.proc.pid}/comm`, 'utf8').trim();
        expect(events.some((e) => e.pid === agent.proc.pid && e.comm === self)).toBe(true);
      } finally {
        await agent.stop();
      }
    });
  },
);
