/**
 * Where each key of a TOML document is written, so validation errors can name a line and column. The TOML parser
 * returns plain values without positions; this scanner reads only table headers and `key =` starts of lines, skipping
 * the inside of multi-line strings, which is all it takes for the documents we validate.
 */

/** A 1-based line and column. */
export interface Position {
  readonly line: number;
  readonly column: number;
}

/** Key paths (segments unquoted) to the position of their first definition. */
export interface KeyPositions {
  /** The position of `path`, or of its nearest ancestor that has one (a key inside an inline table). */
  find(path: readonly string[]): Position | undefined;
  /** Where the value of the key `path` starts (after `key = `), or else {@link find}'s answer. */
  findValue(path: readonly string[]): Position | undefined;
}

const BARE = '[A-Za-z0-9_-]+';
const BASIC = String.raw`"(?:[^"\\\n]|\\.)*"`;
const LITERAL = String.raw`'[^'\n]*'`;
const SEGMENT = `(?:${BARE}|${BASIC}|${LITERAL})`;
const DOTTED = `${SEGMENT}(?:\\s*\\.\\s*${SEGMENT})*`;
const HEADER = new RegExp(`^(\\s*)(\\[\\[?)\\s*(${DOTTED})\\s*\\]\\]?`);
const KEY = new RegExp(`^(\\s*)(${DOTTED})\\s*=\\s*`);
const SEGMENTS = new RegExp(SEGMENT, 'g');

function segments(dotted: string): string[] {
  return [...dotted.matchAll(SEGMENTS)].map(([s]) => unquote(s));
}

function unquote(segment: string): string {
  if (segment.startsWith("'")) return segment.slice(1, -1);
  if (!segment.startsWith('"')) return segment;
  try {
    return JSON.parse(segment) as string;
  } catch {
    // A TOML escape JSON lacks (\e, \x..): close enough for locating.
    return segment.slice(1, -1);
  }
}

const join = (path: readonly string[]) => path.join('\u0000');

/** Scans `text` for table headers and keys. Never throws; text that is not TOML yields fewer positions. */
export function locateKeys(text: string): KeyPositions {
  const positions = new Map<string, Position>();
  const values = new Map<string, Position>();
  const put = (path: readonly string[], position: Position) => {
    const k = join(path);
    if (!positions.has(k)) positions.set(k, position);
  };
  let table: string[] = [];
  let openString: '"""' | "'''" | undefined;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    let rest = 0;
    if (openString === undefined) {
      const header = HEADER.exec(line);
      const key = header === null ? KEY.exec(line) : null;
      if (header !== null) {
        table = segments(header[3]!);
        put(table, { line: i + 1, column: header[1]!.length + 1 });
        rest = header[0].length;
      } else if (key !== null) {
        const path = [...table, ...segments(key[2]!)];
        // Dotted keys define their parents too (`a.b = 1` defines `a`).
        for (let n = table.length + 1; n <= path.length; n++)
          put(path.slice(0, n), { line: i + 1, column: key[1]!.length + 1 });
        const k = join(path);
        if (!values.has(k)) values.set(k, { line: i + 1, column: key[0].length + 1 });
        rest = key[0].length;
      }
    }
    openString = multilineStringAfter(line, rest, openString);
  }
  const find = (path: readonly string[]) => {
    for (let n = path.length; n > 0; n--) {
      const p = positions.get(join(path.slice(0, n)));
      if (p !== undefined) return p;
    }
    return undefined;
  };
  return { find, findValue: (path) => values.get(join(path)) ?? find(path) };
}

/** Whether a multi-line string is still open at the end of `line`, reading from `from` in state `open`. */
function multilineStringAfter(line: string, from: number, open: '"""' | "'''" | undefined): '"""' | "'''" | undefined {
  let i = from;
  while (i < line.length) {
    if (open !== undefined) {
      const end = line.indexOf(open, i);
      if (end < 0) return open;
      i = end + 3;
      // Up to two more quotes belong to the string's content (`""""` ends with a quote inside).
      while (line[i] === open[0]) i++;
      open = undefined;
      continue;
    }
    const c = line[i]!;
    if (c === '#') return undefined;
    if (c === '"' || c === "'") {
      if (line.startsWith(c.repeat(3), i)) {
        open = c === '"' ? '"""' : "'''";
        i += 3;
        continue;
      }
      // A one-line string: skip to its closing quote.
      i++;
      while (i < line.length && line[i] !== c) i += c === '"' && line[i] === '\\' ? 2 : 1;
      i++;
      continue;
    }
    i++;
  }
  return open;
}
