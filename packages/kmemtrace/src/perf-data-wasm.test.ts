import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readPerfData, sampleLayout } from '@evtrace/trace-format';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AnalyzeOptions, analyze } from './analyze.ts';
import type { KmemSource } from './event.ts';
import { perfDataSource, perfDataState } from './perf-data.ts';
import { buildReport, formatReportText } from './report.ts';
import { perfKmemUnavailable } from './testing/env.ts';
import { recordPerfKmem } from './testing/perf-kmem.ts';

const why = perfKmemUnavailable();

/** Every table of the report, with every name the source gives. */
const text = (analysis: ReturnType<typeof analyze>, source: KmemSource) =>
  formatReportText(
    buildReport(analysis, source, { caller: true, alloc: true, page: true, leaks: true, errors: true, lines: 1e9 }),
  );

/** The file read by the WebAssembly reader: its analysis, tables and diagnostics, or undefined when it declined. */
function inWasm(file: string, lenient = false, options: AnalyzeOptions = {}) {
  const source = perfDataSource(file, { lenient });
  const analysis = perfDataState.get(source)!.analyseInWasm(options);
  if (analysis === undefined) return undefined;
  return { analysis, text: text(analysis, source), diagnostics: source.diagnostics };
}

/** The file read by the TypeScript reader, or the error that stopped it. */
function inTypeScript(file: string, lenient = false, options: AnalyzeOptions = {}) {
  try {
    const source = perfDataSource(file, { lenient });
    const analysis = analyze(source.events, options);
    return { analysis, text: text(analysis, source), diagnostics: source.diagnostics };
  } catch (error) {
    return { error };
  }
}

/** Whether a CPU's samples, or a round's, come earlier than ones perf's rounds would deliver before them. */
function outOfTimeOrder(bytes: Buffer): boolean {
  const walk = readPerfData(bytes).walk()!;
  let delivered = Number.NEGATIVE_INFINITY;
  let from = walk.queues.map(() => 0);
  for (const round of walk.rounds) {
    for (const [k, q] of walk.queues.entries())
      for (let i = from[k]!; i < round.tails[k]!; i++)
        if (q.time[i]! < delivered || (i > 0 && q.time[i]! < q.time[i - 1]!)) return true;
    from = [...round.tails];
    delivered = Math.max(delivered, round.limit);
  }
  return false;
}

describe.skipIf(why !== '')(`a perf.data read by the WebAssembly reader${why ? ` (skipped: ${why})` : ''}`, () => {
  let dir: string;
  let data: string;
  let bytes: Buffer;

  beforeAll(() => {
    ({ dir, data, bytes } = recordPerfKmem('kmem-perf-wasm-', 2, 20));
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reads perf kmem record's file: the TypeScript reader's analysis, names, tables and warnings", () => {
    const wasm = inWasm(data);
    const ts = inTypeScript(data);
    expect(ts.error).toBeUndefined();
    // It may decline a recording only when perf's order is not the samples' time order.
    if (wasm === undefined) {
      expect(outOfTimeOrder(bytes)).toBe(true);
      return;
    }
    expect(wasm!.analysis.summary.events).toBeGreaterThan(1000);
    expect(wasm!.analysis).toEqual(ts.analysis);
    expect(wasm!.text).toBe(ts.text);
    expect(wasm!.diagnostics).toEqual(ts.diagnostics);
    // The analysis's options: a finer time series, kfree of a cache object counted, fewer examples kept.
    const options = { intervalNs: 1_000_000, kfreeOfCacheObjectIsError: true, examplesPerKind: 3 };
    const tuned = inWasm(data, false, options);
    const tunedTs = inTypeScript(data, false, options);
    expect(tuned!.analysis.timeseries.length).toBeGreaterThan(wasm!.analysis.timeseries.length);
    expect(tuned!.analysis).toEqual(tunedTs.analysis);
    expect(tuned!.text).toBe(tunedTs.text);
  }, 60_000);

  it('declines a sample out of its CPU’s time order, which perf would deliver otherwise', () => {
    // The sample last in the file set to a time before every other: the TypeScript reader sorts its CPU's samples
    // (as perf does) where the WebAssembly reader, which merges them as they come, gives the file up.
    const source = readPerfData(bytes);
    let last = 0;
    let attr = 0;
    for (const s of source.samples())
      for (let i = 0; i < s.length; i++)
        if (s.offset[i]! > last) {
          last = s.offset[i]!;
          attr = s.attr[i]!;
        }
    const early = Buffer.from(bytes);
    early.writeBigUInt64LE(1n, last + sampleLayout(source.header.attrs[attr]!).time);
    const file = join(dir, 'early.data');
    writeFileSync(file, early);
    expect(inWasm(file)).toBeUndefined();
    expect(inTypeScript(file).error).toBeUndefined();
  });

  it('fuzz: a cut or poked file is read as the TypeScript reader reads it, or declined', () => {
    const file = join(dir, 'fuzz.data');
    const { offset } = readPerfData(bytes).header.data;
    let compared = 0;
    fc.assert(
      fc.property(
        // Half the files whole (only poked), half cut somewhere in the data or after it.
        fc.oneof(fc.constant(bytes.length), fc.integer({ min: offset, max: bytes.length })),
        fc.array(fc.record({ at: fc.integer({ min: offset, max: bytes.length - 1 }), value: fc.nat(255) }), {
          maxLength: 3,
        }),
        fc.boolean(),
        (cut, pokes, lenient) => {
          const copy = Uint8Array.from(bytes.subarray(0, cut));
          for (const p of pokes) if (p.at < copy.length) copy[p.at] = p.value;
          writeFileSync(file, copy);
          let wasm: ReturnType<typeof inWasm>;
          try {
            wasm = inWasm(file, lenient);
          } catch {
            // The file's head is damaged: opening it throws before either reader reads a sample.
            expect(inTypeScript(file, lenient).error).toBeDefined();
            return;
          }
          if (wasm === undefined) return;
          const ts = inTypeScript(file, lenient);
          expect(ts.error).toBeUndefined();
          expect(wasm.analysis).toEqual(ts.analysis);
          expect(wasm.text).toBe(ts.text);
          expect(wasm.diagnostics).toEqual(ts.diagnostics);
          compared++;
        },
      ),
      { numRuns: 60 },
    );
    // Pokes that leave the file readable (a figure changed) are read, and compared, not only declined.
    expect(compared).toBeGreaterThan(0);
  }, 180_000);
});
