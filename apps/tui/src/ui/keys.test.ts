import { describe, expect, it } from 'vitest';
import { keyPresses } from './keys.ts';

describe('keyPresses', () => {
  it('splits a burst of typed characters into one press each, in order', () => {
    expect(keyPresses('jjkG/', {})).toEqual(['j', 'j', 'k', 'G', '/']);
  });
  it('names special keys and control characters inside a burst', () => {
    expect(keyPresses('', { pageDown: true })).toEqual(['pagedown']);
    expect(keyPresses('', { upArrow: true })).toEqual(['up']);
    expect(keyPresses('\t', { tab: true, shift: true })).toEqual(['shift-tab']);
    expect(keyPresses('c', { ctrl: true })).toEqual(['ctrl-c']);
    expect(keyPresses('a\rb\x7f\x03', {})).toEqual(['a', 'enter', 'b', 'backspace', 'ctrl-c']);
    expect(keyPresses('x\x01\x05\x15\x17\x0by', {})).toEqual([
      'x',
      'ctrl-a',
      'ctrl-e',
      'ctrl-u',
      'ctrl-w',
      'ctrl-k',
      'y',
    ]);
  });
});
