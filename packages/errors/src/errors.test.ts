import { describe, expect, it } from 'vitest';
import { codeOf, EvtraceError, formatLocation, located } from './index.ts';

describe('formatLocation', () => {
  it('writes text positions as file:line:column and binary ones as a byte offset', () => {
    expect(formatLocation({ file: 'kern.log', line: 12, column: 5 })).toBe('kern.log:12:5');
    expect(formatLocation({ file: 'kern.log', line: 12 })).toBe('kern.log:12');
    expect(formatLocation({ line: 3, column: 4 })).toBe('line 3:4');
    expect(formatLocation({ line: 3 })).toBe('line 3');
    expect(formatLocation({ file: 'k.dat', offset: 4096 })).toBe('k.dat: byte 4096');
    expect(formatLocation({ offset: 0 })).toBe('byte 0');
    expect(formatLocation({ file: '<stdin>' })).toBe('<stdin>');
  });

  it('prefers the line when a location has both, and writes nothing for an empty one', () => {
    expect(formatLocation({ file: 'x.tsdl', line: 2, column: 7, offset: 40 })).toBe('x.tsdl:2:7');
    expect(formatLocation({})).toBe('');
    expect(formatLocation(undefined)).toBe('');
    expect(formatLocation({ file: undefined, offset: undefined })).toBe('');
  });
});

describe('EvtraceError', () => {
  it('puts the location in front of the message and keeps code, location and cause', () => {
    const cause = new Error('short read');
    const e = new EvtraceError('ERR_TRACE_DAT', 'truncated section', {
      location: { file: 'a.dat', offset: 12 },
      cause,
    });
    expect(e).toBeInstanceOf(Error);
    expect(e.message).toBe('a.dat: byte 12: truncated section');
    expect(e.code).toBe('ERR_TRACE_DAT');
    expect(e.location).toEqual({ file: 'a.dat', offset: 12 });
    expect(e.cause).toBe(cause);
    expect(String(e)).toBe('EvtraceError: a.dat: byte 12: truncated section');
  });

  it('leaves a message without a place as it is, and has no cause unless given one', () => {
    const e = new EvtraceError('ERR_RINGBUF_CLOSED', 'the writer is closed');
    expect(e.message).toBe('the writer is closed');
    expect(e.location).toBeUndefined();
    expect('cause' in e).toBe(false);
  });

  it('is the base of a package class, which names itself and narrows the code', () => {
    type RingCode = 'ERR_RINGBUF_CLOSED' | 'ERR_RINGBUF_REGION';
    class RingError extends EvtraceError<RingCode> {
      constructor(code: RingCode, message: string, offset?: number) {
        super(code, message, { location: { offset } });
        this.name = 'RingError';
      }
    }
    const e = new RingError('ERR_RINGBUF_REGION', 'misaligned', 8);
    expect(e).toBeInstanceOf(EvtraceError);
    expect(`${e}`).toBe('RingError: byte 8: misaligned');
  });
});

describe('located and codeOf', () => {
  it('located writes where: what', () => {
    expect(located('no such event', { file: 'events/kmem', line: 1 })).toBe('events/kmem:1: no such event');
    expect(located('no such event', {})).toBe('no such event');
  });

  it('codeOf reads the code of anything that has a string one', () => {
    expect(codeOf(new EvtraceError('ERR_AGENT_LIMIT', 'too many'))).toBe('ERR_AGENT_LIMIT');
    expect(codeOf(Object.assign(new Error('x'), { code: 'ENOENT' }))).toBe('ENOENT');
    expect(codeOf(new Error('x'))).toBeUndefined();
    expect(codeOf({ code: 7 })).toBeUndefined();
    expect(codeOf(null)).toBeUndefined();
    expect(codeOf('ERR_X')).toBeUndefined();
  });
});
