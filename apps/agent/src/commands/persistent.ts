/**
 * Persistent buffers on the command line: create, list, remove, print and snapshot named buffers of both backends
 * (user-space tmpfs mappings, kernel tracefs instances), as `evtrace persistent create|ls|rm|cat|snapshot` and the
 * `session --persistent` mode; the listing (`evtrace ls`, the same command as `persistent ls`) goes through the
 * running agent when one answers.
 */
import { resolve } from 'node:path';
import {
  type AgentClient,
  type BufferList,
  connectAgent,
  defaultSocketPath,
  ProtocolError,
  type SessionStatus,
} from '@evtrace/agent-protocol';
import {
  type BufferInfo,
  createKernelBuffer,
  deleteBuffer,
  listPersistent,
  openKernelBuffer,
  openPersistent,
  type PersistentListing,
} from '@evtrace/persistent-events';
import { writeBytesAtomically } from '@evtrace/trace-format';
import type { Command } from 'commander';
import { addCommand, type CliIO } from '../command.ts';
import { usageError } from '../exit-codes.ts';
import { setExamples } from '../help.ts';
import { sizeOption } from '../units.ts';

/** Options every persistent subcommand takes. */
export interface PersistentTarget {
  /** The kernel backend (a tracefs instance) instead of a user-space buffer. */
  kernel?: boolean;
  /** Directory of user-space buffers. */
  dir?: string;
}

export interface PersistentCreateOptions extends PersistentTarget {
  size: string;
  pageSize?: string;
  mode?: string;
  event?: string[];
  filter?: string;
  group?: string;
  groupWrite?: boolean;
}

/** The agent opens paths from its own directory: the client's relative one is resolved here. */
const dirOf = (o: PersistentTarget) => (o.dir !== undefined ? { dir: resolve(o.dir) } : {});

/** Creates a buffer; returns what it is now. */
export function persistentCreate(name: string, o: PersistentCreateOptions): BufferInfo {
  const size = sizeOption('--size', o.size);
  const pageSize = o.pageSize === undefined ? undefined : sizeOption('--page-size', o.pageSize);
  if (o.mode !== undefined && o.mode !== 'overwrite' && o.mode !== 'discard') {
    throw usageError(`--mode ${o.mode}: overwrite or discard`);
  }
  const mode = o.mode as 'overwrite' | 'discard' | undefined;
  if (o.kernel) {
    return createKernelBuffer(name, {
      size,
      ...(pageSize !== undefined ? { pageSize } : {}),
      ...(mode ? { mode } : {}),
      ...(o.event ? { events: o.event } : {}),
      ...(o.filter !== undefined ? { filter: o.filter } : {}),
    }).info();
  }
  if (o.filter !== undefined) throw usageError('--filter applies to --kernel buffers only');
  const buf = openPersistent(name, {
    ...dirOf(o),
    create: {
      size,
      ...(pageSize !== undefined ? { pageSize } : {}),
      ...(mode ? { mode } : {}),
      ...(o.event ? { classes: o.event } : {}),
      ...(o.group !== undefined ? { group: o.group } : {}),
      ...(o.groupWrite ? { groupWrite: true } : {}),
    },
  });
  try {
    return buf.info();
  } finally {
    buf.close();
  }
}

/** Every persistent buffer of both backends. */
export function persistentList(o: PersistentTarget = {}): PersistentListing {
  return listPersistent(dirOf(o));
}

/** Options of {@link listBuffers}: the agent to ask (default: the one at the default socket, if it answers). */
export interface ListVia extends PersistentTarget {
  /** The agent's socket; given explicitly, an agent that does not answer is an error rather than a fallback. */
  socket?: string;
  /** False (`--no-agent`): list directly even when an agent runs. */
  agent?: boolean;
}

/** A listing and who made it. */
export interface BufferListing {
  readonly listing: BufferList;
  /** The agent that listed (its pid and socket), or undefined when this process listed directly. */
  readonly agent?: { readonly pid: number; readonly socket: string };
}

/**
 * Lists persistent buffers through the running agent (what it sees, with the session attached to each), or directly
 * when no agent answers at the default socket. The agent reports buffers it cannot open as unreadable.
 */
export async function listBuffers(o: ListVia): Promise<BufferListing> {
  if (o.agent !== false) {
    const socket = o.socket ?? process.env.EVTRACE_AGENT_SOCKET ?? defaultSocketPath();
    let client: AgentClient | undefined;
    try {
      client = await connectAgent(socket, { client: 'evtrace ls' });
    } catch (error) {
      if (!(error instanceof ProtocolError) || o.socket !== undefined) throw error;
    }
    if (client !== undefined) {
      try {
        return { listing: await client.buffers(dirOf(o)), agent: { pid: client.agent.pid, socket } };
      } catch (error) {
        // An agent before protocol 2 does not list persistent buffers: this process lists them.
        if (!(error instanceof ProtocolError && error.code === 'ERR_AGENT_UNKNOWN_OP')) throw error;
      } finally {
        client.close();
      }
    }
  }
  return { listing: persistentList(o) };
}

/**
 * Adds the one listing of persistent buffers as `name` under `parent`: `evtrace ls`, and `evtrace persistent ls`,
 * the same command (its options, its output) where the persistent verbs are, kept for the scripts that list there.
 */
export function addListingCommand(parent: Command, name: string, io: CliIO): Command {
  return addCommand(parent, name)
    .option('--json', 'print {buffers, unreadable, kernelUnavailable?, bootAbsent?} as JSON')
    .option('--dir <dir>', 'directory of user-space buffers (default $EVTRACE_PERSISTENT_DIR or /dev/shm/evtrace)')
    .option('--socket <path>', "the agent's control socket (an agent that does not answer there is an error)")
    .option('--no-agent', 'list directly, not through a running agent')
    .action(async (o: ListVia & { json?: boolean }) => {
      const r = await listBuffers(o);
      if (r.agent !== undefined) io.stderr(`evtrace: listed by the agent (pid ${r.agent.pid}) at ${r.agent.socket}\n`);
      io.stdout(formatListing(r.listing, !!o.json));
    });
}

/** Deletes a buffer. */
export function persistentRemove(name: string, o: PersistentTarget & { force?: boolean }): void {
  deleteBuffer(name, { backend: o.kernel ? 'kernel' : 'user', ...dirOf(o), force: !!o.force });
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

/** Options of {@link persistentCat}. */
export interface PersistentCatOptions extends PersistentTarget {
  json?: boolean;
  /** Keep printing records as they are committed, until the writer closes the stream (or `signal` aborts). */
  follow?: boolean;
  /** Poll interval of --follow in ms. Default 100. */
  intervalMs?: number;
  signal?: AbortSignal;
}

/**
 * The records a buffer holds, without consuming them: user-space buffers one line per record (time, class,
 * payload in hex; JSON lines with --json), kernel buffers as the kernel prints its `trace` file. With `follow`,
 * records committed later are printed as they come (a read-only poll; records the writer recycled between two
 * polls are reported as lost on stderr). Resolves to the number of records printed.
 */
export async function persistentCat(name: string, o: PersistentCatOptions, io: CliIO): Promise<number> {
  if (o.kernel) {
    if (o.follow) throw usageError('--follow applies to user-space buffers only');
    const text = openKernelBuffer(name).text();
    io.stdout(text);
    return text.split('\n').filter((l) => l && !l.startsWith('#')).length;
  }
  const buf = openPersistent(name, { ...dirOf(o), readOnly: true });
  try {
    const classes = new Map(buf.meta.classes.map((c) => [c.type, c.name]));
    const follower = buf.follow();
    let n = 0;
    const out: string[] = [];
    const flush = () => {
      if (out.length > 0) io.stdout(`${out.join('\n')}\n`);
      out.length = 0;
    };
    const drain = () => {
      const r = follower.poll((rec) => {
        const payload = hex(rec.bytes.subarray(rec.offset, rec.offset + rec.length));
        const cls = classes.get(rec.type) ?? `type${rec.type}`;
        out.push(
          o.json
            ? JSON.stringify({ ts: String(rec.timestamp), type: rec.type, class: cls, payload })
            : `${(rec.timestamp / 1e9).toFixed(9).padStart(18)} ${cls.padEnd(16)} ${payload}`,
        );
        n++;
        if (out.length >= 4096) flush();
      });
      flush();
      if (r.lost > 0) io.stderr(`evtrace: ${r.lost} records were overwritten before they could be read\n`);
    };
    drain();
    while (o.follow && !o.signal?.aborted) {
      // The writer's close is published after its last commit: one more poll after seeing it gets everything.
      const closed = buf.stats().writerClosed;
      await new Promise((r) => setTimeout(r, o.intervalMs ?? 100));
      drain();
      if (closed) break;
    }
    return n;
  } finally {
    buf.close();
  }
}

/**
 * Writes what a buffer holds now to `output`: a user-space buffer's snapshot pages (whole ringbuf pages, each a
 * complete CTF packet, readable with ringbuf's Snapshot), a kernel buffer's `trace` text. Returns records and bytes.
 */
export function persistentSnapshot(
  name: string,
  output: string,
  o: PersistentTarget,
): { records: number; bytes: number } {
  if (o.kernel) {
    const text = openKernelBuffer(name).text();
    writeBytesAtomically(output, text);
    return { records: text.split('\n').filter((l) => l && !l.startsWith('#')).length, bytes: text.length };
  }
  const buf = openPersistent(name, { ...dirOf(o), readOnly: true });
  try {
    const snap = buf.snapshot();
    const pages: Uint8Array[] = [];
    for (let i = 0; i < snap.pageCount; i++) pages.push(snap.page(i));
    let records = 0;
    while (snap.next()) records++;
    const bytes = Buffer.concat(pages);
    writeBytesAtomically(output, bytes);
    return { records, bytes: bytes.length };
  } finally {
    buf.close();
  }
}

const pct = (f: number | null) => (f === null ? '-' : `${Math.round(f * 100)}%`);
const num = (n: number | null) => (n === null ? '-' : String(n));

function human(bytes: number): string {
  for (const [unit, size] of [
    ['G', 1024 ** 3],
    ['M', 1024 ** 2],
    ['K', 1024],
  ] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${unit}`;
  }
  return String(bytes);
}

/** The agent's sessions as `session list` prints them (a persistent session names its buffer). */
export function sessionsTable(all: readonly SessionStatus[]): string {
  if (all.length === 0) return 'no sessions\n';
  const w = Math.max(4, ...all.map((s) => s.name.length));
  const source = (s: SessionStatus) =>
    s.persistent ? `persistent ${s.persistent.backend} ${s.persistent.buffer}` : s.source;
  const lines = [`${'NAME'.padEnd(w)}  STATE     MODE       ${'EVENTS'.padStart(10)}  ${'LOST'.padStart(8)}  SOURCE`];
  for (const s of all)
    lines.push(
      `${s.name.padEnd(w)}  ${s.state.padEnd(8)}  ${s.mode.padEnd(9)}  ${String(s.events).padStart(10)}  ${String(s.lost).padStart(8)}  ${source(s)}`,
    );
  return `${lines.join('\n')}\n`;
}

/** The listing as a table (with a SESSION column when an agent's session is attached to a buffer), or JSON. */
export function formatListing(listing: BufferList | PersistentListing, json: boolean): string {
  if (json) return `${JSON.stringify(listing, null, 2)}\n`;
  const attached = listing.buffers.some((b) => 'session' in b);
  const header = ['BACKEND', 'NAME', 'SIZE', 'MODE', 'FILL', 'LOST', 'WRITERS', 'READERS', 'OWNER', 'CREATED'];
  if (attached) header.push('SESSION');
  const rows = listing.buffers.map((b) => [
    b.boot ? 'kernel(boot)' : b.backend,
    b.name,
    human(b.size),
    b.mode,
    pct(b.fill),
    num(b.lost),
    num(b.writers),
    num(b.readers),
    b.owner,
    b.created ?? '-',
    ...(attached ? [('session' in b ? b.session : undefined) ?? '-'] : []),
  ]);
  const lines: string[] = [];
  if (rows.length > 0) {
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    for (const r of [header, ...rows])
      lines.push(
        r
          .map((c, i) => c.padEnd(widths[i]!))
          .join('  ')
          .trimEnd(),
      );
  } else {
    lines.push('no persistent buffers');
  }
  for (const u of listing.unreadable) lines.push(`${u.backend} ${u.name}: ${u.code}: ${u.error}`);
  if (listing.kernelUnavailable) lines.push(`kernel buffers not listed: ${listing.kernelUnavailable}`);
  if (listing.bootAbsent) lines.push(`boot-time buffer: ${listing.bootAbsent}`);
  return `${lines.join('\n')}\n`;
}

/** Adds the persistent subcommands (create, ls, rm, cat, snapshot) under `parent`. */
export function addPersistentSubcommands(parent: Command, io: CliIO): void {
  const target = (cmd: Command) =>
    cmd
      .option('--kernel', 'the kernel backend: a tracefs instance (needs root)')
      .option('--dir <dir>', 'directory of user-space buffers (default $EVTRACE_PERSISTENT_DIR or /dev/shm/evtrace)');
  const create = target(
    addCommand(parent, 'create')
      .summary('create a named persistent buffer')
      .description(
        `Creates NAME (namespaces with /, e.g. team/app/flight). User-space buffers are files in a shared mapping
readable by the owner (and --group) only; kernel buffers (--kernel) are tracefs instances that record at once.
A taken name is refused, and so is a place another user could redirect or empty (exit 1, ERR_PERSISTENT_PERMISSION, naming the
directory and its owner): a symbolic link as the buffer directory or a namespace, a buffer directory that is neither
yours nor root's (or root's, writable by others and not sticky), a namespace directory of another user.`,
      )
      .argument('<name>', 'buffer name, e.g. team/app/flight')
      .requiredOption('--size <size>', 'bytes of pages (user) or per CPU (kernel): 4096, 64K, 16M, 1G')
      .option('--page-size <size>', 'page (sub-buffer) size, a power of two >= 4K')
      .option('--mode <mode>', 'overwrite (flight recorder, default) or discard')
      .option('-e, --event <class...>', 'event classes: record type names (user) or system:event globs (kernel)')
      .option('--filter <expr>', 'ftrace filter for every event (kernel)')
      .option('--group <group>', 'group given read access (user)')
      .option('--group-write', 'give the group write access too (user)'),
  ).action((name: string, o: PersistentCreateOptions) => {
    const info = persistentCreate(name, o);
    io.stdout(`created ${info.backend} buffer ${info.name}: ${info.path} (${human(info.size)}, ${info.mode})\n`);
  });
  setExamples(
    create,
    `evtrace persistent create app/flight --size 1M
evtrace persistent create ops/sched --kernel --size 4M -e 'sched:sched_switch' --filter 'prev_pid > 0'`,
  );
  addListingCommand(parent, 'ls', io)
    .summary('list persistent buffers: the same command as evtrace ls')
    .description(
      `The same command as \`evtrace ls\` (its options, its output), kept here beside the persistent verbs.`,
    );
  target(
    addCommand(parent, 'rm')
      .summary('delete a persistent buffer')
      .description('Deletes NAME. A user-space buffer a live process writes is kept unless --force.')
      .argument('<name>', 'buffer name')
      .option('--force', 'delete even while a process writes it'),
  ).action((name: string, o: PersistentTarget & { force?: boolean }) => {
    persistentRemove(name, o);
    io.stdout(`deleted ${name}\n`);
  });
  target(
    addCommand(parent, 'cat')
      .summary('print the records a persistent buffer holds')
      .description(
        `Prints NAME's records without consuming them (a read-only snapshot): time (s), class and payload (hex), or
one JSON object per line with --json. --follow keeps printing records as they are committed until the writer
closes the stream or SIGINT. Kernel buffers print as the kernel's trace file.`,
      )
      .argument('<name>', 'buffer name (kernel: or a boot-time instance name)')
      .option('--json', 'one JSON object per record')
      .option('-f, --follow', 'keep printing new records until the writer closes the stream (user-space)'),
  ).action(async (name: string, o: PersistentCatOptions) => {
    const abort = new AbortController();
    const stop = () => abort.abort();
    process.once('SIGINT', stop);
    try {
      await persistentCat(name, { ...o, signal: abort.signal }, io);
    } finally {
      process.off('SIGINT', stop);
    }
  });
  target(
    addCommand(parent, 'snapshot')
      .summary('save what a persistent buffer holds to a file')
      .description(
        `Writes NAME's current content to OUTPUT: user-space buffers as whole ringbuf pages (each a CTF packet),
kernel buffers as trace text.`,
      )
      .argument('<name>', 'buffer name')
      .requiredOption('-o, --output <file>', 'file to write'),
  ).action((name: string, o: PersistentTarget & { output: string }) => {
    const r = persistentSnapshot(name, o.output, o);
    io.stdout(`${r.records} records, ${r.bytes} bytes -> ${o.output}\n`);
  });
}

/** Options `session create|snapshot` take for persistent buffers (see {@link persistentSessionOptions}). */
export interface PersistentSessionOptions extends PersistentTarget {
  persistent?: boolean;
  events?: string[];
  mode?: string;
  bufferSize?: string;
  filter?: string;
  group?: string;
  output?: string;
}

/** Adds `--persistent`, `--kernel`, `--dir` and `--group` to a `session` subcommand. */
export function persistentSessionOptions(cmd: Command): Command {
  return cmd
    .option('--persistent', 'a named persistent buffer (no agent): NAME may have namespaces, team/app/flight')
    .option('--kernel', 'with --persistent: the kernel backend, a tracefs instance')
    .option('--dir <dir>', 'with --persistent: directory of user-space buffers')
    .option('--group <group>', 'with --persistent: group given read access');
}

/**
 * `session create NAME --persistent`: the session's flags mean the same for a persistent buffer (`--events` are
 * event classes, `--buffer-size` the size, default 1M; `--filter` for kernel buffers).
 */
export function persistentSessionCreate(name: string, o: PersistentSessionOptions, io: CliIO): void {
  const events = (o.events ?? [])
    .flatMap((e) => e.split(','))
    .map((e) => e.trim())
    .filter(Boolean);
  const info = persistentCreate(name, {
    size: o.bufferSize ?? '1M',
    ...(o.mode !== undefined ? { mode: o.mode } : {}),
    ...(events.length > 0 ? { event: events } : {}),
    ...(o.filter !== undefined ? { filter: o.filter } : {}),
    ...(o.group !== undefined ? { group: o.group } : {}),
    ...(o.kernel ? { kernel: true } : {}),
    ...dirOf(o),
  });
  io.stdout(`created ${info.backend} buffer ${info.name}: ${info.path} (${human(info.size)}, ${info.mode})\n`);
}

/**
 * `session snapshot NAME --persistent [-o DIR]`: writes `DIR/NAME-with-dots.TIME.pages` (user-space: ringbuf pages)
 * or `.txt` (kernel: trace text) and prints its path, as a session trace-shot does.
 */
export function persistentSessionSnapshot(name: string, o: PersistentSessionOptions, io: CliIO): void {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const file = `${o.output ?? '.'}/${name.split('/').join('.')}.${stamp}.${o.kernel ? 'txt' : 'pages'}`;
  const r = persistentSnapshot(name, file, o);
  io.stdout(`${file}\n`);
  io.stderr(`evtrace: snapshot of ${name}: ${r.records} records, ${r.bytes} bytes\n`);
}

const needPersistent = (verb: string, instead: string) =>
  usageError(`session ${verb} works on persistent buffers: add --persistent (agent sessions: session ${instead})`);

/** Adds `session rm|cat --persistent` (the agent's sessions have destroy and cat --live). */
export function addPersistentSessionVerbs(session: Command, io: CliIO): void {
  addCommand(session, 'rm')
    .summary('delete a persistent buffer (with --persistent)')
    .argument('<name>', 'buffer name')
    .option('--persistent', 'NAME is a persistent buffer')
    .option('--kernel', 'the kernel backend')
    .option('--dir <dir>', 'directory of user-space buffers')
    .option('--force', 'delete even while a process writes it')
    .action((name: string, o: PersistentTarget & { persistent?: boolean; force?: boolean }) => {
      if (!o.persistent) throw needPersistent('rm', 'destroy');
      persistentRemove(name, o);
      io.stdout(`deleted ${name}\n`);
    });
  addCommand(session, 'cat')
    .summary("print a persistent buffer's records (with --persistent)")
    .argument('<name>', 'buffer name')
    .option('--persistent', 'NAME is a persistent buffer')
    .option('--kernel', 'the kernel backend')
    .option('--dir <dir>', 'directory of user-space buffers')
    .option('--json', 'one JSON object per record')
    .option('-f, --follow', 'keep printing new records until the writer closes the stream')
    .action(async (name: string, o: PersistentCatOptions & { persistent?: boolean }) => {
      if (!o.persistent) throw needPersistent('cat', 'and evtrace cat --live');
      await persistentCat(name, o, io);
    });
}

/** `evtrace persistent create|ls|rm|cat|snapshot`: the persistent buffers, no agent needed. */
export function registerPersistent(program: Command, io: CliIO): void {
  const cmd = addCommand(program, 'persistent')
    .summary('named buffers that outlive their writers (user-space and kernel)')
    .description(
      `Named persistent buffers: user-space flight recorders in shared tmpfs mappings that survive their writer's
crash, and kernel ftrace instances that keep recording with no process attached.`,
    );
  addPersistentSubcommands(cmd, io);
  setExamples(
    cmd,
    `evtrace persistent create app/flight --size 1M
evtrace persistent cat app/flight
evtrace ls`,
  );
}
