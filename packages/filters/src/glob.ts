/**
 * String matching as the kernel does it for `==`, `!=` and `~` (filter_parse_regex, regex_match_*, glob_match). The
 * kernel matches on raw bytes with a length that depends on the field kind, which this module reproduces, quirks
 * included: an end match (`~ "*x"`) on a fixed `char[N]` array compares the last bytes of the whole array, not of the
 * string, so it only matches names that fill the array.
 */

export type MatchKind = 'full' | 'front' | 'middle' | 'end' | 'glob';

export interface StringPattern {
  readonly kind: MatchKind;
  /** The bytes to compare (after removing `!` and the `*` that set the kind). */
  readonly pattern: Uint8Array;
  /** True when a leading `!` in a `~` pattern negates the match. */
  readonly negate: boolean;
}

const STAR = 0x2a;

/** Classifies a quoted value; only `~` interprets wildcards (filter_build_regex). */
export function parsePattern(bytes: Uint8Array, glob: boolean): StringPattern {
  if (!glob) return { kind: 'full', pattern: bytes, negate: false };
  let buf = bytes;
  let negate = false;
  if (buf[0] === 0x21) {
    negate = true;
    buf = buf.subarray(1);
  }
  // A leading digit makes an "index" match, which the filter code treats as a full, literal match.
  if (buf.length > 0 && buf[0]! >= 0x30 && buf[0]! <= 0x39) return { kind: 'full', pattern: buf, negate };
  let kind: MatchKind = 'full';
  let end = buf.length;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!;
    if (c === STAR) {
      if (i === 0) kind = 'end';
      else if (i === buf.length - 1) {
        kind = kind === 'end' ? 'middle' : 'front';
        end = i;
        break;
      } else return { kind: 'glob', pattern: buf, negate };
    } else if (c === 0x5b || c === 0x3f || c === 0x5c) return { kind: 'glob', pattern: buf, negate };
  }
  const start = buf[0] === STAR ? 1 : 0;
  return { kind, pattern: buf.subarray(start, Math.max(start, end)), negate };
}

/** C strlen within `len` bytes (or the whole buffer). */
function cstrlen(s: Uint8Array, len: number): number {
  const n = Math.min(len, s.length);
  for (let i = 0; i < n; i++) if (s[i] === 0) return i;
  return n;
}

/** strncmp(str, pat, n) === 0 with C semantics (a NUL ends both strings). */
function strnEqual(str: Uint8Array, pat: Uint8Array, n: number): boolean {
  for (let i = 0; i < n; i++) {
    const a = i < str.length ? str[i]! : 0;
    const b = i < pat.length ? pat[i]! : 0;
    if (a !== b) return false;
    if (a === 0) return true;
  }
  return true;
}

/**
 * Matches `str` (raw bytes; `len` is what the kernel passes: the array size for `char[N]`, the data_loc length for
 * dynamic strings, strlen+1 for pointers and 16 for COMM) against a pattern. Returns the match before negation.
 */
export function matchBytes(p: StringPattern, str: Uint8Array, len: number): boolean {
  const pat = p.pattern;
  switch (p.kind) {
    case 'full':
      if (len === 0) return cstrlen(str, str.length) === pat.length && strnEqual(str, pat, pat.length + 1);
      return strnEqual(str, pat, len);
    case 'front':
      if (len !== 0 && len < pat.length) return false;
      return strnEqual(str, pat, pat.length);
    case 'middle': {
      if (pat.length === 0) return true;
      // strnstr compares raw bytes within len, past NULs.
      const limit = len === 0 ? cstrlen(str, str.length) : len;
      for (let at = 0; limit - at >= pat.length; at++) {
        let ok = true;
        for (let j = 0; j < pat.length; j++) {
          if ((str[at + j] ?? 0) !== pat[j]) {
            ok = false;
            break;
          }
        }
        if (ok) return true;
      }
      return false;
    }
    case 'end': {
      const strlen = len - 1;
      if (strlen < pat.length) return false;
      for (let j = 0; j < pat.length; j++) if ((str[strlen - pat.length + j] ?? 0) !== pat[j]) return false;
      return true;
    }
    case 'glob':
      return globMatch(pat, str);
  }
}

/** lib/glob.c glob_match: `*`, `?`, `[a-z]`, `[!x]`, backslash escapes; the string ends at its first NUL. */
export function globMatch(pat: Uint8Array, str: Uint8Array): boolean {
  let p = 0;
  let s = 0;
  let backPat = -1;
  let backStr = 0;
  const at = (b: Uint8Array, i: number): number => (i < b.length ? b[i]! : 0);
  for (;;) {
    const c = at(str, s++);
    let d = at(pat, p++);
    let literal = false;
    let backtrack = false;
    if (d === 0x3f) {
      if (c === 0) return false;
    } else if (d === STAR) {
      if (at(pat, p) === 0) return true;
      backPat = p;
      backStr = --s;
    } else if (d === 0x5b) {
      let match = false;
      const inverted = at(pat, p) === 0x21;
      let cls = p + (inverted ? 1 : 0);
      let a = at(pat, cls++);
      let malformed = false;
      do {
        let b = a;
        if (a === 0) {
          malformed = true;
          break;
        }
        if (at(pat, cls) === 0x2d && at(pat, cls + 1) !== 0x5d) {
          b = at(pat, cls + 1);
          if (b === 0) {
            malformed = true;
            break;
          }
          cls += 2;
        }
        if (a <= c && c <= b) match = true;
        a = at(pat, cls++);
      } while (a !== 0x5d);
      if (malformed) literal = true;
      else if (match === inverted) backtrack = true;
      else p = cls;
    } else {
      if (d === 0x5c) d = at(pat, p++);
      literal = true;
    }
    if (literal) {
      if (c === d) {
        if (d === 0) return true;
        continue;
      }
      backtrack = true;
    }
    if (backtrack) {
      if (c === 0 || backPat < 0) return false;
      p = backPat;
      s = ++backStr;
    }
  }
}
