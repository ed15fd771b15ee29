/**
 * Where in an input a problem lies, and the one way evtrace writes it: `file:line:column` for text (as compilers
 * and editors do, so a terminal can jump there), `file: byte N` for binary input.
 */

/** Where in an input a problem lies. Every part is optional: a location names what is known. */
export interface Location {
  /** The input: a path, `<stdin>`, a device, a tracefs file, a CPU's stream. */
  readonly file?: string | undefined;
  /** Byte offset from the start of the input: a binary file, a region of memory, a filter expression's text. */
  readonly offset?: number | undefined;
  /** 1-based line, for text input. */
  readonly line?: number | undefined;
  /** 1-based column in `line`, when known. */
  readonly column?: number | undefined;
}

/**
 * Writes a location: `trace.dat: byte 4096`, `kern.log:12:5`, `kern.log:12` (no column known), `line 3:1`, `byte 24`,
 * or `''` when it names nothing. A line wins over an offset when both are known: it is what a reader of text looks for.
 */
export function formatLocation(at: Location | undefined): string {
  if (at === undefined) return '';
  const { file, line, offset } = at;
  if (line !== undefined) {
    const position = at.column === undefined ? `${line}` : `${line}:${at.column}`;
    return file === undefined ? `line ${position}` : `${file}:${position}`;
  }
  if (offset !== undefined) return file === undefined ? `byte ${offset}` : `${file}: byte ${offset}`;
  return file ?? '';
}

/** A message with its location in front, `where: what`; the message alone when the location names nothing. */
export function located(message: string, at: Location | undefined): string {
  const where = formatLocation(at);
  return where === '' ? message : `${where}: ${message}`;
}
