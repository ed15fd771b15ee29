/**
 * Where things are in one line of JSON, for error messages: V8's `JSON.parse` names no position for most mistakes,
 * so a line it refuses, or a value that does not fit its event class, is scanned again here (only then: the happy
 * path is `JSON.parse` alone).
 */

/** A member name or an array index. */
export type JsonPath = readonly (string | number)[];

/** What {@link scanJson} found: the offset of the value at `path` (when found) or of the first syntax error. */
export type JsonScan =
  | { readonly ok: true; readonly at: number | undefined }
  | { readonly ok: false; readonly at: number; readonly expected: string };

class Syntax {
  readonly at: number;
  readonly expected: string;
  constructor(at: number, expected: string) {
    this.at = at;
    this.expected = expected;
  }
}

/** Deeper lines are refused rather than scanned (the scan recurses; no event nests this deep). */
const MAX_NESTING = 256;
const WS = /[ \t\n\r]*/y;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const STRING_BODY = /(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*/y;

/**
 * Scans `text` as one JSON value: the character offset of the value at `path` (undefined when absent), or the offset
 * of the first character that breaks the grammar and what was expected there.
 */
export function scanJson(text: string, path: JsonPath = []): JsonScan {
  let i = 0;
  let found: number | undefined;
  const ws = () => {
    WS.lastIndex = i;
    WS.exec(text);
    i = WS.lastIndex;
  };
  const string = (): string => {
    if (text[i] !== '"') throw new Syntax(i, 'a string');
    STRING_BODY.lastIndex = i + 1;
    STRING_BODY.exec(text);
    const end = STRING_BODY.lastIndex;
    if (text[end] !== '"')
      throw new Syntax(end, text[end] === undefined ? 'the closing quote' : 'a valid character or escape');
    const raw = text.slice(i, end + 1);
    i = end + 1;
    return JSON.parse(raw) as string;
  };
  /** `depth`: how much of `path` leads here (-1 once off it). */
  let nesting = 0;
  const value = (depth: number): void => {
    ws();
    if (nesting > MAX_NESTING) throw new Syntax(i, `at most ${MAX_NESTING} nested arrays and objects`);
    if (depth === path.length && found === undefined) found = i;
    const c = text[i];
    const next = (key: string | number) => (depth >= 0 && depth < path.length && path[depth] === key ? depth + 1 : -1);
    if (c === '{') {
      i++;
      nesting++;
      ws();
      if (text[i] === '}') {
        i++;
        nesting--;
        return;
      }
      for (;;) {
        ws();
        const key = string();
        ws();
        if (text[i] !== ':') throw new Syntax(i, "':'");
        i++;
        value(next(key));
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          nesting--;
          return;
        }
        throw new Syntax(i, "',' or '}'");
      }
    }
    if (c === '[') {
      i++;
      nesting++;
      ws();
      if (text[i] === ']') {
        i++;
        nesting--;
        return;
      }
      for (let k = 0; ; k++) {
        value(next(k));
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          nesting--;
          return;
        }
        throw new Syntax(i, "',' or ']'");
      }
    }
    if (c === '"') {
      string();
      return;
    }
    for (const word of ['true', 'false', 'null']) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return;
      }
    }
    NUMBER.lastIndex = i;
    if (NUMBER.exec(text) !== null) {
      i = NUMBER.lastIndex;
      return;
    }
    throw new Syntax(i, c === undefined ? 'a value (the line ends)' : 'a value');
  };
  try {
    value(0);
    ws();
    if (i < text.length) throw new Syntax(i, 'the end of the line');
    return { ok: true, at: found };
  } catch (error) {
    if (error instanceof Syntax) return { ok: false, at: error.at, expected: error.expected };
    throw error;
  }
}

/** A path as JavaScript would write it: `fields.ptr`, `fields.comm[3]`, `fields["a b"]`. */
export function pathText(path: JsonPath): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(p)) out += out === '' ? p : `.${p}`;
    else out += `[${JSON.stringify(p)}]`;
  }
  return out === '' ? 'the line' : out;
}
