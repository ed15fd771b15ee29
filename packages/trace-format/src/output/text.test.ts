import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseFormatFile } from '../ftrace/format-file.ts';
import type { TraceEvent } from '../model/types.ts';
import { createFtraceTextFormatter, ftraceTimestamp } from './text.ts';

const eventClass = parseFormatFile(
  `name: tick
ID: 1
format:
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:unsigned int n;\toffset:8;\tsize:4;\tsigned:0;

print fmt: "n=%u", REC->n
`,
  { system: 't' },
);

/** `SECS.FRAC` as trace-cmd computes it: microseconds rounded to nearest, C's truncating division in bigints. */
function reference(tsNs: bigint, nanoseconds: boolean): string {
  const t = nanoseconds ? tsNs : tsNs + 500n;
  const ts = nanoseconds || t >= 0n ? t : (t / 1000n) * 1000n;
  const frac = nanoseconds
    ? String(ts % 1_000_000_000n).padStart(9, '0')
    : String((ts % 1_000_000_000n) / 1000n).padStart(6, '0');
  return `${String(ts / 1_000_000_000n).padStart(5)}.${frac}`;
}

describe('ftrace text lines', () => {
  it('write each time as trace-cmd does, within a second and across seconds, climbing or not, whatever its size', () => {
    const time = fc.oneof(
      fc.bigInt({ min: 0n, max: 2n ** 53n }),
      fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }),
      fc.bigInt({ min: 21_053_999_999_000n, max: 21_054_000_001_000n }),
      fc.constantFrom(0n, 499n, 500n, 999_999_499n, 999_999_500n, 2n ** 53n - 1000n, 2n ** 53n - 999n, -1n, -501n),
    );
    fc.assert(
      fc.property(fc.array(time, { minLength: 1, maxLength: 30 }), fc.boolean(), fc.boolean(), (times, sorted, ns) => {
        const line = createFtraceTextFormatter({ nanoseconds: ns, cmdlines: new Map([[7, 'task']]) });
        for (const tsNs of sorted ? [...times].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)) : times) {
          const event: TraceEvent = {
            tsNs,
            cpu: 2,
            eventClass,
            fields: { n: 3 },
            scopes: { 'event.context': { common_pid: 7 } },
          };
          expect(line(event)).toBe(
            `${'task'.padStart(16)}-7     [002] ${reference(tsNs, ns)}: tick:${' '.repeat(16)} n=3`,
          );
          expect(ftraceTimestamp(tsNs, ns)).toBe(reference(tsNs, ns).trimStart());
        }
      }),
      { numRuns: 500 },
    );
  });
});
