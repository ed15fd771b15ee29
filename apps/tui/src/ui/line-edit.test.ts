import { describe, expect, it } from 'vitest';
import { editLine, type LineState, line } from './line-edit.ts';

const type = (s: LineState, ...keys: string[]) => keys.reduce((st, k) => editLine(st, k) ?? st, s);

describe('the text box', () => {
  it('inserts at the cursor and moves with Ctrl-A/E, Ctrl-B/F and the arrows', () => {
    const s = type(line('pid == 1'), 'ctrl-a', 'x', 'right', 'ctrl-e', '2', 'left', 'left', 'ctrl-f', 'y');
    expect(s).toEqual({ text: 'xpid == 1y2', cursor: 10 });
  });

  it('cuts with Ctrl-U, Ctrl-K and Ctrl-W as readline does, and Backspace deletes before the cursor', () => {
    expect(type(line('bytes_req > 256 && node'), 'ctrl-w')).toEqual({ text: 'bytes_req > 256 && ', cursor: 19 });
    expect(type(line('bytes_req > 256  '), 'ctrl-w')).toEqual({ text: 'bytes_req > ', cursor: 12 });
    expect(type(line('abc def'), 'left', 'left', 'left', 'ctrl-u')).toEqual({ text: 'def', cursor: 0 });
    expect(type(line('abc def'), 'left', 'left', 'left', 'ctrl-k')).toEqual({ text: 'abc ', cursor: 4 });
    expect(type(line('abc'), 'ctrl-a', 'backspace')).toEqual({ text: 'abc', cursor: 0 });
    expect(type(line('abc'), 'left', 'backspace')).toEqual({ text: 'ac', cursor: 1 });
  });

  it('leaves Enter, Esc and other named keys to the owner of the box', () => {
    for (const k of ['enter', 'escape', 'tab', 'up', 'pagedown']) expect(editLine(line('x'), k)).toBeUndefined();
  });
});
