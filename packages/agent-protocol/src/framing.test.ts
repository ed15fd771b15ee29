import { describe, expect, it } from 'vitest';
import { encodeLine, LineDecoder } from './framing.ts';

const bytes = (s: string) => new TextEncoder().encode(s);

describe('LineDecoder', () => {
  it('joins lines split across chunks and splits several lines in one chunk', () => {
    const d = new LineDecoder(100);
    expect(d.push(bytes('{"a":'))).toEqual([]);
    expect(d.pending).toBe(5);
    expect(d.push(bytes('1}\n{"b":2}\n{"c"'))).toEqual([{ line: '{"a":1}' }, { line: '{"b":2}' }]);
    expect(d.push(bytes(':3}\n'))).toEqual([{ line: '{"c":3}' }]);
    expect(d.pending).toBe(0);
  });

  it('reports a line over the limit once with its length and keeps the lines after it', () => {
    const d = new LineDecoder(8);
    const frames = [...d.push(bytes('x'.repeat(5))), ...d.push(bytes('y'.repeat(10))), ...d.push(bytes('z\nok\n'))];
    expect(frames).toEqual([{ oversize: 16 }, { line: 'ok' }]);
  });

  it('does not buffer an endless line beyond the limit', () => {
    const d = new LineDecoder(1024);
    for (let i = 0; i < 1000; i++) expect(d.push(new Uint8Array(4096).fill(0x41))).toEqual([]);
    expect(d.pending).toBe(0);
    expect(d.push(bytes('\n{}\n'))).toEqual([{ oversize: 4096 * 1000 }, { line: '{}' }]);
  });

  it('accepts a line of exactly the limit and decodes UTF-8 split inside a character', () => {
    const d = new LineDecoder(4);
    const euro = bytes('é€'); // 2 + 3 bytes: over a 4-byte limit
    expect(d.push(euro.subarray(0, 1))).toEqual([]);
    expect(d.push(new Uint8Array([...euro.subarray(1, 2), 0x0a]))).toEqual([{ line: 'é' }]);
    expect(d.push(new Uint8Array([...euro, 0x0a]))).toEqual([{ oversize: 5 }]);
    expect(d.push(bytes('abcd\n'))).toEqual([{ line: 'abcd' }]);
  });

  it('encodeLine escapes newlines inside strings, so a message is always one line', () => {
    const line = encodeLine({ filter: 'a\nb' });
    expect(line.indexOf('\n')).toBe(line.length - 1);
    expect(JSON.parse(line)).toEqual({ filter: 'a\nb' });
  });
});
