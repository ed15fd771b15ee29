/**
 * What readers show of fleet records, one implementation for `evtrace fleet` and `evtrace-view --nats`: a host's
 * state from its last status, a hardware record as one line, and an event line decoded with @evtrace/trace-format's
 * JSON event codec.
 */
import { fieldsText, ftraceTimestamp, JsonEventDecoder, TASK_SCOPE, type TraceEvent } from '@evtrace/trace-format';
import { FleetError } from './errors.ts';
import type { FleetRecord, HostSummary } from './reader.ts';
import type { HardwareErrorRecord, ThresholdRecord } from './records.ts';

/** A host's state as its last status tells it. */
export interface HostState {
  /** The agent's version, when it sent a status. */
  readonly version: string | undefined;
  /** Its sessions, by name. */
  readonly sessions: readonly string[];
  /** Events its sessions lost. */
  readonly lost: number;
  /** Records its spool dropped. */
  readonly dropped: number;
}

/** The state in `h`'s status (an agent's status record; see `FleetExport`). */
export function hostState(h: HostSummary): HostState {
  const st = h.status as
    | {
        version?: unknown;
        sessions?: { name?: unknown; lost?: unknown }[];
        spool?: { dropped?: { records?: unknown } };
      }
    | undefined;
  const sessions = Array.isArray(st?.sessions) ? st.sessions : [];
  const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  return {
    version: typeof st?.version === 'string' ? st.version : undefined,
    sessions: sessions.map((s) => String(s?.name ?? '?')),
    lost: sessions.reduce((a, s) => a + count(s?.lost), 0),
    dropped: count(st?.spool?.dropped?.records),
  };
}

/** One hardware record (`mce`, `edac` or `threshold` channel), parsed, with where it came from. */
export type HardwareLine =
  | { readonly kind: 'error'; readonly host: string; readonly channel: string; readonly record: HardwareErrorRecord }
  | { readonly kind: 'threshold'; readonly host: string; readonly record: ThresholdRecord };

/** Parses a hardware channel's record. @throws FleetError `ERR_FLEET_MESSAGE` for a record that is not JSON. */
export function hardwareLine(r: FleetRecord): HardwareLine {
  let record: unknown;
  try {
    record = JSON.parse(r.record);
  } catch {
    throw new FleetError('ERR_FLEET_MESSAGE', `${r.host}.${r.channel} record ${r.seq} is not JSON`);
  }
  return r.channel === 'threshold'
    ? { kind: 'threshold', host: r.host, record: record as ThresholdRecord }
    : { kind: 'error', host: r.host, channel: r.channel, record: record as HardwareErrorRecord };
}

/** The session of an `events.SESSION` channel. */
export function sessionOf(channel: string): string {
  return channel.startsWith('events.') ? channel.slice('events.'.length) : channel;
}

/**
 * Decodes event records with the JSON event codec. Agents publish lines without their classes, so each event name's
 * class is inferred from its first line (numbers and decimal strings are integers, `0x` strings addresses).
 */
export class FleetEventDecoder {
  readonly #codec = new JsonEventDecoder([], { infer: true });

  /**
   * Decodes a record of `host`'s `channel`.
   * @throws TraceFormatError `ERR_TRACE_JSON_EVENT` naming the host and channel (as the file), the sequence number
   * (as the line) and the byte column.
   */
  decode(record: string, host: string, channel: string, seq: number): TraceEvent {
    return this.#codec.decodeLine(record, { file: `${host}.${channel}`, line: seq });
  }
}

/**
 * One event as `fleet tail` prints it without --json (no newline): host, sequence number, session, then the event as
 * `evtrace cat` prints it (CPU, time, task, event, fields).
 */
export function eventText(r: Pick<FleetRecord, 'host' | 'channel' | 'seq'>, e: TraceEvent): string {
  const pid = e.scopes?.['event.context']?.common_pid;
  const comm = e.scopes?.[TASK_SCOPE]?.comm;
  const task = `${typeof comm === 'string' ? comm : ''}-${typeof pid === 'number' ? pid : ''}`;
  return `${r.host} #${r.seq} ${sessionOf(r.channel)} [${e.cpu ?? '-'}] ${ftraceTimestamp(e.tsNs, true)} ${task} ${e.eventClass.name}: ${fieldsText(e)}`;
}
