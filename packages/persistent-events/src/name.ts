/**
 * Buffer names: namespaces separated by `/` (`team/app/flight`). A name maps to nested files under the user-space
 * directory and to one tracefs instance, so every segment must be a safe single path component.
 */
import { PersistentError } from './errors.ts';

/** Longest name, in characters (tracefs instance names and file paths stay far below their limits). */
export const MAX_NAME_LENGTH = 200;
/** Deepest namespace nesting, the last segment included. */
export const MAX_NAME_DEPTH = 8;
/** Longest segment. */
export const MAX_SEGMENT_LENGTH = 64;
/** Prefix of the tracefs instances that hold persistent kernel buffers; never matches evtrace's per-recording ones. */
export const KERNEL_PREFIX = 'evtrace.p.';

const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/**
 * Checks a buffer name and returns its segments. Segments are 1..64 of `A-Z a-z 0-9 _ . -`, not starting with `.` or
 * `-` (so `.`, `..` and option-like names are impossible); at most 8 segments and 200 characters in all.
 *
 * @throws PersistentError `ERR_PERSISTENT_NAME` naming the offending segment and its column (1-based).
 */
export function parseName(name: string): string[] {
  if (typeof name !== 'string' || name.length === 0) {
    throw new PersistentError('ERR_PERSISTENT_NAME', 'a buffer name must be a non-empty string');
  }
  if (name.length > MAX_NAME_LENGTH) {
    throw new PersistentError(
      'ERR_PERSISTENT_NAME',
      `name is ${name.length} characters long; the limit is ${MAX_NAME_LENGTH}`,
    );
  }
  const segments = name.split('/');
  if (segments.length > MAX_NAME_DEPTH) {
    throw new PersistentError(
      'ERR_PERSISTENT_NAME',
      `name ${JSON.stringify(name)} has ${segments.length} segments; at most ${MAX_NAME_DEPTH}`,
    );
  }
  let column = 1;
  for (const s of segments) {
    const where = `name ${JSON.stringify(name)}, column ${column}`;
    if (s.length === 0)
      throw new PersistentError('ERR_PERSISTENT_NAME', `${where}: empty segment (leading, trailing or double /)`);
    if (s.length > MAX_SEGMENT_LENGTH) {
      throw new PersistentError(
        'ERR_PERSISTENT_NAME',
        `${where}: segment is ${s.length} characters; at most ${MAX_SEGMENT_LENGTH}`,
      );
    }
    if (s === '.' || s === '..')
      throw new PersistentError('ERR_PERSISTENT_NAME', `${where}: ${s} would leave the namespace`);
    if (!SEGMENT.test(s)) {
      const bad = [...s].findIndex((c, i) => !(i === 0 ? /[A-Za-z0-9_]/ : /[A-Za-z0-9_.-]/).test(c));
      throw new PersistentError(
        'ERR_PERSISTENT_NAME',
        `name ${JSON.stringify(name)}, column ${column + bad}: character ${JSON.stringify(s[bad])} is not allowed (segments are A-Z a-z 0-9 _ . -, not starting with . or -)`,
      );
    }
    column += s.length + 1;
  }
  return segments;
}

/** The tracefs instance name of a kernel buffer: `evtrace.p.` then the segments joined by `:`. */
export function kernelInstanceName(name: string): string {
  return KERNEL_PREFIX + parseName(name).join(':');
}

/** The buffer name of a persistent kernel instance, or undefined for other instances. */
export function nameOfInstance(instance: string): string | undefined {
  if (!instance.startsWith(KERNEL_PREFIX)) return undefined;
  const name = instance.slice(KERNEL_PREFIX.length).split(':').join('/');
  try {
    parseName(name);
    return name;
  } catch {
    return undefined;
  }
}
