/**
 * A CTF input's lines (`cat`, `convert --to text|jsonl`) written from its packets' bytes by the reader itself
 * (`CtfTraceReader.writeLines`): the same text and JSON as the event formatters give, without an event, a payload
 * object or a string per event, `--filter` judging each event on its values before its line is kept. Events of
 * classes that name tasks are still decoded whole, so that `--json` and COMM name tasks as for every input.
 */
import { compileFilter, compileRecordFilter, FilterError, parseFilter } from '@evtrace/filters';
import type { CtfLinesOptions, CtfTraceReader } from '@evtrace/trace-format';
import { jsonLineWriter, type OpenedInput } from './trace-input.ts';

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
  expression?: string,
): number {
  const { tasks, filter } = opened;
  const n = reader.writeLines(write, {
    format,
    limit,
    ...(format === 'json' ? { jsonLine: jsonLineWriter(opened) } : {}),
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
    ...(filter !== undefined && expression !== undefined ? { keepRecord: payloadFilter(expression) } : {}),
  });
  // Every event was read (or none was asked for): an expression that fits no class is an error, as when reading events.
  if (n < limit || limit === 0) filter?.finish();
  return n;
}

/**
 * `--filter` over a payload's bytes, for classes whose payload every event lays out alike: the expression's fields
 * placed at their offsets and compiled as for kernel records (integer compares on the bytes, no bigint). Expressions
 * naming what the bytes do not hold (COMM, strings) are left to the event filter.
 */
function payloadFilter(expression: string): NonNullable<CtfLinesOptions['keepRecord']> {
  return (eventClass, layout) => {
    try {
      const parsed = parseFilter(expression, eventClass);
      const predicates = parsed.predicates.map((p) =>
        p.field.kind === 'number' ? { ...p, field: { ...p.field, offset: layout.offsets.get(p.field.name) ?? -1 } } : p,
      );
      const onBytes = (p: (typeof predicates)[number]) =>
        p.field.kind === 'cpu' || (p.field.kind === 'number' && p.test.type === 'number' && p.field.offset >= 0);
      if (!predicates.every(onBytes)) return undefined;
      // Only where the event filter takes the expression too: it judges the class's first event, and says why not.
      compileFilter(parsed, eventClass);
      const test = compileRecordFilter({ ...parsed, predicates }, eventClass, { byteOrder: layout.byteOrder });
      return (view, start, length, cpu) => test(view, start, length, cpu);
    } catch (error) {
      // What the filter cannot take this way (or at all) is the event filter's to judge and to say.
      if (error instanceof FilterError) return undefined;
      throw error;
    }
  };
}
