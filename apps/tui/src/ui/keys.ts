/**
 * Key presses, normalized: Ink reports what one read of stdin held, and keys typed fast (or pasted, or sent by a
 * test) arrive together as one string, so every character becomes its own press.
 */
import { createContext, useContext, useEffect, useRef } from 'react';

/** A key: a printable character as itself (`j`, `G`, `/`), or a name (`up`, `pagedown`, `enter`, `ctrl-c`...). */
export type KeyPress = string;

/** The fields of Ink's key object that name a special key. */
export interface SpecialKeys {
  readonly upArrow?: boolean;
  readonly downArrow?: boolean;
  readonly leftArrow?: boolean;
  readonly rightArrow?: boolean;
  readonly pageUp?: boolean;
  readonly pageDown?: boolean;
  readonly home?: boolean;
  readonly end?: boolean;
  readonly return?: boolean;
  readonly escape?: boolean;
  readonly tab?: boolean;
  readonly shift?: boolean;
  readonly backspace?: boolean;
  readonly delete?: boolean;
  readonly ctrl?: boolean;
}

/** Turns one Ink input callback into key presses, in order. */
export function keyPresses(input: string, key: SpecialKeys): KeyPress[] {
  if (key.upArrow) return ['up'];
  if (key.downArrow) return ['down'];
  if (key.leftArrow) return ['left'];
  if (key.rightArrow) return ['right'];
  if (key.pageUp) return ['pageup'];
  if (key.pageDown) return ['pagedown'];
  if (key.home) return ['home'];
  if (key.end) return ['end'];
  if (key.tab) return [key.shift ? 'shift-tab' : 'tab'];
  if (key.escape) return ['escape'];
  if (key.backspace || key.delete) return ['backspace'];
  if (key.ctrl && input.length === 1) return [`ctrl-${input.toLowerCase()}`];
  if (key.return && input.length <= 1) return ['enter'];
  const out: KeyPress[] = [];
  for (const ch of input) {
    if (ch === '\r' || ch === '\n') out.push('enter');
    else if (ch === '\t') out.push('tab');
    else if (ch === '\x7f' || ch === '\b') out.push('backspace');
    else if (ch === '\x03') out.push('ctrl-c');
    else if (ch === '\x1b') out.push('escape');
    else if (ch >= ' ') out.push(ch);
    // Other control characters are Ctrl and a letter (Ctrl-A is 0x01): readline's keys in a burst of typing.
    else if (ch >= '\x01' && ch <= '\x1a') out.push(`ctrl-${String.fromCharCode(ch.charCodeAt(0) + 96)}`);
  }
  return out;
}

/** Handles a key; returns true when it used it. */
export type KeyHandler = (key: KeyPress) => boolean;

/** The app's key routing: the active view registers its handler, and says when it takes text (the filter bar). */
export interface KeyRouting {
  register(handler: KeyHandler, textInput: boolean): () => void;
}

export const KeyContext = createContext<KeyRouting>({ register: () => () => {} });

/**
 * Sends keys to `handler` while `active`. With `textInput`, the handler sees every key first (only Ctrl-C still
 * quits), as a text field needs.
 */
export function useKeys(handler: KeyHandler, active: boolean, textInput = false): void {
  const routing = useContext(KeyContext);
  const ref = useRef(handler);
  ref.current = handler;
  useEffect(() => {
    if (!active) return;
    return routing.register((k) => ref.current(k), textInput);
  }, [routing, active, textInput]);
}
