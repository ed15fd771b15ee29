/**
 * `evtrace fleet tail` (and the viewer without a terminal): the events of exported sessions across hosts, written as
 * JSON lines with their host, sequence number and session, or as text. A message's records are written as one chunk:
 * JSON lines unfiltered are spliced as bytes, never decoded; text and `--filter` decode each event with the JSON
 * event codec.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { eventText, FleetEventDecoder, sessionOf } from './display.ts';
import { stamper } from './envelope.ts';
import type { EventFilter } from './filter.ts';
import { type ReadOptions, readBatches } from './reader.ts';

/** Options of {@link tailEvents}. */
export interface TailOptions extends ReadOptions {
  /** One session's events, else every session's. */
  readonly session?: string;
  readonly filter?: EventFilter;
  /** JSON lines (`evtrace cat --json` with `host`, `seq` and `session` first); otherwise text. */
  readonly json?: boolean;
  /** Stop after this many events. */
  readonly count?: number;
}

/**
 * Reads events and hands them to `write` as UTF-8, a chunk of whole lines per message. Resolves to the number written.
 * @throws FleetError as {@link readBatches}; TraceFormatError `ERR_TRACE_JSON_EVENT` for a record that is not an
 * event line (text or filter only), naming its host, channel and sequence number.
 */
export async function tailEvents(
  nc: NatsConnection,
  o: TailOptions,
  write: (chunk: Uint8Array) => void,
): Promise<number> {
  const channel = o.session === undefined ? 'events.>' : `events.${o.session}`;
  const decoder = o.filter !== undefined || o.json !== true ? new FleetEventDecoder() : undefined;
  const limit = o.count ?? Number.POSITIVE_INFINITY;
  let shown = 0;
  for await (const b of readBatches(nc, channel, o)) {
    const session = sessionOf(b.channel);
    if (decoder === undefined && shown + b.count <= limit) {
      write(b.stampedLines(session));
      shown += b.count;
    } else {
      const stamp = stamper(b.host, session);
      const records = b.records;
      let out = '';
      for (let i = 0; i < records.length && shown < limit; i++) {
        const seq = b.seq + i;
        if (decoder !== undefined) {
          const event = decoder.decode(records[i]!, b.host, b.channel, seq);
          if (o.filter !== undefined && !o.filter.test(event, b.host, session)) continue;
          if (o.json !== true) {
            out += `${eventText({ host: b.host, channel: b.channel, seq }, event)}\n`;
            shown++;
            continue;
          }
        }
        out += `${stamp(records[i]!, seq)}\n`;
        shown++;
      }
      if (out !== '') write(Buffer.from(out));
    }
    if (shown >= limit) break;
  }
  return shown;
}
