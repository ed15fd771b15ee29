import { EvtraceError } from '@evtrace/errors';
import { describe, expect, it } from 'vitest';
import { FilterError } from './errors.ts';
import { parseFilter } from './parser.ts';
import { parseKallsyms } from './symbols.ts';
import { fixtureClass } from './testing/fixtures.ts';
import { renderTree } from './tree.ts';

const kmalloc = fixtureClass('kmem/kmalloc');
const sw = fixtureClass('sched/sched_switch');

function reject(expr: string, event = kmalloc, options = {}): FilterError {
  try {
    parseFilter(expr, event, options);
  } catch (error) {
    if (error instanceof FilterError) return error;
    throw error;
  }
  throw new Error(`accepted: ${expr}`);
}

describe('parseFilter: grammar', () => {
  it('gives && precedence over || and applies ! to the next comparison or group', () => {
    expect(renderTree(parseFilter('bytes_req > 1 || node == 0 && CPU == 1', kmalloc))).toBe(
      'bytes_req > 1 || node == 0 && CPU == 1',
    );
    const t = parseFilter('(bytes_req > 1 || node == 0) && !CPU == 1', kmalloc);
    expect(t.root).toEqual({
      kind: 'and',
      children: [
        {
          kind: 'or',
          children: [
            { kind: 'pred', index: 0 },
            { kind: 'pred', index: 1 },
          ],
        },
        { kind: 'not', child: { kind: 'pred', index: 2 } },
      ],
    });
    expect(renderTree(t)).toBe('(bytes_req > 1 || node == 0) && !CPU == 1');
  });

  it('accepts a trailing && or || as the kernel does, meaning the expression before it', () => {
    expect(renderTree(parseFilter('bytes_req > 8 &&', kmalloc))).toBe('bytes_req > 8');
    expect(renderTree(parseFilter('bytes_req > 8 && node == 0 ||', kmalloc))).toBe('bytes_req > 8 && node == 0');
  });

  it('refuses operator sequences the kernel cannot compile ("a || b &&" fails with Error at 0)', () => {
    const e = reject('bytes_req > 1 || bytes_req < 3 &&');
    expect([e.message, e.column, e.errno]).toEqual(['Error', 0, 'EINVAL']);
  });

  it('treats "0" as clearing the filter', () => {
    expect(parseFilter(' 0 ', kmalloc).root).toBeUndefined();
  });

  it('parses 2000 nested parentheses without recursion', () => {
    const expr = `${'('.repeat(2000)}bytes_req == 8${')'.repeat(2000)}`;
    expect(parseFilter(expr, kmalloc).predicates).toHaveLength(1);
  });

  it('refuses a NUL character at its byte column, which the kernel would take as the end of the filter', () => {
    const e = reject('bytes_req > 1 \0|| node == 0');
    expect([e.code, e.message, e.column]).toEqual(['ERR_FILTER_NUL', 'NUL character in filter', 14]);
    // evtrace's one error shape: the caret's byte column is the location, the message stays the kernel's alone.
    expect(e).toBeInstanceOf(EvtraceError);
    expect(e.location).toEqual({ offset: 14 });
    expect(reject('comm == "\u00e9\0"').column).toBe(11);
    expect(reject('\0').code).toBe('ERR_FILTER_NUL');
  });

  it('refuses 4096 bytes or more before parsing', () => {
    const e = reject(`bytes_req == 1 || ${'x'.repeat(4090)}`);
    expect(e.code).toBe('ERR_FILTER_LIMIT');
    expect(
      parseFilter(Array.from({ length: 290 }, (_, i) => `node == ${i % 10}`).join(' || '), kmalloc).program,
    ).toHaveLength(290);
  });
});

describe('parseFilter: kernel errors and columns', () => {
  it.each([
    ['bad &&', 'Field not found', 4, 'ERR_FILTER_FIELD'],
    ['bytes_req == "x"', 'Expecting numeric field', 14, 'ERR_FILTER_TYPE'],
    ['bytes_req == 0x', 'Illegal integer value', 14, 'ERR_FILTER_VALUE'],
    ['bytes_req == -1', 'Illegal integer value', 14, 'ERR_FILTER_VALUE'],
    ['bytes_req = 8', 'Invalid operator', 11, 'ERR_FILTER_SYNTAX'],
    ['bytes_req ==', 'Invalid value (did you forget quotes)?', 13, 'ERR_FILTER_VALUE'],
    ['bytes_req > 8 node == 0', 'Too many terms in predicate expression', 14, 'ERR_FILTER_SYNTAX'],
    ['bytes_req > 8)', "Too few '('", 13, 'ERR_FILTER_SYNTAX'],
    ['(bytes_req > 8', "Too many '('", 0, 'ERR_FILTER_SYNTAX'],
    ['CPU == CPUS{0', "Missing '}'", 14, 'ERR_FILTER_SYNTAX'],
    ['!', 'No filter found', 1, 'ERR_FILTER_SYNTAX'],
    ['&&', 'Error', 0, 'ERR_FILTER_SYNTAX'],
  ])('%j: %s at %d', (expr, message, column, code) => {
    const e = reject(expr, kmalloc, { nrCpuIds: 2 });
    expect([e.message, e.column, e.code]).toEqual([message, column, code]);
  });

  it('says which field and type in detail, with the exact span', () => {
    const e = reject('prev_pid == 1 && prev_comm == 5', sw);
    expect(e.message).toBe('Expecting string field');
    expect(e.detail).toContain('prev_comm is a string');
    expect(e.span).toEqual({ start: 17, end: 26 });
    const f = reject('prev_pid == 1 && nope == 5', sw);
    expect(f.detail).toBe("'nope' is not a field of sched:sched_switch");
    expect(f.format('prev_pid == 1 && nope == 5').split('\n')[1]).toBe(`${' '.repeat(22)}^`);
  });

  it('resolves .function through a symbol table', () => {
    const symbols = parseKallsyms(
      'ffffffff81000000 T alpha\nffffffff81000100 t beta\nffffffff81000200 T gamma [mod]\n',
    );
    const p = parseFilter('call_site.function == beta', kmalloc, { symbols });
    expect(p.predicates[0]!.test).toEqual({
      type: 'function',
      start: 0xffffffff81000100n,
      end: 0xffffffff81000200n,
      symbol: 'beta',
    });
    expect(reject('call_site.function == delta', kmalloc, { symbols }).message).toBe('Function not found');
    expect(reject('node.function == beta', kmalloc, { symbols }).message).toBe('Illegal operation for field type');
  });
});
