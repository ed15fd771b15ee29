/**
 * The message body every fleet message has: a header line (JSON: format version, host, channel, the sequence number
 * of its first record, how many records) and one JSON line per record. Record `i` has sequence number `seq + i`, so
 * sequences count records, per host and channel, and a reader sees a lost record as a gap. Records stay the JSON text
 * they were written as (an event is the line `evtrace cat --json` prints): a reader that only forwards them never
 * parses them.
 */
import { isUtf8 } from 'node:buffer';
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
 * The header of a message body and the byte offset of its first record, leaving the records undecoded; `where`
 * names the message in errors (its subject and stream sequence).
 * @throws FleetError `ERR_FLEET_MESSAGE` for a header this package does not write.
 */
export function envelopeHeader(body: Uint8Array, where: string): { header: EnvelopeHeader; start: number } {
  const bad = (what: string): never => {
    throw new FleetError('ERR_FLEET_MESSAGE', `${where}: ${what}`);
  };
  const nl = body.indexOf(NEWLINE);
  const end = nl < 0 ? body.length : nl;
  let header: EnvelopeHeader;
  try {
    header = JSON.parse(decoder.decode(body.subarray(0, end))) as EnvelopeHeader;
  } catch {
    return bad(`the header line (bytes 0-${end}) is not JSON`);
  }
  if (header === null || typeof header !== 'object' || header.v !== ENVELOPE_VERSION)
    return bad(`the header line is not an evtrace envelope of version ${ENVELOPE_VERSION}`);
  if (typeof header.host !== 'string' || typeof header.channel !== 'string')
    return bad('the header lacks host or channel');
  if (!Number.isSafeInteger(header.seq) || header.seq < 1) return bad(`bad first sequence number ${header.seq}`);
  if (!Number.isSafeInteger(header.n) || header.n < 0) return bad(`bad record count ${header.n}`);
  if (header.n > 0 && nl < 0) bad(`the header promises ${header.n} records, the body holds 0`);
  return { header, start: nl < 0 ? body.length : nl + 1 };
}

/**
 * Decodes a message body; `where` names it in errors (its subject and stream sequence).
 * @throws FleetError `ERR_FLEET_MESSAGE` for anything this package does not write.
 */
export function decodeEnvelope(body: Uint8Array, where: string): Envelope {
  const { header, start } = envelopeHeader(body, where);
  return { header, records: envelopeRecords(body, start, header.n, where) };
}

/** The `n` records of a body from byte `start`. @throws FleetError `ERR_FLEET_MESSAGE` when they are not `n` lines of UTF-8. */
export function envelopeRecords(body: Uint8Array, start: number, n: number, where: string): string[] {
  let text: string;
  try {
    text = decoder.decode(body.subarray(start));
  } catch {
    throw new FleetError('ERR_FLEET_MESSAGE', `${where}: not UTF-8 text`);
  }
  const records = n === 0 ? [] : text.split('\n');
  if (records.length !== n)
    throw new FleetError(
      'ERR_FLEET_MESSAGE',
      `${where}: the header promises ${n} records, the body holds ${records.length}`,
    );
  return records;
}

/**
 * The `n` records of a body from byte `start` as {@link stamped} lines (each with its newline), spliced as bytes:
 * nothing is decoded but the check that the body is UTF-8.
 * @throws FleetError `ERR_FLEET_MESSAGE` when they are not `n` lines of UTF-8.
 */
export function stampedLines(
  body: Uint8Array,
  start: number,
  n: number,
  first: { host: string; seq: number; session?: string | undefined },
  where: string,
): Uint8Array {
  const src = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (!isUtf8(src)) throw new FleetError('ERR_FLEET_MESSAGE', `${where}: not UTF-8 text`);
  const head = Buffer.from(`{"host":${JSON.stringify(first.host)},"seq":`);
  const after = Buffer.from(first.session === undefined ? '' : `,"session":${JSON.stringify(first.session)}`);
  const digits = String(first.seq + n).length;
  const out = Buffer.allocUnsafe(src.length - start + n * (head.length + digits + after.length + 3));
  let o = 0;
  let p = start;
  let i = 0;
  // TypedArray.set on views: Buffer.copy's argument checks cost more than the copy of a record this size.
  for (; i < n && p <= src.length; i++) {
    let e = src.indexOf(NEWLINE, p);
    if (e < 0) e = src.length;
    out.set(head, o);
    o += head.length;
    const seq = String(first.seq + i);
    for (let k = 0; k < seq.length; k++) out[o++] = seq.charCodeAt(k);
    out.set(after, o);
    o += after.length;
    // A record is an object: `{}` gets no comma, any other its members after one (the same rule as stamper's, byte
    // for byte, whatever a foreign record holds).
    if (e - p === 2 && src[p] === OPEN && src[p + 1] === CLOSE) out[o++] = CLOSE;
    else {
      out[o++] = COMMA;
      // All but the record's first character (an object's `{`: one byte, the UTF-8 length of another); an empty line
      // has none.
      const from = Math.min(e, p + utf8Length(src[p] ?? 0));
      out.set(body.subarray(from, e), o);
      o += e - from;
    }
    out[o++] = NEWLINE;
    p = e + 1;
  }
  if (n > 0 && (i !== n || p !== src.length + 1)) {
    let held = 1;
    for (let q = src.indexOf(NEWLINE, start); q >= 0; q = src.indexOf(NEWLINE, q + 1)) held++;
    throw new FleetError('ERR_FLEET_MESSAGE', `${where}: the header promises ${n} records, the body holds ${held}`);
  }
  return out.subarray(0, o);
}

/** Bytes of the UTF-8 character whose first byte is `b` (in text already checked to be UTF-8). */
const utf8Length = (b: number): number => (b < 0xc0 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4);

const NEWLINE = 0x0a;
const COMMA = 0x2c;
const OPEN = 0x7b;
const CLOSE = 0x7d;

/**
 * A record as fleet readers print it: the record's object with `host` and `seq` (and the channel's `session` for
 * events) first. Made by splicing text, not by parsing: records are objects by construction.
 */
export function stamped(record: string, host: string, seq: number, session?: string): string {
  return stamper(host, session)(record, seq);
}

/** {@link stamped} for many records of one host and session: the quoted names are made once. */
export function stamper(host: string, session?: string): (record: string, seq: number) => string {
  const head = `{"host":${JSON.stringify(host)},"seq":`;
  const after = session === undefined ? '' : `,"session":${JSON.stringify(session)}`;
  // The record's first character (an object's `{`, whatever a foreign record starts with) gives way to the stamp.
  return (record, seq) =>
    record === '{}'
      ? `${head}${seq}${after}}`
      : `${head}${seq}${after},${record.slice((record.codePointAt(0) ?? 0) > 0xffff ? 2 : 1)}`;
}
