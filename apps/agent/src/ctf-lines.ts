/**
 * A CTF input's lines (`cat`, `convert --to text|jsonl`) written from its packets' bytes by the reader itself
 * (`CtfTraceReader.writeLines`): the same text and JSON as the event formatters give, without an event, a payload
 * object or a string per event, `--filter` judging each event on its values before its line is kept. Events of
 * classes that name tasks are still decoded whole, so that `--json` and COMM name tasks as for every input.
 */
import type { CtfTraceReader } from '@evtrace/trace-format';
import { jsonLines, type OpenedInput } from './trace-input.ts';

/** The reader of `opened` when its lines can be written this way (a CTF input), else undefined. */
export function ctfLineReader(opened: OpenedInput): CtfTraceReader | undefined {
  return opened.reader.kind === 'ctf' ? (opened.reader as CtfTraceReader) : undefined;
}

/** Writes the lines of a CTF input to `write` (chunks valid during the call); returns how many. */
export function writeCtfInputLines(
  reader: CtfTraceReader,
  opened: OpenedInput,
  format: 'text' | 'json',
  write: (bytes: Uint8Array) => void,
  limit = Number.POSITIVE_INFINITY,
): number {
  const { tasks, filter } = opened;
  const n = reader.writeLines(write, {
    format,
    limit,
    ...(format === 'json' ? { jsonLine: jsonLines(opened) } : {}),
    // Task names are learnt from the events that give them, in time order, for --json's comm and --filter's COMM.
    ...(format === 'json' || filter !== undefined
      ? {
          decoded: (ec) => tasks.names(ec),
          observe: (e) => {
            tasks.observe(e);
          },
        }
      : {}),
    ...(filter !== undefined ? { keep: filter } : {}),
  });
  // Every event was read: an expression that fits no class is an error, as when reading events.
  if (n < limit) filter?.finish();
  return n;
}
