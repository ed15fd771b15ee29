import { describe, expect, it } from 'vitest';
import { TraceFormatError } from './errors.ts';

describe('TraceFormatError', () => {
  it('prefixes the message with its location: file and byte offset, or file, line and column', () => {
    const e = new TraceFormatError('ERR_TRACE_FORMAT', 'bad magic', { file: 'a/b', offset: 12 });
    expect(e.message).toBe('a/b: byte 12: bad magic');
    expect(e.code).toBe('ERR_TRACE_FORMAT');
    expect(new TraceFormatError('ERR_TRACE_FORMAT', 'x', { line: 3, column: 4 }).message).toBe('line 3:4: x');
    expect(new TraceFormatError('ERR_TRACE_TSDL', 'x', { file: 'metadata', line: 3, column: 4 }).message).toBe(
      'metadata:3:4: x',
    );
    expect(new TraceFormatError('ERR_TRACE_FORMAT', 'x').location).toEqual({});
  });
});
