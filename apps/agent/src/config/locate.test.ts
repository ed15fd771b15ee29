import { describe, expect, it } from 'vitest';
import { locateKeys } from './locate.ts';

describe('locateKeys', () => {
  it('finds top-level keys, table headers, keys in tables and quoted or dotted keys', () => {
    const text = [
      'socket = "/s"', //
      '',
      '  [sessions.flight]',
      'events = ["a:b"]',
      '[sessions."two words"]',
      "  'mode' = 'discard'",
      'a.b.c = 1',
    ].join('\n');
    const at = locateKeys(text);
    expect(at.find(['socket'])).toEqual({ line: 1, column: 1 });
    expect(at.find(['sessions', 'flight'])).toEqual({ line: 3, column: 3 });
    expect(at.find(['sessions', 'flight', 'events'])).toEqual({ line: 4, column: 1 });
    expect(at.find(['sessions', 'two words', 'mode'])).toEqual({ line: 6, column: 3 });
    expect(at.find(['sessions', 'two words', 'a', 'b', 'c'])).toEqual({ line: 7, column: 1 });
    expect(at.find(['sessions', 'two words', 'a'])).toEqual({ line: 7, column: 1 });
  });

  it('falls back to the nearest located ancestor', () => {
    const at = locateKeys('x = 1\n[t]\ninline = { deep = 2 }\n');
    expect(at.find(['t', 'inline', 'deep'])).toEqual({ line: 3, column: 1 });
    expect(at.find(['nowhere'])).toBeUndefined();
  });

  it('is not fooled by key-like lines inside multi-line strings', () => {
    const text = [
      'filter = """',
      'mode = "x"',
      '[sessions.fake]',
      '"""',
      "doc = '''",
      'socket = 1',
      "'''",
      'mode = 2',
    ].join('\n');
    const at = locateKeys(text);
    expect(at.find(['mode'])).toEqual({ line: 8, column: 1 });
    expect(at.find(['socket'])).toBeUndefined();
    expect(at.find(['sessions', 'fake'])).toBeUndefined();
  });

  it('treats quotes and # inside one-line strings as content', () => {
    const at = locateKeys('a = "x \\" \'\'\' # y"\nb = 1\n');
    expect(at.find(['b'])).toEqual({ line: 2, column: 1 });
  });
});
