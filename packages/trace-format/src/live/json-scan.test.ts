import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pathText, scanJson } from './json-scan.ts';

const parses = (text: string) => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

describe('scanJson', () => {
  it('accepts exactly what JSON.parse accepts, and finds where a refused line breaks', () => {
    // Real JSON, compact and indented (whitespace between tokens).
    const json = fc
      .tuple(fc.jsonValue({ maxDepth: 4 }), fc.constantFrom(0, 2))
      .map(([v, indent]) => JSON.stringify(v, null, indent));
    const mutated = fc
      .tuple(json, fc.array(fc.tuple(fc.nat(), fc.nat(3), fc.string({ maxLength: 4 })), { minLength: 1, maxLength: 3 }))
      .map(([s, edits]) => {
        for (const [at, cut, insert] of edits) {
          const i = at % (s.length + 1);
          s = s.slice(0, i) + insert + s.slice(i + cut);
        }
        return s;
      });
    fc.assert(
      fc.property(fc.oneof(json, mutated, fc.string()), (text) => {
        const scan = scanJson(text);
        expect(scan.ok).toBe(parses(text));
        if (!scan.ok) {
          // The break is within the text, or at its end when the text stops short.
          expect(scan.at).toBeGreaterThanOrEqual(0);
          expect(scan.at).toBeLessThanOrEqual(text.length);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('finds the value at a path, and names paths as JavaScript writes them', () => {
    const text = '{"a": [1, {"b c": "x"}], "fields": {"ptr": 5}}';
    expect(scanJson(text, ['fields', 'ptr'])).toEqual({ ok: true, at: text.indexOf('5') });
    expect(scanJson(text, ['a', 1, 'b c'])).toEqual({ ok: true, at: text.indexOf('"x"') });
    expect(scanJson(text, ['missing'])).toEqual({ ok: true, at: undefined });
    expect(scanJson('{"a":1,}')).toEqual({ ok: false, at: 7, expected: 'a string' });
    expect(pathText(['a', 1, 'b c', 'd'])).toBe('a[1]["b c"].d');
    expect(pathText([])).toBe('the line');
  });
});
