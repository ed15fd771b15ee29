/**
 * `fleet tail --filter`: the ftrace filter language (@evtrace/filters) over events that arrive as JSON lines. Each
 * line is decoded locally into a TraceEvent whose class is made from the JSON types of its fields (a number or a
 * decimal or hex string compares as a 64-bit integer, other strings as strings), one class per event name and field
 * shape; `host` and `session` are fields too. Events the expression does not fit (a field they lack) do not match,
 * as a session's filter leaves out the events it does not apply to.
 */
import { compileFilter, type EventPredicate, FilterError } from '@evtrace/filters';
import type { EventClass, FieldValue, FtraceFieldInfo, TraceEvent } from '@evtrace/trace-format';
import { FleetError } from './errors.ts';

/** A compiled `--filter`: `test` decides one event line; `problem` says why no event could match, if none did. */
export interface EventFilter {
  test(line: Readonly<Record<string, unknown>>, host: string, session: string | undefined): boolean;
  /** The first reason the expression did not fit an event's fields, for a message when nothing matched. */
  readonly problem: string | undefined;
}

const DECIMAL = /^-?\d+$/;
const HEX = /^0x[0-9a-f]+$/i;

function field(name: string, value: unknown, offset: number): FtraceFieldInfo | undefined {
  if (typeof value === 'number' || typeof value === 'boolean')
    return { name, cType: 'long', offset, size: 8, signed: true, common: false };
  if (typeof value === 'string') {
    if (DECIMAL.test(value) || HEX.test(value))
      return { name, cType: 'unsigned long', offset, size: 8, signed: false, common: false };
    return { name, cType: '__data_loc char[]', offset, size: 4, signed: false, common: false };
  }
  return undefined;
}

function fieldValueOf(info: FtraceFieldInfo, value: unknown): FieldValue {
  if (info.cType === 'unsigned long') return BigInt(value as string);
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value as FieldValue;
}

/**
 * Compiles `expression` for event lines (objects of `evtrace cat --json`).
 * @throws FleetError `ERR_FLEET_ARGUMENT` when the expression does not parse for any event at all.
 */
export function eventFilter(expression: string): EventFilter {
  const classes = new Map<string, { cls: EventClass; fields: FtraceFieldInfo[]; test: EventPredicate | undefined }>();
  let problem: string | undefined;
  let fitted = false;
  checkSyntax(expression);
  return {
    get problem() {
      return fitted ? undefined : problem;
    },
    test(line, host, session) {
      const fields = line.fields as Record<string, unknown> | undefined;
      const all: [string, unknown][] = [
        ['host', host],
        ...(session !== undefined ? [['session', session] as [string, unknown]] : []),
      ];
      if (fields !== null && typeof fields === 'object') all.push(...Object.entries(fields));
      const infos: FtraceFieldInfo[] = [];
      let offset = 8;
      for (const [name, value] of all) {
        const f = field(name, value, offset);
        if (f === undefined) continue;
        infos.push(f);
        offset += f.size;
      }
      const key = `${line.event}\0${infos.map((f) => `${f.name}:${f.cType}`).join(',')}`;
      let c = classes.get(key);
      if (c === undefined) {
        const cls = makeClass(String(line.event), infos);
        let test: EventPredicate | undefined;
        try {
          test = compileFilter(expression, cls, { comm: (e) => e.scopes?.task?.comm as string | undefined });
          fitted = true;
        } catch (error) {
          if (!(error instanceof FilterError)) throw error;
          problem ??= `${line.event}: ${error.message}`;
        }
        classes.set(key, (c = { cls, fields: infos, test }));
      }
      if (c.test === undefined) return false;
      const values: Record<string, FieldValue> = {};
      for (let i = 0; i < all.length; i++) {
        const [name, value] = all[i]!;
        const info = c.fields.find((f) => f.name === name);
        if (info !== undefined) values[name] = fieldValueOf(info, value);
      }
      const event: TraceEvent = {
        tsNs: typeof line.ts_ns === 'string' && DECIMAL.test(line.ts_ns) ? BigInt(line.ts_ns) : 0n,
        cpu: typeof line.cpu === 'number' ? line.cpu : null,
        eventClass: c.cls,
        fields: values,
        scopes: {
          'event.context': { common_pid: typeof line.pid === 'number' ? line.pid : -1 },
          task: { comm: typeof line.comm === 'string' ? line.comm : '' },
        },
      };
      return c.test(event);
    },
  };
}

/**
 * Refuses an expression no event could make valid (bad syntax, a malformed value) at once, not after the first event:
 * it is compiled against a class that gains each field it names as a number; a type mismatch is left to the events.
 */
function checkSyntax(expression: string): void {
  const fields: FtraceFieldInfo[] = [];
  for (let tries = 0; tries < 256; tries++) {
    try {
      compileFilter(expression, makeClass('check', fields), { comm: () => '' });
      return;
    } catch (error) {
      if (!(error instanceof FilterError)) throw error;
      if (error.code === 'ERR_FILTER_FIELD' && error.span !== undefined) {
        const name = expression.slice(error.span.start, error.span.end);
        if (!fields.some((f) => f.name === name)) {
          fields.push({
            name,
            cType: 'unsigned long',
            offset: 8 + fields.length * 8,
            size: 8,
            signed: false,
            common: false,
          });
          continue;
        }
      }
      if (error.code === 'ERR_FILTER_FIELD' || error.code === 'ERR_FILTER_TYPE') return;
      throw new FleetError('ERR_FLEET_ARGUMENT', `--filter: ${error.format(expression)}`, { cause: error });
    }
  }
}

function makeClass(name: string, fields: FtraceFieldInfo[]): EventClass {
  const [system = '', event = name] = name.includes(':') ? name.split(':', 2) : [];
  return {
    id: 0,
    name,
    streamId: 0,
    payload: { kind: 'struct', members: [], minAlign: 8 },
    ftrace: {
      system,
      event,
      fields: [{ name: 'common_pid', cType: 'int', offset: 4, size: 4, signed: true, common: true }, ...fields],
    },
  };
}
