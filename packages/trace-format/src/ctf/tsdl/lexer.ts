import { TraceFormatError } from '../../errors.ts';

/** One TSDL token. Numbers keep their source text so the parser can apply signs and reject overflow. */
export interface Token {
  readonly kind: 'ident' | 'number' | 'string' | 'punct' | 'eof';
  readonly text: string;
  /** Decoded value of a string literal. */
  readonly value?: string;
  readonly line: number;
  readonly column: number;
}

// Longest first so `:=` wins over `:` and `...` over `.`.
const PUNCTUATORS = [':=', '...', '->', '{', '}', '[', ']', '(', ')', '<', '>', ';', ',', ':', '=', '.', '+', '-', '*'];

const ESCAPES: Readonly<Record<string, string>> = {
  n: '\n',
  t: '\t',
  r: '\r',
  a: '\x07',
  b: '\b',
  f: '\f',
  v: '\v',
  '0': '\0',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '?': '?',
};

function isIdentStart(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
}

function isIdentPart(c: number): boolean {
  return isIdentStart(c) || (c >= 48 && c <= 57);
}

/** Splits TSDL text into tokens, dropping comments. Errors carry the file, line and column. */
export function tokenize(text: string, file?: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let line = 1;
  let lineStart = 0;
  const fail = (message: string, at: number): never => {
    throw new TraceFormatError('ERR_TRACE_TSDL', message, { file, line, column: at - lineStart + 1 });
  };
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 10) {
      i++;
      line++;
      lineStart = i;
      continue;
    }
    if (c === 32 || c === 9 || c === 13 || c === 12 || c === 11 || c === 0) {
      i++;
      continue;
    }
    if (c === 47 && text.charCodeAt(i + 1) === 42) {
      const end = text.indexOf('*/', i + 2);
      if (end < 0) fail('unterminated comment', i);
      for (let k = i; k < end; k++) {
        if (text.charCodeAt(k) === 10) {
          line++;
          lineStart = k + 1;
        }
      }
      i = end + 2;
      continue;
    }
    if (c === 47 && text.charCodeAt(i + 1) === 47) {
      while (i < text.length && text.charCodeAt(i) !== 10) i++;
      continue;
    }
    const column = i - lineStart + 1;
    if (isIdentStart(c)) {
      const start = i;
      while (i < text.length && isIdentPart(text.charCodeAt(i))) i++;
      tokens.push({ kind: 'ident', text: text.slice(start, i), line, column });
      continue;
    }
    if (c >= 48 && c <= 57) {
      const start = i;
      while (i < text.length && (isIdentPart(text.charCodeAt(i)) || text.charCodeAt(i) === 46)) {
        // A `.` belongs to the number only when not the start of `...` (ranges such as `0...30`).
        if (text.charCodeAt(i) === 46 && text.startsWith('...', i)) break;
        i++;
      }
      tokens.push({ kind: 'number', text: text.slice(start, i), line, column });
      continue;
    }
    if (c === 34 || c === 39) {
      const quote = text[i]!;
      const start = i;
      let value = '';
      i++;
      for (;;) {
        if (i >= text.length || text.charCodeAt(i) === 10) fail('unterminated string literal', i);
        const ch = text[i]!;
        if (ch === quote) {
          i++;
          break;
        }
        if (ch === '\\') {
          const next = text[i + 1];
          if (next === undefined) fail('unterminated string literal', i);
          const mapped = ESCAPES[next!];
          if (mapped === undefined) fail(`unknown escape \\${next}`, i);
          value += mapped;
          i += 2;
          continue;
        }
        value += ch;
        i++;
      }
      tokens.push({ kind: 'string', text: text.slice(start, i), value, line, column });
      continue;
    }
    const punct = PUNCTUATORS.find((p) => text.startsWith(p, i));
    if (punct === undefined) fail(`unexpected character ${JSON.stringify(text[i])}`, i);
    tokens.push({ kind: 'punct', text: punct!, line, column });
    i += punct!.length;
  }
  tokens.push({ kind: 'eof', text: '<end of metadata>', line, column: i - lineStart + 1 });
  return tokens;
}
