import { describe, expect, it } from 'vitest';
import { RingbufError } from './errors.ts';

describe('RingbufError', () => {
  it('carries a code', () => {
    const e = new RingbufError('ERR_PLACEHOLDER', 'x');
    expect(e.code).toBe('ERR_PLACEHOLDER');
    expect(e).toBeInstanceOf(Error);
  });
});
