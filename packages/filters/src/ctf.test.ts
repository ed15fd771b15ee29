import { existsSync } from 'node:fs';
import { openCtfTrace, type TraceEvent } from '@evtrace/trace-format';
import { describe, expect, it } from 'vitest';
import { compileFilter, compileRecordFilter } from './compile.ts';
import { FilterError } from './errors.ts';
import { parseFilter } from './parser.ts';

/** LTTng's own filter-test event, from a real CTF trace: filters type-check against CTF classes too. */
const TRACE = new URL(
  '../../../../shared/fixtures/ctf-babeltrace-v2.0.4/tests/data/ctf-traces/succeed/multi-domains/kernel',
  import.meta.url,
).pathname;
const present = existsSync(TRACE);

describe.skipIf(!present)(`filters over a CTF trace${present ? '' : ` (skipped: ${TRACE} is absent)`}`, () => {
  const reader = present ? openCtfTrace(TRACE) : undefined;
  const events: TraceEvent[] = present ? [...reader!.events()] : [];
  const eventClass = events[0]?.eventClass;

  it('selects the events an independent reading of the fields selects', () => {
    const f = compileFilter('intfield > 100 && intfield2 & 1 || longfield == 5 && stringfield ~ "te*"', eventClass!);
    const expected = events.filter(
      (e) =>
        (Number(e.fields.intfield) > 100 && (Number(e.fields.intfield2) & 1) === 1) || Number(e.fields.longfield) === 5,
    );
    expect(expected.length).toBeGreaterThan(0);
    expect(events.filter(f)).toEqual(expected);
    expect(
      events.filter(compileFilter('stringfield2 == "\\*" && arrfield2 == "test" && seqfield2 != "x"', eventClass!)),
    ).toHaveLength(events.length);
  });

  it('refuses non-scalar members and encoded-record evaluation with typed errors', () => {
    expect(() => parseFilter('arrfield1 == 1', eventClass!)).toThrow(FilterError);
    expect(() => compileRecordFilter('intfield == 1', eventClass!)).toThrowError(/no fixed record layout/);
  });
});
