import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeJsonEvent, eventComm, parseFormatFile, type TraceEvent } from '@evtrace/trace-format';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectAgent, type SubscriptionBatch, type SubscriptionItem } from './client.ts';
import { ProtocolError } from './errors.ts';
import { encodeLine, LineDecoder, MAX_REQUEST_BYTES } from './framing.ts';
import type { Request } from './messages.ts';
import { endMessage, eventsMessage, liveMessage, lossMessage, subscribeResult } from './stream.ts';
import { parseRequest } from './validate.ts';

/**
 * A peer on a real Unix socket speaking the protocol from PROTOCOL.md, answering as `answer` says: the client's side
 * of the contract (the agent's side is tested against the real daemon in apps/agent).
 */
function peer(path: string, answer: (r: Request, socket: Socket) => string | undefined): Promise<Server> {
  const server = createServer((socket) => {
    const d = new LineDecoder(MAX_REQUEST_BYTES);
    socket.on('data', (chunk) => {
      for (const f of d.push(chunk)) {
        if (!('line' in f)) continue;
        const r = parseRequest(f.line);
        if (!r.ok) {
          socket.write(encodeLine({ id: r.id, ok: false, error: { code: r.code, message: r.message } }));
          continue;
        }
        if (r.value.op === 'hello')
          socket.write(encodeLine({ id: r.value.id, ok: true, result: { protocol: 1, agent: 'test', pid: 1 } }));
        else {
          const out = answer(r.value, socket);
          if (out !== undefined) socket.write(out);
        }
      }
    });
  });
  return new Promise((resolve) => server.listen(path, () => resolve(server)));
}

let dir: string;
let server: Server | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agent-protocol-'));
});
afterEach(async () => {
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
  rmSync(dir, { recursive: true, force: true });
});

describe('connectAgent', () => {
  it('speaks version 1 to an agent from before versions 2 and 3 (and the persistent ops get ERR_AGENT_UNKNOWN_OP there)', async () => {
    const path = join(dir, 'old.sock');
    const hellos: number[] = [];
    server = createServer((socket) => {
      const d = new LineDecoder(MAX_REQUEST_BYTES);
      socket.on('data', (chunk) => {
        for (const f of d.push(chunk)) {
          if (!('line' in f)) continue;
          const r = JSON.parse(f.line) as { id: number; op: string; version?: number };
          if (r.op === 'hello') hellos.push(r.version!);
          const reply =
            r.op === 'hello' && r.version === 1
              ? { id: r.id, ok: true, result: { protocol: 1, agent: 'old', pid: 7 } }
              : r.op === 'hello'
                ? { id: r.id, ok: false, error: { code: 'ERR_AGENT_VERSION', message: `speaks 1 only` } }
                : { id: r.id, ok: false, error: { code: 'ERR_AGENT_UNKNOWN_OP', message: `unknown op '${r.op}'` } };
          socket.write(`${JSON.stringify(reply)}\n`);
        }
      });
    });
    await new Promise<void>((r) => server!.listen(path, r));
    const client = await connectAgent(path);
    expect(hellos).toEqual([3, 2, 1]);
    expect(client.agent).toEqual({ protocol: 1, agent: 'old', pid: 7 });
    await expect(client.buffers()).rejects.toMatchObject({ code: 'ERR_AGENT_UNKNOWN_OP', remote: true });
    client.close();
  });

  it('fails with ERR_AGENT_CONNECT and a hint when no agent listens', async () => {
    const error = await connectAgent(join(dir, 'none.sock')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).code).toBe('ERR_AGENT_CONNECT');
    expect((error as ProtocolError).message).toMatch(/none\.sock: ENOENT.*evtrace agent/);
  });

  it('performs the handshake, sends requests and turns error replies into remote ProtocolErrors', async () => {
    const path = join(dir, 'a.sock');
    const seen: Request[] = [];
    server = await peer(path, (r) => {
      seen.push(r);
      if (r.op === 'list') return encodeLine({ id: r.id, ok: true, result: [] });
      return encodeLine({ id: r.id, ok: false, error: { code: 'ERR_AGENT_NO_SESSION', message: 'no session x' } });
    });
    const client = await connectAgent(path);
    expect(client.agent).toEqual({ protocol: 1, agent: 'test', pid: 1 });
    expect(await client.list()).toEqual([]);
    const error = (await client.status('x').catch((e: unknown) => e)) as ProtocolError;
    expect([error.code, error.remote, error.message]).toEqual(['ERR_AGENT_NO_SESSION', true, 'no session x']);
    expect(seen.map((r) => r.op)).toEqual(['list', 'status']);
    client.close();
    await expect(client.list()).rejects.toMatchObject({ code: 'ERR_AGENT_CLOSED' });
  });

  it('delivers stream messages written in the same chunk as the subscribe reply, then ends', async () => {
    const path = join(dir, 'b.sock');
    server = await peer(path, (r) => {
      if (r.op !== 'subscribe') return undefined;
      const ev = (n: number) => ({
        ts_ns: String(n),
        cpu: 0,
        event: 'kmem:kfree',
        pid: null,
        comm: null,
        flags: null,
        fields: { ptr: n },
      });
      return [
        encodeLine({ id: r.id, ok: true, result: { stream: 9 } }),
        encodeLine({ stream: 9, kind: 'events', events: [ev(1), ev(2)] }),
        encodeLine({ stream: 9, kind: 'live' }),
        encodeLine({ stream: 9, kind: 'loss', lost: 4, total: 4 }),
        encodeLine({ stream: 9, kind: 'events', events: [ev(3)] }),
        encodeLine({ stream: 9, kind: 'end', reason: 'session stopped' }),
      ].join('');
    });
    const client = await connectAgent(path);
    const sub = await client.subscribe('s');
    const items: SubscriptionItem[] = [];
    for await (const item of sub) items.push(item);
    expect(items.map((i) => (i.kind === 'event' ? String(i.event.tsNs) : i.kind))).toEqual([
      '1',
      '2',
      'live',
      'loss',
      '3',
    ]);
    expect(sub.endReason).toBe('session stopped');
    client.close();
  });

  it('fails a connection whose peer sends garbage, and ends subscriptions when the agent goes away', async () => {
    const path = join(dir, 'c.sock');
    server = await peer(path, (r, socket) => {
      if (r.op === 'status') return 'this is not json\n';
      if (r.op === 'subscribe') {
        socket.write(encodeLine({ id: r.id, ok: true, result: { stream: 1 } }));
        setTimeout(() => socket.destroy(), 20);
      }
      return undefined;
    });
    const bad = await connectAgent(path);
    await expect(bad.status('x')).rejects.toMatchObject({ code: 'ERR_AGENT_BAD_REPLY' });
    const client = await connectAgent(path);
    const sub = await client.subscribe('s');
    const items: SubscriptionItem[] = [];
    for await (const item of sub) items.push(item);
    expect(items).toEqual([]);
    expect(sub.endReason).toBe('connection closed');
  });
});

/** kmem:kmalloc's format file as tracefs prints it: call_site and ptr are printed as addresses. */
const KMALLOC = `name: kmalloc
ID: 512
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;
\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;
\tfield:size_t bytes_req;\toffset:24;\tsize:8;\tsigned:0;
\tfield:int node;\toffset:32;\tsize:4;\tsigned:1;

print fmt: "call_site=%pS ptr=%p bytes_req=%zu node=%d", (void *)REC->call_site, REC->ptr, REC->bytes_req, REC->node
`;

describe('subscriptions of protocol 3', () => {
  const kmalloc = parseFormatFile(KMALLOC, { system: 'kmem' });
  const event = (n: number): TraceEvent => ({
    tsNs: BigInt(n),
    cpu: n % 2,
    eventClass: kmalloc,
    fields: { call_site: 0xffffffff819af340n, ptr: 0xffff888003a2b000n + BigInt(n), bytes_req: 96n, node: -1 },
    scopes: { 'event.context': { common_pid: 4102, common_flags: 1, common_preempt_count: 0 }, task: { comm: 'w' } },
  });
  const json = (e: TraceEvent) => encodeJsonEvent(e).slice(0, -1);

  it("type events by the session's format files from the reply, as the agent's builders wrote them", async () => {
    const path = join(dir, 'v3.sock');
    server = await peer(path, (r) => {
      if (r.op !== 'subscribe') return undefined;
      return [
        encodeLine({ id: r.id, ok: true, result: subscribeResult(4, [kmalloc]) }),
        eventsMessage(4, [json(event(1)), json(event(2))]),
        liveMessage(4),
        lossMessage(4, 2, 2),
        eventsMessage(4, [json(event(3))]),
        endMessage(4, 'session stopped'),
      ].join('');
    });
    const client = await connectAgent(path);
    const sub = await client.subscribe('s');
    expect(sub.eventClasses).toEqual([kmalloc]);
    const items: SubscriptionItem[] = [];
    for await (const item of sub) items.push(item);
    const events = items.flatMap((i) => (i.kind === 'event' ? [i.event] : []));
    expect(events).toEqual([1, 2, 3].map((n) => ({ ...event(n), eventClass: sub.eventClasses[0] })));
    // The class from the reply, not one guessed from values: ptr is an address, bytes_req a size_t.
    expect(events[0]!.eventClass.printFormat).toBe(kmalloc.printFormat);
    expect(eventComm(events[0]!)).toBe('w');
    expect(items.map((i) => i.kind)).toEqual(['event', 'event', 'live', 'loss', 'event']);
    expect(sub.endReason).toBe('session stopped');
    client.close();
  });

  it('give each message as one batch; a stream taken by batches cannot also be taken by events', async () => {
    const path = join(dir, 'batches.sock');
    // More messages than the client lets wait before it pauses the socket: they all come through, in order.
    const messages = Array.from({ length: 40 }, (_, m) =>
      eventsMessage(5, [json(event(2 * m)), json(event(2 * m + 1))]),
    );
    server = await peer(path, (r) => {
      if (r.op !== 'subscribe') return undefined;
      return [
        encodeLine({ id: r.id, ok: true, result: subscribeResult(5, [kmalloc]) }),
        ...messages,
        lossMessage(5, 3, 3),
        endMessage(5, 'session stopped'),
      ].join('');
    });
    const client = await connectAgent(path);
    const sub = await client.subscribe('s');
    const batches: SubscriptionBatch[] = [];
    for await (const b of sub.batches()) {
      batches.push(b);
      // A slow consumer: the backlog pauses reading and resumes it as it drains.
      await new Promise((r) => setTimeout(r, 1));
    }
    expect(batches.map((b) => b.kind)).toEqual([...messages.map(() => 'events'), 'loss']);
    const events = batches.flatMap((b) => (b.kind === 'events' ? b.events : []));
    expect(events.map((e) => e.tsNs)).toEqual(Array.from({ length: 80 }, (_, n) => BigInt(n)));
    expect(batches.at(-1)).toEqual({ kind: 'loss', lost: 3, total: 3 });
    expect(() => sub[Symbol.asyncIterator]()).toThrow(expect.objectContaining({ code: 'ERR_AGENT_ARGUMENT' }));
    client.close();
  });

  it('fail the connection, naming the member, when an event does not fit its class or a format does not parse', async () => {
    const path = join(dir, 'bad.sock');
    server = await peer(path, (r) => {
      if (r.op !== 'subscribe') return undefined;
      if (r.name === 'badformat')
        return encodeLine({
          id: r.id,
          ok: true,
          result: { stream: 1, formats: [{ system: 'kmem', format: 'ID: x' }] },
        });
      const bad = json(event(1)).replace('"bytes_req":"96"', '"bytes_req":96');
      return encodeLine({ id: r.id, ok: true, result: subscribeResult(2, [kmalloc]) }) + eventsMessage(2, [bad]);
    });
    const client = await connectAgent(path);
    const sub = await client.subscribe('badevent');
    const error = await (async () => {
      for await (const _ of sub);
    })().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ERR_AGENT_BAD_REPLY' });
    expect((error as Error).message).toMatch(/stream 2\): events\[0\]\.fields\.bytes_req: expected a decimal string/);
    const other = await connectAgent(path);
    await expect(other.subscribe('badformat')).rejects.toMatchObject({
      code: 'ERR_AGENT_BAD_REPLY',
      message: expect.stringMatching(/formats\[0\].*bad event ID/),
    });
  });
});
