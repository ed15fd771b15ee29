import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileRecordFilter } from './compile.ts';
import { FilterError } from './errors.ts';
import { parseFilter } from './parser.ts';
import { parseKallsyms } from './symbols.ts';
import { encodeRecord, fixtureClass } from './testing/fixtures.ts';
import { renderTree } from './tree.ts';

const corpus = JSON.parse(readFileSync(new URL('../corpus/kernel-corpus.json', import.meta.url), 'utf8')) as {
  event: string;
  expr: string;
}[];
const classes = new Map(corpus.map((c) => [c.event, fixtureClass(c.event)]));
const symbols = parseKallsyms(
  'ffffffff816475a0 T __kmalloc_noprof\nffffffff81647fb0 T kfree\nffffffff816d5370 T vfs_read\nffffffff82265dd0 T schedule\n',
);
const ALPHABET = ' ()!&|=<>~"\'{}*?[]-,.:/\\0123456789abxCPUSN_\t\u00e9';

/** Parses; every failure must be a FilterError, and every success must render and re-parse to the same tree. */
function check(expr: string, event: string): void {
  const eventClass = classes.get(event)!;
  const t0 = performance.now();
  try {
    const parsed = parseFilter(expr, eventClass, { symbols, nrCpuIds: 4 });
    const again = parseFilter(renderTree(parsed), eventClass, { symbols, nrCpuIds: 4 });
    expect(again.root).toEqual(parsed.root);
    const f = compileRecordFilter(parsed, eventClass, { nrCpuIds: 4 });
    const view = encodeRecord(eventClass, {});
    expect(typeof f(view, 0, view.byteLength, 1, 'x')).toBe('boolean');
  } catch (error) {
    if (!(error instanceof FilterError)) throw error;
    expect(error.column).toBeGreaterThanOrEqual(0);
  }
  expect(performance.now() - t0).toBeLessThan(1000);
}

describe('parser fuzzing', () => {
  it('never crashes or hangs on random expressions', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom(...ALPHABET), maxLength: 120 }),
        fc.constantFrom(...classes.keys()),
        (expr, event) => check(expr, event),
      ),
      { numRuns: 3000 },
    );
  });

  it('never crashes or hangs on mutated corpus expressions', () => {
    const mutation = fc.tuple(fc.nat(), fc.nat({ max: 3 }), fc.constantFrom(...ALPHABET));
    fc.assert(
      fc.property(fc.constantFrom(...corpus), fc.array(mutation, { minLength: 1, maxLength: 6 }), (entry, edits) => {
        let s = entry.expr;
        for (const [pos, kind, ch] of edits) {
          const at = s.length === 0 ? 0 : pos % (s.length + 1);
          if (kind === 0) s = s.slice(0, at) + ch + s.slice(at);
          else if (kind === 1) s = s.slice(0, at) + s.slice(at + 1);
          else if (kind === 2) s = s.slice(0, at) + ch + s.slice(at + 1);
          else s = s.slice(0, at) + s.slice(at, at + 8) + s.slice(at);
        }
        check(s, entry.event);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('record predicate fuzzing', () => {
  it('answers or raises ERR_FILTER_RECORD on corrupt, truncated records; never a crash', () => {
    const exec = classes.get('sched/sched_process_exec')!;
    const filters = [
      'filename ~ "*/ls" || pid > 100',
      'filename == "/bin/sh" && old_pid != 0',
      'filename ~ "[a-z]*" || CPU & CPUS{1}',
    ].map((e) => compileRecordFilter(e, exec, { nrCpuIds: 4 }));
    fc.assert(
      fc.property(
        fc.string({ maxLength: 40 }),
        fc.array(fc.tuple(fc.nat(), fc.nat(255)), { maxLength: 6 }),
        fc.nat(80),
        fc.integer({ min: -4, max: 100 }),
        (filename, flips, size, offset) => {
          const real = encodeRecord(exec, { filename, pid: 7, old_pid: 7 });
          const bytes = new Uint8Array(real.buffer.slice(0));
          for (const [at, value] of flips) bytes[at % bytes.length] = value;
          const view = new DataView(bytes.buffer);
          for (const f of filters) {
            try {
              expect(typeof f(view, offset, size, 1)).toBe('boolean');
            } catch (error) {
              expect(error).toBeInstanceOf(FilterError);
              expect((error as FilterError).code).toBe('ERR_FILTER_RECORD');
            }
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});
