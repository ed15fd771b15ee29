/**
 * The one text box of the viewer (filter, search, time, session name): its text and cursor, edited with readline's
 * keys. Pure, so the views share it and tests drive it directly.
 */
import type { KeyPress } from './keys.ts';

export interface LineState {
  readonly text: string;
  /** Insertion point, 0..text.length. */
  readonly cursor: number;
}

/** A box holding `text`, the cursor at its end. */
export function line(text = ''): LineState {
  return { text, cursor: text.length };
}

/**
 * The box after `key`: printable characters insert, Backspace deletes before the cursor, Ctrl-D/Delete after it,
 * Ctrl-A/Home and Ctrl-E/End go to the ends, Ctrl-B/Ctrl-F and ←/→ move by a character, Ctrl-U and Ctrl-K cut
 * before and after the cursor, Ctrl-W the word before it. Undefined for any other key (Enter, Esc...), which the
 * box's owner handles.
 */
export function editLine(s: LineState, key: KeyPress): LineState | undefined {
  const { text, cursor } = s;
  switch (key) {
    case 'backspace':
    case 'ctrl-h':
      return cursor === 0 ? s : { text: text.slice(0, cursor - 1) + text.slice(cursor), cursor: cursor - 1 };
    case 'ctrl-d':
      return { text: text.slice(0, cursor) + text.slice(cursor + 1), cursor };
    case 'ctrl-a':
    case 'home':
      return { text, cursor: 0 };
    case 'ctrl-e':
    case 'end':
      return { text, cursor: text.length };
    case 'ctrl-b':
    case 'left':
      return { text, cursor: Math.max(0, cursor - 1) };
    case 'ctrl-f':
    case 'right':
      return { text, cursor: Math.min(text.length, cursor + 1) };
    case 'ctrl-u':
      return { text: text.slice(cursor), cursor: 0 };
    case 'ctrl-k':
      return { text: text.slice(0, cursor), cursor };
    case 'ctrl-w': {
      // As readline's unix-word-rubout: the blanks before the cursor, then the word before them.
      let start = cursor;
      while (start > 0 && text[start - 1] === ' ') start--;
      while (start > 0 && text[start - 1] !== ' ') start--;
      return { text: text.slice(0, start) + text.slice(cursor), cursor: start };
    }
    default:
      if ([...key].length !== 1) return undefined;
      return { text: text.slice(0, cursor) + key + text.slice(cursor), cursor: cursor + key.length };
  }
}
