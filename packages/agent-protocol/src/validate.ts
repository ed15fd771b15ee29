/**
 * Validation of both directions. Parsers take untrusted text and never throw: they return the message or a
 * verdict saying what is wrong and where (the JSON path of the offending member).
 */
import { type AgentErrorCode, agentErrorCode } from './errors.ts';
import {
  type OutputFormat,
  REQUEST_OPS,
  type Request,
  type ServerMessage,
  type SessionSpec,
  type TriggerSpec,
} from './messages.ts';

/** What a parser concluded. */
export type Parsed<T> =
  | { readonly ok: true; readonly value: T }
  | {
      readonly ok: false;
      readonly code: AgentErrorCode;
      readonly message: string;
      /** The request's id when it could be read, so the error reply can carry it. */
      readonly id: number | null;
    };

/** Session names: safe as file names and tracefs-free labels. */
export const SESSION_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;
/** Persistent buffer names: `/`-separated segments like session names, at most 200 characters (the agent checks more). */
export const BUFFER_NAME = /^(?=.{1,200}$)[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}(\/[A-Za-z0-9_][A-Za-z0-9_.-]{0,63})*$/;
/** Longest filter expression or event pattern accepted. */
export const MAX_TEXT = 4096;
/** Most event patterns and triggers a session may list. */
export const MAX_ITEMS = 256;

class Invalid extends Error {}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function fail(path: string, what: string): never {
  throw new Invalid(`${path}: ${what}`);
}

function str(o: Obj, key: string, path: string, optional = false): string | undefined {
  const v = o[key];
  if (v === undefined && optional) return undefined;
  if (typeof v !== 'string') fail(`${path}.${key}`, v === undefined ? 'missing' : 'must be a string');
  if (v.length > MAX_TEXT) fail(`${path}.${key}`, `longer than ${MAX_TEXT} characters`);
  return v;
}

const utf8 = new TextEncoder();

/**
 * A filter expression. A NUL is refused here, at the edge, as @evtrace/filters refuses it: the kernel reads a filter
 * as a C string and would apply only the text before it. The column is a byte offset, as filter errors count.
 */
function filter(o: Obj, key: string, path: string, optional = false): string | undefined {
  const v = str(o, key, path, optional);
  const nul = v?.indexOf('\0') ?? -1;
  if (nul >= 0)
    fail(
      `${path}.${key}`,
      `NUL character at column ${utf8.encode(v!.slice(0, nul)).length} (the kernel would apply only the text before it)`,
    );
  return v;
}

function uint(o: Obj, key: string, path: string, optional = false, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const v = o[key];
  if (v === undefined && optional) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > max)
    fail(`${path}.${key}`, v === undefined ? 'missing' : `must be an integer 0..${max}`);
  return v;
}

function oneOf<T extends string>(
  o: Obj,
  key: string,
  path: string,
  values: readonly T[],
  optional = false,
): T | undefined {
  const v = o[key];
  if (v === undefined && optional) return undefined;
  if (typeof v !== 'string' || !(values as readonly string[]).includes(v))
    fail(`${path}.${key}`, `must be one of ${values.join(', ')}`);
  return v as T;
}

function name(o: Obj, path: string): string {
  const n = str(o, 'name', path)!;
  if (!SESSION_NAME.test(n)) fail(`${path}.name`, 'must be 1-64 of A-Z a-z 0-9 _ . - not starting with . or -');
  return n;
}

function trigger(v: unknown, path: string): TriggerSpec {
  if (!isObj(v)) fail(path, 'must be an object');
  const kind = oneOf(v, 'kind', path, ['event', 'signal'] as const)!;
  if (kind === 'event') return { kind, filter: filter(v, 'filter', path)! };
  return { kind, signal: oneOf(v, 'signal', path, ['SIGUSR1', 'SIGUSR2'] as const)! };
}

const FORMATS: readonly OutputFormat[] = ['tracedat', 'ctf'];

function sessionSpec(v: unknown, path: string): SessionSpec {
  if (!isObj(v)) fail(path, 'must be an object');
  const events = v.events;
  if (!Array.isArray(events) || events.length === 0 || events.length > MAX_ITEMS)
    fail(`${path}.events`, `must be an array of 1..${MAX_ITEMS} event patterns`);
  events.forEach((e, i) => {
    if (typeof e !== 'string' || e.length === 0 || e.length > MAX_TEXT)
      fail(`${path}.events[${i}]`, 'must be a pattern');
  });
  const spec: { -readonly [K in keyof SessionSpec]: SessionSpec[K] } = {
    name: name(v, path),
    events: events as string[],
    mode: oneOf(v, 'mode', path, ['overwrite', 'discard'] as const)!,
  };
  const expression = filter(v, 'filter', path, true);
  if (expression !== undefined) spec.filter = expression;
  const bufferSize = uint(v, 'bufferSize', path, true, 1 << 30);
  if (bufferSize !== undefined) {
    if (bufferSize < 16384) fail(`${path}.bufferSize`, 'must be at least 16384 bytes');
    spec.bufferSize = bufferSize;
  }
  if (v.output !== undefined) {
    if (!isObj(v.output)) fail(`${path}.output`, 'must be an object');
    const dir = str(v.output, 'dir', `${path}.output`)!;
    if (dir === '') fail(`${path}.output.dir`, 'must not be empty');
    spec.output = { dir, format: oneOf(v.output, 'format', `${path}.output`, FORMATS)! };
  }
  if (v.rotate !== undefined) {
    if (!isObj(v.rotate)) fail(`${path}.rotate`, 'must be an object');
    const bytes = uint(v.rotate, 'bytes', `${path}.rotate`, true);
    const seconds = uint(v.rotate, 'seconds', `${path}.rotate`, true);
    if ((bytes === undefined) === (seconds === undefined))
      fail(`${path}.rotate`, 'needs exactly one of bytes, seconds');
    if ((bytes ?? seconds)! <= 0) fail(`${path}.rotate`, 'must be positive');
    if (spec.output === undefined) fail(`${path}.rotate`, 'needs output');
    spec.rotate = bytes !== undefined ? { bytes } : { seconds: seconds! };
  }
  const source = oneOf(v, 'source', path, ['kernel', 'demo', 'auto', 'bts', 'bts-qemu'] as const, true);
  if (source !== undefined) spec.source = source;
  if (v.command !== undefined) {
    const c = v.command;
    if (!Array.isArray(c) || c.length === 0 || c.length > MAX_ITEMS || c.some((a) => typeof a !== 'string'))
      fail(`${path}.command`, `must be an array of 1 to ${MAX_ITEMS} strings`);
    if ((c as string[])[0] === '') fail(`${path}.command`, 'must name a program');
    spec.command = c as string[];
  }
  if (v.triggers !== undefined) {
    if (!Array.isArray(v.triggers) || v.triggers.length > MAX_ITEMS)
      fail(`${path}.triggers`, `must be an array of at most ${MAX_ITEMS} triggers`);
    spec.triggers = v.triggers.map((t, i) => trigger(t, `${path}.triggers[${i}]`));
  }
  if (v.export !== undefined) {
    if (typeof v.export !== 'boolean') fail(`${path}.export`, 'must be true or false');
    spec.export = v.export;
  }
  return spec;
}

function request(o: Obj): Request {
  const id = o.id as number;
  const op = o.op;
  if (typeof op !== 'string') fail('op', 'missing or not a string');
  const p = 'request';
  switch (op) {
    case 'hello': {
      const client = str(o, 'client', p, true);
      return { id, op, version: uint(o, 'version', p)!, ...(client !== undefined ? { client } : {}) };
    }
    case 'create':
      return { id, op, session: sessionSpec(o.session, 'session') };
    case 'start':
    case 'stop':
    case 'destroy':
    case 'status':
      return { id, op, name: name(o, p) };
    case 'snapshot': {
      const dir = str(o, 'dir', p, true);
      const format = oneOf(o, 'format', p, FORMATS, true);
      return {
        id,
        op,
        name: name(o, p),
        ...(dir !== undefined ? { dir } : {}),
        ...(format !== undefined ? { format } : {}),
      };
    }
    case 'list':
      return { id, op };
    case 'trigger':
      return { id, op, name: name(o, p), trigger: trigger(o.trigger, 'trigger') };
    case 'subscribe': {
      const window = o.window;
      if (window !== undefined && typeof window !== 'boolean') fail('request.window', 'must be a boolean');
      const queue = uint(o, 'queue', p, true, 100_000);
      if (queue === 0) fail('request.queue', 'must be at least 1');
      return {
        id,
        op,
        name: name(o, p),
        ...(window !== undefined ? { window } : {}),
        ...(queue !== undefined ? { queue } : {}),
      };
    }
    case 'unsubscribe':
      return { id, op, stream: uint(o, 'stream', p)! };
    case 'buffers': {
      const dir = str(o, 'dir', p, true);
      return { id, op, ...(dir !== undefined ? { dir } : {}) };
    }
    case 'attach': {
      const buffer = str(o, 'buffer', p)!;
      if (!BUFFER_NAME.test(buffer))
        fail('request.buffer', 'must be 1-200 characters: segments of A-Z a-z 0-9 _ . - joined by /');
      const backend = oneOf(o, 'backend', p, ['user', 'kernel'] as const, true);
      const dir = str(o, 'dir', p, true);
      if (dir === '') fail('request.dir', 'must not be empty');
      return {
        id,
        op,
        buffer,
        ...(backend !== undefined ? { backend } : {}),
        ...(o.name !== undefined ? { name: name(o, p) } : {}),
        ...(dir !== undefined ? { dir } : {}),
      };
    }
    case 'detach':
      return { id, op, name: name(o, p) };
    case 'stats': {
      const since = uint(o, 'since', p, true);
      return { id, op, name: name(o, p), ...(since !== undefined ? { since } : {}) };
    }
    default:
      throw new UnknownOp(op);
  }
}

class UnknownOp extends Error {}

/** Reads one request line as the agent receives it. Never throws. */
export function parseRequest(line: string): Parsed<Request> {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    return { ok: false, code: 'ERR_AGENT_BAD_MESSAGE', message: `not JSON: ${(error as Error).message}`, id: null };
  }
  if (!isObj(value))
    return { ok: false, code: 'ERR_AGENT_BAD_MESSAGE', message: 'a request must be a JSON object', id: null };
  const id = value.id;
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0)
    return { ok: false, code: 'ERR_AGENT_BAD_MESSAGE', message: 'id: must be a non-negative integer', id: null };
  try {
    return { ok: true, value: request(value) };
  } catch (error) {
    if (error instanceof UnknownOp) {
      const op = error.message.slice(0, 64);
      return {
        ok: false,
        code: 'ERR_AGENT_UNKNOWN_OP',
        message: `unknown op '${op}' (known: ${REQUEST_OPS.join(', ')})`,
        id,
      };
    }
    if (error instanceof Invalid) return { ok: false, code: 'ERR_AGENT_BAD_MESSAGE', message: error.message, id };
    return { ok: false, code: 'ERR_AGENT_BAD_MESSAGE', message: String(error), id };
  }
}

/** Reads one line from the agent as a client receives it. Never throws. */
export function parseServerMessage(line: string): Parsed<ServerMessage> {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    return { ok: false, code: 'ERR_AGENT_BAD_MESSAGE', message: `not JSON: ${(error as Error).message}`, id: null };
  }
  const bad = (message: string): Parsed<ServerMessage> => ({
    ok: false,
    code: 'ERR_AGENT_BAD_MESSAGE',
    message,
    id: null,
  });
  if (!isObj(value)) return bad('a message must be a JSON object');
  if ('stream' in value) {
    const { stream, kind } = value;
    if (typeof stream !== 'number' || !Number.isSafeInteger(stream)) return bad('stream: must be an integer');
    switch (kind) {
      case 'events':
        if (!Array.isArray(value.events) || !value.events.every(isLiveEvent)) return bad('events: must be events');
        return { ok: true, value: value as ServerMessage };
      case 'live':
        return { ok: true, value: { stream, kind } };
      case 'loss':
        if (typeof value.lost !== 'number' || typeof value.total !== 'number') return bad('loss: needs lost and total');
        return { ok: true, value: { stream, kind, lost: value.lost, total: value.total } };
      case 'end':
        return { ok: true, value: { stream, kind, reason: typeof value.reason === 'string' ? value.reason : '' } };
      default:
        return bad(`unknown stream message kind ${JSON.stringify(kind)}`);
    }
  }
  const { id, ok } = value;
  if (ok === true) {
    if (typeof id !== 'number') return bad('id: must be a number');
    return { ok: true, value: { id, ok, result: value.result } };
  }
  if (ok === false) {
    if (typeof id !== 'number' && id !== null) return bad('id: must be a number or null');
    const error = value.error;
    if (!isObj(error) || typeof error.message !== 'string' || typeof error.code !== 'string')
      return bad('error: needs code and message');
    return { ok: true, value: { id, ok, error: { code: agentErrorCode(error.code), message: error.message } } };
  }
  return bad('neither a reply (ok) nor a stream message (stream)');
}

function isLiveEvent(v: unknown): boolean {
  return (
    isObj(v) &&
    typeof v.ts_ns === 'string' &&
    (typeof v.cpu === 'number' || v.cpu === null) &&
    typeof v.event === 'string' &&
    (v.pid === null || Number.isInteger(v.pid)) &&
    (v.comm === null || typeof v.comm === 'string') &&
    (v.flags === null || isObj(v.flags)) &&
    isObj(v.fields)
  );
}
