import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readPerfData, TraceFormatError } from '@evtrace/trace-format';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyze } from './analyze.ts';
import { KmemError } from './errors.ts';
import { openKmemInput } from './inputs.ts';
import { perfDataSource } from './perf-data.ts';
import { buildReport, formatReportText } from './report.ts';
import { perfKmemUnavailable } from './testing/env.ts';
import { recordPerfKmem } from './testing/perf-kmem.ts';

const why = perfKmemUnavailable();

/** The report's caller and alloc tables of a perf.data, or the error that stopped it. */
function report(file: string, lenient = false): { text?: string; events: number; diagnostics: string[] } {
  const source = perfDataSource(file, { lenient });
  let events = 0;
  const counted = {
    ...source,
    events: (function* () {
      for (const e of source.events) {
        events++;
        yield e;
      }
    })(),
  };
  const text = formatReportText(buildReport(analyze(counted.events), source, { caller: true, alloc: true }));
  return { text, events, diagnostics: source.diagnostics };
}

describe.skipIf(why !== '')(`perf.data of perf kmem record, read directly${why ? ` (skipped: ${why})` : ''}`, () => {
  let dir: string;
  let data: string;
  let bytes: Buffer;

  beforeAll(() => {
    ({ dir, data, bytes } = recordPerfKmem('kmem-perf-data-', 1, 2));
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a file cut in its data: strict names the file and byte offset; lenient keeps the samples before the cut', () => {
    const whole = report(data);
    const header = readPerfData(bytes).header;
    const cut = join(dir, 'cut.data');
    const at = header.data.offset + Math.floor(header.data.size * 0.6);
    writeFileSync(cut, bytes.subarray(0, at));
    let error: unknown;
    try {
      report(cut);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(TraceFormatError);
    expect((error as TraceFormatError).code).toBe('ERR_TRACE_PERF_DATA');
    expect((error as Error).message).toMatch(new RegExp(`^${cut}: byte \\d+: data section ends at \\d+, past the end`));
    const kept = report(cut, true);
    expect(kept.events).toBeGreaterThan(whole.events * 0.4);
    expect(kept.events).toBeLessThan(whole.events);
    expect(kept.diagnostics.join('\n')).toContain(cut);
  });

  it('a perf.data of other events is refused as holding no kmem event', () => {
    const other = join(dir, 'sched.data');
    execFileSync('perf', ['record', '-q', '-e', 'sched:sched_switch', '-a', '-o', other, '--', 'sleep', '0.05'], {
      stdio: 'ignore',
    });
    expect(() => openKmemInput(other)).toThrow(KmemError);
    expect(() => openKmemInput(other)).toThrow(/sched\.data: a perf\.data without kmem tracepoint events/);
  });

  it('fuzz: cut or poked files give a report or a located error, never another failure', () => {
    const file = join(dir, 'fuzz.data');
    fc.assert(
      fc.property(
        fc.nat(bytes.length),
        fc.array(fc.record({ at: fc.nat(bytes.length - 1), value: fc.nat(255) }), { maxLength: 3 }),
        fc.boolean(),
        (cut, pokes, lenient) => {
          const copy = Uint8Array.from(bytes.subarray(0, cut));
          for (const p of pokes) if (p.at < copy.length) copy[p.at] = p.value;
          writeFileSync(file, copy);
          try {
            report(file, lenient);
          } catch (error) {
            if (!(error instanceof TraceFormatError || error instanceof KmemError)) throw error;
            expect(error.message.startsWith(file)).toBe(true);
          }
        },
      ),
      { numRuns: 60 },
    );
  }, 120_000);
});
