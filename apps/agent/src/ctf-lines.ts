/**
 * A CTF input's lines (`cat`, `convert --to text|jsonl`) written from its packets' bytes by the reader itself
 * (`CtfTraceReader.writeLines`): the same text and JSON as the event formatters give, without an event, a payload
 * object or a string per event. Events of classes that name tasks are still decoded whole, so that `--json` names
 * tasks as it does for every input.
 */
import type { CtfTraceReader } from '@evtrace/trace-format';
import { jsonLines, type OpenedInput } from './trace-input.ts';

/** The reader of `opened` when its lines can be written this way (a CTF input read without --filter), else undefined. */
export function ctfLineReader(opened: OpenedInput, filter: string | undefined): CtfTraceReader | undefined {
  return opened.reader.kind === 'ctf' && filter === undefined ? (opened.reader as CtfTraceReader) : undefined;
}

/** Writes the lines of a CTF input to `write` (chunks valid during the call); returns how many. */
export function writeCtfInputLines(
  reader: CtfTraceReader,
  opened: OpenedInput,
  format: 'text' | 'json',
  write: (bytes: Uint8Array) => void,
  limit = Number.POSITIVE_INFINITY,
): number {
  const tasks = opened.tasks;
  return reader.writeLines(write, {
    format,
    limit,
    ...(format === 'json'
      ? {
          jsonLine: jsonLines(opened),
          decoded: (ec) => tasks.names(ec),
          observe: (e) => {
            tasks.observe(e);
          },
        }
      : {}),
  });
}
