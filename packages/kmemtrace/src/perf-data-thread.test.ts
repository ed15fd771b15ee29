import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readPerfData, TraceFormatError } from '@evtrace/trace-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyze } from './analyze.ts';
import { KmemError } from './errors.ts';
import type { KmemSource } from './event.ts';
import { perfDataSource } from './perf-data.ts';
import { analysePerfData } from './perf-data-thread.ts';
import { buildReport, formatReportText } from './report.ts';
import { perfKmemUnavailable } from './testing/env.ts';
import { recordPerfKmem } from './testing/perf-kmem.ts';

const why = perfKmemUnavailable();

/** Every table of the report, with every name the source gives. */
const text = (analysis: ReturnType<typeof analyze>, source: KmemSource) =>
  formatReportText(
    buildReport(analysis, source, { caller: true, alloc: true, page: true, leaks: true, errors: true, lines: 1e9 }),
  );

/** The analysis on this thread alone, or the error that stopped it. */
function oneThread(file: string, lenient: boolean) {
  try {
    const source = perfDataSource(file, { lenient });
    const analysis = analyze(source.events);
    return { analysis, text: text(analysis, source), diagnostics: source.diagnostics };
  } catch (error) {
    return { error };
  }
}

async function twoThreads(file: string, lenient: boolean) {
  try {
    const { analysis, source } = await analysePerfData(file, { lenient });
    return { analysis, text: text(analysis, source), diagnostics: source.diagnostics };
  } catch (error) {
    return { error };
  }
}

describe.skipIf(why !== '')(`a perf.data analysed with a reading thread${why ? ` (skipped: ${why})` : ''}`, () => {
  let dir: string;
  let data: string;
  let bytes: Buffer;

  beforeAll(() => {
    ({ dir, data, bytes } = recordPerfKmem('kmem-perf-thread-', 2, 20));
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('gives the analysis, names and tables of one thread', async () => {
    const one = oneThread(data, false);
    const two = await twoThreads(data, false);
    expect(one.error).toBeUndefined();
    expect(two.error).toBeUndefined();
    expect(one.analysis!.summary.events).toBeGreaterThan(1000);
    expect(two.analysis).toEqual(one.analysis);
    expect(two.text).toBe(one.text);
    expect(two.diagnostics).toEqual(one.diagnostics);
  }, 60_000);

  it('a file cut in its data: the same located error, or with lenient the same samples and warnings', async () => {
    const header = readPerfData(bytes).header;
    const cut = join(dir, 'cut.data');
    writeFileSync(cut, bytes.subarray(0, header.data.offset + Math.floor(header.data.size * 0.6)));
    const one = oneThread(cut, false);
    const two = await twoThreads(cut, false);
    expect(one.error).toBeInstanceOf(TraceFormatError);
    expect(two.error).toBeInstanceOf(TraceFormatError);
    expect(two.error).toMatchObject({
      code: (one.error as TraceFormatError).code,
      message: (one.error as Error).message,
      location: (one.error as TraceFormatError).location,
    });
    const keptOne = oneThread(cut, true);
    const keptTwo = await twoThreads(cut, true);
    expect(keptOne.diagnostics!.join('\n')).toContain(cut);
    expect(keptTwo.analysis).toEqual(keptOne.analysis);
    expect(keptTwo.text).toBe(keptOne.text);
    expect(keptTwo.diagnostics).toEqual(keptOne.diagnostics);
  }, 60_000);

  it('a sample whose tracepoint data is cut short: the error the worker met, with its file and byte', async () => {
    // The first kmem sample's RAW size set to 0: refused as shorter than its format's fields, at its offset.
    const source = readPerfData(bytes);
    let offset = -1;
    for (const s of source.samples()) {
      if (s.length > 0 && s.rawAt[0]! >= 0) {
        offset = s.chunk[0]!.base + s.rawAt[0]! - 4;
        break;
      }
    }
    expect(offset).toBeGreaterThan(0);
    const poked = join(dir, 'poked.data');
    const copy = Buffer.from(bytes);
    copy.writeUInt32LE(0, offset);
    writeFileSync(poked, copy);
    const one = oneThread(poked, false);
    const two = await twoThreads(poked, false);
    expect(one.error).toBeInstanceOf(KmemError);
    expect(two.error).toBeInstanceOf(KmemError);
    expect((two.error as KmemError).message).toBe((one.error as KmemError).message);
    expect((two.error as KmemError).location).toEqual((one.error as KmemError).location);
  }, 60_000);

  it('a file that is no kmem perf.data is refused before a thread starts', async () => {
    const other = join(dir, 'not.data');
    writeFileSync(other, 'PERFILE2 but nothing else');
    const one = oneThread(other, false);
    const two = await twoThreads(other, false);
    expect(one.error).toBeDefined();
    expect(two.error).toMatchObject({ message: (one.error as Error).message });
  });
});
