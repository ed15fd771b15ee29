/**
 * The control socket: a Unix stream socket in a 0750 directory, mode 0660 with a group (0600 without), each peer's
 * credentials checked on connect (SO_PEERCRED) and every path its requests name opened with them (caller.ts).
 * Requests are JSON lines (PROTOCOL.md in @evtrace/agent-protocol), answered in order; malformed, oversize or unknown
 * requests get an error reply and the connection goes on.
 */
import { chmodSync, chownSync, lstatSync, mkdirSync, readdirSync, unlinkSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { basename, dirname, isAbsolute } from 'node:path';
import {
  encodeLine,
  LineDecoder,
  MAX_REQUEST_BYTES,
  PROTOCOL_VERSIONS,
  parseRequest,
  type Request,
  subscribeResult,
  V2_OPS,
} from '@evtrace/agent-protocol';
import pkg from '../../package.json' with { type: 'json' };
import type { Agent } from './agent.ts';
import { callerOf } from './caller.ts';
import { AgentError, asAgentError } from './errors.ts';
import { authorize, groupId, type PeerCredentials, peerCredentials } from './peercred.ts';
import type { Viewer } from './viewer.ts';

/** Options of {@link listen}. */
export interface ListenOptions {
  readonly socket: string;
  /** Members of this group (name or gid) may connect too. */
  readonly group?: string;
  readonly log: (line: string) => void;
}

/** Requests a connection may have waiting before it is told to slow down. */
const MAX_QUEUED = 64;
/** Bytes a connection's socket may buffer before viewers wait for it to drain. */
const HIGH_WATER = 1 << 20;

function isListening(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = createConnection(path);
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}

/**
 * Opens the control socket, replacing a stale one. @throws AgentError when another agent listens there, something
 * other than a socket is at the path, or the group is unknown.
 */
export async function listen(agent: Agent, options: ListenOptions): Promise<Server> {
  const gid = options.group === undefined ? undefined : groupId(options.group);
  if (options.group !== undefined && gid === undefined)
    throw new AgentError('ERR_AGENT_INTERNAL', `no group named ${options.group}`);
  const dir = dirname(options.socket);
  const made = mkdirSync(dir, { recursive: true, mode: 0o750 }) !== undefined;
  const found = lstatSync(options.socket, { throwIfNoEntry: false });
  if (found !== undefined) {
    // Only a socket no agent answers on is ours to replace: anything else at that path stays as it is.
    if (!found.isSocket())
      throw new AgentError(
        'ERR_AGENT_LIMIT',
        `${options.socket} exists and is not a socket (${found.isSymbolicLink() ? 'a symbolic link' : found.isDirectory() ? 'a directory' : 'a file'}): it is left alone; give another --socket`,
      );
    if (await isListening(options.socket))
      throw new AgentError('ERR_AGENT_LIMIT', `an agent is already listening on ${options.socket}`);
    unlinkSync(options.socket);
  }
  const server = createServer((socket) => serve(agent, socket, gid, options.log));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.socket, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
  chmodSync(options.socket, gid === undefined ? 0o600 : 0o660);
  if (gid !== undefined) {
    chownSync(options.socket, -1, gid);
    // The directory is opened to the group only when it is the agent's (made now, or a service's runtime directory
    // holding nothing else): a shared one such as /tmp or /run keeps its owner and mode.
    if (made || readdirSync(dir).every((name) => name === basename(options.socket))) {
      chownSync(dir, -1, gid);
      chmodSync(dir, 0o750);
    } else options.log(`${dir} holds other files and is left as it is: the group must be able to search it`);
  }
  return server;
}

function serve(agent: Agent, socket: Socket, gid: number | undefined, log: (line: string) => void): void {
  socket.on('error', () => {});
  const refuse = (refusal: string) => {
    agent.protocolErrors++;
    log(`refused a connection: ${refusal}`);
    socket.end(encodeLine({ id: null, ok: false, error: { code: 'ERR_AGENT_PERMISSION', message: refusal } }));
  };
  let peer: PeerCredentials;
  try {
    peer = peerCredentials(socket);
  } catch (error) {
    refuse(`cannot read the peer's credentials: ${(error as Error).message}`);
    return;
  }
  const refusal = authorize(peer, gid, process.getuid?.() ?? 0);
  if (refusal !== undefined) {
    refuse(refusal);
    return;
  }
  /** Every path a request names is opened with the peer's rights. */
  const caller = callerOf(peer);
  const decoder = new LineDecoder(MAX_REQUEST_BYTES);
  const viewers = new Map<number, Viewer>();
  let hello = false;
  let version = 0;
  let queued = 0;
  let chain = Promise.resolve();
  const out = {
    write: (line: string) => (socket.destroyed ? false : socket.write(line)),
    get writable() {
      return !socket.destroyed && socket.writableLength < HIGH_WATER;
    },
  };
  const reply = (id: number | null, result: unknown) => out.write(encodeLine({ id, ok: true, result }));
  const fail = (id: number | null, error: AgentError) => {
    out.write(encodeLine({ id, ok: false, error: { code: error.code, message: error.message } }));
  };
  socket.on('drain', () => {
    for (const v of viewers.values()) v.flush();
  });
  socket.on('close', () => {
    for (const v of viewers.values()) agent.detach(v, 'connection closed');
    viewers.clear();
  });

  /** A path the agent opens for the peer: relative to what? The client resolves it against its own directory. */
  const absolute = (path: string | undefined, what: string) => {
    if (path !== undefined && !isAbsolute(path))
      throw new AgentError('ERR_AGENT_BAD_MESSAGE', `${what} ${path} is not an absolute path`);
  };

  const handle = async (r: Request): Promise<void> => {
    if (r.op === 'hello') {
      if (!PROTOCOL_VERSIONS.includes(r.version))
        throw new AgentError(
          'ERR_AGENT_VERSION',
          `protocol version ${r.version} is not spoken here (this agent speaks ${PROTOCOL_VERSIONS.join(', ')})`,
        );
      hello = true;
      version = r.version;
      reply(r.id, { protocol: version, agent: pkg.version, pid: process.pid });
      return;
    }
    if (!hello) throw new AgentError('ERR_AGENT_HELLO_REQUIRED', 'the first request must be hello');
    if (version < 2 && V2_OPS.includes(r.op))
      throw new AgentError(
        'ERR_AGENT_UNKNOWN_OP',
        `op '${r.op}' needs protocol version 2 (this connection said ${version})`,
      );
    switch (r.op) {
      case 'create':
        absolute(r.session.output?.dir, 'the output directory');
        return void reply(r.id, await agent.create(r.session, undefined, caller));
      case 'start':
        return void reply(r.id, agent.start(r.name));
      case 'stop':
        return void reply(r.id, agent.stop(r.name));
      case 'destroy':
        return void reply(r.id, agent.destroy(r.name));
      case 'status':
        return void reply(r.id, agent.status(r.name));
      case 'list':
        return void reply(r.id, agent.list());
      case 'snapshot':
        absolute(r.dir, 'the trace-shot directory');
        return void reply(r.id, agent.snapshot(r.name, r.dir, r.format, caller));
      case 'trigger':
        return void reply(r.id, agent.trigger(r.name, r.trigger));
      case 'subscribe': {
        const v = agent.subscribe(r.name, out, { ...(r.queue !== undefined ? { queue: r.queue } : {}) }, caller);
        viewers.set(v.stream, v);
        // Version 3 types the stream: the session's format files come with the reply.
        reply(r.id, version >= 3 ? subscribeResult(v.stream, v.session.eventClasses) : { stream: v.stream });
        agent.attach(v, r.window !== false);
        return;
      }
      case 'buffers':
        absolute(r.dir, 'the buffer directory');
        return void reply(r.id, agent.buffers(r.dir, caller));
      case 'attach':
        absolute(r.dir, 'the buffer directory');
        return void reply(r.id, await agent.attachBuffer(r, caller));
      case 'detach':
        return void reply(r.id, agent.detachBuffer(r.name));
      case 'stats':
        return void reply(r.id, agent.stats(r.name, r.since));
      case 'unsubscribe': {
        const v = viewers.get(r.stream);
        if (v === undefined) throw new AgentError('ERR_AGENT_BAD_MESSAGE', `no stream ${r.stream} on this connection`);
        viewers.delete(r.stream);
        reply(r.id, { stream: r.stream });
        agent.detach(v, 'unsubscribed');
        return;
      }
    }
  };

  /** Runs `task` after every request before it: replies keep the requests' order, errors included. */
  const inOrder = (task: () => Promise<void> | void) => {
    queued++;
    chain = chain.then(async () => {
      try {
        if (!socket.destroyed) await task();
      } finally {
        queued--;
      }
    });
  };

  socket.on('data', (chunk: Buffer) => {
    for (const frame of decoder.push(chunk)) {
      if (queued >= MAX_QUEUED) {
        agent.protocolErrors++;
        fail(null, new AgentError('ERR_AGENT_LIMIT', `more than ${MAX_QUEUED} requests waiting on this connection`));
        continue;
      }
      if ('oversize' in frame) {
        agent.protocolErrors++;
        const e = new AgentError(
          'ERR_AGENT_TOO_LARGE',
          `a request of ${frame.oversize} bytes exceeds ${MAX_REQUEST_BYTES}`,
        );
        inOrder(() => fail(null, e));
        continue;
      }
      const parsed = parseRequest(frame.line);
      if (!parsed.ok) {
        agent.protocolErrors++;
        const e = new AgentError(parsed.code, parsed.message);
        inOrder(() => fail(parsed.id, e));
        continue;
      }
      const request = parsed.value;
      inOrder(async () => {
        try {
          await handle(request);
        } catch (error) {
          const e = asAgentError(error);
          if (e.code === 'ERR_AGENT_INTERNAL') log(`request ${request.op} failed: ${e.message}`);
          fail(request.id, e);
        }
      });
    }
  });
}
