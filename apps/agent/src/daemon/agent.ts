/**
 * The collector: every session, the one loop that polls their sources, triggers (events, signals, commands) and
 * recovery after a crash. It implements the metrics endpoint's {@link MetricsProvider}.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { cpus as osCpus } from 'node:os';
import { join, resolve } from 'node:path';
import type {
  AttachSpec,
  BufferList,
  BufferStats,
  DetachResult,
  SessionSpec,
  SessionStatus,
  SnapshotResult,
  TriggerSignal,
  TriggerSpec,
} from '@evtrace/agent-protocol';
import { BtsSource } from '@evtrace/hw-bts';
import { openPersistent, userName } from '@evtrace/persistent-events';
import type { EventSource } from '@evtrace/trace-format';
import {
  DEFAULT_NICE,
  DemoSource,
  findTracefs,
  instanceOwner,
  KernelTap,
  raisePriority,
  removeInstanceDir,
} from '@evtrace/tracefs';
import type { AgentHealth, MetricsProvider, SessionCounters } from '../metrics/types.ts';
import { BufferGauges } from './buffer-stats.ts';
import { actsAsItself, asCaller, type Caller, callerName } from './caller.ts';
import { AgentError, asAgentError } from './errors.ts';
import { extension, finishInto } from './files.ts';
import { SharedInstances } from './instances.ts';
import {
  type AttachedSource,
  type AttachTarget,
  attachError,
  attachedSource,
  attachedSpec,
  attachName,
  isAttached,
  listBuffers,
  prepareAttached,
} from './persistent.ts';
import { Session } from './session.ts';
import { autoSource } from './sources.ts';
import { isAlive, readRecords, type SessionRecord, sessionsDir, writeRecord } from './state.ts';
import { Viewer, type ViewerOutput } from './viewer.ts';

/** Options of {@link Agent}. */
export interface AgentOptions {
  readonly stateDir: string;
  /** The tracefs mount point (default: found, mounted when root). */
  readonly tracefs?: string;
  /** Where each line of the agent's log goes. */
  readonly log: (line: string) => void;
  /** Most sessions at once. Default 32. */
  readonly maxSessions?: number;
  /** Most viewers at once, over all sessions. Default 64. */
  readonly maxViewers?: number;
  /** Events per second per CPU of demo sessions. Default 5000. */
  readonly demoRate?: number;
  /** More source kinds (`mce`: the hardware session), by the kind saved in a session's state. */
  readonly sources?: Readonly<Record<string, (spec: SessionSpec) => EventSource>>;
  /** Milliseconds between two samples of the sessions' buffer gauges (`stats`). Default 1000. */
  readonly statsIntervalMs?: number;
  /** Told of every session the agent opens (created, or recovered after a restart), before it starts. */
  readonly opened?: (session: Session) => void;
  /** Told of every trace-shot taken (asked for, or by a trigger), with why. */
  readonly shot?: (session: Session, result: SnapshotResult, why: string) => void;
}

const SIGNALS: readonly TriggerSignal[] = ['SIGUSR1', 'SIGUSR2'];

export class Agent implements MetricsProvider {
  readonly sessionsByName = new Map<string, Session>();
  readonly startTimeMs = Date.now();
  protocolErrors = 0;
  readonly #o: AgentOptions;
  #timer: NodeJS.Timeout | undefined;
  #nextStream = 1;
  readonly #pendingShots = new Set<Session>();
  readonly #signalHandlers = new Map<TriggerSignal, () => void>();
  #closed = false;
  readonly #instances: SharedInstances;
  readonly #gauges: BufferGauges;
  /** Tags this agent's tracefs instances, so that only an agent of the same state directory re-adopts or removes them. */
  readonly #owner: string;

  constructor(options: AgentOptions) {
    this.#o = options;
    this.#owner = ownerTag(options.stateDir);
    this.#instances = new SharedInstances({
      owner: this.#owner,
      ...(options.tracefs !== undefined ? { tracefs: options.tracefs } : {}),
    });
    this.#gauges = new BufferGauges({
      tracefs: () => options.tracefs ?? findTracefs(),
      ...(options.statsIntervalMs !== undefined ? { intervalMs: options.statsIntervalMs } : {}),
    });
    this.#gauges.start(() => this.sessionsByName.values());
    mkdirSync(sessionsDir(options.stateDir), { recursive: true, mode: 0o750 });
    mkdirSync(join(options.stateDir, 'snapshots'), { recursive: true, mode: 0o750 });
    for (const signal of SIGNALS) {
      const handler = () => this.#onSignal(signal);
      this.#signalHandlers.set(signal, handler);
      process.on(signal, handler);
    }
  }

  get viewerCount(): number {
    let n = 0;
    for (const s of this.sessionsByName.values()) n += s.viewers.size;
    return n;
  }

  /** Bytes of event text queued for viewers, over all sessions. */
  get viewerQueuedBytes(): number {
    let n = 0;
    for (const s of this.sessionsByName.values()) for (const v of s.viewers) n += v.queuedBytes;
    return n;
  }

  /**
   * Picks up what an agent killed outright left in the state directory: re-adopts each kernel session's tracefs
   * instance when it still exists (the events it buffered since are kept) or re-creates the session, finishes
   * leftover `.part` outputs, and removes evtrace instances of dead processes that no session claims. Returns
   * what it did, one line each.
   */
  async recover(): Promise<string[]> {
    const said: string[] = [];
    const { records, problems } = readRecords(this.#o.stateDir);
    for (const p of problems) said.push(`unreadable state file left alone: ${p}`);
    const adopted = new Set<string>();
    for (const { dir, record } of records) {
      if (record.pid !== process.pid && isAlive(record.pid))
        throw new AgentError(
          'ERR_AGENT_LIMIT',
          `the state directory ${this.#o.stateDir} is in use by a running agent (pid ${record.pid})`,
        );
      const name = record.spec.name;
      const finished = record.part === undefined ? undefined : finishPart(record.part, record.spec, record.owner);
      if (finished !== undefined) said.push(`session ${name}: ${finished}`);
      let tracefs: string | undefined;
      let adopt: string | undefined;
      if (record.source === 'kernel' && record.instance !== undefined) {
        try {
          tracefs = this.#o.tracefs ?? findTracefs();
          if (existsSync(join(tracefs, 'instances', record.instance))) adopt = record.instance;
        } catch {}
      }
      rmSync(join(dir, 'meta'), { recursive: true, force: true });
      if (record.persistent !== undefined) {
        said.push(`session ${name}: ${await this.#reattach(dir, record)}`);
        continue;
      }
      try {
        const source =
          adopt !== undefined ? this.#kernelSource(record.spec, adopt) : this.#source(record.spec, record.source);
        const session = await this.#open({ ...record.spec, triggers: record.triggers }, source, dir, record.owner);
        if (adopt !== undefined) adopted.add(adopt);
        if (record.state === 'running') {
          session.start();
          if (session.source.kind === 'kernel') raisePriority(DEFAULT_NICE);
        }
        const how =
          adopt !== undefined
            ? `re-adopted tracefs instance ${adopt} (its buffered events are kept)`
            : record.instance !== undefined
              ? `tracefs instance ${record.instance} was gone; re-created with ${session.source.resource ?? 'a new one'}`
              : `re-created (${record.source} source)`;
        said.push(`session ${name}: ${how}; ${session.state}`);
      } catch (error) {
        rmSync(dir, { recursive: true, force: true });
        said.push(`session ${name}: could not be restored (${asAgentError(error).message}); removed`);
      }
    }
    said.push(...this.#cleanInstances(adopted));
    return said;
  }

  /** Attaches a restarted agent's session to its persistent buffer again (the buffer outlived the agent). */
  async #reattach(dir: string, record: SessionRecord): Promise<string> {
    const target = record.persistent!;
    try {
      const source = this.#prepareAttached(target, record.owner);
      const session = await this.#open({ ...record.spec, triggers: record.triggers }, source, dir, record.owner);
      if (record.state === 'running') session.start();
      return `attached again to ${target.backend} buffer ${target.buffer}; ${session.state}`;
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      return `could not attach to ${target.backend} buffer ${target.buffer} again (${asAgentError(error).message}); removed`;
    }
  }

  /** Removes evtrace instances whose process died and that no session re-adopted. */
  #cleanInstances(keep: ReadonlySet<string>): string[] {
    let tracefs: string;
    try {
      tracefs = this.#o.tracefs ?? findTracefs();
    } catch {
      return [];
    }
    const said: string[] = [];
    let names: string[] = [];
    try {
      names = readdirSync(join(tracefs, 'instances'));
    } catch {}
    for (const name of names) {
      const o = instanceOwner(name);
      // Another state directory's instances wait for their own agent; one-shot recordings' orphans are anyone's.
      if (o === undefined || (o.owner !== undefined && o.owner !== this.#owner)) continue;
      if (keep.has(name) || o.pid === process.pid || isAlive(o.pid)) continue;
      try {
        removeInstanceDir(join(tracefs, 'instances', name));
        said.push(`cleaned tracefs instance ${name} (its process ${o.pid} is gone and no session claims it)`);
      } catch (error) {
        said.push(`cannot remove tracefs instance ${name}: ${(error as Error).message}`);
      }
    }
    return said;
  }

  #kernelSource(spec: SessionSpec, adopt?: string): KernelTap {
    return this.#instances.acquire(spec, adopt);
  }

  /** The other sessions reading the same tracefs instance as `s`. */
  #sharing(s: Session): string[] {
    if (!(s.source instanceof KernelTap)) return [];
    const shared = s.source.shared;
    return [...this.sessionsByName.values()]
      .filter((o) => o !== s && o.source instanceof KernelTap && o.source.shared === shared)
      .map((o) => o.name);
  }

  #source(spec: SessionSpec, kind: string): EventSource {
    if (kind === 'kernel') return this.#kernelSource(spec);
    if (kind === 'bts' || kind === 'bts-qemu')
      return new BtsSource({
        command: spec.command ?? [],
        backend: kind === 'bts' ? 'hardware' : 'qemu',
        events: spec.events,
      });
    const make = this.#o.sources?.[kind];
    if (make !== undefined) return make(spec);
    if (kind !== 'demo')
      throw new AgentError('ERR_AGENT_SOURCE', `no ${kind} source in this agent (evtrace agent --hardware)`);
    return new DemoSource({ events: spec.events, cpus: Math.min(osCpus().length, 4), rate: this.#o.demoRate ?? 5000 });
  }

  async #open(spec: SessionSpec, source: EventSource, dir: string, owner: Caller | undefined): Promise<Session> {
    const session = new Session(
      spec,
      source,
      dir,
      join(this.#o.stateDir, 'snapshots'),
      {
        triggered: (s, why) => this.#trigger(s, why),
        failed: (s, error) => this.#o.log(`session ${s.name} failed and stopped: ${error.code}: ${error.message}`),
        changed: (s) => this.#save(s),
        sharing: (s) => this.#sharing(s),
      },
      owner,
    );
    await session.open();
    this.sessionsByName.set(spec.name, session);
    this.#o.opened?.(session);
    this.#save(session);
    this.#schedule();
    return session;
  }

  #save(s: Session): void {
    if (!this.sessionsByName.has(s.name) || this.#closed) return;
    const record: SessionRecord = {
      spec: s.spec,
      source: s.source.kind,
      pid: process.pid,
      ...(s.source.resource !== undefined ? { instance: s.source.resource } : {}),
      state: s.state,
      ...(s.part !== undefined ? { part: s.part } : {}),
      triggers: s.triggers,
      ...(isAttached(s.source) ? { persistent: s.source.target } : {}),
      ...(s.owner !== undefined ? { owner: s.owner } : {}),
    };
    try {
      writeRecord(s.dir, record);
    } catch (error) {
      this.#o.log(`cannot write the state of session ${s.name}: ${(error as Error).message}`);
    }
  }

  #get(name: string): Session {
    const s = this.sessionsByName.get(name);
    if (s === undefined) throw new AgentError('ERR_AGENT_NO_SESSION', `no session named ${name}`);
    return s;
  }

  /**
   * Creates a session; `source` names one of {@link AgentOptions.sources} (in-process callers only). Its output
   * directory is written with `caller`'s rights, now and whenever the session writes there.
   */
  async create(spec: SessionSpec, source?: string, caller?: Caller): Promise<SessionStatus> {
    if (this.sessionsByName.has(spec.name))
      throw new AgentError('ERR_AGENT_SESSION_EXISTS', `a session named ${spec.name} exists`);
    if (this.sessionsByName.size >= (this.#o.maxSessions ?? 32))
      throw new AgentError('ERR_AGENT_LIMIT', `at most ${this.#o.maxSessions ?? 32} sessions`);
    // The program of a branch-trace session would run as the agent.
    if (spec.command !== undefined && !actsAsItself(caller))
      throw new AgentError(
        'ERR_AGENT_PERMISSION',
        `a session with a command runs it as the agent: only root or the agent's user may create one (you are ${callerName(caller!)})`,
      );
    let kind: string = source ?? spec.source ?? 'auto';
    if (kind === 'auto')
      kind = autoSource({ uid: () => process.getuid?.(), tracefs: () => this.#o.tracefs ?? findTracefs() }).source;
    const dir = join(sessionsDir(this.#o.stateDir), spec.name);
    // Reserved at once: a second create of the same name while this one prepares is refused.
    if (existsSync(dir))
      throw new AgentError('ERR_AGENT_SESSION_EXISTS', `a session named ${spec.name} exists (state in ${dir})`);
    mkdirSync(dir, { recursive: true });
    let session: Session;
    try {
      session = await this.#open(spec, this.#source(spec, kind), dir, caller);
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
    this.#o.log(
      `session ${spec.name} created (${session.source.kind} source${session.source.resource ? `, instance ${session.source.resource}` : ''})`,
    );
    return session.status();
  }

  /**
   * Makes a persistent buffer the source of a new session, running at once. Its name defaults to the buffer's with
   * `/` as `.`; one session per buffer.
   */
  async attachBuffer(spec: AttachSpec, caller?: Caller): Promise<SessionStatus> {
    const name = attachName(spec);
    if (this.sessionsByName.has(name))
      throw new AgentError('ERR_AGENT_SESSION_EXISTS', `a session named ${name} exists`);
    if (this.sessionsByName.size >= (this.#o.maxSessions ?? 32))
      throw new AgentError('ERR_AGENT_LIMIT', `at most ${this.#o.maxSessions ?? 32} sessions`);
    const target = {
      buffer: spec.buffer,
      backend: spec.backend ?? 'user',
      ...(spec.dir !== undefined ? { dir: spec.dir } : {}),
    };
    for (const s of this.sessionsByName.values()) {
      if (
        isAttached(s.source) &&
        s.source.target.backend === target.backend &&
        s.source.target.buffer === target.buffer
      )
        throw new AgentError(
          'ERR_AGENT_SESSION_EXISTS',
          `${target.backend} buffer ${target.buffer} is attached as session ${s.name}`,
        );
    }
    const dir = join(sessionsDir(this.#o.stateDir), name);
    if (existsSync(dir))
      throw new AgentError('ERR_AGENT_SESSION_EXISTS', `a session named ${name} exists (state in ${dir})`);
    const source = this.#prepareAttached(target, caller);
    mkdirSync(dir, { recursive: true });
    // Prepared once: the session's open prepares again, which the attached sources take as a no-op.
    const session = await this.#open(attachedSpec(name, source), source, dir, caller);
    session.start();
    // What the buffer holds already is in the session when the reply goes out.
    session.poll(Date.now());
    this.#schedule();
    this.#o.log(`session ${name} attached to ${target.backend} buffer ${target.buffer} (${source.path})`);
    return session.status();
  }

  /**
   * Refuses `caller` a buffer they could not open themselves (ERR_AGENT_PERMISSION, the message a direct open gives): an
   * attached session shows its buffer's content, so attaching, viewing and trace-shots all ask. Kernel buffers are tracefs
   * instances, root's alone.
   */
  #mayRead(target: AttachTarget, caller: Caller | undefined): void {
    if (actsAsItself(caller)) return;
    if (target.backend === 'kernel')
      throw new AgentError(
        'ERR_AGENT_PERMISSION',
        `permission denied: kernel buffer ${target.buffer} is a tracefs instance, which only root reads (you are ${callerName(caller!)})`,
      );
    try {
      asCaller(caller, () =>
        openPersistent(target.buffer, {
          readOnly: true,
          ...(target.dir !== undefined ? { dir: target.dir } : {}),
        }).close(),
      );
    } catch (error) {
      const e = attachError(error);
      if (e.code !== 'ERR_AGENT_PERMISSION') throw e;
      // The buffer's message names the process's user; the identity checked was the caller's.
      const message = e.message.replace(
        `; you are ${userName(process.getuid?.() ?? 0)})`,
        `; you are ${userName(caller!.uid)})`,
      );
      throw new AgentError('ERR_AGENT_PERMISSION', message, { cause: error });
    }
  }

  /** The source of an attach, prepared with the caller's rights once they may read the buffer. */
  #prepareAttached(target: AttachTarget, caller: Caller | undefined): AttachedSource {
    this.#mayRead(target, caller);
    const source = attachedSource(target, this.#o.tracefs);
    asCaller(caller, () => prepareAttached(source));
    return source;
  }

  /** Ends a session attached to a persistent buffer; the buffer stays, as do the session's trace-shots. */
  detachBuffer(name: string): DetachResult {
    const s = this.#get(name);
    if (!isAttached(s.source))
      throw new AgentError(
        'ERR_AGENT_SESSION_STATE',
        `session ${name} is not attached to a persistent buffer (destroy ends it)`,
      );
    const { buffer, backend } = s.source.target;
    this.destroy(name);
    return { name, buffer, backend };
  }

  /** The persistent buffers `caller` sees (with their rights), each with the session attached to it. */
  buffers(dir?: string, caller?: Caller): BufferList {
    const attached = new Map<string, { session: string; user: boolean }>();
    for (const s of this.sessionsByName.values())
      if (isAttached(s.source))
        attached.set(s.source.path, { session: s.name, user: s.source.target.backend === 'user' });
    try {
      return asCaller(caller, () =>
        listBuffers(attached, {
          ...(dir !== undefined ? { dir } : {}),
          ...(this.#o.tracefs !== undefined ? { tracefs: this.#o.tracefs } : {}),
        }),
      );
    } catch (error) {
      throw attachError(error);
    }
  }

  start(name: string): SessionStatus {
    const s = this.#get(name);
    s.start();
    // The reading loop must keep up with the load it records (a daemon stays an ordinary task): as root every thread
    // of the agent runs at nice -20 (V8's helpers too: a collector left at nice 0 stalls the loop under load).
    if (s.source.kind === 'kernel') raisePriority(DEFAULT_NICE);
    this.#schedule();
    return s.status();
  }

  stop(name: string): SessionStatus {
    const s = this.#get(name);
    s.stop();
    return s.status();
  }

  destroy(name: string): { name: string } {
    const s = this.#get(name);
    this.sessionsByName.delete(name);
    this.#pendingShots.delete(s);
    s.destroy();
    this.#o.log(`session ${name} destroyed`);
    return { name };
  }

  status(name: string): SessionStatus {
    return this.#get(name).status();
  }

  /** The gauges of the session's buffers per CPU, sampled every interval: those after `since`. */
  stats(name: string, since?: number): BufferStats {
    return this.#gauges.stats(this.#get(name), since);
  }

  list(): SessionStatus[] {
    return [...this.sessionsByName.values()].map((s) => s.status());
  }

  /** A trace-shot; a directory it names is written with `caller`'s rights. */
  snapshot(name: string, dir?: string, format?: 'tracedat' | 'ctf', caller?: Caller): SnapshotResult {
    const s = this.#get(name);
    if (isAttached(s.source)) this.#mayRead(s.source.target, caller);
    const result = s.snapshot(dir, format, caller);
    this.#o.log(`session ${name}: trace-shot ${result.path} (${result.events} events)`);
    this.#o.shot?.(s, result, 'asked for');
    return result;
  }

  trigger(name: string, trigger: TriggerSpec): SessionStatus {
    const s = this.#get(name);
    s.addTrigger(trigger);
    return s.status();
  }

  /** A viewer of the session; of an attached session only for a caller who may read its buffer. */
  subscribe(
    name: string,
    out: ViewerOutput,
    options: { window?: boolean; queue?: number },
    caller?: Caller,
  ): Viewer & { readonly session: Session } {
    const s = this.#get(name);
    if (isAttached(s.source)) this.#mayRead(s.source.target, caller);
    if (s.state !== 'running')
      throw new AgentError('ERR_AGENT_SESSION_STATE', `session ${name} is ${s.state}, not running`);
    if (this.viewerCount >= (this.#o.maxViewers ?? 64))
      throw new AgentError('ERR_AGENT_LIMIT', `at most ${this.#o.maxViewers ?? 64} viewers`);
    const viewer = new Viewer(this.#nextStream++, options.queue ?? 10_000, out);
    return Object.assign(viewer, { session: s });
  }

  /** Sends the window (when asked) and attaches the viewer; called after the subscribe reply went out. */
  attach(viewer: Viewer, window: boolean): void {
    const s = (viewer as Viewer & { session: Session }).session;
    if (window) for (const line of s.window(viewer.capacity)) viewer.offer(line);
    viewer.markLive();
    s.viewers.add(viewer);
  }

  /** The viewer left (unsubscribed, or its connection closed): its queue is dropped, not delivered. */
  detach(viewer: Viewer, reason: string): void {
    const s = (viewer as Viewer & { session?: Session }).session;
    if (s?.viewers.delete(viewer)) s.viewerLostEnded += viewer.lost;
    viewer.end(reason, false);
  }

  /** An event trigger: matches found in one pass of the loop share one trace-shot, taken right after it. */
  #trigger(s: Session, why: string): void {
    if (this.#pendingShots.has(s)) return;
    this.#pendingShots.add(s);
    setImmediate(() => {
      if (!this.#pendingShots.delete(s) || !this.sessionsByName.has(s.name)) return;
      try {
        const r = s.snapshot(undefined, undefined);
        this.#o.log(`session ${s.name}: ${why}: trace-shot ${r.path} (${r.events} events)`);
        this.#o.shot?.(s, r, why);
      } catch (error) {
        this.#o.log(`session ${s.name}: ${why}: trace-shot failed: ${asAgentError(error).message}`);
      }
    });
  }

  /** A signal trigger: every signal gets its own trace-shot, at once. */
  #onSignal(signal: TriggerSignal): void {
    for (const s of this.sessionsByName.values()) {
      if (!s.triggers.some((t) => t.kind === 'signal' && t.signal === signal)) continue;
      try {
        const r = s.snapshot(undefined, undefined);
        this.#o.log(`session ${s.name}: ${signal} received: trace-shot ${r.path} (${r.events} events)`);
        this.#o.shot?.(s, r, `${signal} received`);
      } catch (error) {
        this.#o.log(`session ${s.name}: ${signal} received: trace-shot failed: ${asAgentError(error).message}`);
      }
    }
  }

  #schedule(delay = 5): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#tick();
    }, delay);
  }

  #tick(): void {
    const now = Date.now();
    let fastest = 0;
    let running = false;
    for (const s of this.sessionsByName.values()) {
      fastest = Math.max(fastest, s.poll(now));
      running ||= s.state === 'running';
    }
    if (running) this.#schedule(fastest > 0 ? 5 : 20);
  }

  /** Stops every session (finishing its output), releases their sources and state; the agent is done. */
  close(): void {
    if (this.#closed) return;
    for (const s of this.sessionsByName.values()) {
      try {
        s.destroy();
      } catch (error) {
        this.#o.log(`session ${s.name}: ${(error as Error).message}`);
      }
    }
    this.#closed = true;
    this.sessionsByName.clear();
    clearTimeout(this.#timer);
    this.#gauges.stop();
    for (const [signal, handler] of this.#signalHandlers) process.removeListener(signal, handler);
  }

  sessions(): readonly SessionCounters[] {
    return [...this.sessionsByName.values()].map((s) => {
      const st = s.status();
      return {
        name: st.name,
        mode: st.mode,
        state: st.state,
        source: st.source,
        cpus: st.cpus,
        viewers: st.viewers,
        viewerLost: st.viewerLost,
      };
    });
  }

  health(): AgentHealth {
    return {
      startTimeMs: this.startTimeMs,
      sessions: this.sessionsByName.size,
      viewers: this.viewerCount,
      viewerQueuedBytes: this.viewerQueuedBytes,
      protocolErrors: this.protocolErrors,
      uptimeSeconds: (Date.now() - this.startTimeMs) / 1000,
    };
  }
}

/**
 * Turns the `.part` a killed agent left into its output, with the rights of the session's owner; keeps it
 * (readable) when that fails.
 */
function finishPart(part: string, spec: SessionSpec, owner: Caller | undefined): string | undefined {
  const format = spec.output?.format ?? 'tracedat';
  const out = part.replace(/\.part$/, extension(format));
  try {
    const r = asCaller(owner, () => (existsSync(part) ? finishInto(part, out, format) : undefined));
    if (r === undefined) return undefined;
    return `output ${part} left by the previous agent finished as ${out} (${r.bytes} bytes)`;
  } catch (error) {
    return `output ${part} left by the previous agent kept as it is (readable with evtrace cat): ${asAgentError(error).message}`;
  }
}

/** The owner tag of the instances of an agent with this state directory: 8 hex digits of its path's hash. */
export function ownerTag(stateDir: string): string {
  return createHash('sha256').update(resolve(stateDir)).digest('hex').slice(0, 8);
}
