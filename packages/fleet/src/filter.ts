/**
 * `fleet tail --filter`: the ftrace filter language (@evtrace/filters) over events decoded by @evtrace/trace-format's
 * JSON event codec ({@link FleetEventDecoder}: integers from numbers and decimal or hex strings, text otherwise).
 * `host`, `session` and `common_pid` are fields too. Events the expression does not fit (a field they lack) do not
 * match, as a session's filter leaves out the events it does not apply to.
 */
import { compileFilter, type EventPredicate, FilterError } from '@evtrace/filters';
import {
  type EventClass,
  eventComm,
  type FieldValue,
  type FtraceFieldInfo,
  type IntegerClass,
  type StructMember,
  type TraceEvent,
} from '@evtrace/trace-format';
import { FleetError } from './errors.ts';

/** A compiled `--filter`: `test` decides one event; `problem` says why no event could match, if none did. */
export interface EventFilter {
  test(event: TraceEvent, host: string, session: string | undefined): boolean;
  /** The first reason the expression did not fit an event's fields, for a message when nothing matched. */
  readonly problem: string | undefined;
}

const TEXT = { kind: 'string', encoding: 'utf8' } as const;
const PID: IntegerClass = {
  kind: 'int',
  size: 32,
  signed: true,
  align: 4,
  byteOrder: 'le',
  base: 10,
  encoding: 'none',
};
/** The fields every event has in a fleet, besides its own. */
const FLEET_MEMBERS: readonly StructMember[] = [
  { name: 'host', type: TEXT },
  { name: 'session', type: TEXT },
  { name: 'common_pid', type: PID },
];

/** `cls` with the fleet's fields; its own fields of the same names give way. */
function fleetClass(cls: EventClass): EventClass {
  const { ftrace: _ftrace, ...rest } = cls;
  const own = cls.payload.members.filter((m) => !FLEET_MEMBERS.some((f) => f.name === m.name));
  return { ...rest, payload: { ...cls.payload, members: [...own, ...FLEET_MEMBERS] } };
}

const comm = (e: TraceEvent) => eventComm(e);

/**
 * Compiles `expression` for decoded fleet events.
 * @throws FleetError `ERR_FLEET_ARGUMENT` when the expression does not parse for any event at all.
 */
export function eventFilter(expression: string): EventFilter {
  const compiled = new Map<EventClass, { cls: EventClass; test: EventPredicate | undefined }>();
  let problem: string | undefined;
  let fitted = false;
  checkSyntax(expression);
  return {
    get problem() {
      return fitted ? undefined : problem;
    },
    test(event, host, session) {
      let c = compiled.get(event.eventClass);
      if (c === undefined) {
        const cls = fleetClass(event.eventClass);
        let test: EventPredicate | undefined;
        try {
          test = compileFilter(expression, cls, { comm });
          fitted = true;
        } catch (error) {
          if (!(error instanceof FilterError)) throw error;
          problem ??= `${cls.name}: ${error.message}`;
        }
        compiled.set(event.eventClass, (c = { cls, test }));
      }
      if (c.test === undefined) return false;
      const pid = event.scopes?.['event.context']?.common_pid;
      const fields: Record<string, FieldValue> = {
        ...event.fields,
        host,
        session: session ?? null,
        common_pid: typeof pid === 'number' ? pid : null,
      };
      return c.test({ ...event, eventClass: c.cls, fields });
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
      compileFilter(expression, makeClass(fields), { comm: () => '' });
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

function makeClass(fields: FtraceFieldInfo[]): EventClass {
  return {
    id: 0,
    name: 'check',
    streamId: 0,
    payload: { kind: 'struct', members: [], minAlign: 8 },
    ftrace: {
      system: '',
      event: 'check',
      fields: [{ name: 'common_pid', cType: 'int', offset: 4, size: 4, signed: true, common: true }, ...fields],
    },
  };
}
