import { resolve } from 'node:path';
import {
  type AgentClient,
  connectAgent,
  defaultSocketPath,
  type OutputFormat,
  type SessionSpec,
  type SessionStatus,
  type TriggerSpec,
} from '@evtrace/agent-protocol';
import { encodeJsonEvent } from '@evtrace/trace-format';
import type { Command } from 'commander';
import { addCommand, type CliIO } from '../command.ts';
import { usageError } from '../exit-codes.ts';
import { setExamples } from '../help.ts';
import { liveTextFormatter } from '../output/live-text.ts';
import { rotateOption, sizeOption } from '../units.ts';
import {
  addPersistentSessionVerbs,
  type PersistentSessionOptions,
  persistentSessionCreate,
  persistentSessionOptions,
  persistentSessionSnapshot,
  sessionsTable,
} from './persistent.ts';

/** `--trigger` / `session trigger` text: `event:EXPR`, `signal:SIGUSR1`, or a bare `SIGUSR1`/`USR2`. */
export function parseTrigger(text: string): TriggerSpec {
  const signal = /^(?:signal:)?(?:SIG)?(USR[12])$/.exec(text.trim());
  if (signal !== null) return { kind: 'signal', signal: `SIG${signal[1]}` as 'SIGUSR1' | 'SIGUSR2' };
  if (text.startsWith('event:') && text.length > 6) return { kind: 'event', filter: text.slice(6) };
  throw usageError(`--trigger: '${text}' is neither event:EXPRESSION nor a signal (SIGUSR1, SIGUSR2)`);
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

async function withAgent<T>(socket: string | undefined, fn: (agent: AgentClient) => Promise<T>): Promise<T> {
  let agent: AgentClient | undefined;
  try {
    agent = await connectAgent(socket ?? defaultSocketPath(), { client: 'evtrace session' });
    return await fn(agent);
  } finally {
    agent?.close();
  }
}

const n = (v: number) => String(v).padStart(10);

/** A session name, or a persistent buffer's name as `attach` names its session by default (`/` as `.`). */
export const sessionArg = (name: string) => name.split('/').join('.');

/** `evtrace session status` text. */
export function statusText(s: SessionStatus): string {
  const lines = [
    `session ${s.name}: ${s.state}${s.error ? ` (${s.error.code}: ${s.error.message})` : ''}`,
    `  mode ${s.mode}, source ${s.source}${s.demo ? ' (DEMO: synthetic events)' : ''}${s.source === 'bts-qemu' ? ' (SOFTWARE: the program under QEMU user mode)' : ''}${s.instance ? `, tracefs instance ${s.instance}` : ''}${s.sharedWith?.length ? ` (shared with ${s.sharedWith.join(', ')})` : s.instance ? ' (its own)' : ''}`,
    ...(s.persistent
      ? [
          `  attached to ${s.persistent.backend} buffer ${s.persistent.buffer} (${s.persistent.path}); detach leaves the buffer`,
        ]
      : []),
    `  events ${n(s.events)}  lost ${n(s.lost)}  bytes ${n(s.bytes)}`,
    ...s.cpus.map(
      (c) => `  cpu${String(c.cpu).padEnd(3)} events ${n(c.events)}  lost ${n(c.lost)}  bytes ${n(c.bytes)}`,
    ),
    `  viewers ${s.viewers} (viewer loss ${s.viewerLost}), trace-shots ${s.snapshots}, ring pages overwritten before output ${s.overwrittenPages}`,
    ...(s.files.length > 0 ? [`  files: ${s.files.join(', ')}`] : []),
    ...(s.spec.triggers?.length
      ? [`  triggers: ${s.spec.triggers.map((t) => (t.kind === 'event' ? `event ${t.filter}` : t.signal)).join(', ')}`]
      : []),
  ];
  return `${lines.join('\n')}\n`;
}

interface CreateOptions {
  events?: string[];
  filter?: string;
  mode: string;
  bufferSize?: string;
  output?: string;
  format?: string;
  rotate?: string;
  source: string;
  trigger?: string[];
  export?: boolean;
  socket?: string;
}

/** `evtrace session ...`: drives the agent's sessions. */
export function registerSession(program: Command, io: CliIO): void {
  const session = addCommand(program, 'session')
    .summary("create, start, stop, snapshot, destroy and inspect the agent's sessions")
    .description(
      `Talks to a running \`evtrace agent\` over its control socket (--socket, or EVTRACE_AGENT_SOCKET, or the default).
A session records the selected events into per-CPU ring buffers: --mode overwrite keeps the recent past (a flight
recorder: \`session snapshot\` or a trigger writes it out as a trace-shot while recording continues), --mode discard
keeps the oldest and counts what does not fit as lost. With --output, files are written while recording
(DIR/NAME-NNNN.dat or .ctf, a new one at each --rotate); a killed agent leaves DIR/NAME-NNNN.part readable.`,
    );
  const socketOption = (c: Command) => c.option('--socket <path>', "the agent's control socket");

  const create = socketOption(
    addCommand(session, 'create')
      .summary('create a session')
      .argument('<name>', 'session name: letters, digits, _ . -')
      .argument('[command...]', 'for --source bts and bts-qemu: the program to trace and its arguments (after --)')
      .option('--events <patterns>', 'events to record, comma-separated or repeated (kmem:kmalloc, sched:*)', collect)
      .option('--filter <expr>', 'ftrace filter applied to every selected event')
      .requiredOption('--mode <mode>', 'overwrite (flight recorder) or discard')
      .option('--buffer-size <size>', 'per-CPU buffer size: bytes or 512K, 4M, 1G (default 1M)')
      .option('--output <dir>', 'write files while recording into DIR')
      .option('--format <kind>', 'tracedat or ctf (outputs and trace-shots)', undefined)
      .option('--rotate <size|time>', 'start a new output file after SIZE (64M) or TIME (30s, 5m, 1h)')
      .option(
        '--source <kind>',
        'kernel, demo (synthetic, labelled DEMO), auto (kernel when the agent is root with tracefs), bts (branch-trace hardware) or bts-qemu (the program under QEMU: software)',
        'auto',
      )
      .option(
        '--trigger <spec>',
        'take a trace-shot on event:EXPRESSION or a signal (SIGUSR1, SIGUSR2); repeatable',
        collect,
      )
      .option('--export', 'publish the events (after --filter) to the fleet, when the agent runs with --nats'),
  );
  persistentSessionOptions(create).action(
    async (name: string, command: string[], o: CreateOptions & PersistentSessionOptions) => {
      if (o.persistent) return persistentSessionCreate(name, o, io);
      if (o.events === undefined) throw usageError("required option '--events <patterns>' not specified");
      if (o.mode !== 'overwrite' && o.mode !== 'discard')
        throw usageError(`--mode must be overwrite or discard, not '${o.mode}'`);
      if (!['kernel', 'demo', 'auto', 'bts', 'bts-qemu'].includes(o.source))
        throw usageError(`--source must be kernel, demo, auto, bts or bts-qemu, not '${o.source}'`);
      const branches = o.source === 'bts' || o.source === 'bts-qemu';
      if (branches && command.length === 0)
        throw usageError(`--source ${o.source} needs the program to trace: -- PROGRAM ARGS...`);
      if (!branches && command.length > 0)
        throw usageError(`unexpected arguments ${command.join(' ')} (a program is for --source bts)`);
      if (o.format !== undefined && o.format !== 'tracedat' && o.format !== 'ctf')
        throw usageError(`--format must be tracedat or ctf, not '${o.format}'`);
      if (o.rotate !== undefined && o.output === undefined) throw usageError('--rotate needs --output');
      const spec: SessionSpec = {
        name,
        events: o.events
          .flatMap((e) => e.split(','))
          .map((e) => e.trim())
          .filter(Boolean),
        mode: o.mode,
        source: o.source as SessionSpec['source'] & string,
        ...(branches ? { command } : {}),
        ...(o.filter !== undefined ? { filter: o.filter } : {}),
        ...(o.bufferSize !== undefined ? { bufferSize: sizeOption('--buffer-size', o.bufferSize) } : {}),
        ...(o.output !== undefined
          ? { output: { dir: resolve(o.output), format: (o.format ?? 'tracedat') as OutputFormat } }
          : {}),
        ...(o.rotate !== undefined ? { rotate: rotateOption('--rotate', o.rotate) } : {}),
        ...(o.trigger !== undefined ? { triggers: o.trigger.map(parseTrigger) } : {}),
        ...(o.export === true ? { export: true } : {}),
      };
      const status = await withAgent(o.socket, (a) => a.createSession(spec));
      io.stdout(
        `session ${status.name} created (${status.source}${status.demo ? ', DEMO: synthetic events' : ''}${status.instance ? `, instance ${status.instance}` : ''})\n`,
      );
    },
  );
  setExamples(
    create,
    `evtrace session create flight --events 'kmem:*' --mode overwrite --buffer-size 4M --trigger 'event:bytes_req > 65536'
evtrace session create ops --events sched:sched_switch --mode discard --output /var/log/ev --format ctf --rotate 64M
evtrace session create demo --events kmem:kmalloc,kmem:kfree --mode overwrite --source demo
evtrace session create br --events bts:branch --mode overwrite --source bts-qemu -- ./prog arg`,
  );

  for (const [verb, summary] of [
    ['start', 'start recording'],
    ['stop', 'stop recording (finishes the output file; the buffers stay for trace-shots)'],
    ['destroy', 'stop and remove a session (its files and trace-shots stay)'],
  ] as const) {
    socketOption(addCommand(session, verb).summary(summary).argument('<name>', 'session name')).action(
      async (name: string, o: { socket?: string }) => {
        await withAgent(o.socket, async (a) => {
          if (verb === 'destroy') await a.destroy(sessionArg(name));
          else await a[verb](sessionArg(name));
        });
        io.stdout(`session ${name}: ${verb === 'start' ? 'started' : verb === 'stop' ? 'stopped' : 'destroyed'}\n`);
      },
    );
  }

  const snapshot = socketOption(
    addCommand(session, 'snapshot')
      .summary("write a trace-shot of the session's buffers while it keeps recording")
      .argument('<name>', 'session name')
      .option('-o, --output <dir>', "directory of the trace-shot (default: the agent's STATE-DIR/snapshots)")
      .option('--format <kind>', "tracedat or ctf (default: the session's output format, else tracedat)"),
  );
  persistentSessionOptions(snapshot).action(
    async (name: string, o: PersistentSessionOptions & { format?: string; socket?: string }) => {
      if (o.persistent) return persistentSessionSnapshot(name, o, io);
      if (o.format !== undefined && o.format !== 'tracedat' && o.format !== 'ctf')
        throw usageError(`--format must be tracedat or ctf, not '${o.format}'`);
      const r = await withAgent(o.socket, (a) =>
        a.snapshot(sessionArg(name), {
          ...(o.output !== undefined ? { dir: resolve(o.output) } : {}),
          ...(o.format !== undefined ? { format: o.format as OutputFormat } : {}),
        }),
      );
      io.stdout(`${r.path}\n`);
      io.stderr(`evtrace: trace-shot of ${name}: ${r.events} events, ${r.bytes} bytes (${r.format})\n`);
    },
  );

  socketOption(
    addCommand(session, 'trigger')
      .summary('add a trace-shot trigger to a session')
      .argument('<name>', 'session name')
      .argument('<trigger>', 'event:EXPRESSION (an ftrace filter) or a signal (SIGUSR1, SIGUSR2)'),
  ).action(async (name: string, trigger: string, o: { socket?: string }) => {
    const spec = parseTrigger(trigger);
    await withAgent(o.socket, (a) => a.trigger(name, spec));
    io.stdout(`session ${name}: trigger added\n`);
  });

  socketOption(
    addCommand(session, 'list')
      .alias('ls')
      .summary("list the agent's sessions")
      .description(
        `Lists the running agent's sessions: name, state, mode, events, events lost and source (a persistent session
names its buffer). \`session ls\` is the same command. Persistent buffers: \`evtrace ls\`; events: \`evtrace list\`.`,
      )
      .option('--json', 'one JSON array'),
  ).action(async (o: { json?: boolean; socket?: string }) => {
    const all = await withAgent(o.socket, (a) => a.list());
    io.stdout(o.json ? `${JSON.stringify(all)}\n` : sessionsTable(all));
  });

  const attach = socketOption(
    addCommand(session, 'attach')
      .summary('make a persistent buffer the source of a session (the agent reads it; nothing is deleted)')
      .description(
        `Asks the agent to attach to the persistent buffer NAME (see evtrace persistent): a session that reads it
and runs at once, so evtrace cat --live, the viewer's --session, session snapshot, status and the metrics work on it
as on any session. A user-space buffer is mapped read-only and followed without consuming it: its writer is never
disturbed, and the records it already holds come first. Each record is an event of its class (system:event from the
buffer's classes, persistent:record for unnamed types) with fields type, length and payload (hex). A kernel buffer
(--kernel) is read through its per-CPU raw pipes, as the agent reads a session's own instance (what it reads is
consumed); its settings and tracing switch are left alone. session detach (or destroy) ends the session and leaves
the buffer, which outlives the agent too. The session is named after the buffer, / as . (team/app/flight:
team.app.flight), unless --as names it.`,
      )
      .argument('<name>', 'persistent buffer name, e.g. team/app/flight')
      .option('--persistent', 'NAME is a persistent buffer (the only kind attach takes)')
      .option('--kernel', 'the kernel backend: a tracefs instance evtrace.p.* or a boot-time buffer')
      .option('--as <session>', 'session name (default: NAME with / as .)')
      .option('--dir <dir>', "directory of user-space buffers (default: the agent's)"),
  ).action(async (buffer: string, o: { kernel?: boolean; as?: string; dir?: string; socket?: string }) => {
    const s = await withAgent(o.socket, (a) =>
      a.attach({
        buffer,
        backend: o.kernel ? 'kernel' : 'user',
        ...(o.as !== undefined ? { name: o.as } : {}),
        ...(o.dir !== undefined ? { dir: o.dir } : {}),
      }),
    );
    io.stdout(
      `session ${s.name} attached to ${s.persistent?.backend} buffer ${buffer} (${s.persistent?.path}): ${s.events} events so far\n`,
    );
  });
  setExamples(
    attach,
    `evtrace session attach team/app/flight --persistent       session team.app.flight
evtrace cat --live team.app.flight
evtrace session snapshot team.app.flight -o /tmp/shots
evtrace session attach ops/sched --persistent --kernel --as sched
evtrace session detach team.app.flight                       the buffer stays`,
  );

  socketOption(
    addCommand(session, 'detach')
      .summary('end a session attached to a persistent buffer; the buffer stays')
      .argument('<name>', 'session name (or the buffer name it was attached by)'),
  ).action(async (name: string, o: { socket?: string }) => {
    const r = await withAgent(o.socket, (a) => a.detach(sessionArg(name)));
    io.stdout(`session ${r.name} detached; ${r.backend} buffer ${r.buffer} kept\n`);
  });

  socketOption(
    addCommand(session, 'status')
      .summary('events, lost and bytes of a session, per CPU')
      .argument('<name>', 'session name')
      .option('--json', 'one JSON object with top-level events, lost and bytes'),
  ).action(async (name: string, o: { json?: boolean; socket?: string }) => {
    const s = await withAgent(o.socket, (a) => a.status(sessionArg(name)));
    io.stdout(o.json ? `${JSON.stringify(s)}\n` : statusText(s));
  });
  addPersistentSessionVerbs(session, io);
  setExamples(
    session,
    `evtrace session create flight --events 'kmem:*' --mode overwrite
evtrace session start flight
evtrace session status flight --json
evtrace session snapshot flight -o /tmp/shots          prints the trace-shot's path; evtrace cat reads it
evtrace cat --live flight                              live events
evtrace session destroy flight
evtrace session attach team/app/flight --persistent     a persistent buffer as session team.app.flight
evtrace session list                                   the agent's sessions (evtrace ls: the persistent buffers)`,
  );
}

/** `evtrace cat --live SESSION`: prints a session's events as they arrive (after its recent window). */
export async function catLive(
  name: string,
  options: { json?: boolean; limit?: number; socket?: string },
  io: CliIO,
): Promise<void> {
  await withAgent(options.socket, async (agent) => {
    const view = await agent.subscribe(sessionArg(name));
    const text = liveTextFormatter();
    let printed = 0;
    const stop = () => void view.close();
    process.once('SIGINT', stop);
    try {
      for await (const item of view) {
        if (item.kind === 'loss') io.stderr(`evtrace: this viewer lost ${item.lost} events (${item.total} in all)\n`);
        else if (item.kind === 'live') io.stderr('evtrace: -- live --\n');
        else {
          // The line the agent sent: the codec writes back what it decoded.
          io.stdout(options.json ? encodeJsonEvent(item.event) : text(item.event));
          if (++printed >= (options.limit ?? Number.POSITIVE_INFINITY)) await view.close();
        }
      }
    } finally {
      process.removeListener('SIGINT', stop);
    }
    if (view.endReason !== undefined && view.endReason !== 'unsubscribed') io.stderr(`evtrace: ${view.endReason}\n`);
  });
}
