/**
 * A subscription's messages, both ways: the agent builds them here (events already encoded by trace-format's JSON
 * event codec, once per event whatever the number of viewers), and the client reads the `subscribe` reply's formats
 * into the event classes the stream's events are decoded by.
 */
import {
  type EventClass,
  formatFileText,
  JsonEventDecoder,
  parseFormatFile,
  TraceFormatError,
} from '@evtrace/trace-format';
import { ProtocolError } from './errors.ts';
import type { EventFormat, SubscribeResult } from './messages.ts';

/** The `subscribe` reply: the stream's id and the session's event classes as their format files. */
export function subscribeResult(stream: number, classes: Iterable<EventClass>): SubscribeResult {
  const formats: EventFormat[] = [];
  for (const c of classes)
    if (c.ftrace !== undefined) formats.push({ system: c.ftrace.system, format: formatFileText(c) });
  return { stream, formats };
}

/**
 * An `events` message (with its newline) of events encoded as JSON objects (trace-format's `encodeJsonEvent`, without
 * the newline).
 */
export function eventsMessage(stream: number, events: readonly string[]): string {
  return `{"stream":${stream},"kind":"events","events":[${events.join(',')}]}\n`;
}

/** The message that ends the recent window. */
export function liveMessage(stream: number): string {
  return `{"stream":${stream},"kind":"live"}\n`;
}

/** A viewer's loss: `lost` since the last notice, `total` since it subscribed. */
export function lossMessage(stream: number, lost: number, total: number): string {
  return `{"stream":${stream},"kind":"loss","lost":${lost},"total":${total}}\n`;
}

/** The last message of a stream. */
export function endMessage(stream: number, reason: string): string {
  return `${JSON.stringify({ stream, kind: 'end', reason })}\n`;
}

/**
 * The decoder of a stream's events, from the `subscribe` reply: typed by the session's formats, or (an agent older
 * than protocol 3 sends none) by classes inferred from each event's first line.
 *
 * @throws ProtocolError `ERR_AGENT_BAD_REPLY` when the reply's formats are not format files.
 */
export function streamDecoder(result: unknown): JsonEventDecoder {
  const formats = (result as { formats?: unknown } | null)?.formats;
  if (formats === undefined) return new JsonEventDecoder([], { infer: true });
  const bad = (why: string) => new ProtocolError('ERR_AGENT_BAD_REPLY', `bad subscribe reply from the agent: ${why}`);
  if (!Array.isArray(formats)) throw bad('formats: must be an array');
  const classes = formats.map((f: unknown, i) => {
    const { system, format } = (f ?? {}) as { system?: unknown; format?: unknown };
    if (typeof system !== 'string' || typeof format !== 'string')
      throw bad(`formats[${i}]: must be {system, format} strings`);
    try {
      return parseFormatFile(format, { system, file: `formats[${i}]` });
    } catch (error) {
      if (error instanceof TraceFormatError) throw bad(error.message);
      throw error;
    }
  });
  return new JsonEventDecoder(classes);
}
