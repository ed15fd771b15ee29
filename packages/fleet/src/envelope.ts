/**
 * The message body every fleet message has: a header line (JSON: format version, host, channel, the sequence number
 * of its first record, how many records) and one JSON line per record. Record `i` has sequence number `seq + i`, so
 * sequences count records, per host and channel, and a reader sees a lost record as a gap. Records stay the JSON text
 * they were written as (an event is the line `evtrace cat --json` prints): a reader that only forwards them never
 * parses them.
 */
import { FleetError } from './errors.ts';
import type { Channel } from './subjects.ts';

/** The envelope's format version. */
export const ENVELOPE_VERSION = 1;

/** The header line of a message. */
export interface EnvelopeHeader {
  readonly v: typeof ENVELOPE_VERSION;
  readonly host: string;
  readonly channel: Channel;
  /** Sequence number of the first record (from 1, per host and channel). */
  readonly seq: number;
  /** Number of records. */
  readonly n: number;
  /** When the batch was made (ISO 8601). */
  readonly time: string;
  /** The publisher's boot id: messages sent outside the spool (status) are told apart across restarts by it. */
  readonly boot?: string;
}

/** A decoded message. */
export interface Envelope {
  readonly header: EnvelopeHeader;
  /** The records, each one JSON object's text. */
  readonly records: readonly string[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** The body of a message: the header and the records, one per line. Records must be single-line JSON objects. */
export function encodeEnvelope(header: EnvelopeHeader, records: readonly string[]): Uint8Array {
  return encoder.encode(`${JSON.stringify(header)}\n${records.join('\n')}`);
}

/**
 * Decodes a message body; `where` names it in errors (its subject and stream sequence).
 * @throws FleetError `ERR_FLEET_MESSAGE` for anything this package does not write.
 */
export function decodeEnvelope(body: Uint8Array, where: string): Envelope {
  const bad = (what: string): never => {
    throw new FleetError('ERR_FLEET_MESSAGE', `${where}: ${what}`);
  };
  let text: string;
  try {
    text = decoder.decode(body);
  } catch {
    return bad('not UTF-8 text');
  }
  const nl = text.indexOf('\n');
  const first = nl < 0 ? text : text.slice(0, nl);
  let header: EnvelopeHeader;
  try {
    header = JSON.parse(first) as EnvelopeHeader;
  } catch {
    return bad(`the header line (bytes 0-${first.length}) is not JSON`);
  }
  if (header === null || typeof header !== 'object' || header.v !== ENVELOPE_VERSION)
    return bad(`the header line is not an evtrace envelope of version ${ENVELOPE_VERSION}`);
  if (typeof header.host !== 'string' || typeof header.channel !== 'string')
    return bad('the header lacks host or channel');
  if (!Number.isSafeInteger(header.seq) || header.seq < 1) return bad(`bad first sequence number ${header.seq}`);
  if (!Number.isSafeInteger(header.n) || header.n < 0) return bad(`bad record count ${header.n}`);
  const records = header.n === 0 ? [] : nl < 0 ? [] : text.slice(nl + 1).split('\n');
  if (records.length !== header.n)
    return bad(`the header promises ${header.n} records, the body holds ${records.length}`);
  return { header, records };
}

/**
 * A record as fleet readers print it: the record's object with `host` and `seq` (and the channel's `session` for
 * events) first. Made by splicing text, not by parsing: records are objects by construction.
 */
export function stamped(record: string, host: string, seq: number, session?: string): string {
  const head = `{"host":${JSON.stringify(host)},"seq":${seq}${session === undefined ? '' : `,"session":${JSON.stringify(session)}`}`;
  return record.length <= 2 ? `${head}}` : `${head},${record.slice(1)}`;
}
