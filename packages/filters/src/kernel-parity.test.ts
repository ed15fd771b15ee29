import { readFileSync } from 'node:fs';
import { parseFormatFile } from '@evtrace/trace-format';
import { afterAll, describe, expect, it } from 'vitest';
import { FilterError } from './errors.ts';
import { parseFilter } from './parser.ts';
import { machineCpuIds, machineSymbols } from './testing/machine.ts';
import { findTracefs, Instance } from './testing/tracefs.ts';

/** The corpus: expressions written to a real kernel, each compared with evtrace's verdict. */
const corpus = JSON.parse(readFileSync(new URL('../corpus/kernel-corpus.json', import.meta.url), 'utf8')) as {
  event: string;
  expr: string;
}[];

const { tracefs, why } = findTracefs();

describe('kernel corpus', () => {
  it('holds at least 150 expressions over every operator, field kind and error', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(150);
    const all = corpus.map((c) => c.expr).join('\n');
    for (const op of [
      '==',
      '!=',
      '<',
      '<=',
      '>',
      '>=',
      ' & ',
      '~',
      '&&',
      '||',
      '!',
      'CPUS{',
      '.function',
      'COMM',
      'CPU',
    ]) {
      expect(all).toContain(op);
    }
  });
});

describe.skipIf(!tracefs)(`parity with the running kernel${why ? ` (skipped: ${why})` : ''}`, () => {
  const instance = tracefs ? new Instance(tracefs, 'filters-parity') : undefined;
  afterAll(() => instance?.remove());
  const symbols = machineSymbols();
  const nrCpuIds = machineCpuIds();

  it('accepts and rejects every corpus expression as the kernel does, with the same message and caret', () => {
    const classes = new Map<string, ReturnType<typeof parseFormatFile>>();
    const mismatches: string[] = [];
    let accepted = 0;
    for (const { event, expr } of corpus) {
      let eventClass = classes.get(event);
      if (eventClass === undefined) {
        const file = instance!.file('events', event, 'format');
        eventClass = parseFormatFile(readFileSync(file, 'utf8'), { file, system: event.split('/')[0]! });
        classes.set(event, eventClass);
      }
      const kernel = instance!.tryFilter(event, expr);
      let ours: { ok: boolean; message?: string; column?: number; code?: string };
      try {
        parseFilter(expr, eventClass, { ...(symbols ? { symbols } : {}), ...(nrCpuIds ? { nrCpuIds } : {}) });
        ours = { ok: true };
      } catch (error) {
        if (!(error instanceof FilterError)) throw error;
        ours = { ok: false, message: error.message, column: error.column, code: error.code };
      }
      if (kernel.ok) accepted++;
      const same =
        kernel.ok === ours.ok &&
        (kernel.ok ||
          (kernel.message === undefined
            ? ours.code === 'ERR_FILTER_LIMIT'
            : kernel.message === ours.message && kernel.column === ours.column));
      if (!same) {
        mismatches.push(
          `${event} ${JSON.stringify(expr.length > 80 ? `${expr.slice(0, 80)}…` : expr)}: kernel ${JSON.stringify(kernel)} evtrace ${JSON.stringify(ours)}`,
        );
      }
    }
    console.log(`kernel parity: ${corpus.length - mismatches.length}/${corpus.length} agree (${accepted} accepted)`);
    expect(mismatches).toEqual([]);
  });
});
