import { describe, expect, it } from 'vitest';
import { TraceFormatError } from './errors.ts';

describe('TraceFormatError', () => {
  it('prefixes the message with file, line and byte offset', () => {
    const e = new TraceFormatError('ERR_TRACE_FORMAT', 'bad magic', { file: 'a/b', offset: 12 });
    expect(e.message).toBe('a/b: byte 12: bad magic');
    expect(e.code).toBe('ERR_TRACE_FORMAT');
    expect(new TraceFormatError('ERR_TRACE_FORMAT', 'x', { line: 3, column: 4 }).message).toBe('3:4: x');
  });
});
